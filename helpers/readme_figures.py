"""The README's figures, generated, never typed: ``make figures`` writes them, a test checks them.

Each figure block in README.md stands between two markers::

    <!-- figures:ask -->
    | strategy | prompt tokens | … |
    <!-- /figures:ask -->

:func:`generate` runs the offline model on a fresh store with reproducible ids
(:func:`helpers.ids.reproducible_ids`), so the same code gives the same figures, and returns each
block's Markdown. ``python -m helpers.readme_figures`` rewrites the blocks; ``--check`` exits 1
(and names the block) when README.md disagrees with what the code measures now.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from pathlib import Path

from helpers.agent import run_turn
from helpers.cases import load_cases
from helpers.compare import Comparison
from helpers.evaluation import VARIANTS, run_cases, run_personas
from helpers.ids import reproducible_ids
from helpers.offline import offline_client
from helpers.paths import PROJECT_ROOT
from helpers.personas import MISTAKE_PERSONAS, PERSONAS
from helpers.policies import make_policy
from helpers.store import ToolOutputStore
from helpers.tools import default_registry

README = PROJECT_ROOT / "README.md"
SEED = 2026
CASE1 = (
    "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep "
    "Check for analysis."
)


def _block_re(prefix: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {prefix}:(\w+) -->\n)(.*?)(<!-- /{prefix}:\2 -->)", re.DOTALL)


_BLOCK_RE = _block_re("figures")


def _ask_table(store: ToolOutputStore) -> str:
    client = offline_client()
    lines = [
        "| strategy | prompt tokens | completion tokens | model calls | tool calls |",
        "|---|---:|---:|---:|---:|",
    ]
    for strategy in ("inline", "truncate", "box"):
        record = run_turn(
            CASE1,
            client=client,
            model="offline-reference",
            policy=make_policy(strategy),
            registry=default_registry(),
            store=store,
        )
        usage = record.usage()
        fetches = sum(1 for c in record.tool_calls if c.name == "fetch_tool_output")
        calls = f"{len(record.tool_calls)}" + (" (a `fetch_tool_output`)" if fetches else "")
        lines.append(
            f"| {strategy} | {usage['prompt_tokens']:,} | {usage['completion_tokens']:,} | "
            f"{usage['calls']} | {calls} |"
        )
    return "\n".join(lines)


def _comparison(store: ToolOutputStore) -> dict:
    cases = load_cases()
    common = {"client": offline_client(), "store": store, "threshold": 256, "limit": 600}
    runs = run_cases(cases, VARIANTS, model="offline-reference", **common)
    runs += run_personas(cases, [PERSONAS[n] for n in MISTAKE_PERSONAS], **common)
    return Comparison(runs, "offline-reference", 256, 600).to_json()


def _compare_table(data: dict) -> str:
    lines = [
        "| strategy | prompt tokens | × inline | × floor | cases passed |",
        "|---|---:|---:|---:|---:|",
    ]
    for variant, total in data["totals"].items():
        if variant == "floor":
            continue
        lines.append(
            f"| {variant} | {total['prompt_tokens']:,} | {total['ratio_to_inline']:.2f} | "
            f"{total['ratio_to_floor']:.2f} | {total['passed']}/{total['cases']} |"
        )
    return "\n".join(lines)


def _persona_table(data: dict) -> str:
    lines = [
        "| persona | strategy | guard that catches it (times fired) | passed | prompt tokens | × ideal |",
        "|---|---|---|---:|---:|---:|",
    ]
    for name, row in data["personas"].items():
        guard = (
            f"`{row['guard']}` ({row['guard_hits'].get(row['guard'], 0)})"
            if row["guard"]
            else "none: it only costs"
        )
        lines.append(
            f"| {name} | {row['strategy']} | {guard} | {row['passed']}/{row['cases']} | "
            f"{row['prompt_tokens']:,} | {row['ratio_to_ideal']:.2f} |"
        )
    return "\n".join(lines)


def _overhead() -> str:
    """What each strategy's instructions and extra tools add to every model call, in tokens."""
    from helpers.tokens import count_chat_tokens

    def fixed(strategy: str) -> int:
        policy = make_policy(strategy)
        tools = default_registry().merged(policy.internal_tools()).schemas()
        return count_chat_tokens([{"role": "system", "content": policy.instructions()}], tools)

    box, truncate = fixed("box") - fixed("inline"), fixed("truncate") - fixed("inline")
    return (
        f"Boxing has a fixed price too: the five resolve tools' schemas and the instructions add "
        f"{box:,} tokens to every model call (truncation's `fetch_tool_output` and instructions: "
        f"{truncate:,}), so a result of a few KB that the model reads once (`sql1`, `sql3`) is "
        "cheaper inline."
    )


def generate() -> dict[str, str]:
    """Every figure block, measured now: ``{block name: Markdown}``.

    Runs in a fresh run-time folder (store, outbox: a file already in the outbox would change
    what a write reports) with reproducible ids.
    """
    saved = os.environ.get("WORKBOOK_VAR_DIR")
    with tempfile.TemporaryDirectory() as folder, reproducible_ids(SEED):
        os.environ["WORKBOOK_VAR_DIR"] = folder
        store = ToolOutputStore(f"sqlite:///{Path(folder) / 'figures.sqlite'}")
        try:
            ask = _ask_table(store)
            data = _comparison(store)
        finally:
            store.close()
            if saved is None:
                os.environ.pop("WORKBOOK_VAR_DIR", None)
            else:
                os.environ["WORKBOOK_VAR_DIR"] = saved
    return {
        "ask": ask,
        "compare": _compare_table(data),
        "personas": _persona_table(data),
        "overhead": _overhead(),
    }


def update(text: str, blocks: dict[str, str], *, prefix: str = "figures") -> str:
    """``text`` with every known ``<!-- prefix:NAME -->`` block replaced by its content
    (unknown blocks left alone)."""

    def replace(match: re.Match[str]) -> str:
        name = match[2]
        body = blocks.get(name)
        return match[0] if body is None else f"{match[1]}{body}\n{match[4]}"

    return _block_re(prefix).sub(replace, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate (or check) the README's figures.")
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md is stale")
    args = parser.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    blocks = generate()
    found = {m[2] for m in _BLOCK_RE.finditer(text)}
    missing = sorted(set(blocks) - found)
    if missing:
        print(f"README.md has no block for: {', '.join(missing)}")
        return 1
    new = update(text, blocks)
    if args.check:
        stale = [n for n in blocks if f"<!-- figures:{n} -->\n{blocks[n]}\n" not in text]
        if stale:
            print(f"README.md figures are stale: {', '.join(stale)} (run `make figures`)")
            return 1
        print("README.md figures are current")
        return 0
    README.write_text(new, encoding="utf-8")
    print(f"wrote {len(blocks)} figure blocks into {README.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
