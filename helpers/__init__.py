"""Context Relay Workbook: the library behind the notebooks and the ``workbook`` CLI.

Data flows one way through an agent turn: tool → result policy → store → messages.

- :mod:`helpers.registry`   tool schemas from type hints and docstrings, argument checks
- :mod:`helpers.tools`      the real tools (transcripts, deep check, drive outbox, pages, SQL)
- :mod:`helpers.pages`      the offline web: pages rendered once from a fixed list
- :mod:`helpers.store`      the SQLAlchemy tool-output store (``tool_outputs`` table)
- :mod:`helpers.preview`    truncated previews and the truncation marker
- :mod:`helpers.boxing`     opaque references, resource links, unboxing of arguments
- :mod:`helpers.resolve_tools`  ``fetch_tool_output`` and the ``internal_resource_*`` tools
- :mod:`helpers.policies`   the inline / truncate / box switch
- :mod:`helpers.instructions`  system instructions and few-shot examples per strategy
- :mod:`helpers.guards`     the named guards that repair or refuse a model's mistakes
- :mod:`helpers.replies`    provider replies read from the raw body, every shape a verdict
- :mod:`helpers.agent`      the chat-completions tool loop and its record
- :mod:`helpers.threads`    threads that continue: stored messages replayed as history
- :mod:`helpers.llm`        ``.env`` profiles and the ``openai`` client
- :mod:`helpers.redaction`  API keys out of every message
- :mod:`helpers.offline`    the offline reference model (OpenAI wire protocol, no network)
- :mod:`helpers.personas`   offline personas that make the mistakes real models make
- :mod:`helpers.tokens`     o200k_base token counts with tiktoken
- :mod:`helpers.cli`        the ``workbook`` command
"""
