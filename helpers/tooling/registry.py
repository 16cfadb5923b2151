"""One registry of tools: schemas from type hints and docstrings, checked calls.

A tool is a plain Python function with type-hinted parameters and a Google-style docstring::

    @registry.register
    def deep_check(text: str) -> str:
        \"\"\"Analyse a text and report what was received.

        Args:
            text: the full text to analyse.
        \"\"\"

The summary becomes the tool's description, each ``Args:`` line a parameter description, and
the type hints the JSON Schema the model sees (OpenAI chat-completions ``tools`` format), as
pydantic writes it for a model of the parameters (:class:`_ToolSchema` keeps the shape the model
has always read).
A function whose first parameter is annotated :class:`ToolContext` receives the turn's context
(store and thread) there; that parameter is not part of the schema. A tool whose call changes
its turn (loads a tool, fetches an output) returns a :class:`~helpers.tooling.effects.Reported`:
its text and those effects, which the loop records.

:meth:`Tool.check_arguments` checks arguments before the function runs (missing, unexpected and
wrongly typed arguments raise :class:`ToolArgumentError` with a message for the model): a Python
function's with pydantic, an MCP server's tool's against its JSON Schema with jsonschema
(:mod:`helpers.tooling.argument_checks`). A turn checks a call's shape before its policy reads anything,
and in full the arguments the tool gets (:func:`helpers.loop.dispatch.dispatch`), then
:meth:`Tool.run` runs it; :meth:`Tool.call`
checks and runs, for a caller outside a turn.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import re
import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_type_hints

from pydantic import BaseModel, PydanticUserError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue

from helpers.base.limits import TurnLimits
from helpers.text.redaction import configured_secrets
from helpers.tooling.argument_checks import (
    arguments_model,
    check_schema_arguments,
    function_problems,
    shape_of,
)
from helpers.tooling.effects import NO_EFFECTS, CallEffects, Reported

if TYPE_CHECKING:
    from pydantic_core import core_schema

    from helpers.store.tool_outputs import ToolOutputStore
    from helpers.tooling.program_sandbox import ProgramHost


class ToolArgumentError(ValueError):
    """The arguments of a tool call do not fit the tool's signature."""


class UnknownToolError(KeyError):
    """The model named a tool that is not registered (or not offered)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown tool"


@dataclass(frozen=True)
class ToolContext:
    """What a context-taking tool reads besides its arguments, the same for every call of a
    turn: the store and the thread, the secrets, the caps, and code mode's program host. It
    holds no state of the turn: what a call did (a fetch, a tool loaded, a reference shown)
    the call returns (:mod:`helpers.tooling.effects`), and the loop records it in its own
    :class:`helpers.loop.turn_state.TurnState`.

    ``secrets`` are redacted from every tool output before the store or the model sees it
    (default: the secrets configured in the environment and ``.env``). ``limits`` caps what the
    turn may store (:mod:`helpers.base.limits`).
    """

    store: ToolOutputStore | None
    thread_id: str
    secrets: tuple[str, ...] = field(default_factory=configured_secrets)
    #: the caps of the turn (:class:`helpers.base.limits.TurnLimits`)
    limits: TurnLimits = field(default_factory=TurnLimits)
    #: code mode: what runs the tool calls of the programs the model writes (the turn sets it:
    #: :class:`helpers.loop.dispatch.ProgramCalls`); ``None`` outside a turn
    program_host: ProgramHost | None = None


class _ToolSchema(GenerateJsonSchema):
    """pydantic's JSON Schema of the parameters (its hook for the purpose:
    https://docs.pydantic.dev/latest/concepts/json_schema/#customizing-the-json-schema-generation-process),
    in the shape the model has always read, every byte of which is in each request's prompt:
    keys in the order generated (pydantic sorts them), no ``title``, ``X | None`` as ``X`` (the
    argument may be left out; ``null`` is taken but not offered), a ``Literal`` as ``type``
    then ``enum`` (one choice too), a ``dict`` as ``{"type": "object"}``."""

    def sort(self, value: JsonSchemaValue, parent_key: str | None = None) -> JsonSchemaValue:
        return value

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def nullable_schema(self, schema: core_schema.NullableSchema) -> JsonSchemaValue:
        return self.generate_inner(schema["schema"])

    def literal_schema(self, schema: core_schema.LiteralSchema) -> JsonSchemaValue:
        generated = super().literal_schema(schema)
        choices = generated.get("enum", [generated.get("const")])
        return {**({"type": generated["type"]} if "type" in generated else {}), "enum": choices}

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        generated = super().dict_schema(schema)
        if generated.get("additionalProperties") is True:  # JSON Schema's default anyway
            del generated["additionalProperties"]
        return generated


@functools.lru_cache(maxsize=256)
def _parameters_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a model of a function's arguments (:func:`arguments_model`)."""
    return model.model_json_schema(schema_generator=_ToolSchema)


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
            function of this process). Its ``parameters`` are the server's JSON Schema.
        hints: the type of each of a Python function's arguments, which pydantic checks a call
            against (:meth:`check_arguments`); ``None``: a tool described by its JSON Schema
            alone (an MCP server's), which jsonschema checks a call against.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    takes_context: bool = False
    internal: bool = False
    read_only: bool = False
    category: str | None = None
    hints: dict[str, Any] | None = field(default=None, compare=False, repr=False)
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

    def check_arguments(self, arguments: Any, *, shape_only: bool = False) -> dict[str, Any]:
        """``arguments`` if they fit the tool; else raise :class:`ToolArgumentError` naming what
        does not (missing, unexpected, wrongly typed arguments…: one message for every kind of
        tool, :mod:`helpers.tooling.argument_checks`). ``shape_only``: before its references
        are unboxed, a call is checked for its names and JSON types only
        (:func:`~helpers.tooling.argument_checks.shape_of`); the full check follows on the
        unboxed values. :meth:`check_call` is the same check, saying what it did to the call.

        A Python function's arguments are validated by pydantic against its parameters' types
        (strict: no coercion); a tool described by its JSON Schema alone (an MCP server's) by
        jsonschema against that schema, its patterns run on RE2, in a bounded number of steps.
        """
        self.check_call(arguments, shape_only=shape_only)
        return arguments

    def check_call(self, arguments: Any, *, shape_only: bool = False) -> CallEffects:
        """Check ``arguments`` as :meth:`check_arguments` does, and return what the check did
        to the call: the guard ``arguments_check_unfinished`` (:data:`helpers.base.guards.GUARDS`)
        when a check against a JSON Schema (an MCP server's tool's) found nothing wrong but did
        not get to its end (it ran out of its steps,
        :data:`~helpers.tooling.argument_checks.MAX_SCHEMA_STEPS`, or jsonschema could not apply
        the schema): the call goes to the server, which MUST validate its inputs (MCP, "Server ›
        Tools › Security Considerations"), unchecked beyond that point, and its record says so.
        A Python function's check always gets to its end: no effects.

        Raises:
            ToolArgumentError: the arguments do not fit (what does not, in the model's words).
        """
        if not isinstance(arguments, dict):
            raise ToolArgumentError(
                f"{self.name} takes a JSON object of arguments, got {type(arguments).__name__}"
            )
        finished = True
        if self.hints is not None:
            model = arguments_model(self.hints, self.parameters.get("required", ()))
            problems = function_problems(model, arguments, self.parameters)
        else:
            schema = shape_of(self.parameters) if shape_only else self.parameters
            check = check_schema_arguments(schema, arguments)
            problems, finished = check.problems, check.finished
        if problems:
            raise ToolArgumentError(f"{self.name}: " + "; ".join(problems))
        return NO_EFFECTS if finished else CallEffects(guards=("arguments_check_unfinished",))

    def run(self, arguments: dict[str, Any], context: ToolContext | None = None) -> Reported:
        """Run the tool on arguments already checked (:meth:`check_call`: a turn checks in full
        the arguments the tool gets, after its references are unboxed,
        :func:`helpers.loop.dispatch.dispatch`;
        :meth:`call` checks, then runs): its text (a non-string result as JSON text) and what
        the call did to its turn (:class:`~helpers.tooling.effects.CallEffects`: none, unless
        the tool returned a :class:`~helpers.tooling.effects.Reported`). It checks nothing
        itself: unchecked arguments reach the function as they are."""
        result = self.fn(context, **arguments) if self.takes_context else self.fn(**arguments)
        if isinstance(result, Reported):
            return result
        if isinstance(result, str):
            return Reported(result)
        return Reported(json.dumps(result, ensure_ascii=False, default=str))

    def call(self, arguments: dict[str, Any], context: ToolContext | None = None) -> str:
        """Check ``arguments`` (:meth:`check_arguments`), run the tool and return its text: what
        a caller outside a turn needs (it records no effects).

        Raises:
            ToolArgumentError: the arguments do not fit the tool.
        """
        return self.run(self.check_arguments(arguments), context).text


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

    What a function's signature, hints and docstring give is worked out once per shape of
    function (:func:`_described`): a policy makes its tools afresh for every turn, as closures
    over the turn, and reading the hints (``get_type_hints`` evaluates each annotation's text)
    and the signature again each time cost more than the rest of making the tool.

    Raises:
        TypeError: a parameter (other than a leading ``ToolContext``) has no type hint, one
            pydantic cannot describe, or is ``*args`` / ``**kwargs``.
    """
    described = _described(fn)
    return Tool(
        name=name or fn.__name__,
        description=described.description,
        parameters=copy.deepcopy(described.parameters),  # the tool's own: a caller may edit it
        fn=fn,
        takes_context=described.takes_context,
        internal=internal,
        read_only=read_only,
        category=category,
        hints=dict(described.hints),
    )


@dataclass(frozen=True)
class _Described:
    """What :func:`tool_from_function` reads from a function: never handed out as it is (the
    ``parameters`` and ``hints`` a tool gets are copies)."""

    description: str
    parameters: dict[str, Any]
    takes_context: bool
    hints: dict[str, Any]


#: :func:`_described`'s answers by :func:`_shape_key`, least recently used first out.
_DESCRIBED: OrderedDict[tuple[Any, ...], _Described] = OrderedDict()
_DESCRIBED_SIZE = 512
_DESCRIBED_LOCK = threading.Lock()


#: The types of default the key of :func:`_shape_key` tells apart by type and ``repr`` (``1``
#: from ``True``, ``0.0`` from ``-0.0``); a function with another kind of default is described
#: afresh every time.
_KEYED_DEFAULTS = (type(None), bool, int, float, str)


def _shape_key(fn: Callable[..., Any]) -> tuple[Any, ...] | None:
    """Everything :func:`_describe` reads of ``fn``, as a key: its code (parameter names and
    kinds), name, docstring, annotations, and its defaults by type and ``repr``; ``None`` when
    what it reads cannot be a key, and ``fn`` is described afresh every time:

    - a callable that is not a plain function (a bound method, whose signature drops its
      first parameter; a ``functools.partial``; a wrapper whose signature is another's);
    - a function of ``__main__`` (a notebook's, a script's): its annotations' text is looked
      up in a namespace a cell can rebind (``class Q`` defined again), which a module's is not
      (reloading a module makes its functions anew, with new code);
    - a default other than ``None``, a bool, a number or a string (:data:`_KEYED_DEFAULTS`)."""
    if type(fn) is not types.FunctionType or hasattr(fn, "__wrapped__"):
        return None
    if hasattr(fn, "__signature__") or fn.__module__ in (None, "__main__"):
        return None
    module = sys.modules.get(fn.__module__)
    if module is None or vars(module) is not fn.__globals__:
        return None  # made by exec in a namespace of its own
    defaults = [*(fn.__defaults__ or ()), *(fn.__kwdefaults__ or {}).values()]
    if any(type(d) not in _KEYED_DEFAULTS for d in defaults):
        return None
    keyed = tuple((type(d), repr(d)) for d in fn.__defaults__ or ())
    keywords = tuple((k, type(v), repr(v)) for k, v in sorted((fn.__kwdefaults__ or {}).items()))
    annotations = tuple(fn.__annotations__.items())
    key = (fn.__code__, fn.__module__, fn.__name__, fn.__doc__, keyed, keywords, annotations)
    try:
        hash(key)
    except TypeError:  # an annotation that is an object no key can hold
        return None
    return key


def _described(fn: Callable[..., Any]) -> _Described:
    """:func:`_describe` of ``fn``, remembered by :func:`_shape_key` (the
    :data:`_DESCRIBED_SIZE` most recent shapes)."""
    key = _shape_key(fn)
    if key is None:
        return _describe(fn)
    with _DESCRIBED_LOCK:
        found = _DESCRIBED.get(key)
        if found is not None:
            _DESCRIBED.move_to_end(key)
            return found
    described = _describe(fn)
    with _DESCRIBED_LOCK:
        _DESCRIBED[key] = described
        if len(_DESCRIBED) > _DESCRIBED_SIZE:
            _DESCRIBED.popitem(last=False)
    return described


def _describe(fn: Callable[..., Any]) -> _Described:
    """The description, the parameters' JSON Schema, whether the first parameter takes the
    turn's :class:`ToolContext`, and the arguments' type hints of ``fn``.

    Raises:
        TypeError: as :func:`tool_from_function`.
    """
    signature = inspect.signature(fn)
    hints = get_type_hints(fn)
    description, param_docs = _parse_docstring(fn.__doc__ or "")
    params = list(signature.parameters.values())
    takes_context = bool(params) and hints.get(params[0].name) is ToolContext
    if takes_context:
        params = params[1:]
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn.__name__}: *args/**kwargs cannot be described to a model")
        if param.name not in hints:
            raise TypeError(f"{fn.__name__}: parameter {param.name!r} needs a type hint")
    arg_hints = {param.name: hints[param.name] for param in params}
    required = [param.name for param in params if param.default is param.empty]
    try:
        generated = _parameters_schema(arguments_model(arg_hints, required))
    except PydanticUserError as exc:
        raise TypeError(f"{fn.__name__}: {exc}") from None
    properties: dict[str, Any] = {}
    for param in params:
        prop = copy.deepcopy(generated["properties"][param.name])
        prop.pop("default", None)  # pydantic's, for an optional field; the function's below
        if param.name in param_docs:
            prop["description"] = param_docs[param.name]
        if param.default is not param.empty:
            prop["default"] = param.default
        properties[param.name] = prop
    parameters = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
        **({"$defs": copy.deepcopy(generated["$defs"])} if "$defs" in generated else {}),
    }
    return _Described(description, parameters, takes_context, arg_hints)


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
