"""Progress for a long notebook cell: a bar the room sees move while many turns run.

A cell that runs 130 turns prints nothing until it ends; on a busy laptop that is half a minute
of a frozen-looking notebook. :func:`progress` shows an ipywidgets bar with a count and the
last item done, and returns a :class:`Progress` to pass as a runner's ``on_done`` hook
(:func:`helpers.evaluation.runs.run_cases`, :func:`helpers.evaluation.scaling.run_scaling`).
"""

from __future__ import annotations

import time
from typing import Any

import ipywidgets as widgets

from helpers.text.escaping import for_html


class Progress:
    """A progress bar of ``total`` steps of ``what``; calling it advances the bar by one step.

    Attributes:
        bar: the ``IntProgress`` widget (``value`` = steps done, ``max`` = ``total``).
        label: the ``HTML`` widget beside it: "k / total what: the step just done", and at the
            end "total / total what in S s". ``what`` and every step's text are escaped for HTML
            (:func:`helpers.text.escaping.for_html`).
    """

    def __init__(self, total: int, what: str) -> None:
        if total < 1:
            raise ValueError(f"a progress bar needs at least one step, got total={total}")
        self.total, self.what = total, for_html(what)
        self.bar = widgets.IntProgress(value=0, min=0, max=total, layout={"width": "40%"})
        self.label = widgets.HTML(value=f"0 / {total} {self.what}")
        self.widget = widgets.HBox([self.bar, self.label])
        self._started = time.monotonic()

    def __call__(self, *args: Any) -> None:
        """One step done; ``args`` are what the runner passes its hook (a case run, or a size
        and a strategy), shown as the step just done."""
        self.bar.value = min(self.total, self.bar.value + 1)
        done = f"{self.bar.value} / {self.total} {self.what}"
        if self.bar.value == self.total:
            self.label.value = f"{done} in {time.monotonic() - self._started:.1f} s"
            self.bar.bar_style = "success"
        else:
            last = _describe(args)
            self.label.value = f"{done}: {for_html(last)}" if last else done


def progress(total: int, what: str) -> Progress:
    """Display a :class:`Progress` bar of ``total`` steps of ``what`` (a plural noun, e.g.
    ``"runs"``) in the notebook, and return it to be called once per step.

    Raises:
        ValueError: ``total`` is less than 1.
    """
    from IPython.display import display

    bar = Progress(total, what)
    display(bar.widget)
    return bar


def _describe(args: tuple[Any, ...]) -> str:
    """A short plain-text name of what a runner just finished: a case run's case and strategy,
    or the hook's arguments joined with " · "."""
    if len(args) == 1:
        case_id = getattr(getattr(args[0], "case", None), "id", None)
        strategy = getattr(args[0], "strategy", None)
        if case_id and strategy:
            return f"{case_id} under {strategy}"
    return " · ".join(str(a) for a in args)[:60]
