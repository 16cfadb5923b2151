"""Regular expressions on RE2 (google-re2: https://github.com/google/re2), which runs in time
linear in the text, for patterns the workbook does not write itself (a model's grep, a server's
schema) and for the long alternations it builds (a thread's ids): the options each of them
compiles with, made in one place."""

from __future__ import annotations

import re2


def re2_options(max_mem: int, *, never_capture: bool = False) -> re2.Options:
    """New RE2 options for patterns compiled with ``re2.compile(pattern, options)``.

    Args:
        max_mem: the most memory, in bytes, RE2 may take for one compiled pattern (its
            ``max_mem`` option; a pattern that needs more does not compile: ``re2.error``).
        never_capture: parse every group as non-capturing (its ``never_capture`` option), for
            a pattern only searched for, its groups never read.

    Returns:
        Options that never log: a pattern RE2 cannot compile raises ``re2.error``, which the
        caller says in its own words, and nothing reaches stderr (``log_errors`` off; RE2
        logs to stderr by default: re2/re2.h, ``RE2::Options``).
    """
    options = re2.Options()
    options.log_errors = False
    options.max_mem = max_mem
    options.never_capture = never_capture
    return options
