"""``workbook mcp-server``: the workbook's tool registry served over MCP on stdio.

Built on the official ``mcp`` Python SDK's low-level :class:`mcp.server.lowlevel.Server`, so the
tools keep the schemas the registry writes (:meth:`helpers.tooling.registry.Tool.schema`) and
every call goes the way a turn's calls go (:func:`helpers.loop.dispatch.dispatch`): arguments
read and checked, references unboxed, the tool, the store, the policy, errors as results.

What a client meets (MCP 2026-07-28, "Tools" and "Resources"; the SDK also speaks the
handshake-era versions back to 2024-11-05):

- ``tools/list``: the registry's tools, then the resolve tools
  (``internal_resource_length``, ``_read_slice``, ``_read_lines``, ``_grep``, ``_read``), in a
  fixed order. ``readOnlyHint`` is the registry's :attr:`~helpers.tooling.registry.Tool.read_only`.
- ``tools/call``: a result longer than ``box-json``'s rule (1,000 o200k_base tokens unless
  ``threshold`` says otherwise) comes back as one ``resource_link`` content block (``uri``
  ``internal://<id>``, ``name``, ``mimeType``, ``size`` in UTF-8 bytes: the spec's "Resource
  links"), a shorter one as one ``text`` block, and a refused or failed call as a tool
  execution error (``isError: true``) whose text says why. A reference of this session passed
  whole as an argument is replaced by its value before the tool runs (the box strategy's
  unboxing, :mod:`helpers.context.boxing`), so a client can route a long result to another of
  these tools without reading it.
- ``resources/read``: the stored output behind a uri, as one text content, byte for byte; a uri
  of another session, an unknown one or one that is not ``internal://<id>`` is a JSON-RPC
  error ``-32602`` naming the uri (SEP-2164: a resource that does not exist is invalid params).
- ``resources/list``: the outputs the session's calls stored, oldest first, its resource links
  among them (the spec does not require a link to appear there; listing them lets an inspector
  show them).

**Sessions.** MCP 2026-07-28 has no protocol-level session ("Tools › Stateful Tools"); over
stdio a server process serves one client, so the session here is the process: it draws an
unguessable id when it starts (:func:`new_session_id`), stores every output under the thread
of that id, and refuses another session's uris. The ids are unguessable and the outputs stay in
the store (``workbook outputs list`` shows them under ``mcp_session_…``) until pruned.

**Bounds**, the same as a turn's: each call's arguments (1,000,000 characters, 32 levels deep),
the tools' own time and size limits, the bytes one call may store (64 MB) and the session's
quota (256 MB, :class:`helpers.base.limits.TurnLimits`); calls run one at a time, each in a worker
thread, so a slow tool never stops the server from reading its input.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import anyio
import mcp_types as types
from mcp.server.caching import CacheHint
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import LATEST_PROTOCOL_VERSION, is_version_at_least

from helpers.base import ids
from helpers.base.limits import TurnLimits
from helpers.base.paths import workbook_version, workspace_dir
from helpers.context.boxing import (
    SCHEME,
    ForeignReference,
    ReferenceRefused,
    UnknownReference,
    make_reference,
    reference_id,
    resolve_in_thread,
)
from helpers.context.policies import BoxPolicy, box_design, guess_mime_type
from helpers.context.strategies import strategy_named
from helpers.loop.dispatch import CallInProgress, dispatch
from helpers.loop.records import ToolCallRecord, new_tool_call_id
from helpers.loop.turn_state import TurnState
from helpers.mcp.settings import McpServerSpec
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.registry import ToolContext, ToolRegistry
from helpers.tooling.tools import default_registry

#: The name the server gives itself (``serverInfo.name``).
SERVER_NAME = "context-relay-workbook"
#: The strategy whose threshold rule and presentation the server follows.
SERVER_STRATEGY = "box-json"
#: How long a client may cache ``tools/list`` (the registry does not change while the server
#: runs) and ``resources/read`` (the bytes under a uri never change: each output has an id of
#: its own), in milliseconds (SEP-2549 caching hints, MCP 2026-07-28).
CACHE_TTL_MS = 3_600_000


def server_instructions(box_rule: str) -> str:
    """What the server tells its clients (the ``instructions`` of its server info), for the rule
    it boxes by (``over 1,000 tokens``)."""
    return (
        f"The Context Relay Workbook's tools. A result {box_rule} comes back as a resource link "
        "(uri internal://<id>) instead of its text, kept by this server for this session. To "
        "give that value to another of these tools, pass its uri, whole and exactly, as the "
        "argument value: the server puts the value in its place. To read it: resources/read "
        "(all of it), or internal_resource_length, internal_resource_read_slice, "
        "internal_resource_read_lines and internal_resource_grep for a part."
    )


#: The first protocol version with a ``resource_link`` content block (MCP 2025-06-18, "Tools ›
#: Resource links"): an older client gets the link as its JSON text in a text block instead.
FIRST_LINK_VERSION = "2025-06-18"


def new_session_id() -> str:
    """A fresh, unguessable session id: ``mcp_session_<16 hex>`` (the store's thread)."""
    return "mcp_session_" + ids.token_hex(8)


#: The settings a server the workbook starts takes from the process that starts it (the SDK
#: passes only HOME, LOGNAME, PATH, SHELL, TERM and USER on): where its data and store are, and
#: how large its offline documents are.
SETTINGS_PASSED_ON = (
    "WORKBOOK_VAR_DIR",
    "WORKBOOK_DB_URL",
    "WORKBOOK_DOCUMENT_SCALE",
    "TIKTOKEN_CACHE_DIR",
)


def workbook_server_spec(
    *,
    name: str = "workbook",
    db_url: str | None = None,
    threshold_tokens: int | None = None,
    tools: tuple[str, ...] | None = None,
) -> McpServerSpec:
    """``workbook mcp-server`` as an MCP client starts it from this process: this Python, the
    workbook's folder, and the settings of :data:`SETTINGS_PASSED_ON` that are set here.

    Args:
        name: the server's name (in messages and ``MCP_<NAME>_*``).
        db_url: its store (``--db``; default: ``WORKBOOK_DB_URL``, else ``var/``).
        threshold_tokens: its ``--threshold`` (default: ``box-json``'s).
        tools: the tools a client takes from it (``None``: all).
    """
    args = ["-m", "helpers.cli", "mcp-server"]
    if db_url is not None:
        args += ["--db", db_url]
    if threshold_tokens is not None:
        args += ["--threshold", str(threshold_tokens)]
    env = {key: os.environ[key] for key in SETTINGS_PASSED_ON if os.environ.get(key)}
    return McpServerSpec(
        name, sys.executable, tuple(args), env=env, cwd=str(workspace_dir()), tools=tools
    )


def server_policy(threshold_tokens: int | None = None) -> BoxPolicy:
    """The server's policy: :data:`SERVER_STRATEGY`'s box design (its threshold rule, MCP
    resource links), with the five resolve tools, all listed up front (a client lists a server's
    tools once) and every real tool offered.

    Args:
        threshold_tokens: box results longer than this many o200k_base tokens (``None``: the
            design's 1,000).

    Raises:
        ValueError: a negative threshold.
    """
    design = box_design(strategy_named(SERVER_STRATEGY).design or "")
    design = replace(
        design,
        name="mcp-server",
        resolve="five",
        offer_tools="always",
        task_tools="all",
        preview_chars=0,
        step="",
    )
    return BoxPolicy(threshold_tokens, "json", design)


def invalid_params(message: str, uri: str | None = None) -> MCPError:
    """A JSON-RPC ``-32602`` error saying ``message`` (with the ``uri`` as its data)."""
    return MCPError(types.INVALID_PARAMS, message, {"uri": uri} if uri is not None else None)


class WorkbookMcpServer:
    """One session of the workbook's MCP server: the registry, the policy, the store.

    Args:
        store: where every output is kept (under the thread :attr:`session_id`).
        registry: the real tools (default: :func:`helpers.tooling.tools.default_registry`).
        threshold_tokens: box results longer than this many tokens (default: ``box-json``'s).
        session_id: the session's id (default: a fresh one, :func:`new_session_id`).
        limits: the caps each call runs under (:class:`helpers.base.limits.TurnLimits`): the bytes
            one call may store, and the session's quota in the store.

    The synchronous methods (:meth:`list_tools`, :meth:`call_tool`, :meth:`read_resource`,
    :meth:`list_resources`) are the handlers' work; :attr:`server` is the SDK's server that
    calls them (in a worker thread each), and :meth:`serve_stdio` runs it.
    """

    def __init__(
        self,
        store: ToolOutputStore,
        *,
        registry: ToolRegistry | None = None,
        threshold_tokens: int | None = None,
        session_id: str | None = None,
        limits: TurnLimits | None = None,
    ):
        self.store = store
        self.policy = server_policy(threshold_tokens)
        self.tools = (registry or default_registry()).merged(self.policy.internal_tools())
        self.session_id = session_id or new_session_id()
        self.limits = limits or TurnLimits()
        self._one_call_at_a_time = threading.Lock()
        self._thread_started = False
        #: What :meth:`serve_stdio`'s transport is told as a handler ends (nothing elsewhere).
        self._handler_ended: Callable[[object], None] = lambda _request_id: None
        self.server: Server[Any] = Server(
            SERVER_NAME,
            version=workbook_version(),
            title="Context Relay Workbook",
            instructions=server_instructions(self.policy.design.rule()),
            cache_hints={
                "tools/list": CacheHint(ttl_ms=CACHE_TTL_MS, scope="public"),
                "resources/read": CacheHint(ttl_ms=CACHE_TTL_MS, scope="private"),
                "resources/list": CacheHint(ttl_ms=0, scope="private"),
            },
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            on_list_resources=self._on_list_resources,
            on_read_resource=self._on_read_resource,
        )

    # -- the work -------------------------------------------------------------------------------

    def list_tools(self) -> list[types.Tool]:
        """Every tool, as MCP describes one: the registry's schema as ``inputSchema``."""
        return [
            types.Tool(
                name=tool.name,
                description=tool.description,
                input_schema=tool.parameters,
                annotations=types.ToolAnnotations(read_only_hint=tool.read_only or tool.internal),
            )
            for tool in self.tools
        ]

    def dispatch(self, name: str, arguments: dict[str, Any] | None) -> ToolCallRecord:
        """Run one ``tools/call`` the way a turn runs a tool call, under a fresh
        ``tool_call_id``, in this session's thread; returns its record (never raises, but for
        Ctrl-C)."""
        ctx = ToolContext(store=self.store, thread_id=self.session_id, limits=self.limits)
        call_id = new_tool_call_id()
        try:
            raw = json.dumps(arguments or {}, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError, RecursionError):  # nested past what JSON text can hold
            unread = CallInProgress.start(call_id, name, "", None, ctx)
            return unread.refuse(f"arguments for {name} cannot be read as JSON; nothing was run")
        with self._one_call_at_a_time:
            if not self._thread_started:  # `workbook outputs list` shows the session
                self._thread_started = True
                self.store.ensure_thread(self.session_id)
            # each call a turn of its own: its state (bytes stored, references shown) starts anew
            return dispatch(call_id, name, raw, self.tools, self.policy, ctx, state=TurnState())

    def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        protocol_version: str = LATEST_PROTOCOL_VERSION,
    ) -> types.CallToolResult:
        """The MCP result of one call: a resource link (as text for a client of a protocol
        version before :data:`FIRST_LINK_VERSION`), a text, or a tool execution error."""
        return call_result(self.dispatch(name, arguments), protocol_version)

    def read_resource(self, uri: str) -> types.ReadResourceResult:
        """The stored output behind ``uri``, byte for byte, if this session made it.

        Raises:
            MCPError: ``-32602``: the uri is not ``internal://<id>``, nothing is stored under
                it, or another session made it.
        """
        row = self._row(uri)
        text = self.store.read_all(row.id)
        contents = types.TextResourceContents(uri=uri, mime_type=guess_mime_type(text), text=text)
        return types.ReadResourceResult(contents=[contents])

    def list_resources(self) -> list[types.Resource]:
        """The outputs this session's calls stored, oldest first, each under its uri (those
        given as resource links among them)."""
        return [
            types.Resource(
                uri=make_reference(row.ref_id), name=f"{row.tool_name} result", size=row.n_bytes
            )
            for row in self.store.list_thread(self.session_id)
        ]

    def _row(self, uri: str) -> Any:
        shown = uri if len(uri) <= 100 else uri[:97] + "..."
        try:
            ref_id = reference_id(uri) if uri.startswith(SCHEME) else None
        except ReferenceRefused:
            ref_id = None
        if ref_id is None or make_reference(ref_id) != uri:
            raise invalid_params(
                f"{shown!r} is not a resource of this server: its resources are internal://<id>, "
                "as a resource link gave them",
                uri,
            )
        try:
            return resolve_in_thread(self.store, self.session_id, ref_id)
        except ForeignReference:
            raise invalid_params(
                f"{shown} is not this session's: a resource link is valid only in the session "
                "whose tool call made it (it belongs to another session or thread of the store)",
                uri,
            ) from None
        except UnknownReference:
            raise invalid_params(
                f"no resource at {shown}: nothing is stored under it (never made, or pruned)",
                uri,
            ) from None

    # -- the SDK's handlers ---------------------------------------------------------------------

    async def _on_list_tools(
        self, _ctx: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.list_tools())

    async def _on_call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        version = getattr(ctx, "protocol_version", None) or LATEST_PROTOCOL_VERSION
        with self._handling(ctx):
            return await anyio.to_thread.run_sync(
                self.call_tool, params.name, params.arguments, version
            )

    async def _on_list_resources(
        self, ctx: Any, _params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        with self._handling(ctx):
            resources = await anyio.to_thread.run_sync(self.list_resources)
        return types.ListResourcesResult(resources=resources)

    async def _on_read_resource(
        self, ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        with self._handling(ctx):
            return await anyio.to_thread.run_sync(self.read_resource, params.uri)

    @contextlib.contextmanager
    def _handling(self, ctx: Any) -> Iterator[None]:
        """Tell the transport when a handler running in a worker thread ends, however it ends
        (a cancelled request's thread runs on to its end, and holds its place till then)."""
        try:
            yield
        finally:
            self._handler_ended(getattr(ctx, "request_id", None))

    async def serve_stdio(self) -> None:
        """Serve this session over the process's stdin and stdout until the client closes
        stdin, within the bounds of :mod:`helpers.mcp.stdio_transport` (a line's bytes and
        values, requests in flight, an answer to every line it cannot read); fd 1 points at
        stderr meanwhile, so nothing a tool prints reaches the wire."""
        from helpers.mcp.stdio_transport import bounded_stdio

        async with bounded_stdio() as (read_stream, write_stream, handler_ended):
            self._handler_ended = handler_ended
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )


def call_result(
    record: ToolCallRecord, protocol_version: str = LATEST_PROTOCOL_VERSION
) -> types.CallToolResult:
    """What ``tools/call`` returns for a dispatched call: a tool execution error (``isError``)
    with the reason, the resource link the policy made of a long result (a client of a version
    before :data:`FIRST_LINK_VERSION` has no such block: it gets the link's JSON text, as the
    ``box-json`` strategy shows it to a model), or the text."""
    if record.result_kind == "error":
        message = record.error or record.result
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)], is_error=True
        )
    if record.result_kind == "boxed" and is_version_at_least(protocol_version, FIRST_LINK_VERSION):
        link = types.ResourceLink.model_validate(json.loads(record.result))
        return types.CallToolResult(content=[link])
    return types.CallToolResult(content=[types.TextContent(type="text", text=record.result)])
