"""Prompt cases: Markdown files with YAML frontmatter, as in *tool-context-relay* by grzegorz-aniol.

The body is the prompt. The frontmatter says what a good run looks like and, under
``offline_plan``, how the offline reference model carries the prompt out::

    ---
    id: case1
    tool_calls:
      - tool_name: yt_transcribe
        opaque_id_result: true
      - tool_name: deep_check
        opaque_id_input: true
    offline_plan:
      - call: yt_transcribe
        args: {video_id: "123"}
      - call: deep_check
        args: {text: {result: 1}}
      - answer: "{result2}"
    ---
    Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep Check.

Frontmatter is parsed with python-frontmatter (PyYAML underneath), with a safe loader that
refuses YAML aliases (``*name``: a few hundred bytes of nested aliases, a "billion laughs", expand
to billions of items), after a size check (:data:`MAX_CASE_FILE_BYTES`). A malformed file raises
:class:`CaseError` naming the file and the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from glob import glob
from pathlib import Path
from typing import Any

import frontmatter
import yaml
from frontmatter.default_handlers import YAMLHandler

from helpers.base.paths import CASES_DIR
from helpers.cases.plans import Plan, PlanError, check_plan

KNOWN_KEYS = {
    "id",
    "description",
    "tool_calls",
    "forbidden_tools",
    "strategies",
    "answer_contains",
    "sink_exact",
    "offline_plan",
}


CALL_KEYS = {"tool_name", "opaque_id_result", "opaque_id_input", "allow_multiple"}
SINK_KEYS = {"tool_name", "argument", "source"}
#: What a strategy's name may be: lower-case ASCII letters and digits, parts joined by ``-``
#: (``head-tail``, not ``head_tail``): it is typed on the command line and used in file names.
#: :func:`helpers.context.strategies.register_strategy` refuses any other name, and a case's
#: ``strategies:`` may name no other; which names exist is the strategy registry's to say, when
#: the case runs (:func:`helpers.evaluation.runs.run_cases`).
STRATEGY_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


class CaseError(ValueError):
    """A prompt-case file that cannot be used; the message names the file and the key."""


#: The largest case file read, in bytes (the largest shipped one is about 1.2 KB; the large
#: results of the large cases are built by the tools, not written in the file).
MAX_CASE_FILE_BYTES = 256 * 1024


class YAMLAliasError(yaml.composer.ComposerError):
    """The frontmatter uses a YAML alias (``*name``), which case files may not."""


class _NoAliasSafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing every alias before it is resolved (anchors alone are
    harmless; an alias is what lets a small file expand exponentially)."""

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise YAMLAliasError(
                None,
                None,
                f"YAML aliases are not allowed in case files (found the alias *{event.anchor}); "
                "write the value out instead",
                event.start_mark,
            )
        return super().compose_node(parent, index)


class _CaseYAMLHandler(YAMLHandler):
    """python-frontmatter's YAML handler with :class:`_NoAliasSafeLoader`."""

    def load(self, fm: str, **kwargs: object) -> Any:
        kwargs["Loader"] = _NoAliasSafeLoader
        return super().load(fm, **kwargs)


def _read_case_text(path: Path) -> str:
    """The file's text, at most :data:`MAX_CASE_FILE_BYTES` bytes read.

    Raises:
        CaseError: unreadable, larger than the limit, or not UTF-8.
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_CASE_FILE_BYTES + 1)
    except OSError as exc:
        raise CaseError(f"{path}: cannot read: {exc}") from exc
    if len(data) > MAX_CASE_FILE_BYTES:
        raise CaseError(
            f"{path}: larger than {MAX_CASE_FILE_BYTES:,} bytes, the limit for a case file"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaseError(f"{path}: cannot read: {exc}") from exc


@dataclass
class Case:
    """One prompt case: its prompt, its expectations, and the offline model's plan."""

    id: str
    path: Path
    prompt: str
    description: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    forbidden_tools: list[str] = field(default_factory=list)
    strategies: list[str] | None = None
    answer_contains: list[str] = field(default_factory=list)
    sink_exact: list[dict[str, Any]] = field(default_factory=list)
    offline_plan: Plan | None = None

    def expected_tools(self) -> list[str]:
        """The names of the tools the task is expected to call (its ``tool_calls``), each once,
        in order of first mention."""
        return list(dict.fromkeys(entry["tool_name"] for entry in self.tool_calls))


def load_case(path: str | Path) -> Case:
    """Parse one case file.

    Args:
        path: a Markdown file with YAML frontmatter, at most :data:`MAX_CASE_FILE_BYTES` bytes.

    Returns:
        The case.

    Raises:
        CaseError: unreadable file, a file over :data:`MAX_CASE_FILE_BYTES` bytes, bad YAML, a
            YAML alias, frontmatter nested too deeply, unknown key, missing ``id`` or prompt, or a
            bad ``offline_plan``.
    """
    path = Path(path)
    text = _read_case_text(path)
    try:
        post = frontmatter.loads(text, handler=_CaseYAMLHandler())
    except YAMLAliasError as exc:
        where = f"line {exc.problem_mark.line + 1}: " if exc.problem_mark else ""
        raise CaseError(f"{path}: {where}{exc.problem}") from None
    except yaml.YAMLError as exc:
        raise CaseError(f"{path}: bad YAML frontmatter: {exc}") from exc
    except RecursionError:  # PyYAML's parser recurses once per level of nesting
        raise CaseError(f"{path}: the YAML frontmatter nests too deeply") from None
    meta = dict(post.metadata)
    unknown = sorted(set(meta) - KNOWN_KEYS)
    if unknown:
        raise CaseError(
            f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_KEYS))})"
        )
    if not meta.get("id"):
        raise CaseError(f"{path}: missing key 'id'")
    prompt = post.content.strip()
    if not prompt:
        raise CaseError(f"{path}: the prompt (the Markdown body after the frontmatter) is empty")
    _check_shapes(path, meta)
    plan = meta.get("offline_plan")
    if plan is not None:
        try:
            plan = check_plan(plan)
        except PlanError as exc:
            raise CaseError(f"{path}: key 'offline_plan': {exc}") from exc
    return Case(
        id=str(meta["id"]),
        path=path,
        prompt=prompt,
        description=str(meta.get("description") or ""),
        tool_calls=list(meta.get("tool_calls") or []),
        forbidden_tools=list(meta.get("forbidden_tools") or []),
        strategies=meta.get("strategies"),
        answer_contains=[str(s) for s in meta.get("answer_contains") or []],
        sink_exact=list(meta.get("sink_exact") or []),
        offline_plan=plan,
    )


def _check_shapes(path: Path, meta: dict[str, Any]) -> None:
    def fail(key: str, problem: str) -> None:
        raise CaseError(f"{path}: key {key!r}: {problem}")

    calls = meta.get("tool_calls") or []
    if not isinstance(calls, list):
        fail("tool_calls", "must be a list of {tool_name: …} entries")
    for i, entry in enumerate(calls):
        if not isinstance(entry, dict) or not isinstance(entry.get("tool_name"), str):
            fail(f"tool_calls[{i}]", "each entry needs a string tool_name")
        unknown = set(entry) - CALL_KEYS
        if unknown:
            fail(
                f"tool_calls[{i}]",
                f"unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(CALL_KEYS))})",
            )
        for flag in CALL_KEYS - {"tool_name"}:
            if flag in entry and not isinstance(entry[flag], bool):
                fail(f"tool_calls[{i}].{flag}", "must be true or false")
    for key in ("forbidden_tools", "answer_contains"):
        value = meta.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str | int) for v in value):
            fail(key, "must be a list of strings")
    strategies = meta.get("strategies")
    if strategies is not None and (
        not isinstance(strategies, list)
        or not all(isinstance(s, str) and STRATEGY_NAME.fullmatch(s) for s in strategies)
    ):
        fail("strategies", "must be a list of strategy names, such as [box]")
    sinks = meta.get("sink_exact") or []
    if not isinstance(sinks, list):
        fail("sink_exact", "must be a list of {tool_name, argument, source} entries")
    for i, sink in enumerate(sinks):
        if not isinstance(sink, dict) or set(sink) != SINK_KEYS:
            fail(f"sink_exact[{i}]", "needs exactly the keys tool_name, argument, source")


#: Every shipped case: the regular ones, and the large ones (results of 0.3 to 6 MB).
ALL_CASES = str(CASES_DIR / "**" / "*.md")


def load_cases(pattern: str | Path | None = None) -> list[Case]:
    """Every case matching a glob (default ``data/cases/*.md``, the regular cases; ``**`` is
    recursive, so :data:`ALL_CASES` adds ``data/cases/large/``), sorted by path, the cases of
    a folder before those of its subfolders."""
    pattern = str(pattern or CASES_DIR / "*.md")
    paths = sorted(glob(pattern, recursive=True), key=lambda p: (Path(p).parent.parts, p))
    return [load_case(p) for p in paths]
