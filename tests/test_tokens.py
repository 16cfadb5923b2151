"""Token counts: a remembered count is the count tiktoken gives, for any text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.text.tokens import REMEMBER_FROM_CHARS, _Counts, count_tokens, encoding


def _fresh(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


@settings(max_examples=60, derandomize=True, deadline=None)
@given(
    st.text(st.characters(exclude_categories=()), min_size=1, max_size=40).map(
        lambda t: t * (REMEMBER_FROM_CHARS // len(t) + 1)
    ),
    st.integers(0, 3),
)
def test_a_remembered_count_is_the_fresh_count(text: str, trim: int) -> None:
    """Long texts (lone surrogates, special-token text included), asked twice, and a text that
    differs from a counted one by its last characters: never another text's count."""
    assert count_tokens(text) == count_tokens(text) == _fresh(text)
    shorter = text[: len(text) - trim] + "<|endoftext|>"
    assert count_tokens(shorter) == _fresh(shorter)


def test_the_memory_is_bounded_and_least_recently_used_goes_first() -> None:
    counts = _Counts(size=2)
    a, b, c = ("a " * 600, "b " * 600, "c " * 600)
    counts.count(a)
    counts.count(b)
    counts.count(a)  # a is now the most recent
    counts.count(c)  # b goes
    assert len(counts.counts) == 2
    assert counts.count(b) == _fresh(b) and len(counts.counts) == 2


def test_a_runs_ids_do_not_depend_on_the_runs_before_it(tmp_path) -> None:
    """Under reproducible ids, a case run under a strategy gets the same ids, and so the same
    token counts, whatever ran before it: adding a strategy to a comparison moves no other row
    (issue 50). The same run twice in one block gets ids of its own (no collision)."""
    from helpers import ToolOutputStore, load_cases, offline_client, run_case
    from helpers.base.ids import reproducible_ids

    (case,) = [c for c in load_cases() if c.id == "case1"]
    client = offline_client()

    def box_run(before: list[str], db: str) -> tuple[str, int]:
        store = ToolOutputStore(f"sqlite:///{tmp_path / db}")
        with reproducible_ids(7):
            for strategy in before:
                run_case(case, strategy, client=client, model="offline-reference", store=store)
            run = run_case(case, "box", client=client, model="offline-reference", store=store)
            again = run_case(case, "box", client=client, model="offline-reference", store=store)
        assert again.record.thread_id != run.record.thread_id
        return run.record.thread_id, run.record.usage()["prompt_tokens"]

    assert box_run([], "a.sqlite") == box_run(["inline", "truncate"], "b.sqlite")
