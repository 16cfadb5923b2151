"""The marks beside a verdict's word: ``✓`` (U+2713) for *passed*, ``✗`` (U+2717) for *failed*.

Every desktop font set draws them (DejaVu Sans, which Debian installs with any desktop, and the
fonts Windows and macOS ship), where ✅ and ❌ need an emoji font: a fresh Debian's Chromium,
without fonts-noto-color-emoji, draws those as empty boxes. The word still carries the verdict
(a screen reader, a terminal without either): a mark always stands beside it, joined by a
no-break space so a narrow table cell never wraps between them. ``make e2e`` checks both in
Chromium with every emoji font hidden.
"""

from __future__ import annotations

#: What stands before a verdict that passed.
PASS_MARK = "✓"
#: What stands before a verdict that failed.
FAIL_MARK = "✗"
