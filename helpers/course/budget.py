"""Ask before spending: a notebook cell that starts many turns on a paid model shows the estimate
and waits for a go-ahead.

With the offline model nothing is spent, so nothing is asked. With a real model,
:func:`approve_spend` prints the number of model calls and the tokens the cell is expected to
use (measured with the offline model on the same tasks: o200k_base tokens, the tokenizer of
OpenAI's current models) and stops the cell with :class:`SpendNotApproved`, unless the caller
passed ``approve=True`` (run the cell again with it) or set ``WORKBOOK_APPROVE_SPEND=1``.
"""

from __future__ import annotations

import os

from helpers.models.llm import ModelConfig


class SpendNotApproved(RuntimeError):
    """The cell would start paid turns and nobody said yes; the message says how to."""


def approve_spend(
    config: ModelConfig,
    *,
    what: str,
    model_calls: int,
    prompt_tokens: int,
    completion_tokens: int,
    approve: bool = False,
) -> None:
    """Go on if ``config`` is the offline model or the spend is approved; else stop the cell.

    Args:
        config: the model in use (:func:`helpers.models.llm.resolve_model`).
        what: what the cell is about to run, e.g. ``"13 cases × 5 strategies"``.
        model_calls: how many model calls it makes.
        prompt_tokens, completion_tokens: how many tokens they use in all (measured offline).
        approve: the user's go-ahead for this cell.

    Raises:
        SpendNotApproved: a real model, and no go-ahead.
    """
    if config.offline:
        return
    estimate = (
        f"{what} on {config.describe()}: about {model_calls:,} model calls, "
        f"{prompt_tokens:,} prompt tokens and {completion_tokens:,} completion tokens "
        "(measured with the offline model on the same tasks)"
    )
    if approve or os.environ.get("WORKBOOK_APPROVE_SPEND", "").lower() in ("1", "yes", "true"):
        print(f"Going ahead: {estimate}.")
        return
    raise SpendNotApproved(
        f"This cell would run {estimate}. To go ahead, run it again with approve=True (or set "
        "WORKBOOK_APPROVE_SPEND=1); to stay free, set WORKBOOK_PROFILE=offline in .env and "
        "restart the kernel."
    )
