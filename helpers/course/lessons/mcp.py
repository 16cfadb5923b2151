"""Notebook 09's plumbing (``solutions/09_real_mcp.ipynb``): the workbook's MCP server as the
notebook starts it, the tables of what came back, the agent's runs on an MCP server's tools and
their verdict, and a server that fails.

The MCP calls the lesson teaches stay in the notebook's cells (``list_tools``, ``call_tool``, the
resource link, ``read_resource``, :class:`~helpers.mcp.client.McpServers` with the attendee's
``mcp_result_text``); what is here starts the servers, shows their answers and runs the turns.
Everything a server or a model wrote reaches the page through
:func:`helpers.text.escaping.for_terminal`.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from helpers.cases.case_files import load_cases
from helpers.course.choices import deep_check_received, explain_choice
from helpers.evaluation.runs import run_case
from helpers.mcp.client import McpServers
from helpers.mcp.server import workbook_server_spec
from helpers.mcp.settings import McpServerSpec
from helpers.models.llm import ModelConfig, make_client
from helpers.text.escaping import for_terminal
from helpers.tooling.registry import ToolRegistry
from helpers.tooling.tools import default_registry

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

    from helpers.loop.records import TurnRecord
    from helpers.store.tool_outputs import ToolOutputStore

#: The server's tool whose result :func:`print_mcp_turns` reports: the transcript.
TRANSCRIPT_TOOL = "yt_transcribe"


class McpServerLauncher:
    """``workbook mcp-server`` as notebook 09 starts it over stdio: each :meth:`connect` starts
    a server process of its own (over stdio, one process serves one client: a session of its
    own), and everything the servers write on stderr goes to one log, read by :meth:`print_log`.

    Args:
        spec: the server to start (default: :func:`helpers.mcp.server.workbook_server_spec`,
            this Python, the workbook's folder and this process's store settings).

    The log is a temporary file, open as long as this object lives (a notebook's own stderr is
    not a file the SDK can hand a subprocess).
    """

    def __init__(self, spec: McpServerSpec | None = None) -> None:
        self.spec = spec or workbook_server_spec()
        self.log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (every server's stderr, for print_log)

    def describe(self) -> str:
        """The command line a client starts, quoted as a shell takes it and escaped for the
        page (:func:`helpers.text.escaping.for_terminal`)."""
        return for_terminal(self.spec.command_line())

    def connect(self) -> Client:
        """The SDK's client of a new server process (``async with launcher.connect() as mcp:``
        starts it, and stops it on the way out); its stderr goes to the log."""
        from mcp import Client
        from mcp.client.stdio import stdio_client

        return Client(stdio_client(self.spec.stdio_parameters(), errlog=self.log))

    async def read_in_a_new_session(self, uri: str) -> None:
        """Start another server (another session) and ask it for ``uri`` with
        ``resources/read``; print what it said: the MCP error's code and message when it
        refuses (escaped), or that it read it."""
        from mcp.shared.exceptions import MCPError

        async with self.connect() as other:
            try:
                await other.read_resource(uri)
                print("another session read it")
            except MCPError as refused:
                print(f"another session: error {refused.code}: {for_terminal(refused.message)}")

    def print_log(self) -> None:
        """Print each line the servers wrote on stderr so far (each names the session it
        serves), escaped."""
        self.log.seek(0)
        for line in self.log.read().splitlines():
            print("a server said:", for_terminal(line))


def print_mcp_tools(listed: mcp_types.ListToolsResult, *, protocol: str | None) -> None:
    """Print ``tools/list``'s answer: the protocol version the server agreed (``protocol``),
    then one line per tool: its name, ``reads`` (its ``readOnlyHint``) or ``acts``, and the
    first line of its description (a server's text, the version too: escaped)."""
    print(f"protocol {for_terminal(str(protocol))}, {len(listed.tools)} tools:")
    for tool in listed.tools:
        kind = "reads" if tool.annotations and tool.annotations.read_only_hint else "acts"
        first = (tool.description or "").splitlines()[:1]
        print(f"  {for_terminal(tool.name):30} {kind:5}  {for_terminal(''.join(first))}")


def print_resource_link(link: mcp_types.ResourceLink) -> None:
    """Print a resource link as it came over the wire (its JSON, fields by their wire names,
    escaped)."""
    wire = link.model_dump_json(by_alias=True, exclude_none=True)
    print("tools/call gave:", for_terminal(wire))


def print_resource_read(text: str, tool: str, arguments: Mapping[str, Any]) -> None:
    """Print what ``resources/read`` gave (``text``: its length in characters and in UTF-8
    bytes) and whether it is the very output of the workbook's own ``tool`` called here with
    ``arguments``.

    Raises:
        KeyError: ``tool`` is not one of the workbook's tools.
    """
    own = default_registry().get(tool).call(dict(arguments))
    print(
        f"resources/read gave {len(text):,} characters ({len(text.encode()):,} bytes); "
        f"the same as the tool's own output: {text == own}"
    )


def print_mcp_notes(servers: McpServers, base: ToolRegistry) -> None:
    """Print each server's notes (a tool left out or renamed, one that stands in for a tool of
    ``base``), one line per server, escaped."""
    for name, notes in servers.notes(base).items():
        print(for_terminal(f"MCP server {name}: " + "; ".join(notes)))


def run_mcp_case(
    case_id: str,
    strategies: Iterable[str],
    registry: ToolRegistry,
    config: ModelConfig,
    store: ToolOutputStore,
) -> dict[str, TurnRecord]:
    """Run case ``case_id``'s prompt once under each strategy, in a fresh thread each, with the
    tools of ``registry`` (an MCP server's among them) and the model ``config`` names; the
    whole outputs go to ``store``.

    Returns:
        strategy → the turn's record, in the order of ``strategies``.

    Raises:
        KeyError: no case has the id ``case_id``.
    """
    case = {c.id: c for c in load_cases()}[case_id]
    client = make_client(config)
    return {
        strategy: run_case(
            case, strategy, client=client, model=config.model, store=store, registry=registry
        ).record
        for strategy in strategies
    }


def print_mcp_turns(turns: Mapping[str, TurnRecord]) -> None:
    """One line per strategy: the turn's status, its prompt tokens, and what the model saw of
    the transcript, the first :data:`TRANSCRIPT_TOOL` call's result (its kind and length in
    characters, the error when the call failed, e.g. when ``mcp_result_text`` raised;
    escaped)."""
    for strategy, turn in turns.items():
        seen = next((c for c in turn.tool_calls if c.name == TRANSCRIPT_TOOL), None)
        shown = f"{seen.result_kind}, {len(seen.result):,} characters" if seen else "not called"
        if seen is not None and seen.result_kind == "error":
            shown += f" ({for_terminal(seen.error or '')})"
        print(
            f"{strategy:7} {turn.status}: {turn.usage()['prompt_tokens']:,} prompt tokens; "
            f"the model saw the transcript: {shown}"
        )


def explain_mcp_deep_check(boxed: TurnRecord, transcript: str) -> None:
    """Print how many characters ``deep_check`` (run in the server) received in the ``boxed``
    turn against the length of ``transcript`` (what ``resources/read`` gave), then the verdict
    (:func:`helpers.course.choices.explain_choice`): did every byte arrive, by length and by the
    SHA-256 prefix ``deep_check`` reports?

    Raises:
        AssertionError: the model chose otherwise while ``WORKBOOK_REFERENCE_CHOICES_ONLY=1``.
    """
    received = deep_check_received(boxed)
    digest = hashlib.sha256(transcript.encode()).hexdigest()[:16]  # what deep_check reports
    reports = [
        c.result for c in boxed.tool_calls if c.name == "deep_check" and c.result_kind != "error"
    ]
    print(f"deep_check received {received} characters; the transcript has {len(transcript):,}")
    explain_choice(
        received == [len(transcript)] and any(f"sha256 {digest}" in r for r in reports),
        expected="the model passed the reference whole, the client put the transcript in its "
        "place, and deep_check, in the server, received every byte while the model saw a "
        "reference.",
        otherwise=f"the model routed the transcript another way (deep_check received {received}; "
        f"its calls: {[(c.name, c.result_kind) for c in boxed.tool_calls]}): the guards' error "
        "results say what it did, and nothing but the whole transcript counts as the transcript.",
    )


def broken_mcp_server(reason: str = "cannot open the database") -> McpServerSpec:
    """A server named ``broken`` that exits at once, writing ``reason`` on stderr (this Python,
    ``sys.exit(reason)``); its 60-second timeout is only a guard against a hang."""
    program = f"import sys; sys.exit({reason!r})"
    return McpServerSpec("broken", sys.executable, ("-c", program), timeout_s=60)
