"""One registry of tools: schemas from type hints and docstrings, checked calls.

A tool is a plain Python function with type-hinted parameters and a Google-style docstring::

    @registry.register
    def deep_check(text: str) -> str:
        \"\"\"Analyse a text and report what was received.

        Args:
            text: the full text to analyse.
        \"\"\"

The summary becomes the tool's description, each ``Args:`` line a parameter description, and
the type hints the JSON Schema the model sees (OpenAI chat-completions ``tools`` format).
A function whose first parameter is annotated :class:`ToolContext` receives the turn's context
(store and thread) there; that parameter is not part of the schema.

:meth:`ToolRegistry.call` checks arguments against the signature (missing, unexpected and
wrongly typed arguments raise :class:`ToolArgumentError` with a message for the model) before
the function runs.
"""

from __future__ import annotations

import inspect
import json
import re
import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

from helpers.base.limits import TurnLimits
from helpers.text.redaction import configured_secrets

if TYPE_CHECKING:
    from helpers.store.tool_outputs import ToolOutputStore
    from helpers.tooling.program_sandbox import ProgramHost


class ToolArgumentError(ValueError):
    """The arguments of a tool call do not fit the tool's signature."""


class UnknownToolError(KeyError):
    """The model named a tool that is not registered (or not offered)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown tool"


@dataclass
class ToolContext:
    """What a context-taking tool gets besides its arguments: the store and the thread.

    ``guards`` collects the names of guards (:data:`helpers.base.guards.GUARDS`) that repaired a
    mistake while a call was prepared; the agent moves them onto the call's record. ``fetched``
    holds the ``tool_call_id`` of every output fetched in full this turn (``fetch_tool_output``).
    ``secrets`` are redacted from every tool output before the store or the model sees it
    (default: the secrets configured in the environment and ``.env``). ``limits`` caps what the
    turn may store (:mod:`helpers.base.limits`).
    """

    store: ToolOutputStore | None
    thread_id: str
    guards: list[str] = field(default_factory=list)
    fetched: set[str] = field(default_factory=set)
    #: reference ids the model has been shown in this thread (boxed results, this turn or in
    #: the history it was given)
    shown_references: set[str] = field(default_factory=set)
    secrets: tuple[str, ...] = field(default_factory=configured_secrets)
    #: the caps of the turn (:class:`helpers.base.limits.TurnLimits`), and the UTF-8 bytes its tool
    #: calls have stored so far (outputs and arguments)
    limits: TurnLimits = field(default_factory=TurnLimits)
    stored_bytes: int = 0
    #: the user's prompt of this turn (what tool search matches tools against)
    prompt: str = ""
    #: the names of the real tools offered to the model (``None``: every one of them); tool
    #: search (:mod:`helpers.context.tool_search`) narrows it, and ``tool_search`` widens it
    offered: set[str] | None = None
    #: code mode: what runs the tool calls of the programs the model writes (the turn sets it:
    #: :class:`helpers.loop.dispatch.ProgramCalls`); ``None`` outside a turn
    program_host: ProgramHost | None = None


_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _json_schema(annotation: Any) -> dict[str, Any]:
    origin = get_origin(annotation)
    if origin is Literal:
        choices = list(get_args(annotation))
        kind = _JSON_TYPES.get(type(choices[0]), "string") if choices else "string"
        return {"type": kind, "enum": choices}
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        return _json_schema(members[0]) if len(members) == 1 else {}
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    if origin is list or annotation is list:
        item = get_args(annotation)
        return {"type": "array", "items": _json_schema(item[0]) if item else {}}
    if origin is dict or annotation is dict:
        return {"type": "object"}
    return {}


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {param: description}) from a Google-style docstring."""
    doc = inspect.cleandoc(doc or "")
    sections = re.split(r"^(Args|Arguments|Returns|Raises):\s*$", doc, flags=re.MULTILINE)
    description = sections[0].strip()
    params: dict[str, str] = {}
    for title, body in zip(sections[1::2], sections[2::2], strict=False):
        if title in ("Args", "Arguments"):
            current = None
            for line in body.splitlines():
                match = re.match(r"^\s{0,8}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
                if match:
                    current = match[1]
                    params[current] = match[2].strip()
                elif current and line.strip():
                    params[current] += " " + line.strip()
        elif title == "Returns":
            description += "\n\nReturns: " + " ".join(body.split())
    return description, params


def _type_ok(value: Any, annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin is Literal:
        return value in get_args(annotation)
    if origin in (Union, types.UnionType):
        return any(_type_ok(value, a) for a in get_args(annotation))
    if annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if annotation is str:
        return isinstance(value, str)
    if origin is list or annotation is list:
        return isinstance(value, list)
    if origin is dict or annotation is dict:
        return isinstance(value, dict)
    return True


#: A JSON Schema ``type`` name → the Python types a JSON value of it has (a bool is no number).
_SCHEMA_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _schema_type_ok(value: Any, prop: dict[str, Any]) -> bool:
    """Whether ``value`` has a ``type`` the property's schema allows and is one of its ``enum``
    (each checked only when the schema says it, with names it knows)."""
    enum = prop.get("enum")
    if isinstance(enum, list) and not any(
        value == choice and type(value) is type(choice) for choice in enum
    ):
        return False
    kinds = prop.get("type")
    names = kinds if isinstance(kinds, list) else [kinds]
    allowed = [_SCHEMA_TYPES[n] for n in names if isinstance(n, str) and n in _SCHEMA_TYPES]
    if not allowed or len(allowed) < len(names):
        return True  # no type, or one this check does not know: the server's to judge
    if isinstance(value, bool):
        return any(bool in kinds for kinds in allowed)
    if isinstance(value, float) and value.is_integer() and "integer" in names:
        return True  # JSON Schema: 1.0 is an integer
    return any(isinstance(value, kinds) for kinds in allowed)


@dataclass(frozen=True)
class Tool:
    """A registered tool.

    Attributes:
        name: the name the model calls.
        description: what the model reads about it.
        parameters: the JSON Schema of its arguments object.
        fn: the Python function.
        takes_context: ``fn``'s first parameter is a :class:`ToolContext`.
        internal: a tool for the model only (resolve tools, ``fetch_tool_output``): it reads
            the store itself, so its arguments are not unboxed and its result is never boxed
            or truncated.
        read_only: the tool changes nothing outside the agent (it reads a page, a video, a
            database): a read-only mode such as ``explore`` offers it
            (:mod:`helpers.context.modes`).
        category: what compaction files its calls under when it folds them (``read``,
            ``write``, ``execution`` or ``query``; ``None``: ``execution``, the cautious
            choice that keeps errors verbatim; :mod:`helpers.context.compaction`).
        server: the MCP server that runs it (:mod:`helpers.mcp.client`; ``None``: a Python
            function of this process). Its ``parameters`` are the server's JSON Schema, and
            ``hints`` is empty: :meth:`check_arguments` reads the schema's own types.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    takes_context: bool = False
    internal: bool = False
    read_only: bool = False
    category: str | None = None
    hints: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    server: str | None = None

    def schema(self) -> dict[str, Any]:
        """The chat-completions ``tools`` entry: ``{"type": "function", "function": {...}}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def check_arguments(self, arguments: Any) -> dict[str, Any]:
        """``arguments`` if they fit the signature; else raise :class:`ToolArgumentError`.

        Checked: an object; the required arguments there; no argument the schema does not
        name, when it says ``additionalProperties: false`` (every Python tool's does); each
        argument's type, by the function's type hint or, for a tool described by a JSON Schema
        only (an MCP server's), by the schema's ``type`` and ``enum`` at the top level. The rest
        of a server's schema (patterns, nested shapes) is the server's to check: the MCP spec
        says servers MUST validate all tool inputs, and a pattern from a server never runs in
        this process.
        """
        if not isinstance(arguments, dict):
            raise ToolArgumentError(
                f"{self.name} takes a JSON object of arguments, got {type(arguments).__name__}"
            )
        props = self.parameters.get("properties")
        props = props if isinstance(props, dict) else {}
        required = self.parameters.get("required")
        required = required if isinstance(required, list) else []
        missing = [str(name) for name in required if name not in arguments]
        closed = self.parameters.get("additionalProperties", True) is False
        unexpected = [name for name in arguments if name not in props] if closed else []
        problems = []
        if missing:
            problems.append(f"missing required argument(s): {', '.join(missing)}")
        if unexpected:
            problems.append(
                f"unexpected argument(s): {', '.join(unexpected)} "
                f"(accepted: {', '.join(props) or 'none'})"
            )
        for name, value in arguments.items():
            prop = props.get(name)
            if not isinstance(prop, dict):
                continue
            hint = self.hints.get(name)
            fits = _type_ok(value, hint) if hint is not None else _schema_type_ok(value, prop)
            if fits:
                continue
            if "enum" in prop:
                choices = ", ".join(repr(c) for c in prop["enum"])
                problems.append(f"argument {name!r} must be one of {choices}, got {value!r}")
                continue
            expected = prop.get("type", "a different type")
            problems.append(f"argument {name!r} must be {expected}, got {type(value).__name__}")
        if problems:
            raise ToolArgumentError(f"{self.name}: " + "; ".join(problems))
        return arguments

    def call(self, arguments: dict[str, Any], context: ToolContext | None = None) -> str:
        """Run the tool on checked arguments; a non-string result is returned as JSON text."""
        self.check_arguments(arguments)
        result = self.fn(context, **arguments) if self.takes_context else self.fn(**arguments)
        if isinstance(result, str):
            return result
        return json.dumps(result, ensure_ascii=False, default=str)


def tool_from_function(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    internal: bool = False,
    read_only: bool = False,
    category: str | None = None,
) -> Tool:
    """Build a :class:`Tool` from a function's signature, type hints and docstring;
    ``internal``, ``read_only`` and ``category`` are the :class:`Tool`'s properties.

    Raises:
        TypeError: a parameter (other than a leading ``ToolContext``) has no type hint, or is
            ``*args`` / ``**kwargs``.
    """
    signature = inspect.signature(fn)
    hints = get_type_hints(fn)
    description, param_docs = _parse_docstring(fn.__doc__ or "")
    params = list(signature.parameters.values())
    takes_context = bool(params) and hints.get(params[0].name) is ToolContext
    if takes_context:
        params = params[1:]
    properties: dict[str, Any] = {}
    required: list[str] = []
    arg_hints: dict[str, Any] = {}
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn.__name__}: *args/**kwargs cannot be described to a model")
        if param.name not in hints:
            raise TypeError(f"{fn.__name__}: parameter {param.name!r} needs a type hint")
        arg_hints[param.name] = hints[param.name]
        prop = _json_schema(hints[param.name])
        if param.name in param_docs:
            prop["description"] = param_docs[param.name]
        if param.default is param.empty:
            required.append(param.name)
        else:
            prop["default"] = param.default
        properties[param.name] = prop
    parameters = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return Tool(
        name=name or fn.__name__,
        description=description,
        parameters=parameters,
        fn=fn,
        takes_context=takes_context,
        internal=internal,
        read_only=read_only,
        category=category,
        hints=arg_hints,
    )


class ToolRegistry:
    """Named tools, in the order they were registered."""

    def __init__(self, tools: Iterable[Tool] = ()):
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> Tool:
        """Add (or replace) a tool."""
        self._tools[tool.name] = tool
        return tool

    def register(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        read_only: bool = False,
        category: str | None = None,
    ) -> Any:
        """Decorator: register ``fn`` as a tool named after it; returns ``fn`` unchanged.

        ``@registry.register`` registers a tool that may act on the world;
        ``@registry.register(read_only=True, category="read")`` one that only reads
        (:attr:`Tool.read_only`), filed under ``read`` when compaction folds its calls
        (:attr:`Tool.category`).
        """

        def add(fn: Callable[..., Any]) -> Callable[..., Any]:
            self.add(tool_from_function(fn, read_only=read_only, category=category))
            return fn

        return add if fn is None else add(fn)

    def categories(self) -> dict[str, str]:
        """Each tool's compaction category, by name (tools without one left out)."""
        return {t.name: t.category for t in self if t.category is not None}

    def merged(self, extra: Iterable[Tool]) -> ToolRegistry:
        """A new registry with these tools and ``extra`` (``extra`` wins on a name clash)."""
        return ToolRegistry([*self._tools.values(), *extra])

    def only(self, names: Iterable[str]) -> ToolRegistry:
        """A new registry with the tools named in ``names`` (in this registry's order; unknown
        names ignored)."""
        wanted = set(names)
        return ToolRegistry(t for t in self._tools.values() if t.name in wanted)

    def get(self, name: str) -> Tool:
        """The tool called ``name``; raises :class:`UnknownToolError` naming the known tools."""
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(self._tools) or "none"
            raise UnknownToolError(f"unknown tool {name!r}; available tools: {known}") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """The ``tools`` list for a chat-completions request."""
        return [tool.schema() for tool in self._tools.values()]


class OfferedTools(ToolRegistry):
    """The tools offered to the model so far in one turn: all that a call in it may run. A
    tool the model names but was never offered (tool search left it out and it was never
    loaded; a name it knows from elsewhere) does not run, though the turn's registry has it.

    Args:
        available: every tool the turn could offer (the real tools, a mode's refusals included,
            and the policy's own); it gives the error for a name that is not offered.
    """

    def __init__(self, available: ToolRegistry):
        super().__init__()
        self.available = available

    def get(self, name: str) -> Tool:
        """The offered tool called ``name``: a real tool as ``available`` gives it (a mode's
        registry may wrap it in its guard), a policy's own tool as it was offered.

        Raises:
            UnknownToolError: ``available``'s own refusal (no such tool; not in this mode), or
                the tool exists but was not offered in this turn (the message names the offered
                ones, so the model can call one, or load it with tool search).
        """
        if name in self:
            offered = super().get(name)
            if offered.internal or name not in self.available:  # the policy's own tool
                return offered
            return self.available.get(name)
        self.available.get(name)  # no such tool, or not in this mode: its own message
        offered = ", ".join(self._tools) or "none"
        raise UnknownToolError(
            f"tool {name!r} was not offered in this turn; offered tools: {offered}"
        )
