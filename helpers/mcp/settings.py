"""Which MCP servers the agent starts: the ``MCP_*`` settings of ``.env`` (or the shell).

``MCP_SERVERS`` names them, comma-separated (``MCP_SERVERS=workbook,github``); each name ``N``
(letters, digits and ``_``) has its own block, read with ``N`` in upper case:

- ``MCP_N_COMMAND``: the program that starts the server (required), e.g. ``workbook`` or
  ``/usr/bin/npx``;
- ``MCP_N_ARGS``: its arguments, split as a POSIX shell splits words (``shlex``), e.g.
  ``mcp-server --threshold 500``;
- ``MCP_N_ENV``: environment variables for it, as a JSON object of strings (the SDK passes only
  ``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM`` and ``USER`` through); a variable whose
  name looks secret (``GITHUB_TOKEN``), and a URL's password, is redacted from every output
  like a key (:func:`helpers.text.redaction.secrets_of`);
- ``MCP_N_CWD``: the folder it starts in, which must exist (default: the workbook's folder);
- ``MCP_N_TIMEOUT``: seconds one request may take (default 60), starting the server included;
- ``MCP_N_TOOLS``: the tools to take from it, comma-separated (default: all of them);
- ``MCP_N_PREFIX``: put before each of its tools' names, to keep two servers' ``search`` apart
  (the MCP spec, "Tools › Tool Names": clients that aggregate servers SHOULD disambiguate, for
  example by a server prefix); default none, so a server may stand in for a workbook tool of
  the same name;
- ``MCP_N_MAX_TOOLS``: the most of its tools taken (default and largest
  :data:`DEFAULT_MAX_TOOLS`);
- ``MCP_N_MAX_TOOL_BYTES``: the most its tools may add to every request to the model, in bytes
  of their JSON (names, descriptions, schemas; default :data:`DEFAULT_MAX_TOOL_BYTES`): each
  tool's own caps bound one schema, this bounds what one server adds to the context.

A setting that cannot be used is a :class:`McpConfigError` naming it, before anything starts.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the SDK is imported when a server starts, not when settings are read
    from mcp import StdioServerParameters

#: The setting that names the servers.
MCP_SERVERS = "MCP_SERVERS"
#: Seconds one request to a server may take unless ``MCP_<NAME>_TIMEOUT`` says otherwise.
DEFAULT_MCP_TIMEOUT_S = 60.0
#: The most tools taken from one server (OpenAI takes at most 128 in one request: its API
#: reference, "Create chat completion", ``tools``).
DEFAULT_MAX_TOOLS = 128
#: What one server's tools may add to every request unless ``MCP_<NAME>_MAX_TOOL_BYTES`` says
#: otherwise, in bytes of JSON: about 60,000 tokens, room for a large server's tools (GitHub's,
#: some 80) and far below what 128 tools at their own caps would add (8 MB).
DEFAULT_MAX_TOOL_BYTES = 256_000
#: A server's name as ``MCP_SERVERS`` gives it: it becomes part of setting names.
_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")
#: A prefix for tool names: what a chat-completions function name may hold.
_PREFIX_RE = re.compile(r"[A-Za-z0-9_-]{0,32}")


class McpConfigError(ValueError):
    """The ``MCP_*`` settings do not describe servers that can be started; the message names
    the setting and what to write instead."""


class McpServerError(RuntimeError):
    """A server did not start, died, timed out, refused a request or answered with something
    that is not MCP; ``str()`` names the server and says which, with its reason
    (:class:`helpers.mcp.client.McpServer` raises it; it lives here, with the settings' own
    error, so a caller catches both without importing the SDK)."""


@dataclass(frozen=True)
class McpServerSpec:
    """One MCP server to start over stdio, as the settings describe it.

    Attributes:
        name: its name in ``MCP_SERVERS`` (lower case), which messages use.
        command: the program to run.
        args: its arguments.
        env: extra environment variables (hidden from ``repr``: they may hold keys).
        cwd: the folder it starts in (``None``: the caller's).
        timeout_s: seconds one request may take, the start included.
        tools: the names of the tools to take (``None``: all).
        prefix: put before each tool's name in the agent's registry.
        max_tools: the most of its tools taken.
        max_tool_bytes: the most its tools may add to every request, in bytes of JSON.
    """

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    cwd: str | None = None
    timeout_s: float = DEFAULT_MCP_TIMEOUT_S
    tools: tuple[str, ...] | None = None
    prefix: str = ""
    max_tools: int = DEFAULT_MAX_TOOLS
    max_tool_bytes: int = DEFAULT_MAX_TOOL_BYTES

    def __post_init__(self) -> None:
        if not _NAME_RE.fullmatch(self.name):
            raise McpConfigError(
                f"an MCP server's name is a letter, then letters, digits or _ (at most 32), "
                f"not {self.name!r}"
            )
        if not self.command.strip():
            raise McpConfigError(f"the MCP server {self.name!r} has no command to run")
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise McpConfigError(
                f"the MCP server {self.name!r}'s timeout must be a number of seconds above 0"
            )
        if not _PREFIX_RE.fullmatch(self.prefix):
            raise McpConfigError(
                f"the MCP server {self.name!r}'s prefix may hold only A-Z a-z 0-9 _ - "
                f"(at most 32), not {self.prefix!r}"
            )
        if not 1 <= self.max_tools <= DEFAULT_MAX_TOOLS:
            raise McpConfigError(
                f"the MCP server {self.name!r} may offer from 1 to {DEFAULT_MAX_TOOLS} tools, "
                f"not {self.max_tools}"
            )
        if self.max_tool_bytes < 1:
            raise McpConfigError(
                f"the MCP server {self.name!r}'s tools may add a positive number of bytes, "
                f"not {self.max_tool_bytes}"
            )

    def command_line(self) -> str:
        """The command and its arguments, quoted as a shell would take them."""
        return shlex.join([self.command, *self.args])

    def stdio_parameters(self) -> StdioServerParameters:
        """What the SDK's client starts for this server (``mcp.Client(spec.stdio_parameters())``),
        without the client's guard (:class:`helpers.mcp.client.McpServer` adds it)."""
        from mcp import StdioServerParameters

        return StdioServerParameters(
            command=self.command, args=list(self.args), env=dict(self.env), cwd=self.cwd
        )


def setting(name: str, key: str) -> str:
    """The setting ``MCP_<NAME>_<KEY>`` of server ``name``."""
    return f"MCP_{name.upper()}_{key}"


def mcp_servers_from_env(env: Mapping[str, str]) -> list[McpServerSpec]:
    """The servers ``MCP_SERVERS`` names, each from its block of ``env`` (the environment and
    ``.env``: :func:`helpers.models.settings.load_env`), in the order named; ``[]`` when it names
    none.

    Raises:
        McpConfigError: a name twice or badly formed, a server without ``_COMMAND``, arguments
            a shell could not split, ``_ENV`` that is not a JSON object of strings, a timeout
            that is not a positive number, an empty ``_TOOLS`` or a prefix a tool name cannot
            hold. The message names the setting.
    """
    names = [n.strip() for n in (env.get(MCP_SERVERS) or "").split(",") if n.strip()]
    seen: set[str] = set()
    specs = []
    for raw in names:
        name = raw.lower()
        if not _NAME_RE.fullmatch(raw):
            raise McpConfigError(
                f"{MCP_SERVERS} names {raw!r}: a server's name is a letter, then letters, "
                "digits or _ (it becomes part of setting names such as MCP_<NAME>_COMMAND)"
            )
        if name in seen:
            raise McpConfigError(f"{MCP_SERVERS} names {raw!r} twice")
        seen.add(name)
        specs.append(_spec(name, env))
    return specs


def _spec(name: str, env: Mapping[str, str]) -> McpServerSpec:
    def get(key: str) -> str:
        return (env.get(setting(name, key)) or "").strip()

    command = get("COMMAND")
    if not command:
        raise McpConfigError(
            f"{MCP_SERVERS} names {name!r}, but {setting(name, 'COMMAND')} is not set: set it "
            "to the program that starts the server (e.g. workbook, with "
            f"{setting(name, 'ARGS')}=mcp-server)"
        )
    try:
        args = tuple(shlex.split(get("ARGS")))
    except ValueError as exc:
        raise McpConfigError(f"{setting(name, 'ARGS')} cannot be split into words: {exc}") from None
    timeout = DEFAULT_MCP_TIMEOUT_S
    if get("TIMEOUT"):
        try:
            timeout = float(get("TIMEOUT"))
        except ValueError:
            timeout = math.nan
        if not (math.isfinite(timeout) and timeout > 0):
            raise McpConfigError(
                f"{setting(name, 'TIMEOUT')}={get('TIMEOUT')!r} must be a number of seconds above 0"
            )
    tools = None
    if get("TOOLS"):
        tools = tuple(t.strip() for t in get("TOOLS").split(",") if t.strip())
        if not tools:
            raise McpConfigError(f"{setting(name, 'TOOLS')} names no tool")
    prefix = get("PREFIX")
    if not _PREFIX_RE.fullmatch(prefix):
        raise McpConfigError(
            f"{setting(name, 'PREFIX')}={prefix!r}: a prefix may hold only A-Z a-z 0-9 _ - "
            "(at most 32), as a tool's name may"
        )
    cwd = get("CWD") or None
    if cwd is not None and not os.path.isdir(cwd):
        raise McpConfigError(f"{setting(name, 'CWD')}={cwd!r} is not a folder")
    counts = {}
    for key, default in (
        ("MAX_TOOLS", DEFAULT_MAX_TOOLS),
        ("MAX_TOOL_BYTES", DEFAULT_MAX_TOOL_BYTES),
    ):
        counts[key] = default
        if get(key):
            try:
                counts[key] = int(get(key).replace("_", ""))
            except ValueError:
                raise McpConfigError(
                    f"{setting(name, key)}={get(key)!r} must be a whole number"
                ) from None
    return McpServerSpec(
        name=name,
        command=command,
        args=args,
        env=_env_object(setting(name, "ENV"), get("ENV")),
        cwd=cwd,
        timeout_s=timeout,
        tools=tools,
        prefix=prefix,
        max_tools=counts["MAX_TOOLS"],
        max_tool_bytes=counts["MAX_TOOL_BYTES"],
    )


def _env_object(key: str, raw: str) -> dict[str, str]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\0" not in k + v
        for k, v in value.items()
    ):
        raise McpConfigError(
            f'{key} must be a JSON object of strings, e.g. {{"GITHUB_TOKEN": "..."}} '
            "(a variable whose name looks secret is kept out of every output, like a key)"
        )
    return value
