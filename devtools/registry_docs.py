"""The docs' lists of the workbook's registries, written from the registries themselves.

``make figures`` writes each into its block (``<!-- figures:profiles -->`` in docs/models.md,
``strategies`` in docs/cli.md, ``tools`` in docs/tools.md), and ``make test`` fails when a page
is stale, so a new provider profile, strategy or tool reaches the docs with no prose edit:

- :data:`helpers.models.providers.PROFILES`: each provider profile, the hosts that pick it, the form of
  the tool-call ids it gets, its completion-limit field and default, and its message order;
- :data:`helpers.context.strategies.STRATEGY_REGISTRY`: each strategy, its family, its role in
  the comparison and its line for people;
- :func:`helpers.tooling.tools.default_registry` and the model-only tools of the strategies:
  each tool's signature, category, modes and the first line of what the model reads;
- the MCP client's and server's bounds (``mcp_limits`` in docs/mcp.md), each from its constant.
"""

from __future__ import annotations

import inspect

from helpers.context.strategies import STRATEGY_REGISTRY, StrategyOptions
from helpers.course.sources import CITED_PROJECTS
from helpers.mcp import client as mcp_client
from helpers.mcp import content as mcp_content
from helpers.mcp import settings as mcp_settings
from helpers.mcp import stdio_guard, stdio_transport
from helpers.mcp.server import CACHE_TTL_MS
from helpers.models.providers import PROFILES
from helpers.text.escaping import for_markdown
from helpers.tooling.registry import Tool
from helpers.tooling.tools import default_registry


def profiles_markdown() -> str:
    """One row per provider profile, in :data:`~helpers.models.providers.PROFILES`' order."""
    lines = [
        "| profile | provider | picked by the base URL's host | tool-call ids | completion "
        "limit (field, default tokens) | `user` right after `tool` |",
        "|---|---|---|---|---|---|",
    ]
    for p in PROFILES.values():
        hosts = [*p.hosts, *(f"*{s}" for s in p.host_suffixes)]
        lines.append(
            f"| {for_markdown(p.name)} | {for_markdown(p.title)} | "
            f"{', '.join(for_markdown(h) for h in hosts) or '– (name it)'} | "
            f"{for_markdown(p.tool_call_ids.name)} | "
            f"{for_markdown(p.completion_limit_field)}, {p.completion_limit_tokens:,} | "
            f"{'yes' if p.user_after_tool else 'no: an assistant message goes between'} |"
        )
    return "\n".join(lines)


def strategies_markdown() -> str:
    """One row per registered strategy, in registration order."""
    lines = ["| strategy | family | role | what the model sees |", "|---|---|---|---|"]
    lines += [
        f"| {for_markdown(s.name)} | {s.family} | {s.role} | {for_markdown(_plain(s.summary))} |"
        for s in STRATEGY_REGISTRY.values()
    ]
    return "\n".join(lines)


def _signature(tool: Tool) -> str:
    """``name(arg, arg=default)`` from the tool's function, its context parameter left out."""
    params = list(inspect.signature(tool.fn).parameters.values())
    if tool.takes_context:
        params = params[1:]
    shown = [p.name if p.default is p.empty else f"{p.name}={p.default!r}" for p in params]
    return f"{tool.name}({', '.join(shown)})"


def _plain(text: str) -> str:
    """A docstring's reStructuredText code (````x````) as plain text, for :func:`for_markdown`."""
    return text.replace("``", "")


def _first_paragraph(tool: Tool) -> str:
    """The first paragraph of what the model reads about ``tool``, on one line."""
    return _plain(" ".join(tool.description.strip().split("\n\n")[0].split()))


def _category(tool: Tool) -> str:
    """The tool's category; none declared is ``execution``, what compaction files it under."""
    return tool.category or "execution"


def tools_markdown() -> str:
    """The task tools (the default registry), then the model-only tools each strategy adds."""
    lines = [
        "| tool | category | modes | what the model reads |",
        "|---|---|---|---|",
    ]
    for tool in default_registry():
        modes = "explore, operate" if tool.read_only else "operate"
        lines.append(
            f"| {for_markdown(_signature(tool))} | {_category(tool)} | {modes} | "
            f"{for_markdown(_first_paragraph(tool))} |"
        )
    offered: dict[str, tuple[Tool, list[str]]] = {}
    for name, strategy in STRATEGY_REGISTRY.items():
        for tool in strategy.build(StrategyOptions()).internal_tools():
            offered.setdefault(tool.name, (tool, []))[1].append(name)
    lines += [
        "",
        "The model-only tools a strategy adds (offered in every mode):",
        "",
        "| tool | category | offered by | what the model reads |",
        "|---|---|---|---|",
    ]
    for tool, names in offered.values():
        by = ", ".join(for_markdown(n) for n in names)
        lines.append(
            f"| {for_markdown(_signature(tool))} | {_category(tool)} | {by} | "
            f"{for_markdown(_first_paragraph(tool))} |"
        )
    return _with_links("\n".join(lines))


def _with_links(block: str) -> str:
    """``block`` and a line linking each cited project it names (an anchor's strategy is named
    after the agent whose policy it is), so the page links what it names."""
    spelled = block.lower().replace("-", " ")  # claude-code, the strategy, is Claude Code
    named = [p for p in CITED_PROJECTS if p.name.lower() in spelled]
    if not named:
        return block
    links = ", ".join(f"[{p.name}]({p.url})" for p in named)
    return f"{block}\n\nThe anchors' tools are their agents' own: {links}."


def mcp_limits_markdown() -> str:
    """The bounds on what an MCP server sends the agent, and on the workbook's server, each
    read from the constant that enforces it."""
    rows = [
        (
            "one message from a server (the guard)",
            f"{stdio_guard.DEFAULT_MAX_MESSAGE_BYTES:,} bytes",
            "helpers/mcp/stdio_guard.py",
        ),
        (
            "a server's stderr passed on",
            f"{stdio_guard.DEFAULT_MAX_STDERR_BYTES:,} bytes",
            "helpers/mcp/stdio_guard.py",
        ),
        (
            "one request (`MCP_<NAME>_TIMEOUT`'s default)",
            f"{mcp_settings.DEFAULT_MCP_TIMEOUT_S:g} s",
            "helpers/mcp/settings.py",
        ),
        (
            "one result, its resources read included",
            f"{mcp_content.MAX_RESULT_BYTES:,} bytes",
            "helpers/mcp/content.py",
        ),
        (
            "resource links read for one result",
            f"{mcp_content.MAX_LINKS_PER_RESULT}",
            "helpers/mcp/content.py",
        ),
        (
            "a tool execution error's text (`isError`)",
            f"{mcp_content.MAX_ERROR_CHARS:,} characters",
            "helpers/mcp/content.py",
        ),
        (
            "a server's JSON-RPC error message, as an error quotes it",
            f"{mcp_client.MAX_MESSAGE_CHARS:,} characters",
            "helpers/mcp/client.py",
        ),
        (
            "a server's stderr, as an error quotes its end",
            f"{mcp_client.STDERR_TAIL_CHARS:,} characters",
            "helpers/mcp/client.py",
        ),
        (
            "how deep one message from a server nests (the guard)",
            f"{stdio_guard.MAX_MESSAGE_DEPTH} levels",
            "helpers/mcp/stdio_guard.py",
        ),
        (
            "the JSON values and keys one message from a server holds (the guard, unparsed)",
            f"{stdio_guard.MAX_MESSAGE_VALUES:,}",
            "helpers/mcp/stdio_guard.py",
        ),
        (
            "a server's time to exit once its client has closed its stdin",
            f"{stdio_guard.STOP_GRACE_S:g} s",
            "helpers/mcp/stdio_guard.py",
        ),
        (
            "tools taken from one server (`MCP_<NAME>_MAX_TOOLS`)",
            f"{mcp_settings.DEFAULT_MAX_TOOLS}",
            "helpers/mcp/settings.py",
        ),
        (
            "what one server's tools add to every request (`MCP_<NAME>_MAX_TOOL_BYTES`)",
            f"{mcp_settings.DEFAULT_MAX_TOOL_BYTES:,} bytes of JSON",
            "helpers/mcp/settings.py",
        ),
        (
            "a tool's description",
            f"{mcp_client.MAX_DESCRIPTION_CHARS:,} characters",
            "helpers/mcp/client.py",
        ),
        (
            "a tool's input schema",
            f"{mcp_client.MAX_SCHEMA_BYTES:,} bytes of JSON",
            "helpers/mcp/client.py",
        ),
        ("`tools/list` pages read", f"{mcp_client.MAX_LIST_PAGES}", "helpers/mcp/client.py"),
        (
            "the workbook's server: one line a client sends",
            f"{stdio_transport.MAX_LINE_BYTES:,} bytes",
            "helpers/mcp/stdio_transport.py",
        ),
        (
            "the workbook's server: requests in flight at once; their bytes, and their JSON "
            "values and keys, together (one request's too)",
            f"{stdio_transport.MAX_REQUESTS_IN_FLIGHT}; "
            f"{stdio_transport.MAX_BYTES_IN_FLIGHT:,} bytes; "
            f"{stdio_transport.MAX_REQUEST_VALUES:,}",
            "helpers/mcp/stdio_transport.py",
        ),
        (
            "the workbook's server: how long a client may cache `tools/list` and `resources/read`",
            f"{CACHE_TTL_MS:,} ms",
            "helpers/mcp/server.py",
        ),
    ]
    lines = ["| what | at most | where |", "|---|---|---|"]
    lines += [f"| {what} | {value} | `{where}` |" for what, value, where in rows]
    return "\n".join(lines)


def registry_blocks() -> dict[str, str]:
    """Each registry's block, by name."""
    return {
        "profiles": profiles_markdown(),
        "strategies": strategies_markdown(),
        "tools": tools_markdown(),
        "mcp_limits": mcp_limits_markdown(),
    }
