"""The hard-stop checkpoints of the notebooks, one module per lesson: what each TODO's function
must do, as :class:`helpers.course.checkpoint.Property` objects over generated inputs.

- :mod:`.dispatch` — notebook 01, the dispatch tail of the agent turn;
- :mod:`.persist` — notebook 02, ``log_tool`` and ``prune``;
- :mod:`.preview` — notebook 03, the preview and ``fetch_tool_output``;
- :mod:`.boxing` — notebook 04, boxing, unboxing, slice and grep;
- :mod:`.compaction` — notebook 06, categories, the write summary and the pairing-safe cut;
- :mod:`.modes` — notebook 07, modes and the dual stream's summary.

Each ``check_*`` function takes the attendee's function, runs the checkpoint and prints what was
checked; a failure raises :class:`helpers.course.checkpoint.CheckpointFailed` with a short report.
"""
