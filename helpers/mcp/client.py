"""The agent as an MCP client: MCP servers' tools in the registry, their results under the policy.

Each server (:class:`~helpers.mcp.settings.McpServerSpec`, from ``.env``:
:func:`~helpers.mcp.settings.mcp_servers_from_env`) is started over stdio behind the output
guard (:mod:`helpers.mcp.stdio_guard`) and connected with the official SDK's
:class:`mcp.Client` (2026-07-28, or the initialize handshake of an older server), on an event
loop of its own in a thread (anyio's blocking portal), so the synchronous turn calls it like any
tool. :class:`McpServers` starts several and closes them::

    with McpServers(mcp_servers_from_env(load_env())) as servers:
        agent = Agent(client, model, build_policy("box"), servers.registry(default_registry()), store)

Each tool a server lists becomes a :class:`~helpers.tooling.registry.Tool` whose ``server`` is
the server's name and whose schema is the server's ``inputSchema``. Its arguments are checked
against that schema before the call is sent (:mod:`helpers.tooling.argument_checks`: jsonschema
in the schema's dialect, its patterns on RE2, no ``$ref`` fetched, a bounded number of steps),
so a call that does not fit is an error result for the model and never reaches the server.
Calling it sends ``tools/call`` and makes one text of the result (:func:`helpers.mcp.content.mcp_result_text`: a
resource link read through ``resources/read``), and from there the call is the turn's like any
other (:func:`helpers.loop.dispatch.dispatch`): references in its arguments are unboxed before
it is sent, its output is kept in the store, and the model sees what the policy makes of it: a
preview, a reference, or all of it.

What a server sends is untrusted, and bounded: each request within the server's timeout; each
message within the guard's limit; a tool's description cut to :data:`MAX_DESCRIPTION_CHARS`,
its schema at most :data:`MAX_SCHEMA_BYTES` and valid JSON Schema of a dialect jsonschema knows
(checked against its metaschema, at most :data:`MAX_SCHEMA_CHECK_STEPS` steps for all of a
server's schemas: those past it join unchecked), every ``$ref`` in it leading to a schema within
it (no ``$ref`` is fetched, so a call of a tool whose schema refers elsewhere could never be
checked: such a tool is left out), at most ``spec.max_tools`` tools adding at
most ``spec.max_tool_bytes`` to every request (``MCP_<NAME>_MAX_TOOLS``,
``..._MAX_TOOL_BYTES``). A
server that does not start, dies, hangs or answers with something that is not MCP raises
:class:`McpServerError` saying which and why, with the end of what it wrote on stderr; during a
turn that is an error result, and the turn goes on.

Which tools join (the MCP spec, "Tools › Tool Names"): of the tools ``MCP_<NAME>_TOOLS`` names
(all by default), at most ``spec.max_tools``, those whose names a chat-completions
function can have come first; a name it cannot have (a dot, over 64 characters) is offered with
``_`` in place of each character it cannot hold, cut to 64, and left out if that name is taken;
a name one of the workbook's own model-only tools has (``fetch_tool_output``, the resolve tools,
``tool_search``, ``run_program``) is left out, as the client's own (the workbook's own server
lists its resolve tools: they look inside the server's references, which the model never sees);
two servers offering one name is a :class:`~helpers.mcp.settings.McpConfigError` (give one a
prefix); a server's tool of the same name as one of the workbook's stands in for it. Each is
said in :attr:`McpServer.notes` (:meth:`McpServers.notes` adds the tools that stand in).

A variable of a server's environment whose name looks secret (``GITHUB_TOKEN``,
``PGPASSWORD``), and the password of a URL in it (:func:`helpers.text.redaction.secrets_of`), is
redacted from everything the server sends (its tools' descriptions and schemas, its results, its
errors and its stderr as an error quotes it) (:attr:`McpServer.secrets`).
"""

from __future__ import annotations

import json
import logging
import math
import re
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractContextManager, asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeVar

import anyio
import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from helpers.base.paths import workbook_version, workspace_dir
from helpers.context.code_mode import RUN_PROGRAM
from helpers.context.modes import MODEL_ONLY_TOOLS
from helpers.context.tool_search import TOOL_SEARCH_NAME
from helpers.mcp import stdio_guard
from helpers.mcp.content import McpToolError, cut, mcp_result_text
from helpers.mcp.settings import (
    DEFAULT_MAX_TOOLS,
    McpConfigError,
    McpServerError,
    McpServerSpec,
    setting,
)
from helpers.mcp.stdio_guard import DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_STDERR_BYTES
from helpers.models.replies import map_strings
from helpers.text.redaction import MIN_SECRET_CHARS, configured_secrets, redact, secrets_of
from helpers.tooling.argument_checks import SchemaCheck, check_input_schema
from helpers.tooling.registry import Tool, ToolRegistry

#: A tool's description is cut to this many characters (the model reads it on every call).
MAX_DESCRIPTION_CHARS = 8_000
#: A tool's input schema may be at most this many bytes of JSON; a longer one leaves it out.
MAX_SCHEMA_BYTES = 64_000
#: Steps all of one server's input schemas may take to be checked against their metaschemas and
#: their references resolved (:func:`helpers.tooling.argument_checks.check_input_schema`): a
#: schema of ``MAX_SCHEMA_BYTES`` takes about 70,000 of the ordinary kind; a tool whose schema is
#: not checked within them joins.
MAX_SCHEMA_CHECK_STEPS = 1_000_000
#: ``tools/list`` pages read at most (a server whose cursor never ends cannot hang the start).
MAX_LIST_PAGES = 20
#: How much of the end of a server's stderr an error quotes, in characters.
STDERR_TAIL_CHARS = 1_000
#: A server's JSON-RPC error message (or an exception's) is cut to this many characters.
MAX_MESSAGE_CHARS = 500
#: What a chat-completions function name may be.
FUNCTION_NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")
#: Names the workbook's own strategies give tools for the model: a server's tool may not take one.
RESERVED_TOOL_NAMES = MODEL_ONLY_TOOLS | {TOOL_SEARCH_NAME, RUN_PROGRAM}
#: Who the client says it is (``clientInfo``).
CLIENT_INFO = types.Implementation(name="context-relay-workbook", version=workbook_version())

_T = TypeVar("_T")

# The SDK logs a server's bad line, a notification it cannot read or a dropped stream with its
# traceback (its loggers "mcp…" and, for the client session, "client"); the client says what
# went wrong in the call's error result instead, so the SDK's records reach no console unless
# the application configures logging itself (the logging HOWTO's advice for libraries).
SDK_LOGGERS = ("mcp", "client")
for _name in SDK_LOGGERS:
    logging.getLogger(_name).addHandler(logging.NullHandler())


#: What makes one text of a ``tools/call`` result, given ``resources/read`` on its server.
TextOf = Callable[[types.CallToolResult, Callable[[str], types.ReadResourceResult]], str]


def _sdk_says(exc: BaseException, code: int) -> bool:
    """Whether ``exc`` is the SDK's own ``CONNECTION_CLOSED`` or ``REQUEST_TIMEOUT`` (its
    words, ``mcp/shared/jsonrpc_dispatcher.py``), not a server's error that uses the same code
    (-32000 is the usual code of a server's own failure)."""
    if not isinstance(exc, MCPError) or exc.code != code:
        return False
    if code == types.CONNECTION_CLOSED:
        return exc.message == "Connection closed"
    return exc.message.startswith("Request ") and exc.message.endswith(" timed out")


def _first_error(exc: ValidationError) -> str:
    """Where a result broke the schema, and how: ``tools.3.inputSchema.type: Input should be
    'object'`` (of how many)."""
    errors = exc.errors(include_url=False)
    if not errors:
        return type(exc).__name__
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    more = f", and {len(errors) - 1} more" if len(errors) > 1 else ""
    return cut(f"{exc.title}: {where}: {first.get('msg', '')}{more}", MAX_MESSAGE_CHARS)


async def _taken_as_text(name: str, result: types.CallToolResult) -> None:
    """In place of the SDK's check of a result against its tool's ``outputSchema``: none (see
    :meth:`McpServer._session`)."""


class McpServer:
    """One MCP server, started over stdio, for synchronous code (:meth:`start`,
    :meth:`call_tool`, :meth:`read_resource`, :meth:`close`).

    Args:
        spec: what to start and how long a request may take.
        max_message_bytes: the longest message the guard passes on (a longer answer is an error
            of that call).
        text_of: makes one text of a ``tools/call`` result, given ``resources/read`` (default
            :func:`helpers.mcp.content.mcp_result_text`; notebook 09 gives the attendee's).

    Attributes:
        tools: its tools as the registry takes them (after :meth:`start`).
        notes: what a user should know of them: tools left out or renamed, descriptions cut.
        secrets: the values redacted from what it sends back and from every error about it.
    """

    def __init__(
        self,
        spec: McpServerSpec,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        text_of: TextOf = mcp_result_text,
    ):
        self.spec = spec
        self.max_message_bytes = max_message_bytes
        self.text_of = text_of
        #: values of the server's environment whose names look secret (``MCP_<NAME>_ENV`` or
        #: ``spec.env``): redacted from its results and from every error that quotes it
        self.secrets = (
            tuple(v for v in secrets_of(spec.env) if len(v) >= MIN_SECRET_CHARS)
            + configured_secrets()
        )
        self._stopped: str | None = None  # why the server stopped, once it has
        self.tools: list[Tool] = []
        self.notes: list[str] = []
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._session_cm: AbstractContextManager[Client] | None = None
        self._client: Client | None = None
        self._errlog: IO[str] | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"McpServer({self.spec.name!r}, {self.spec.command_line()!r})"

    # -- starting and stopping ------------------------------------------------------------------

    def start(self) -> McpServer:
        """Start the server, connect, and read its tools; returns ``self``.

        Raises:
            McpServerError: it could not be started, or did not answer ``server/discover`` (or
                ``initialize``) and ``tools/list`` within its timeout, or answered with
                something that is not MCP. Nothing is left running.
        """
        if self._portal is not None:
            return self
        # the server's stderr (bounded by the guard), kept until close() for error messages
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            self._session_cm = self._portal.wrap_async_context_manager(self._session())
            self._client = self._session_cm.__enter__()
        except BaseException as exc:
            self._session_cm = None
            if isinstance(exc, KeyboardInterrupt):
                self.close()
                raise
            failure = self._failure("did not start", exc)  # before close() drops its stderr
            self.close()
            raise failure from None
        try:
            self.tools = self._tools_of(self._request(self._list_tools, "tools/list"))
        except BaseException:
            self.close()
            raise
        return self

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[Client]:
        spec = self.spec
        guard = [
            "-I",  # the guard is one file of the standard library's modules: no PYTHON* settings
            str(Path(stdio_guard.__file__)),
            f"--max-message-bytes={self.max_message_bytes}",
            f"--max-stderr-bytes={DEFAULT_MAX_STDERR_BYTES}",
            "--",
            spec.command,
            *spec.args,
        ]
        params = StdioServerParameters(
            command=sys.executable,
            args=guard,
            env=dict(spec.env),
            cwd=spec.cwd or str(workspace_dir()),
        )
        assert self._errlog is not None
        client = Client(
            stdio_client(params, errlog=self._errlog),
            read_timeout_seconds=spec.timeout_s,
            client_info=CLIENT_INFO,
            # no response cache: each link is read once, into the store, and the SDK's cache
            # would keep up to 1,024 answers of up to the guard's limit each in memory
            cache=None,
        )
        # the start (the 2026-07-28 probe, then the initialize handshake for an older server)
        # gets one timeout in all; the scope encloses the whole session, so it closes in order
        with anyio.CancelScope(deadline=anyio.current_time() + spec.timeout_s) as started:
            async with client:
                started.deadline = math.inf
                # the SDK checks structuredContent against the server's outputSchema with
                # jsonschema, whose patterns run on Python's backtracking engine: one pattern
                # of a server's (^(a+)+$) would hold the agent beyond every timeout. The client
                # decides nothing on it (it is text for the policy, like any output), so it is
                # not checked (the spec's "clients SHOULD validate", knowingly not followed)
                client.session.validate_tool_result = _taken_as_text  # type: ignore[method-assign]
                yield client
        if started.cancelled_caught:
            raise TimeoutError(f"no answer within {spec.timeout_s:g} s")

    def close(self) -> None:
        """Stop the server (its stdin closed, then the SDK's bounded wait and kill) and the
        client's event loop; safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._session_cm is not None:
                self._session_cm.__exit__(None, None, None)
        except Exception:  # a server that died leaves its streams broken: nothing to stop
            pass
        finally:
            if self._portal_cm is not None:
                self._portal_cm.__exit__(None, None, None)
            if self._errlog is not None:
                self._errlog.close()

    def __enter__(self) -> McpServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests -------------------------------------------------------------------------------

    def call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Call the server's tool ``name`` (its own name) and return the text of its result
        (:func:`helpers.mcp.content.mcp_result_text`; a resource link read through
        :meth:`read_resource`).

        Raises:
            McpServerError: the server did not answer in time, stopped, refused the call or
                answered with something that is not MCP.
            McpToolError: it ran the tool and reports an error (``isError``).
            McpResultTooLarge: the result, with what it links to, is too large.
        """
        client = self._live()
        result = self._request(lambda: client.call_tool(name, arguments), f"tools/call {name}")
        try:
            text = self.text_of(result, self.read_resource)
        except McpToolError as exc:  # the server's words: a key it was given never goes on
            raise McpToolError(redact(str(exc), self.secrets)) from None
        return redact(text, self.secrets)

    def read_resource(self, uri: str) -> types.ReadResourceResult:
        """``resources/read`` of ``uri``.

        Raises:
            McpServerError: as :meth:`call_tool` (the server's own reason, e.g. an unknown uri).
        """
        client = self._live()
        return self._request(lambda: client.read_resource(uri), "resources/read")

    def _live(self) -> Client:
        if self._stopped is not None:
            raise McpServerError(
                f"the MCP server {self.spec.name!r} is not running: it stopped earlier "
                f"({self._stopped})"
            )
        if self._client is None or self._closed:
            raise McpServerError(f"the MCP server {self.spec.name!r} is not running")
        return self._client

    async def _list_tools(self) -> list[types.Tool]:
        client = self._live()
        listed: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page = await client.list_tools(cursor=cursor)
            listed.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                return listed
        self.notes.append(
            f"its tool list goes on past {MAX_LIST_PAGES} pages: the rest is not read"
        )
        return listed

    def _request(self, send: Callable[[], Awaitable[_T]], what: str) -> _T:
        """``send()`` on the client's event loop, within the server's timeout; every failure
        an :class:`McpServerError` saying which."""
        assert self._portal is not None
        limit = self.spec.timeout_s

        async def bounded() -> _T:
            with anyio.fail_after(limit + 1.0):  # the SDK's own read timeout comes first
                return await send()

        mark = self._stderr_size()
        try:
            return self._portal.call(bounded)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:
            raise self._failure(f"failed on {what}", exc, stderr_from=mark) from None

    def _failure(self, doing: str, exc: BaseException, *, stderr_from: int = 0) -> McpServerError:
        """The error for a request (or the start) that failed with ``exc`` (the first
        exception inside a task group's group); when the server answered nothing, with the end
        of what it wrote on stderr since byte ``stderr_from`` of its log."""
        while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
            exc = exc.exceptions[0]
        name = self.spec.name
        answered = False
        if isinstance(exc, TimeoutError) or _sdk_says(exc, types.REQUEST_TIMEOUT):
            reason = f"no answer within {self.spec.timeout_s:g} s ({setting(name, 'TIMEOUT')})"
        elif (_sdk_says(exc, types.CONNECTION_CLOSED) and not self._still_answers()) or isinstance(
            exc, anyio.ClosedResourceError | anyio.BrokenResourceError
        ):
            reason = "the connection closed: the server stopped"
        elif isinstance(exc, MCPError):
            reason = f"it answered with error {exc.code}: {cut(exc.message, MAX_MESSAGE_CHARS)}"
            answered = True
        elif isinstance(exc, ValidationError):
            reason = f"it answered with something that is not MCP ({_first_error(exc)})"
            answered = True
        else:
            reason = f"{type(exc).__name__}: {cut(str(exc), MAX_MESSAGE_CHARS)}"
        tail = "" if answered else self.stderr_tail(stderr_from)
        said = f"; its stderr ends: {tail}" if tail else ""
        if reason.startswith("the connection closed"):
            self._stopped = f"{doing}{said}"
        message = redact(f"the MCP server {name!r} {doing}: {reason}{said}", self.secrets)
        return McpServerError(message)

    def _still_answers(self) -> bool:
        """Whether the server still answers (``tools/list``, not from the cache, within the
        server's timeout: a busy machine must not make a live server look stopped; MCP
        2026-07-28 removed ``ping``): a server (a gateway forwarding another's failure) may send
        the SDK's own words for a closed connection."""
        client, portal = self._client, self._portal
        if client is None or portal is None or self._closed:
            return False

        async def ping() -> None:
            with anyio.fail_after(self.spec.timeout_s):
                await client.list_tools(cache_mode="bypass")

        try:
            portal.call(ping)
        except Exception:
            return False
        return True

    def _stderr_size(self) -> int:
        log = self._errlog
        if log is None or log.closed:
            return 0
        try:
            log.flush()
            return log.seek(0, 2)
        except (OSError, ValueError):
            return 0

    def stderr_tail(self, start: int = 0) -> str:
        """The last lines of what the server (and its guard) wrote on stderr from byte
        ``start`` of its log on, on one line of at most :data:`STDERR_TAIL_CHARS`."""
        log = self._errlog
        if log is None or log.closed:
            return ""
        try:
            end = self._stderr_size()
            log.seek(max(start, end - 4 * STDERR_TAIL_CHARS))
            text = log.read()
        except (OSError, ValueError):
            return ""
        lines = [" ".join(line.split()) for line in text.splitlines() if line.strip()]
        joined = " | ".join(lines)
        return joined if len(joined) <= STDERR_TAIL_CHARS else "…" + joined[-STDERR_TAIL_CHARS:]

    # -- its tools ------------------------------------------------------------------------------

    def _tools_of(self, listed: list[types.Tool]) -> list[Tool]:
        """The registry's tools for what ``tools/list`` gave (the rules of the module doc):
        the tools ``MCP_<NAME>_TOOLS`` names (all by default), those whose names a function
        can have first, then the renamed ones, at most ``spec.max_tools``, as long as together
        they add at most ``spec.max_tool_bytes`` to a request, each input schema valid JSON
        Schema (:meth:`_valid_schema`)."""
        spec, notes = self.spec, self.notes
        if spec.tools is not None:
            missing = sorted(set(spec.tools) - {item.name for item in listed})
            if missing:
                notes.append(
                    f"{setting(spec.name, 'TOOLS')} names {', '.join(map(repr, missing))}, "
                    "which it does not list"
                )
            listed = [item for item in listed if item.name in spec.tools]
        if len(listed) > spec.max_tools:
            notes.append(
                f"it lists {len(listed)} tools: only the first {spec.max_tools} are considered "
                f"({setting(spec.name, 'MAX_TOOLS')} sets how many, up to {DEFAULT_MAX_TOOLS})"
            )
            listed = listed[: spec.max_tools]
        added_bytes, over_bytes = 0, []
        named = [(spec.prefix + item.name, item) for item in listed]
        fitting = [(n, item, False) for n, item in named if FUNCTION_NAME_RE.fullmatch(n)]
        renamed = [
            (re.sub(r"[^A-Za-z0-9_-]", "_", n)[:64] or "_", item, True)
            for n, item in named
            if not FUNCTION_NAME_RE.fullmatch(n)
        ]
        tools: dict[str, Tool] = {}
        check_steps, unchecked, checked = [MAX_SCHEMA_CHECK_STEPS], [], {}
        for name, item, was_renamed in [*fitting, *renamed]:
            if was_renamed:
                notes.append(
                    f"{item.name!r} is offered as {name!r} (the characters and length a "
                    "function name may have)"
                )
            if redact(name, self.secrets) != name:
                notes.append("a tool is left out: its name holds a key the server was given")
                continue
            if name in RESERVED_TOOL_NAMES:
                notes.append(f"{name!r} is left out: the workbook's strategies give that name")
                continue
            if name in tools:
                notes.append(
                    f"{item.name!r} is left out: {name!r} is taken by another of its tools"
                )
                continue
            schema = map_strings(item.input_schema, lambda text: redact(text, self.secrets))
            size = len(json.dumps(schema, ensure_ascii=False, default=str).encode())
            if schema.get("type") != "object" or size > MAX_SCHEMA_BYTES:
                why = f"is {size:,} bytes" if size > MAX_SCHEMA_BYTES else "is not an object's"
                notes.append(f"{item.name!r} is left out: its input schema {why}")
                continue
            description = redact(item.description or item.title or "", self.secrets)
            if len(description) > MAX_DESCRIPTION_CHARS:
                notes.append(
                    f"{item.name!r}'s description is cut to {MAX_DESCRIPTION_CHARS:,} characters"
                )
                description = cut(description, MAX_DESCRIPTION_CHARS)
            offered = {"name": name, "description": description, "parameters": schema}
            tool_bytes = len(json.dumps(offered, ensure_ascii=False, default=str).encode())
            if added_bytes + tool_bytes > spec.max_tool_bytes:
                over_bytes.append(item.name)
                continue
            if not self._valid_schema(item.name, schema, check_steps, unchecked, checked):
                continue
            added_bytes += tool_bytes
            tools[name] = Tool(
                name=name,
                description=description,
                parameters=schema,
                fn=self._caller(item.name),
                server=spec.name,
            )
        self._note_left_over(over_bytes, added_bytes, unchecked)
        return list(tools.values())

    def _valid_schema(
        self,
        name: str,
        schema: dict[str, Any],
        steps_left: list[int],
        unchecked: list[str],
        seen: dict[str, SchemaCheck],
    ) -> bool:
        """Whether tool ``name``'s input schema is valid JSON Schema of a dialect jsonschema
        knows whose every ``$ref`` resolves within it (the MCP spec's "JSON Schema Usage":
        :func:`check_input_schema`), checked within
        the server's ``steps_left`` (a schema not checked within them joins, named in
        ``unchecked``; one already ``seen``, another tool's, is not checked again); a note says
        why one is left out."""
        text = json.dumps(schema, sort_keys=True, default=str)
        checked = seen.get(text) or check_input_schema(schema, steps_left[0])
        if text not in seen:
            seen[text] = checked
            steps_left[0] -= checked.steps
        if checked.problems:
            self.notes.append(f"{name!r} is left out: its input schema {checked.problems[0]}")
            return False
        if not checked.finished:
            unchecked.append(name)
        return True

    def _note_left_over(
        self, over_bytes: list[str], added_bytes: int, unchecked: list[str]
    ) -> None:
        """The notes of the tools left out for the bytes they would add to every request, and
        of those whose input schemas were not checked to the end (their metaschemas, their
        references)."""
        spec = self.spec
        if unchecked:
            self.notes.append(
                f"the input schemas of {len(unchecked)} of its tools were not checked to the "
                "end against their metaschemas and for references that lead nowhere "
                f"({', '.join(map(repr, unchecked[:5]))}"
                f"{', …' if len(unchecked) > 5 else ''}): the client takes at most "
                f"{MAX_SCHEMA_CHECK_STEPS:,} steps for all of a server's schemas"
            )
        if over_bytes:
            self.notes.append(
                f"{len(over_bytes)} of its tools are left out ({', '.join(map(repr, over_bytes[:5]))}"
                f"{', …' if len(over_bytes) > 5 else ''}): each would have taken its tools "
                f"past the {spec.max_tool_bytes:,} bytes they may add to every request (those "
                f"taken add {added_bytes:,}; {setting(spec.name, 'MAX_TOOL_BYTES')} raises it)"
            )

    def _caller(self, server_name: str) -> Callable[..., str]:
        def call(**arguments: Any) -> str:
            return self.call_tool(server_name, arguments)

        call.__name__ = server_name
        return call


class McpServers:
    """The MCP servers of a run: started together, their tools joined, stopped together.

    Args:
        specs: the servers (:func:`helpers.mcp.settings.mcp_servers_from_env`).
        text_of: what makes one text of a result (:class:`McpServer`).

    ``with McpServers(specs) as servers:`` starts them (:meth:`start`) and stops them on the way
    out, whatever happened.
    """

    def __init__(self, specs: Iterable[McpServerSpec], *, text_of: TextOf = mcp_result_text):
        self.servers = [McpServer(spec, text_of=text_of) for spec in specs]

    def start(self) -> McpServers:
        """Start every server, in order; returns ``self``.

        Raises:
            McpServerError: one did not start (the others are stopped again).
            McpConfigError: two servers offer a tool of the same name.
        """
        try:
            for server in self.servers:
                server.start()
            self._check_names()
        except BaseException:
            self.close()
            raise
        return self

    def _check_names(self) -> None:
        owner: dict[str, str] = {}
        for server in self.servers:
            for tool in server.tools:
                other = owner.setdefault(tool.name, server.spec.name)
                if other != server.spec.name:
                    raise McpConfigError(
                        f"the MCP servers {other!r} and {server.spec.name!r} both offer "
                        f"{tool.name!r}: set {setting(server.spec.name, 'PREFIX')} (e.g. "
                        f"{server.spec.name}_) or name the tools to take in "
                        f"{setting(server.spec.name, 'TOOLS')}"
                    )

    def close(self) -> None:
        """Stop every server."""
        for server in self.servers:
            server.close()

    def __enter__(self) -> McpServers:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def tools(self) -> list[Tool]:
        """Every server's tools, in the order the servers are named."""
        return [tool for server in self.servers for tool in server.tools]

    def registry(self, base: ToolRegistry) -> ToolRegistry:
        """``base`` with the servers' tools; a server's tool stands in for a tool of ``base``
        of the same name (said in :meth:`notes`)."""
        return base.merged(self.tools())

    def notes(self, base: ToolRegistry | None = None) -> dict[str, list[str]]:
        """What a user should know, by server name: each server's notes and (given ``base``)
        which of ``base``'s tools a server's tool stands in for."""
        said = {server.spec.name: list(server.notes) for server in self.servers}
        for server in self.servers:
            for tool in server.tools:
                if base is not None and tool.name in base:
                    said[server.spec.name].append(
                        f"its {tool.name!r} stands in for the workbook's own"
                    )
        return said
