"""The loop: one agent turn and threads that continue.

- :mod:`helpers.loop.agent`: the chat-completions tool loop, in phases (``Agent``, ``RunConfig``,
  ``run_turn``);
- :mod:`helpers.loop.model_call`: one request to the model, and what its reply means;
- :mod:`helpers.loop.dispatch`: one tool call, tool → policy → store;
- :mod:`helpers.loop.turn_state`: what the turn's calls did so far, owned by the loop
  (``TurnState``; policies and tools return their effects, the loop records them);
- :mod:`helpers.loop.records`: what a turn records and reports (``TurnRecord``, statuses, events);
- :mod:`helpers.loop.threads`: threads that continue (history replay).
"""
