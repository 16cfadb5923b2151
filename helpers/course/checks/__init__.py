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

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers.course.checks import boxing, compaction, dispatch, modes, persist, preview

#: Each TODO's checkpoint: (notebook, TODO) → the function that checks the attendee's answer.
CHECKS: dict[tuple[str, int], Callable[[Any], str]] = {
    ("01", 1): dispatch.check_handle_tool_calls,
    ("02", 1): persist.check_log_tool,
    ("02", 2): persist.check_prune,
    ("03", 1): preview.check_make_preview,
    ("03", 2): preview.check_fetch_tool_output,
    ("04", 1): boxing.check_box_result,
    ("04", 2): boxing.check_unbox,
    ("04", 3): boxing.check_read_slice,
    ("04", 4): boxing.check_grep,
    ("06", 1): compaction.check_categorize,
    ("06", 2): compaction.check_summarize_writes,
    ("06", 3): compaction.check_fold_indices,
    ("07", 1): modes.check_schemas_for_mode,
    ("07", 2): modes.check_guarded_call,
    ("07", 3): modes.check_summarize,
}
