"""The colours of the HTML the notebooks render, readable in every JupyterLab theme.

A colour written into a view is one of two things:

- a JupyterLab theme variable (``var(--jp-…)``, defined by each theme: the light theme's in
  jupyterlab/jupyterlab ``packages/theme-light-extension/style/variables.css``, the dark theme's
  beside it), whose fallback, for a page outside JupyterLab (VS Code's notebooks define no
  ``--jp-`` variables: microsoft/vscode-jupyter#7161), never fixes a colour: text falls back to
  ``inherit`` (the host's own text colour), a border or a surface to translucent grey;
- a translucent *tint* laid over whatever background the theme has, so the text on it keeps the
  theme's own text colour (near black on white, white on near black). A role or a badge is told
  apart by the tint's hue; its text never depends on it.

No view hard-codes a text colour against a background of its own: that is how the side-by-side
view became unreadable in the dark theme (light backgrounds behind the dark theme's white text).
The e2e test measures the contrast of the message view in the light and dark themes
(WCAG 2.x contrast ratio, at least :data:`MIN_CONTRAST`).
"""

from __future__ import annotations

#: The theme's main text colour (elsewhere: the host's).
TEXT = "var(--jp-content-font-color1, inherit)"
#: Secondary text (labels), on the theme's own background only (elsewhere: the host's).
MUTED = "var(--jp-content-font-color2, inherit)"
#: Lines between cells and around cards.
BORDER = "var(--jp-border-color2, rgba(128, 128, 128, 0.35))"
#: A surface one step off the page (the system message's row): a grey tint over any background.
SURFACE_ALT = "rgba(128, 128, 128, 0.16)"
#: WCAG 2.x's minimum contrast ratio for normal text (success criterion 1.4.3, level AA).
MIN_CONTRAST = 4.5

#: Hues of the tints, as RGB (Material Design 500s: blue, green, amber, purple, orange, red).
HUES: dict[str, tuple[int, int, int]] = {
    "blue": (33, 150, 243),
    "green": (76, 175, 80),
    "amber": (255, 193, 7),
    "purple": (156, 39, 176),
    "orange": (255, 152, 0),
    "red": (244, 67, 54),
}


def tint(hue: str, alpha: float = 0.16) -> str:
    """A translucent CSS colour of ``hue`` (a key of :data:`HUES`), ``alpha`` from 0 to 1: a
    background that shows the theme's own beneath it.

    Raises:
        KeyError: an unknown hue.
        ValueError: ``alpha`` outside 0-1.
    """
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha is a fraction from 0 to 1, got {alpha}")
    red, green, blue = HUES[hue]
    return f"rgba({red}, {green}, {blue}, {alpha})"


#: The background of each message role's row in the message view.
ROLE_BACKGROUNDS = {
    "system": SURFACE_ALT,
    "user": tint("blue"),
    "assistant": tint("green"),
    "tool": tint("amber", 0.18),
}
#: The tint of each result-kind badge (``[boxed]``, ``[truncated]``…).
KIND_TINTS = {
    "boxed": tint("purple", 0.28),
    "truncated": tint("orange", 0.3),
    "saved": tint("blue", 0.3),
    "middle": tint("red", 0.3),
    "error": tint("red", 0.3),
    "compacted": tint("purple", 0.28),
}
#: The tint behind a strategy's pass count: all passed, or not.
VERDICT_TINTS = {True: tint("green", 0.28), False: tint("red", 0.3)}


def badge(html: str, background: str) -> str:
    """``html`` (already escaped) as a bold badge on ``background``, in the theme's text colour."""
    return (
        f"<b style='color:{TEXT};background:{background};border-radius:3px;padding:0 4px'>"
        f"{html}</b>"
    )
