"""Each TODO's checkpoint, by (notebook, TODO number)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers.course.checks import (
    boxing,
    code_mode,
    compaction,
    dispatch,
    mcp,
    modes,
    persist,
    preview,
)

#: Each TODO's checkpoint: (notebook, TODO) → the function that checks the attendee's answer.
CHECKS: dict[tuple[str, int], Callable[[Any], None]] = {
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
    ("08", 1): code_mode.check_bridge,
    ("08", 2): code_mode.check_error_report_program,
    ("09", 1): mcp.check_mcp_result_text,
}
