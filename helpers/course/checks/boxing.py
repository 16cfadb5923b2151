"""Notebook 04's checkpoints: boxing a result, unboxing arguments, and two resolve tools.

References: :func:`helpers.context.boxing.render_reference` with
:func:`helpers.context.policies.guess_mime_type` (boxing), the four unboxing rules of the
notebook (the library's :func:`~helpers.context.boxing.unbox_arguments` is stricter: it also
refuses a bare id inside text), :func:`helpers.context.resolve_tools.internal_resource_read_slice`
on a real store, and :func:`helpers.context.resolve_tools.grep_text`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from helpers.context.boxing import ReferenceRefused, make_reference, render_reference
from helpers.context.policies import guess_mime_type
from helpers.context.resolve_tools import grep_text, internal_resource_read_slice
from helpers.course.checkpoint import (
    Checkpoint,
    Property,
    attempt,
    attempt_or,
    expect,
    expect_same,
    short,
)
from helpers.course.checks.inputs import (
    json_values,
    nonce,
    outputs,
    padded,
    scratch_store,
    texts,
)
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.registry import ToolContext

ref_ids = st.from_regex(r"[A-Za-z0-9_-]{16}", fullmatch=True)


@dataclass(frozen=True)
class BoxCase:
    """One result to box (``threshold`` / ``boxing`` ``None``: the defaults)."""

    output: str
    ref_id: str
    tool_name: str
    threshold: int | None
    boxing: str | None

    def args(self) -> tuple[Any, ...]:
        """The call's arguments: the three required ones, then both options unless defaulted."""
        options = () if self.threshold is None else (self.threshold, self.boxing)
        return (self.output, self.ref_id, self.tool_name, *options)

    def shown(self) -> str:
        extra = "".join(
            f", {k}={v!r}" for k, v in (("threshold", self.threshold), ("boxing", self.boxing))
        )
        return (
            f"box_result({short(self.output, 60)} [{len(self.output):,} chars, "
            f"{len(self.output.encode('utf-8')):,} bytes], {self.ref_id!r}, {self.tool_name!r}"
            f"{extra})"
        )


def _box_outputs(draw: Any, threshold: int) -> str:
    kind = draw(st.sampled_from(["text", "json", "long json", "padded", "html"]))
    if kind == "json":
        text = json.dumps(draw(json_values()), ensure_ascii=draw(st.booleans()))
    elif kind == "long json":  # over 64 characters: its start alone is not JSON
        items = draw(st.lists(json_values(), min_size=1, max_size=3))
        items *= 80 // len(json.dumps(items)) + 1
        space = draw(st.text(st.sampled_from(" \t\r\n"), max_size=2))  # JSON's white space
        text = space + json.dumps(items, ensure_ascii=draw(st.booleans()))
    elif kind == "padded":  # white space around a short text: its length is not its stripped one
        length = draw(st.integers(max(threshold - 2, 0), threshold + 4))
        text = draw(padded(length, max(threshold - 1, 0)))
    elif kind == "html":
        text = "<!doctype html><p>" + draw(texts(30))
    else:
        text = draw(texts(threshold + 4))
    return text


def box_cases(*, boxing: Any, defaults: bool = False) -> Any:
    @st.composite
    def build(draw: Any) -> BoxCase:
        # threshold 0 drawn apart: every output but the empty one is boxed (code that reads
        # 0 as "no threshold given", ``threshold or 256``, boxes nothing short)
        threshold = None if defaults else draw(st.one_of(st.just(0), st.integers(1, 30)))
        output = _box_outputs(draw, 256 if threshold is None else threshold)
        if defaults:
            output = (output * (256 // max(len(output), 1) + 1))[: draw(st.integers(250, 262))]
        return BoxCase(
            output,
            draw(ref_ids),
            draw(st.sampled_from(["get_page", "run_sql", "yt_transcribe"])),
            threshold,
            None if defaults else draw(boxing),
        )

    return build()


def reference_box(output: str, ref_id: str, tool_name: str, threshold: int, boxing: str) -> str:
    """What notebook 04's ``box_result`` must return (the library's rendering)."""
    if len(output) <= threshold:
        return output
    return render_reference(
        ref_id,
        boxing=boxing,
        name=f"{tool_name} result",
        mime_type=guess_mime_type(output),
        size_bytes=len(output.encode("utf-8")),
    )


def check_box_result(box_result: Callable[..., str]) -> None:
    """Notebook 04, TODO 1: the attendee's ``box_result(output, ref_id, tool_name,
    threshold=256, boxing="opaque")``.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """

    def same(case: BoxCase) -> None:
        threshold = 256 if case.threshold is None else case.threshold
        want = reference_box(
            case.output, case.ref_id, case.tool_name, threshold, case.boxing or "opaque"
        )
        got = attempt(box_result, *case.args())
        expect(
            isinstance(got, str),
            "text (a str): the model reads text, so a resource link is JSON text (json.dumps)",
            f"a {type(got).__name__}: {short(got, 80)}",
        )
        if want.startswith("{") and want != case.output:  # a resource link: compare as JSON
            try:
                link = json.loads(got)
            except ValueError:
                link = got
            expected = json.loads(want)
            expect(isinstance(link, dict), f"a resource link as JSON text: {want}", short(got))
            for key in ("type", "uri", "name", "mimeType", "size"):
                expect(
                    link.get(key) == expected[key],
                    f"{key}: {expected[key]!r}",
                    f"{key}: {short(link.get(key))}",
                )
            return
        expect_same(want, got)

    return Checkpoint(
        "04",
        1,
        "box_result",
        [
            Property(
                "at or under the threshold (in characters) the output comes back unchanged; "
                "above it, in opaque mode, exactly internal://<ref_id>",
                box_cases(boxing=st.just("opaque")),
                same,
                BoxCase.shown,
                terms=("at or under", "characters", "internal://"),
                # at the threshold in characters, over it in UTF-8 bytes: not boxed
                always=(BoxCase("é" * 4, "AbCdEfGh12345678", "get_page", 4, "opaque"),),
            ),
            Property(
                "json mode: an MCP resource link as JSON text — type 'resource_link', the uri, "
                "the name '<tool_name> result', mimeType from guess_mime_type, size in UTF-8 "
                "bytes",
                box_cases(boxing=st.just("json")),
                same,
                BoxCase.shown,
                terms=("resource_link", 'f"{tool_name} result"', "guess_mime_type", "bytes"),
            ),
            Property(
                "the defaults are threshold=256 characters and boxing='opaque'",
                box_cases(boxing=st.none(), defaults=True),
                same,
                BoxCase.shown,
                terms=("256",),
                examples=20,
            ),
        ],
    ).run()


# -- unbox --------------------------------------------------------------------------------------

#: How a model wraps a whole reference; ``reference_id`` strips each of them.
WRAPS = ("{}", "`{}`", " {} ", '"{}"', "<{}>", "{}.", "'{}'")
#: Leaves of an argument tree: kinds that stay, that are resolved, and that are refused.
KEEP = ("text", "number", "none", "flag", "zero", "false", "empty_list", "empty_dict")
KEEP += ("lookalike", "foreign_inside")
RESOLVE = ("ref",)
REFUSE = ("foreign_ref", "unknown_ref", "malformed", "inside", "inside_second")
#: A dict key that is this thread's reference: keys are names, never unboxed.
REF_KEY = "<this thread's ref>"


@dataclass(frozen=True)
class Leaf:
    kind: str
    text: str = ""
    wrap: str = "{}"

    def __repr__(self) -> str:
        detail = {
            "text": repr(self.text),
            "ref": self.wrap.format("<this thread's ref>"),
            "foreign_ref": self.wrap.format("<another thread's ref>"),
            "unknown_ref": "internal://AAAAAAAAAAAAAAAA",
            "malformed": "internal://not a ref!",
            "inside": "'Please analyse <this thread's ref>'",
            "inside_second": "'compare internal://AAAAAAAAAAAAAAAA and <this thread's ref>'",
            "foreign_inside": "'see <another thread's ref>'",
            "lookalike": "'see internal://AAAAAAAAAAAAAAAA'",
            "number": "3",
            "none": "None",
            "flag": "True",
            "zero": "0",
            "false": "False",
            "empty_list": "[]",
            "empty_dict": "{}",
        }.get(self.kind, self.kind)
        return detail


def leaves(kinds: tuple[str, ...]) -> Any:
    return st.builds(Leaf, st.sampled_from(kinds), texts(12), st.sampled_from(WRAPS))


def trees(kinds: tuple[str, ...], *, ref_keys: bool = True) -> Any:
    """Argument trees of leaves of ``kinds`` (a dict at the top); ``ref_keys``: a dict key may be
    this thread's reference (keys are names, never unboxed)."""
    keys = ["text", "files", "content", "n", "meta", *([REF_KEY] if ref_keys else [])]
    return st.recursive(
        leaves(kinds),
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3),
            st.dictionaries(
                st.sampled_from(keys),
                inner,
                min_size=1,
                max_size=3,
            ),
        ),
        max_leaves=5,
    ).map(lambda tree: tree if isinstance(tree, dict) else {"value": tree})


@dataclass(frozen=True)
class UnboxCase:
    arguments: dict[str, Any]
    value: str  # the stored value of this thread's reference

    def shown(self) -> str:
        return f"unbox({short(self.arguments, 110)}, store, thread_id)  [the ref's value: {len(self.value):,} chars]"


def one_refusal_cases() -> Any:
    """Argument trees of leaves that stay or resolve, with exactly one leaf that must be refused,
    at the top or in a list: a refusal can never be masked by another leaf's, so code that misses
    one kind (another thread's whole reference, say) fails on an input of that kind alone."""
    place = st.sampled_from(["text", "files", "content", "n", "meta"])
    refused = st.one_of(leaves(REFUSE), leaves(REFUSE).map(lambda leaf: [leaf]))
    trees_kept = trees(KEEP + RESOLVE)
    return st.builds(
        lambda tree, key, leaf, value: UnboxCase({**tree, key: leaf}, value),
        trees_kept,
        place,
        refused,
        outputs(),
    )


def unbox_cases(
    kinds: tuple[str, ...],
    must: tuple[str, ...] = (),
    values: Any = None,
    *,
    ref_keys: bool = True,
) -> Any:
    def has(tree: Any, wanted: tuple[str, ...]) -> bool:
        if isinstance(tree, Leaf):
            return tree.kind in wanted
        items = tree.values() if isinstance(tree, dict) else tree
        return any(has(item, wanted) for item in items)

    cases = st.builds(
        UnboxCase, trees(kinds, ref_keys=ref_keys), outputs() if values is None else values
    )
    return cases.filter(lambda c: has(c.arguments, must)) if must else cases


class _Refs:
    """This thread's reference, another thread's, and the concrete arguments of a case."""

    def __init__(self, store: ToolOutputStore, value: str):
        self.thread = f"thread_{nonce()}"
        other = f"thread_{nonce()}"
        self.mine = make_reference(
            store.log_tool(self.thread, "call_" + nonce(), "t", {}, value).ref_id
        )
        self.theirs = make_reference(store.log_tool(other, "call_" + nonce(), "t", {}, "x").ref_id)
        self.value = value

    def key(self, key: str) -> str:
        return self.mine if key == REF_KEY else key

    def concrete(self, tree: Any) -> Any:
        if isinstance(tree, dict):
            return {self.key(k): self.concrete(v) for k, v in tree.items()}
        if isinstance(tree, list):
            return [self.concrete(v) for v in tree]
        leaf: Leaf = tree
        return {
            "text": leaf.text,
            "number": 3,
            "none": None,
            "flag": True,
            "zero": 0,
            "false": False,
            "empty_list": [],
            "empty_dict": {},
            "lookalike": "see internal://AAAAAAAAAAAAAAAA and more",
            "foreign_inside": f"see {self.theirs} too",
            "ref": leaf.wrap.format(self.mine),
            "foreign_ref": leaf.wrap.format(self.theirs),
            "unknown_ref": "internal://AAAAAAAAAAAAAAAA",
            "malformed": "internal://not a ref!",
            "inside": f"Please analyse {self.mine}",
            "inside_second": f"compare internal://AAAAAAAAAAAAAAAA and {self.mine}",
        }[leaf.kind]

    def resolved(self, tree: Any) -> Any:
        if isinstance(tree, dict):
            return {self.key(k): self.resolved(v) for k, v in tree.items()}
        if isinstance(tree, list):
            return [self.resolved(v) for v in tree]
        return self.value if tree.kind == "ref" else self.concrete(tree)


def _first_difference(want: Any, got: Any, path: str = "arguments") -> tuple[str, Any, Any]:
    """Where two argument trees first differ: (path, the expected part, the part got)."""
    if isinstance(want, dict) and isinstance(got, dict) and want.keys() == got.keys():
        for key in want:
            if want[key] != got[key]:
                return _first_difference(want[key], got[key], f"{path}[{key!r}]")
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{path}[{i}]")
    return path, want, got


class _UnboxChecks:
    """The properties of notebook 04's ``unbox``, each run on one generated :class:`UnboxCase`
    whose references are stored in a scratch store first."""

    def __init__(self, unbox: Callable[..., Any], store: ToolOutputStore):
        self.unbox = unbox
        self.store = store

    def run(self, case: UnboxCase) -> tuple[_Refs, Any, Any]:
        refs = _Refs(self.store, case.value)
        arguments = refs.concrete(case.arguments)
        return (
            refs,
            arguments,
            attempt_or(ReferenceRefused, self.unbox, arguments, self.store, refs.thread),
        )

    def resolves(self, case: UnboxCase) -> None:
        refs, _, got = self.run(case)
        want = refs.resolved(case.arguments)
        expect(
            not isinstance(got, ReferenceRefused),
            "the arguments with each whole reference of this thread replaced by its value",
            f"ReferenceRefused: {got}",
        )
        if got != want:
            where, part, got_part = _first_difference(want, got)
            expect(False, f"{where} = {short(part, 80)}", f"{where} = {short(got_part, 80)}")

    def refuses(self, case: UnboxCase) -> None:
        _, _, got = self.run(case)
        expect(
            isinstance(got, ReferenceRefused),
            "ReferenceRefused",
            f"no exception; returned {short(got, 80)}",
        )

    def copies(self, case: UnboxCase) -> None:
        refs = _Refs(self.store, case.value)
        arguments = refs.concrete(case.arguments)
        before = copy.deepcopy(arguments)
        attempt(self.unbox, arguments, self.store, refs.thread)
        expect(
            arguments == before,
            "the caller's arguments unchanged (return a copy)",
            f"{_first_difference(before, arguments)[0]} was changed",
        )


def check_unbox(unbox: Callable[..., Any]) -> None:
    """Notebook 04, TODO 2: the attendee's ``unbox(arguments, store, thread_id)`` against the
    notebook's four rules, on generated argument trees.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """
    with scratch_store("unbox") as store:
        checks = _UnboxChecks(unbox, store)
        return Checkpoint(
            "04",
            2,
            "unbox",
            [
                Property(
                    "a whole reference of this thread — also in backticks, quotes, <…>, spaces "
                    "or with a full stop — becomes its stored value, at any depth and any size",
                    unbox_cases((*RESOLVE, "text", "number", "none"), must=RESOLVE, ref_keys=False),
                    checks.resolves,
                    UnboxCase.shown,
                    terms=("whole", "backticks", "any depth", "read_all"),
                    examples=30,
                ),
                Property(
                    "dict keys, non-string values and ordinary text stay as they are, even text "
                    "that mentions an unknown reference or another thread's",
                    unbox_cases(KEEP + RESOLVE),
                    checks.resolves,
                    UnboxCase.shown,
                    terms=("ordinary text", "dict keys", "keys are names"),
                    examples=30,
                ),
                Property(
                    "ReferenceRefused for an unknown, malformed or other thread's whole "
                    "reference, and for a reference of this thread inside longer text (wherever "
                    "it is among the text's ids)",
                    one_refusal_cases(),
                    checks.refuses,
                    UnboxCase.shown,
                    terms=(
                        "ReferenceRefused",
                        "another thread",
                        "inside",
                        "malformed",
                        "check every one",
                    ),
                    examples=40,
                ),
                Property(
                    "unbox never changes the caller's arguments: it returns a copy",
                    unbox_cases(KEEP + RESOLVE, must=RESOLVE, values=texts(20)),
                    checks.copies,
                    UnboxCase.shown,
                    terms=("copy",),
                    examples=20,
                ),
            ],
        ).run()


# -- read_slice ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SliceCase:
    value: str
    start_index: int
    length: int

    def shown(self) -> str:
        return f"read_slice({short(self.value, 70)} [{len(self.value)} chars], {self.start_index}, {self.length})"


slice_cases = st.builds(SliceCase, texts(30), st.integers(-45, 45), st.integers(0, 40))


def check_read_slice(read_slice: Callable[[str, int, int], str]) -> None:
    """Notebook 04, TODO 3: the attendee's ``read_slice(value, start_index, length)`` against
    :func:`internal_resource_read_slice` on a real store (read in SQL, by characters).

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """
    with scratch_store("slice") as store:

        def same(case: SliceCase) -> None:
            thread = f"thread_{nonce()}"
            ref = make_reference(store.log_tool(thread, "call_s", "t", {}, case.value).ref_id)
            want = internal_resource_read_slice(
                ToolContext(store=store, thread_id=thread), ref, case.start_index, case.length
            )
            got = attempt(read_slice, case.value, case.start_index, case.length)
            expect_same(want, got)

        def negative_length(case: SliceCase) -> None:
            got = attempt_or(ValueError, read_slice, case.value, case.start_index, -case.length - 1)
            expect(
                isinstance(got, ValueError),
                "ValueError for a negative length",
                f"returned {short(got)}",
            )

        return Checkpoint(
            "04",
            3,
            "read_slice",
            [
                Property(
                    "characters [start, start + length), a negative start counting from the "
                    "end (clamped at the first character), '' past the end",
                    slice_cases,
                    same,
                    SliceCase.shown,
                    terms=("negative", "from the end", "past the end", "characters"),
                    examples=80,
                ),
                Property(
                    "a negative length raises ValueError",
                    slice_cases,
                    negative_length,
                    lambda c: f"read_slice({short(c.value, 40)}, {c.start_index}, {-c.length - 1})",
                    terms=("ValueError",),
                    examples=15,
                ),
            ],
        ).run()


# -- grep ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GrepCase:
    value: str
    pattern: str
    window: int

    def shown(self) -> str:
        return f"grep({short(self.value, 90)}, {self.pattern!r}, {self.window})"


@st.composite
def grep_values(draw: Any) -> str:
    lines = draw(
        st.lists(
            st.sampled_from(["a", "b", "ab", "img 1", "IMG 2", "A", "", " a", "a ", "é", "x\ty\t"]),
            max_size=9,
        )
    )
    # every line end str.splitlines knows: mostly \n or \r\n, now and then a rarer one
    rare = ["\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
    ends = st.one_of(st.sampled_from(["\n", "\r\n"]), st.sampled_from(rare))
    text = "".join(line + draw(ends) for line in lines[:-1]) + (lines[-1] if lines else "")
    return text + (draw(ends) if lines and draw(st.booleans()) else "")


grep_cases = st.builds(
    GrepCase,
    grep_values(),
    st.sampled_from(["a", "b$", "^a", "img", "é", "[ab]{2}", "zzz"]),
    st.integers(0, 3),
)


def check_grep(grep: Callable[[str, str, int], str]) -> None:
    """Notebook 04, TODO 4: the attendee's ``grep(value, pattern, window)`` against
    :func:`helpers.context.resolve_tools.grep_text`.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """

    def same(case: GrepCase) -> None:
        want = grep_text(case.value, case.pattern, case.window)
        got = attempt(grep, case.value, case.pattern, case.window)
        expect_same(want, got)

    return Checkpoint(
        "04",
        4,
        "grep",
        [
            Property(
                "blocks 'Lines A-B:' of lines numbered from 1, window lines each side of a "
                "match, ranges that overlap or touch merged; 'No matches found.' otherwise",
                grep_cases,
                same,
                GrepCase.shown,
                terms=("numbered from 1", "overlap or touch", "No matches found.", "splitlines"),
                examples=150,
            )
        ],
    ).run()
