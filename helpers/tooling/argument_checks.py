"""A tool call's arguments, checked before the tool runs, and what the model is told when they
do not fit.

Two kinds of tool, each checked by a well-kept library, and one way of saying what is wrong
(:func:`function_problems`, :func:`schema_problems`: the same words for both):

- A Python function's (:func:`helpers.tooling.registry.tool_from_function`, or a
  :class:`~helpers.tooling.registry.Tool` given ``hints``): pydantic validates the arguments
  against a model of its parameters (:func:`arguments_model`, built with ``create_model``:
  https://docs.pydantic.dev/latest/concepts/models/#dynamic-model-creation), in strict mode (no
  coercion: an ``int`` takes neither ``true`` nor ``1.0``, a ``str`` no number:
  https://docs.pydantic.dev/latest/concepts/strict_mode/) and forbidding arguments the function
  does not have (``extra="forbid"``: https://docs.pydantic.dev/latest/api/config/). The same
  model gives the tool's JSON Schema (:mod:`helpers.tooling.registry`).
- A tool described by a JSON Schema alone (an MCP server's ``inputSchema``): jsonschema
  (https://python-jsonschema.readthedocs.io/), in the dialect its ``$schema`` names, JSON Schema
  2020-12 when it names none (the MCP specification 2026-07-28, "Basic › JSON Schema Usage ›
  Schema Dialect"; "Server › Tools › Tool": ``inputSchema`` "Defaults to 2020-12 if no
  ``$schema`` field is present"). The MCP client checks a server's schema itself when it lists
  the tool (:func:`check_input_schema`: a dialect jsonschema does not know, or a schema its
  dialect's metaschema refuses, leaves the tool out, as "JSON Schema Usage › Implementation
  Requirements" asks: "validate schemas according to their declared or default dialect",
  "handle unsupported dialects gracefully"); a call's arguments are checked before it is sent
  ("Server › Tools › Security Considerations": clients SHOULD "Follow the ``$ref`` resolution
  requirements when validating tool inputs and outputs against ``inputSchema`` and
  ``outputSchema``"), so a call that does not fit is an error result the model can act on (a
  tool execution error, "Error Handling") and never reaches the server.

A server's schema is untrusted, so what it can make the client do is bounded:

- ``pattern`` and ``patternProperties`` run on RE2 (google-re2), in time linear in the text: a
  server's ``^(a+)+$`` cannot make the check backtrack for ever as Python's ``re`` (what
  jsonschema uses) would. JSON Schema's patterns are ECMA-262 regular expressions (JSON Schema
  2020-12 Core, §6.4 "Regular Expressions"; Validation, §6.3.3 ``pattern``); one RE2 cannot
  compile (a lookahead, a backreference) or holds over :data:`RE2_MAX_MEM` checks nothing: the
  server, which "MUST validate all tool inputs" ("Server › Tools › Security Considerations"),
  judges it. A subschema is read in its schema's dialect, whatever ``$schema`` it names
  (jsonschema would switch to its stock validator there: :func:`_same_class_evolve`).
- No ``$ref`` leaves the schema: the registry jsonschema resolves references in holds the
  schema and the metaschemas only, and fetches nothing (MCP, "JSON Schema Usage › $ref
  Resolution": implementations "MUST NOT automatically dereference ``$ref`` values that resolve
  to a network URI"; jsonschema's default registry would fetch them). The MCP client leaves out
  a tool whose schema holds a reference that does not resolve within it
  (:func:`unresolved_reference`, when it lists the tool), and a call whose check meets such a
  reference is refused, not passed unchecked (the same section: such schemas "SHOULD be
  rejected rather than silently treated as permissive").
- Every step of a check counts against :data:`MAX_SCHEMA_STEPS` (MCP, "JSON Schema Usage ›
  Composition-Keyword Resource Use": implementations "SHOULD apply reasonable bounds … to
  prevent a malicious schema from acting as a Denial-of-Service vector against the
  validator"): ``anyOf`` within ``anyOf`` through ``$defs`` doubles the work at each level. A
  check that runs out says what it found by then, and a call it found nothing wrong with goes
  to the server unchecked beyond that point, its record naming the guard
  ``arguments_check_unfinished`` (:meth:`helpers.tooling.registry.Tool.check_call`);
  ``uniqueItems`` is checked in linear time, not jsonschema's quadratic one. The MCP client
  checks a server's schemas against their metaschemas, and their references, within a budget
  of its own.
- The schema itself is at most :data:`helpers.mcp.client.MAX_SCHEMA_BYTES` (the client leaves
  a larger one out), and the arguments are within the turn's bounds (characters and nesting:
  :mod:`helpers.loop.dispatch`); a message quotes at most :data:`SHOWN_CHARS` of a value, and
  says at most :data:`MAX_PROBLEMS` problems.

jsonschema is imported only when a schema is checked, and without the backend of its ``iri``
format checks (:func:`helpers.base.imports.import_jsonschema`): with it, the import took 1.5 s
of CPU.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import re2
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from helpers.base.imports import import_jsonschema
from helpers.text.patterns import re2_options

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError as SchemaViolation
    from jsonschema.protocols import Validator

#: The steps one check of a call's arguments against a server's schema may take: each keyword
#: evaluated, each item of its value (``enum``'s choices, ``required``'s names…), each subschema
#: entered (an item of an array, a ``$ref``, a member of ``anyOf``) and each name a
#: ``patternProperties`` pattern searches. A call of a dozen arguments takes a few dozen.
MAX_SCHEMA_STEPS = 20_000
#: Characters a pattern's search reads per step: a search is a step for each this many
#: characters of its text (RE2 reads a text once), so the steps bound the text scanned, whatever
#: the number of patterns a schema holds.
SCANNED_CHARS_PER_STEP = 1_000
#: The longest pattern of a server's schema that is run (a longer one checks nothing), as
#: grep's patterns are bounded (:data:`helpers.context.resolve_tools.MAX_GREP_PATTERN_CHARS`).
MAX_PATTERN_CHARS = 1_000
#: The memory RE2 may take for one of a schema's patterns (one that needs more checks nothing).
RE2_MAX_MEM = 2 << 20
#: Compiled patterns kept for the next check (at most this many times :data:`RE2_MAX_MEM`).
KEPT_PATTERNS = 64
#: Problems a refusal names (the rest are counted).
MAX_PROBLEMS = 10
#: Characters of a value, a pattern or a library's message a problem quotes.
SHOWN_CHARS = 80

_STRICT = ConfigDict(extra="forbid", strict=True)
# a pattern RE2 cannot compile checks nothing; a pattern is searched for, its groups never read
_RE2_OPTIONS = re2_options(RE2_MAX_MEM, never_capture=True)


def _shown(value: Any) -> str:
    """``repr(value)``, cut to :data:`SHOWN_CHARS` characters."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _cut(text: str, limit: int = 4 * SHOWN_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _at(name: str, path: Any) -> str:
    """``argument 'tags'[0]``: where in an argument a problem is."""
    return f"argument {name!r}" + "".join(f"[{part!r}]" for part in path)


def _expected(prop: Mapping[str, Any]) -> str:
    """The JSON type(s) a property's schema asks for, in words: ``integer``, ``string or
    null``; ``a different type`` when it names none."""
    kinds = prop.get("type")
    if kinds is None and isinstance(prop.get("anyOf"), list):
        kinds = [member.get("type") for member in prop["anyOf"] if isinstance(member, dict)]
    names = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    return " or ".join(str(k) for k in names if k) or "a different type"


def _wrong_type(name: str, value: Any, expected: str) -> str:
    return f"argument {name!r} must be {expected}, got {type(value).__name__}"


def _not_one_of(name: str, value: Any, choices: Any) -> str:
    listed = _cut(", ".join(repr(c) for c in choices)) if isinstance(choices, list) else "…"
    return f"argument {name!r} must be one of {listed}, got {_shown(value)}"


def _said(missing: list[str], unexpected: list[str], accepted: Any, others: list[str]) -> list[str]:
    """The problems in the order a model reads them best: what is missing, what is not
    accepted, then each argument's own, at most :data:`MAX_PROBLEMS` of those."""
    problems = []
    if missing:
        problems.append(f"missing required argument(s): {', '.join(dict.fromkeys(missing))}")
    if unexpected:
        problems.append(
            f"unexpected argument(s): {', '.join(dict.fromkeys(unexpected))} "
            f"(accepted: {', '.join(accepted) or 'none'})"
        )
    problems += others[:MAX_PROBLEMS]
    if len(others) > MAX_PROBLEMS:
        problems.append(f"and {len(others) - MAX_PROBLEMS} more")
    return problems


# -- a Python function's arguments: pydantic ------------------------------------------------------


def _build_model(fields: tuple[tuple[str, Any, bool], ...]) -> type[BaseModel]:
    # each parameter is a field under a name of its own, its own name the alias: a parameter may
    # be called anything a keyword argument can (``json``, ``schema``, ``model_config``…)
    return create_model(  # type: ignore[call-overload, no-any-return]
        "Arguments",
        __config__=_STRICT,
        **{
            f"p{i}": (hint, Field(... if required else None, alias=name))
            for i, (name, hint, required) in enumerate(fields)
        },
    )


_cached_model = functools.lru_cache(maxsize=256)(_build_model)


def arguments_model(hints: Mapping[str, Any], required: Any = ()) -> type[BaseModel]:
    """The pydantic model of a function's arguments: one field per parameter (its type hint;
    required when named in ``required``), strict, no other argument. Built once per distinct
    signature (a policy's tools are built again for every model call).

    Raises:
        pydantic.errors.PydanticSchemaGenerationError: a hint pydantic cannot describe.
    """
    wanted = set(required) if isinstance(required, list | tuple | set | frozenset) else set()
    fields = tuple((name, hint, name in wanted) for name, hint in hints.items())
    try:
        hash(fields)
    except TypeError:  # a hint that cannot be hashed (Annotated with a list in it): not cached
        return _build_model(fields)
    return _cached_model(fields)


def function_problems(
    model: type[BaseModel], arguments: dict[str, Any], parameters: Mapping[str, Any]
) -> list[str]:
    """What is wrong with ``arguments`` for a function whose arguments ``model`` describes
    (:func:`arguments_model`) and whose JSON Schema is ``parameters``; ``[]``: nothing.

    Each of pydantic's errors (https://docs.pydantic.dev/latest/errors/validation_errors/) is
    said in the schema's terms: ``missing`` and ``extra_forbidden`` as the missing and the
    unexpected arguments, an argument of the wrong type by the JSON type its schema names, a
    ``literal_error`` by the schema's ``enum``, one inside an argument (an item of a list) with
    where it is and pydantic's words.
    """
    try:
        model.model_validate(arguments)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False)
    else:
        return []
    props = parameters.get("properties")
    props = props if isinstance(props, dict) else {}
    missing: list[str] = []
    unexpected: list[str] = []
    others: list[str] = []
    said: set[str] = set()
    for error in errors:
        loc = error["loc"]
        name, path = (str(loc[0]), loc[1:]) if loc else ("", ())
        if error["type"] == "missing" and not path:
            missing.append(name)
        elif error["type"] == "extra_forbidden" and not path:
            unexpected.append(name)
        elif name not in said:  # one problem per argument (a union names each member's)
            said.add(name)
            prop = props.get(name, {})
            value = arguments.get(name)
            if path and "anyOf" not in prop:
                others.append(f"{_at(name, path)}: {error['msg']}")
            elif "enum" in prop:
                others.append(_not_one_of(name, value, prop["enum"]))
            else:
                others.append(_wrong_type(name, value, _expected(prop)))
    return _said(missing, unexpected, props, others)


# -- a schema's arguments: jsonschema, RE2, a budget ----------------------------------------------


class _OutOfSteps(Exception):
    """A check spent its steps."""


class _Budget:
    """The steps one check may still take."""

    __slots__ = ("left",)

    def __init__(self, steps: int) -> None:
        self.left = steps

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise _OutOfSteps


#: The budget of the check running in this context (each check sets its own).
_budget: ContextVar[_Budget] = ContextVar("schema_check_budget")


def _spend(steps: int = 1) -> None:
    _budget.get().spend(steps)


@functools.lru_cache(maxsize=KEPT_PATTERNS)
def _regex(pattern: Any) -> Any | None:
    """``pattern`` compiled by RE2, or ``None``: not a string, longer than
    :data:`MAX_PATTERN_CHARS`, or a pattern RE2 cannot run."""
    if not isinstance(pattern, str) or len(pattern) > MAX_PATTERN_CHARS:
        return None
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error:
        return None


def _violation(message: str) -> SchemaViolation:
    from jsonschema.exceptions import ValidationError as SchemaViolation

    return SchemaViolation(message)


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """``pattern`` (Validation §6.3.3), on RE2; a step per :data:`SCANNED_CHARS_PER_STEP`
    characters searched."""
    if not validator.is_type(instance, "string"):
        return
    regex = _regex(pattern)
    if regex is None:
        return
    _spend(len(instance) // SCANNED_CHARS_PER_STEP)
    if not regex.search(instance):
        yield _violation(f"{_shown(instance)} does not match the pattern {_shown(pattern)}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """``patternProperties`` (Core §10.3.2.2), on RE2; each name searched is a step."""
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = _regex(pattern)
        if regex is None:
            continue
        _spend(len(instance) + sum(map(len, instance)) // SCANNED_CHARS_PER_STEP)
        for name, value in instance.items():
            if regex.search(name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


class _Unexpected(Exception):
    """Names an object holds that its schema closes out (``additionalProperties: false``)."""


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """``additionalProperties`` (Core §10.3.2.3): the names neither ``properties`` nor a
    ``patternProperties`` pattern (on RE2; one RE2 cannot run matches every name) covers."""
    if not validator.is_type(instance, "object"):
        return
    props = schema.get("properties", {})
    patterns = [_regex(p) for p in schema.get("patternProperties", {})]
    _spend(len(instance) * len(patterns))
    extras = [
        name
        for name in instance
        if name not in props and not any(r is None or r.search(name) for r in patterns)
    ]
    if validator.is_type(extra, "object"):
        for name in extras:
            yield from validator.descend(instance[name], extra, path=name)
    elif extra is False and extras:
        violation = _violation(f"unexpected properties: {', '.join(extras)}")
        violation.cause = _Unexpected(*extras)
        yield violation


def _json_key(value: Any) -> Any:
    """A hashable key equal for JSON values JSON Schema calls equal (Core §4.2.2: numbers by
    value, so ``1`` and ``1.0``; ``true`` is no number; objects whatever their key order)."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_json_key(v) for v in value))
    if isinstance(value, dict):
        return ("object", frozenset((k, _json_key(v)) for k, v in value.items()))
    return ("string", value)


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """``uniqueItems`` (Validation §6.4.3), in time linear in the array (jsonschema compares
    every pair of items it cannot sort)."""
    if unique and validator.is_type(instance, "array"):
        keys = [_json_key(item) for item in instance]
        if len(set(keys)) < len(keys):
            yield _violation("has non-unique elements")


def _unchecked(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """A keyword the client leaves to the server."""
    return iter(())


def _counted(keyword: Any) -> Any:
    """``keyword``, its evaluation a step and each item of its value another (``required``,
    ``enum``, ``properties``… go through theirs)."""

    def counted(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _spend(1 + (len(value) if isinstance(value, list | dict) else 0))
        return keyword(validator, value, instance, schema)

    return counted


def _same_class_evolve(self: Any, **changes: Any) -> Any:
    """jsonschema's ``Validator.evolve`` (the validator of a subschema, for each descent and
    each ``$ref``), a step; and of the same class whatever the subschema says: jsonschema's own
    switches to the validator of the dialect a subschema's ``$schema`` names, its stock one,
    which runs ``pattern`` on Python's ``re`` and counts nothing (a server's ``{"$schema": …,
    "pattern": "^(a+)+$"}`` inside its schema would backtrack for ever). A subschema is read in
    its schema's dialect."""
    import attrs

    _spend()
    changes.setdefault("schema", self.schema)
    for attribute in attrs.fields(type(self)):
        if attribute.init and attribute.alias not in changes:
            changes[attribute.alias] = getattr(self, attribute.name)
    return type(self)(**changes)


@functools.cache
def _checking_class(dialect: type, pattern_properties: bool) -> type:
    """``dialect``'s jsonschema validator with every step counted (:func:`_counted`,
    :func:`_same_class_evolve`) and the keywords that run a server's regular expressions on
    RE2. ``unevaluatedProperties`` reads ``patternProperties`` with Python's ``re``
    (jsonschema's ``find_evaluated_property_keys_by_schema``): in a schema that has any, it is
    left to the server."""
    import_jsonschema()
    from jsonschema import validators

    own = {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "uniqueItems": _unique_items,
    }
    if pattern_properties:
        own["unevaluatedProperties"] = _unchecked
    keywords = {name: _counted(own.get(name, fn)) for name, fn in dialect.VALIDATORS.items()}
    checking = validators.extend(dialect, keywords)
    checking.evolve = _same_class_evolve  # its own class, not a subclass (jsonschema warns)
    return checking


def _dialect(schema: Mapping[str, Any]) -> type | None:
    """The jsonschema validator of the dialect ``schema``'s ``$schema`` names (2020-12 when it
    names none); ``None``: one jsonschema does not know."""
    import_jsonschema()
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    named = schema.get("$schema")
    if named is None:
        return Draft202012Validator
    if not isinstance(named, str):
        return None
    return validator_for(schema, default=None)  # type: ignore[arg-type]


def _validator(schema: Mapping[str, Any], dialect: type) -> Validator:
    """A checking validator of ``schema`` that fetches no ``$ref`` (an empty registry: the
    schema and the metaschemas only)."""
    from referencing import Registry

    holds_patterns = '"patternProperties"' in json.dumps(schema, default=str)
    return _checking_class(dialect, holds_patterns)(schema, registry=Registry())  # type: ignore[no-any-return]


@dataclass(frozen=True)
class SchemaCheck:
    """One check against a JSON Schema.

    Attributes:
        problems: what is wrong, in the model's words (``[]``: nothing found).
        steps: the steps it took (its work: keywords, the items of their values, subschemas
            entered, names searched by a pattern).
        finished: it got to the end within its steps (and the schema could be applied at all).
    """

    problems: list[str]
    steps: int
    finished: bool


def _run(validator: Validator, instance: Any, steps: int) -> tuple[list[Any], int, bool]:
    """The first violations of ``instance`` (a few more than a refusal names), the steps
    taken, and whether the check ended within ``steps``."""
    budget = _Budget(steps)
    token = _budget.set(budget)
    found: list[Any] = []
    try:
        for violation in validator.iter_errors(instance):
            found.append(violation)
            if len(found) > 2 * MAX_PROBLEMS:
                break
        finished = True
    except (_OutOfSteps, RecursionError):  # a $ref to itself recurses until one of them
        finished = False
    finally:
        _budget.reset(token)
    return found, steps - max(budget.left, 0), finished


def check_schema_arguments(
    schema: Mapping[str, Any], arguments: dict[str, Any], *, steps: int = MAX_SCHEMA_STEPS
) -> SchemaCheck:
    """Check ``arguments`` against a tool's JSON Schema, within ``steps`` (the module's
    bounds); the problems in the words :func:`function_problems` uses for a Python tool. A
    schema that names a dialect jsonschema does not know, or that jsonschema cannot apply,
    checks nothing (the MCP client lists no such tool: :func:`check_input_schema`)."""
    from referencing.exceptions import Unresolvable

    dialect = _dialect(schema)
    if dialect is None:
        return SchemaCheck([], 0, False)
    try:
        found, spent, finished = _run(_validator(schema, dialect), arguments, steps)
    except Unresolvable as exc:
        reference = getattr(exc, "ref", "")
        return SchemaCheck(
            [
                f"its input schema refers to {_shown(reference)}, which is not in it; the client "
                "fetches no schema from elsewhere, so the arguments could not be checked"
            ],
            0,
            False,
        )
    except Exception:  # a server's schema jsonschema cannot apply: the server judges the call
        return SchemaCheck([], 0, False)
    return SchemaCheck(_schema_said(found, schema, arguments), spent, finished)


def schema_problems(
    schema: Mapping[str, Any], arguments: dict[str, Any], *, shape_only: bool = False
) -> list[str]:
    """The problems of :func:`check_schema_arguments`; with ``shape_only``, against
    :func:`shape_of` the schema (arguments whose references are not unboxed yet)."""
    return check_schema_arguments(shape_of(schema) if shape_only else schema, arguments).problems


def shape_of(schema: Mapping[str, Any]) -> dict[str, Any]:
    """What can be checked of a call before its references are unboxed: the names required and
    allowed, and each argument's JSON type, no more. A reference (``internal://<id>``) stands for
    a value the model has not seen, so a ``pattern``, a ``minLength`` or a ``format`` applies to
    that value once unboxed (the full check then), never to the reference's own text."""
    properties = schema.get("properties")
    shape: dict[str, Any] = {"type": "object"}
    if isinstance(properties, Mapping):
        shape["properties"] = {
            name: {"type": prop["type"]} if isinstance(prop, Mapping) and "type" in prop else {}
            for name, prop in properties.items()
        }
    for keyword in ("required", "additionalProperties"):
        if isinstance(schema.get(keyword), list | bool):
            shape[keyword] = schema[keyword]
    return shape


def _schema_said(found: list[Any], schema: Mapping[str, Any], arguments: Any) -> list[str]:
    """jsonschema's violations in the words of :func:`_said`: at the top level the missing and
    the unexpected arguments, an argument's ``type`` and ``enum`` as for a Python tool, any other
    with where it is and jsonschema's message (cut)."""
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    missing: list[str] = []
    unexpected: list[str] = []
    others: list[str] = []
    for violation in found:
        path = list(violation.absolute_path)
        if not path and violation.validator == "required":
            missing += [str(n) for n in violation.validator_value if n not in arguments]
        elif not path and isinstance(violation.cause, _Unexpected):
            unexpected += [str(n) for n in violation.cause.args]
        elif not path:
            others.append(_cut(violation.message))
        elif len(path) == 1 and violation.validator == "type":
            name = str(path[0])
            others.append(_wrong_type(name, violation.instance, _expected(violation.schema)))
        elif len(path) == 1 and violation.validator == "enum":
            name = str(path[0])
            others.append(_not_one_of(name, violation.instance, violation.validator_value))
        else:
            others.append(f"{_at(str(path[0]), path[1:])}: {_cut(violation.message)}")
    return _said(missing, unexpected, props, others)


def check_input_schema(schema: Mapping[str, Any], steps: int) -> SchemaCheck:
    """Check a server's ``inputSchema`` itself, within ``steps``: a problem (words that follow
    "its input schema") when its ``$schema`` names a dialect jsonschema does not know, its
    dialect's metaschema refuses it (the MCP spec: schemas "MUST be valid according to their
    declared or default dialect", "JSON Schema Usage › Schema Validation"), or a reference in it
    (``$ref``, ``$dynamicRef``, ``$recursiveRef``) leads nowhere within it
    (:func:`unresolved_reference`: the client fetches none, so every call of the tool would be
    refused; "JSON Schema Usage › $ref Resolution": such schemas "SHOULD be rejected"). Not
    ``finished``: the steps ran out first, and nothing was found."""
    dialect = _dialect(schema)
    if dialect is None:
        named = _shown(schema.get("$schema"))
        return SchemaCheck([f"names a dialect the client does not know ($schema {named})"], 0, True)
    meta = _validator(dialect.META_SCHEMA, dialect)  # type: ignore[attr-defined]
    try:
        found, spent, finished = _run(meta, schema, steps)
    except Exception as exc:  # a schema jsonschema trips on
        return SchemaCheck([f"cannot be read as JSON Schema ({type(exc).__name__})"], 0, True)
    if found:
        first = found[0]
        where = "/".join(str(p) for p in first.absolute_path) or "its top level"
        return SchemaCheck(
            [f"is not valid JSON Schema (at {where}: {_cut(first.message)})"], spent, True
        )
    reference = unresolved_reference(schema, dialect, steps - spent)
    spent += reference.steps
    if reference.problems:
        return SchemaCheck(reference.problems, spent, True)
    return SchemaCheck([], spent, finished and reference.finished)


#: The keywords that refer to another schema by URI, in the dialects that have them.
_REFERRING_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


def unresolved_reference(schema: Mapping[str, Any], dialect: type, steps: int) -> SchemaCheck:
    """Check that every reference in ``schema`` (each ``$ref``, ``$dynamicRef`` or
    ``$recursiveRef`` its dialect knows, in every subschema and in every schema one leads to)
    resolves as a check of a call resolves it (:func:`_validator`): within the schema itself
    (a JSON pointer, an ``$anchor``, a subschema's ``$id``) or to one of the dialects'
    metaschemas, nothing fetched.

    Args:
        schema: a server's ``inputSchema``, valid in ``dialect`` (:func:`check_input_schema`
            checks that first).
        dialect: its jsonschema validator class (:func:`_dialect`).
        steps: the most steps it may take: each subschema visited and each reference looked up
            is one (plus one per segment of its JSON pointer).

    Returns:
        A :class:`SchemaCheck` whose one problem (words that follow "its input schema") names
        the first reference that leads nowhere, as a call's check would on meeting it
        (:func:`check_schema_arguments`); ``[]`` and not ``finished`` when the steps ran out
        first (or the schema could not be walked). It raises nothing.
    """
    from jsonschema_specifications import REGISTRY as METASCHEMAS
    from referencing import Registry, Specification
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import specification_with

    # the specification jsonschema's validator of this dialect reads every subschema in
    dialect_id = dialect.ID_OF(dialect.META_SCHEMA)  # type: ignore[attr-defined]
    specification = specification_with(
        dialect_id or "urn:unknown-dialect", default=Specification.OPAQUE
    )
    keywords = [k for k in _REFERRING_KEYWORDS if k in dialect.VALIDATORS]  # type: ignore[attr-defined]
    root = specification.create_resource(schema)
    base = root.id() or ""
    budget = _Budget(steps)
    try:
        registry = METASCHEMAS.combine(Registry().with_resource(base, root).crawl())
        todo = [(schema, registry.resolver(base_uri=base))]
        seen: set[int] = set()
        while todo:
            contents, resolver = todo.pop()
            if id(contents) in seen:
                continue
            seen.add(id(contents))
            budget.spend(1)
            if not isinstance(contents, Mapping):  # true, false: nothing in it refers
                continue
            for ref in (r for r in map(contents.get, keywords) if isinstance(r, str)):
                budget.spend(1 + ref.count("/"))
                try:
                    resolved = resolver.lookup(ref)
                    target = resolved.contents
                except (Unresolvable, LookupError, ValueError, TypeError, AttributeError):
                    # referencing raises ValueError, not Unresolvable, for a pointer that runs
                    # through a string or a list: it leads nowhere all the same
                    target = None
                if not isinstance(target, Mapping | bool):  # nowhere, or to a value: no schema
                    return SchemaCheck(
                        [
                            f"refers to {_shown(ref)}, which is not a schema in it: the client "
                            "fetches no schema from elsewhere, so no call of it could be checked"
                        ],
                        steps - max(budget.left, 0),
                        True,
                    )
                todo.append((target, resolved.resolver))
            for sub in specification.subresources_of(contents):
                todo.append((sub, resolver.in_subresource(specification.create_resource(sub))))
    except (_OutOfSteps, Exception):  # out of steps, or a schema not valid after all
        return SchemaCheck([], steps - max(budget.left, 0), False)
    return SchemaCheck([], steps - budget.left, True)
