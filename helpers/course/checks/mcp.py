"""Notebook 09's checkpoint: an MCP tool result as the one text a tool returns.

The reference is :func:`helpers.mcp.content.mcp_result_text` (the rules of the MCP 2026-07-28
spec's "Tool Result" as the client takes them: text blocks as they are, a resource link read
through ``resources/read``, an embedded resource's text, binary content as its block's JSON,
one ``\\n`` between blocks, structured content alone as JSON, an error raised). Each input is a
real ``mcp_types.CallToolResult`` made of generated blocks, with the resources its links name;
``read`` is a probe that records every uri it was asked for.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from hypothesis import strategies as st

from helpers.course.checkpoint import (
    Checkpoint,
    Property,
    attempt,
    attempt_or,
    expect,
    expect_same,
    short,
)
from helpers.course.checks.inputs import json_values, texts
from helpers.mcp.content import McpToolError, mcp_result_text

#: The kinds of content block a generated result holds.
KINDS = ("text", "link", "embedded", "image", "audio", "blob")


#: What a link's ``resources/read`` gives: its contents as (``"text"`` or ``"blob"``, text)
#: pairs, or ``None``: the read fails (the server refuses the uri, it has stopped).
Contents = tuple[tuple[str, str], ...] | None


class ReadFailed(Exception):
    """What the checkpoint's ``read`` raises for a link it cannot read."""


@dataclass(frozen=True)
class ResultCase:
    """A generated ``tools/call`` result: its blocks as (kind, text) pairs, whether it is an
    error, its structured content (``None``: none), what ``resources/read`` gives for each
    link's uri (:data:`Contents`), and the links that share the uri of an earlier link (the
    link's index → the earlier link's)."""

    blocks: tuple[tuple[str, str], ...]
    is_error: bool = False
    structured: Any = None
    resources: dict[str, Contents] = field(default_factory=dict, compare=False)
    shared: dict[int, int] = field(default_factory=dict, compare=False)

    def uri(self, i: int) -> str:
        """The uri of the link at block ``i``."""
        return _uri(self.shared.get(i, i))

    def links(self) -> list[str]:
        """The uri of each link, in order (a shared uri once per link)."""
        return [self.uri(i) for i, (kind, _) in enumerate(self.blocks) if kind == "link"]

    def result(self) -> types.CallToolResult:
        content: list[Any] = []
        for i, (kind, text) in enumerate(self.blocks):
            content.append(_block(kind, text, i, self.uri(i)))
        structured = self.structured if self.structured is not None else None
        return types.CallToolResult(
            content=content, is_error=self.is_error, structured_content=structured
        )

    def shown(self) -> str:
        parts = [
            (
                f"link(the uri of block {self.shared[i]})"
                if i in self.shared
                else _link_shown(self.resources.get(_uri(i)))
            )
            if kind == "link"
            else f"{kind}({short(text, 18)})"
            for i, (kind, text) in enumerate(self.blocks)
        ]
        extra = " isError" if self.is_error else ""
        if self.structured is not None:
            extra += f" structuredContent={short(self.structured, 30)}"
        return f"CallToolResult [{', '.join(parts) or 'no blocks'}]{extra}"


def _uri(i: int) -> str:
    return f"test://resource/{i}"


def _link_shown(contents: Contents) -> str:
    if contents is None:
        return "link(read fails)"
    inside = " + ".join(f"{kind}({short(text, 10)})" for kind, text in contents)
    return f"link({inside or 'no contents'})"


def _contents(uri: str, kind: str, text: str) -> Any:
    if kind == "text":
        return types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)
    data = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return types.BlobResourceContents(uri=uri, mime_type="application/octet-stream", blob=data)


def _block(kind: str, text: str, i: int, uri: str) -> Any:
    """One content block of ``kind`` standing for ``text`` (binary kinds: its UTF-8 bytes in
    base64); a link's is ``uri``."""
    data = base64.b64encode(text.encode("utf-8")).decode("ascii")
    if kind == "text":
        return types.TextContent(type="text", text=text)
    if kind == "link":
        return types.ResourceLink(type="resource_link", uri=uri, name=f"r{i}.txt")
    if kind == "embedded":
        inner = types.TextResourceContents(uri=_uri(i), mime_type="text/plain", text=text)
        return types.EmbeddedResource(type="resource", resource=inner)
    if kind == "image":
        return types.ImageContent(type="image", data=data, mime_type="image/png")
    if kind == "audio":
        return types.AudioContent(type="audio", data=data, mime_type="audio/wav")
    blob = types.BlobResourceContents(uri=_uri(i), mime_type="application/octet-stream", blob=data)
    return types.EmbeddedResource(type="resource", resource=blob)


@st.composite
def result_cases(
    draw: Any,
    kinds: tuple[str, ...] = KINDS,
    *,
    errors: bool = False,
    structured: bool = False,
    unreadable: bool = False,
) -> ResultCase:
    """Results of zero to five blocks of ``kinds`` (a link's resource read as zero to three
    contents, text or blob; a link may have the uri of an earlier one); with ``errors``, an error
    result (its text blocks say why); with ``structured``, structured content, with no blocks
    or with some; with ``unreadable``, at least one link whose read fails."""
    low = 1 if errors else 0
    blocks = tuple(
        (draw(st.sampled_from(kinds)), draw(texts(30)))
        for _ in range(draw(st.integers(low, 2 if structured else 5)))
    )
    if structured and draw(st.booleans()):
        blocks = ()
    # a link's own uri, or (drawn apart) the uri of an earlier link: two links, one resource
    shared: dict[int, int] = {}
    earlier: list[int] = []
    for i, (kind, _) in enumerate(blocks):
        if kind == "link":
            same = draw(st.one_of(st.none(), st.sampled_from(earlier))) if earlier else None
            if same is None:
                earlier.append(i)
            else:
                shared[i] = same
    if unreadable:
        blocks = (*blocks, ("link", ""))
    one = st.tuples(st.sampled_from(["text", "text", "blob"]), texts(20))
    resources: dict[str, Contents] = {
        _uri(i): tuple(draw(st.lists(one, min_size=0, max_size=3)))
        for i, (kind, _) in enumerate(blocks)
        if kind == "link" and i not in shared
    }
    if unreadable:
        failing = [uri for uri in resources if draw(st.booleans())] or [_uri(len(blocks) - 1)]
        resources.update(dict.fromkeys(failing))
    value = draw(json_values()) if structured else None
    return ResultCase(blocks, is_error=errors, structured=value, resources=resources, shared=shared)


class ReadProbe:
    """``resources/read`` over a case's resources, recording each uri asked for."""

    def __init__(self, resources: dict[str, Contents]):
        self.resources, self.asked = resources, []
        self.raised: list[ReadFailed] = []

    def __call__(self, uri: str) -> types.ReadResourceResult:
        self.asked.append(uri)
        found = self.resources.get(uri)
        if found is None:
            failed = ReadFailed(f"the server cannot read {uri}")
            self.raised.append(failed)
            raise failed
        return types.ReadResourceResult(contents=[_contents(uri, *c) for c in found])


class _ResultTextChecks:
    """The properties of notebook 09's ``mcp_result_text``."""

    def __init__(self, mcp_result_text_fn: Callable[..., str]):
        self.fn = mcp_result_text_fn

    def text_of(self, case: ResultCase) -> tuple[str, ReadProbe]:
        read = ReadProbe(case.resources)
        got = attempt(self.fn, case.result(), read)
        expect(isinstance(got, str), "a str", f"{type(got).__name__}: {short(got)}")
        return got, read

    def same(self, case: ResultCase) -> None:
        got, _ = self.text_of(case)
        want = mcp_result_text(case.result(), ReadProbe(case.resources))
        expect_same(want, got)

    def links_read(self, case: ResultCase) -> None:
        got, read = self.text_of(case)
        links = case.links()
        expect(
            sorted(read.asked) == sorted(links),
            f"read(uri) once for each link, a uri two links share twice: {links}",
            f"read asked for {read.asked}",
        )
        want = mcp_result_text(case.result(), ReadProbe(case.resources))
        expect_same(want, got)

    def read_fails(self, case: ResultCase) -> None:
        read = ReadProbe(case.resources)
        got = attempt_or(Exception, self.fn, case.result(), read)
        expect(
            isinstance(got, ReadFailed) and got in read.raised,
            "read's own exception, let go: ReadFailed('the server cannot read …')",
            f"{type(got).__name__}: {short(got)}" if isinstance(got, Exception) else short(got),
        )

    def error(self, case: ResultCase) -> None:
        read = ReadProbe(case.resources)
        got = attempt_or(Exception, self.fn, case.result(), read)
        said = "\n".join(text for kind, text in case.blocks if kind == "text").strip()
        expect(
            isinstance(got, McpToolError),
            f"McpToolError({short(said or 'a message')})",
            short(got) if not isinstance(got, Exception) else f"{type(got).__name__}: {got}",
        )
        for text in [t for kind, t in case.blocks if kind == "text" and t.strip()]:
            expect(text.strip() in str(got), f"the message holding {short(text)}", short(str(got)))
        expect(read.asked == [], "nothing read for an error", f"read asked for {read.asked}")


def _properties(checks: _ResultTextChecks) -> list[Property[ResultCase]]:
    """The lesson's rules, each a property of ``checks``' function on generated results."""
    show = ResultCase.shown
    return [
        Property(
            "text blocks come whole and in order, joined by one line break (\\n): an empty "
            "text is a block too, nothing is stripped",
            result_cases(("text",)),
            checks.same,
            show,
            terms=("in order", "one line break", "stripped"),
            always=(ResultCase((("text", ""), ("text", ""))), ResultCase(())),
        ),
        Property(
            "a resource link stands for what read(uri) gives, read once for each link, "
            "never its uri: each of its contents a text of its own (a blob's as JSON), one "
            "line break between them too",
            result_cases(("text", "link")),
            checks.links_read,
            show,
            terms=("read(uri)", "resource link", "once", "each of its contents"),
            always=(
                ResultCase((("link", ""),), resources={_uri(0): (("text", ""),)}),
                ResultCase((("link", ""),), resources={_uri(0): (("text", "a"), ("text", "b"))}),
                ResultCase((("link", ""),), resources={_uri(0): (("blob", "é"),)}),
                ResultCase((("text", "a"), ("link", "")), resources={_uri(1): ()}),
            ),
        ),
        Property(
            "an embedded resource is its text; binary content is json.dumps of every field "
            "as model_dump(mode='json', by_alias=True, exclude_none=True) gives it: an "
            "image or audio block's, a blob's resource contents (uri, mimeType, blob)",
            result_cases(KINDS),
            checks.same,
            show,
            terms=(
                "embedded resource",
                "model_dump",
                "by_alias=True",
                "exclude_none=True",
                "blob",
            ),
            examples=80,
        ),
        Property(
            "a link read(uri) cannot read: its exception goes on, never text in its place",
            result_cases(("text", "link"), unreadable=True),
            checks.read_fails,
            show,
            terms=("let its exception go",),
        ),
        Property(
            "a result with isError raises McpToolError holding its text, reading nothing",
            result_cases(KINDS, errors=True),
            checks.error,
            show,
            terms=("isError", "McpToolError"),
        ),
        Property(
            "a result with no blocks but structuredContent is that value as JSON "
            "(json.dumps(..., ensure_ascii=False)); with blocks, the blocks are the text",
            result_cases(structured=True),
            checks.same,
            show,
            terms=("structuredContent", "json.dumps", "ensure_ascii=False", "with blocks"),
            always=(
                ResultCase((("text", "a"),), structured={"n": 1}),
                ResultCase((), structured=[]),
            ),
        ),
    ]


def check_mcp_result_text(mcp_result_text_fn: Callable[..., str]) -> None:
    """Notebook 09, TODO 1: the attendee's ``mcp_result_text(result, read)``.

    Raises:
        helpers.course.checkpoint.CheckpointFailed: a property did not hold.
        helpers.course.checkpoint.TodoNotWritten: the TODO is still its stub.
    """
    checks = _ResultTextChecks(mcp_result_text_fn)
    return Checkpoint("09", 1, "mcp_result_text", _properties(checks)).run()
