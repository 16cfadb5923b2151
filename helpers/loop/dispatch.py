"""One tool call: the path tool → policy → store → messages, as the turn takes it.

:func:`dispatch` runs one call the model made, in phases, each of which may end it:

1. parse the JSON arguments the model sent;
2. find the tool among those offered to the model so far in this turn (a tool that tool search
   never offered nor loaded does not run, even when the model knows its name);
3. check the arguments' shape (a reference counted as the string it stands for), so no policy
   reads the store for a call that cannot run; ``policy.prepare_arguments``: the guards
   (:mod:`helpers.base.guards`) and unboxing (box strategy);
4. check the arguments the tool gets in full, on the values the policy handed back (unboxed,
   or rewritten by an attendee's policy: :meth:`~helpers.tooling.registry.Tool.check_call`), and
   run the tool with them;
5. log the full output to the store (when there is one);
6. ``policy.present``: the full result, a preview, or a reference;

and returns the :class:`helpers.loop.records.ToolCallRecord` whose ``result`` goes into the
``tool`` message. Anything that goes wrong in 1-4 (malformed JSON, unknown tool, refused
reference, bad arguments, the tool raising) becomes a JSON error tool result,
``{"error": "..."}``, and the turn goes on: the model reads the error and can try again.

What the policy, the check and the tool did (:class:`helpers.tooling.effects.CallEffects`: they
return it) is recorded here: the guards that repaired the call, or that note what went through
(``arguments_check_unfinished``), go on its record as each step returns them, so a refusal later
on (the store's byte caps) keeps them as any refusal does; the rest (outputs fetched, references
shown, tools loaded) goes into the turn's :class:`helpers.loop.turn_state.TurnState` with the
bytes the call stored, once its result is delivered (a refused call delivered nothing).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from helpers.base import ids
from helpers.base.guards import GuardRefusal
from helpers.context.boxing import canonicalize_references
from helpers.context.policies import MAX_UNBOXED_CHARS, ResultPolicy
from helpers.loop.records import ToolCallRecord, error_result, new_tool_call_id
from helpers.loop.turn_state import TurnState
from helpers.models.replies import map_strings
from helpers.store.quotas import StoreQuotaExceeded
from helpers.store.schema import ToolOutput
from helpers.store.writing import DuplicateToolCallError
from helpers.text.redaction import redact
from helpers.text.unicode import has_unpaired_surrogate, valid_text
from helpers.tooling.effects import NO_EFFECTS, CallEffects
from helpers.tooling.registry import (
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolRegistry,
    UnknownToolError,
)

#: The longest arguments JSON text a tool call may carry, in characters; longer is refused
#: (large values should travel as references).
MAX_ARGUMENTS_CHARS = 1_000_000
#: The same for a call a program makes (code mode): a program passes tools' outputs as values,
#: so its calls may carry as much as unboxing may put into one call.
MAX_PROGRAM_ARGUMENTS_CHARS = MAX_UNBOXED_CHARS


def _holds_unpaired_surrogate(value: Any) -> bool:
    """Whether any string in the JSON value ``value`` (keys included) is not valid Unicode."""
    found = False

    def check(text: str) -> str:
        nonlocal found
        found = found or has_unpaired_surrogate(text)
        return text

    map_strings(value, check)
    return found


def dispatch(
    tool_call_id: str,
    name: str,
    raw_arguments: str,
    tools: ToolRegistry,
    policy: ResultPolicy,
    ctx: ToolContext,
    *,
    state: TurnState | None = None,
    provider_call_id: str | None = None,
    max_arguments_chars: int = MAX_ARGUMENTS_CHARS,
) -> ToolCallRecord:
    """Run one tool call through the policy and the store; never raises (but for Ctrl-C).

    Args:
        tool_call_id: the call's id (the client's own in a turn: :mod:`helpers.loop.agent`).
        name: the tool the model named.
        raw_arguments: the arguments JSON text as the model sent it ("" means ``{}``).
        tools: the tools offered to the model (real and internal).
        policy: the result policy.
        ctx: the store, the thread, and the secrets to redact from outputs.
        state: the turn's state: the policy reads it (:meth:`TurnState.view`), and what the
            call did goes into it. ``None``: a fresh one, the call a turn of its own (an MCP
            server's ``tools/call``, a test's call).
        provider_call_id: the provider's id for the call, stored for reference.
        max_arguments_chars: the longest arguments text taken, in characters (a program's call
            may pass values as long as a tool's output: :data:`MAX_PROGRAM_ARGUMENTS_CHARS`).

    Returns:
        A :class:`ToolCallRecord` whose ``result`` is what goes into the ``tool`` message. Bad
        input of any kind (malformed or too deep JSON, text that is not valid Unicode, unknown
        tools, refused references, wrong arguments), a tool that fails in any way (``SystemExit``
        included) and a broken store all end here as an error result; a store failure also sets
        ``fatal``, so the turn stops instead of going on without its outputs.

    Raises:
        KeyboardInterrupt: Ctrl-C still stops the turn.
    """
    call = CallInProgress.start(tool_call_id, name, raw_arguments, provider_call_id, ctx)
    state = state if state is not None else TurnState()
    try:
        return _run_call(call, tools, policy, state, max_arguments_chars)
    except KeyboardInterrupt:
        raise
    except SQLAlchemyError as exc:
        message = store_failure_message(exc)
        record = call.refuse(f"{name}: {message}; nothing of this call was kept")
        record.fatal = message
        return record
    except BaseException as exc:  # a bug, MemoryError, RecursionError: an error result
        return call.refuse(f"{name} could not be dispatched: {type(exc).__name__}: {exc}")


def store_failure_message(exc: BaseException) -> str:
    """What the user reads when the store failed (``exc``: a SQLAlchemy error, or any other),
    on one line of at most 300 characters of the reason."""
    reason = " ".join(str(exc).split("\n")[0].split())[:300]
    return f"the tool-output store failed ({type(exc).__name__}: {reason})"


@dataclass
class CallInProgress:
    """One tool call being dispatched (or refused before it runs): what is needed to answer it
    with an error result at any point. ``guards``: the guards (:data:`helpers.base.guards.GUARDS`)
    that repaired it (or note what went through) so far, in the order they fired (each step
    returns its own); ``effects``: what its steps did so far (:meth:`took`), for the turn's
    state once its result is delivered."""

    id: str
    name: str
    raw_arguments: str
    provider_id: str | None
    ctx: ToolContext
    guards: list[str] = field(default_factory=list)
    server: str | None = None  # the MCP server of the tool, once the tool is known
    effects: CallEffects = NO_EFFECTS

    def took(self, effects: CallEffects) -> None:
        """Take what one step did: its guards onto the call's record at once (a refusal from
        then on keeps them), all of it into :attr:`effects`."""
        self.guards += effects.guards
        self.effects = self.effects | effects

    @classmethod
    def start(
        cls,
        tool_call_id: str,
        name: str,
        raw_arguments: str,
        provider_id: str | None,
        ctx: ToolContext,
    ) -> CallInProgress:
        """The call as it starts, before any guard of its own fires."""
        return cls(tool_call_id, name, raw_arguments or "", provider_id, ctx)

    def refuse(
        self, message: str, *, ran: bool = False, guard: str | None = None
    ) -> ToolCallRecord:
        """The call's record as an error result saying ``message`` (``ran``: the tool did run;
        ``guard``: the guard that refused it, added to those that fired), with every configured
        secret redacted from it (a tool's or a server's error may quote one)."""
        message = redact(message, self.ctx.secrets)
        return ToolCallRecord(
            id=self.id,
            name=self.name,
            arguments=valid_text(self.raw_arguments),
            result=error_result(message),
            result_kind="error",
            error=message,
            ran=ran,
            provider_id=self.provider_id,
            guards=[*self.guards, *([guard] if guard else [])],
            server=self.server,
        )


#: The deepest nesting of lists and objects a tool call's arguments may have.
MAX_ARGUMENT_DEPTH = 32


def _nesting_depth(value: Any, limit: int) -> int:
    """Nesting depth of a JSON value, counted up to ``limit + 1`` (no deeper recursion)."""
    if limit < 0 or not isinstance(value, dict | list):
        return 0
    items = value.values() if isinstance(value, dict) else value
    return 1 + max((_nesting_depth(v, limit - 1) for v in items), default=0)


#: What a server that passes the Harmony format of gpt-oss through puts before a tool's name
#: (its recipient ``functions.<name>``; cubist38/mlx-openai-server pull request 51).
HARMONY_TOOL_PREFIX = "functions."


def _named_tool(tools: ToolRegistry, name: str) -> tuple[Tool, tuple[str, ...]]:
    """The tool ``name`` names, and the guard that repaired the name (none, or
    ``tool_name_unprefixed``: ``functions.<tool>`` names ``<tool>`` when no tool has the whole
    name).

    Raises:
        UnknownToolError: no such tool (or not in this mode), with the model's name in it.
    """
    try:
        return tools.get(name), ()
    except UnknownToolError:
        bare = name.removeprefix(HARMONY_TOOL_PREFIX)
        if bare == name:
            raise
        try:
            tool = tools.get(bare)
        except UnknownToolError as exc:
            raise UnknownToolError(f"{exc} (read {name!r} as {bare!r})") from None
        return tool, ("tool_name_unprefixed",)


def _unwrapped_arguments(arguments: Any) -> tuple[Any, tuple[str, ...]]:
    """``arguments``, or the object inside when they came as a JSON string holding a JSON
    object (double-encoded, as Qwen2.5-7B-Instruct sends them: FoundationAgents/OpenManus pull
    request 989), with the guard that repaired them (none, or ``arguments_double_encoded``).
    Only the whole arguments: a string value inside them stays a string."""
    if not isinstance(arguments, str):
        return arguments, ()
    try:
        inner = json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments, ()
    if not isinstance(inner, dict):
        return arguments, ()
    return inner, ("arguments_double_encoded",)


def _run_call(
    call: CallInProgress,
    tools: ToolRegistry,
    policy: ResultPolicy,
    state: TurnState,
    max_arguments_chars: int,
) -> ToolCallRecord:
    """Run one tool call in phases, each of which may end it with an error result: read the
    arguments and find the tool, unbox and check them (the policy, reading ``state``), run the
    tool, keep the output (the store), present it to the model (the policy); then record in
    ``state`` what the policy, the check and the tool said they did (their guards go on the
    call's record as each step returns them: :meth:`CallInProgress.took`)."""
    read = _read_call(call, tools, max_arguments_chars)
    if isinstance(read, ToolCallRecord):
        return read
    tool, arguments = read
    name, refuse = tool.name, call.refuse
    call.server = tool.server
    try:
        # the shape first, so no policy reads the store for a call that cannot run
        tool.check_arguments(_arguments_for_shape_check(arguments), shape_only=True)
        prepared = policy.prepare_arguments(call.ctx, tool, arguments, state.view())
        call.took(prepared.effects)
        real_arguments = prepared.arguments
        # the full check, on the values the tool gets: a policy may have rewritten them
        call.took(tool.check_call(real_arguments))
    except GuardRefusal as exc:
        call.guards += exc.repaired
        return refuse(f"{name} was not run: {exc}", guard=exc.guard)
    except ToolArgumentError as exc:
        return refuse(f"{name} was not run: {exc}")
    try:
        reported = tool.run(real_arguments, call.ctx)
    except KeyboardInterrupt:
        raise
    except GuardRefusal as exc:  # a resolve tool refusing its reference before doing anything
        call.guards += exc.repaired
        return refuse(f"{name} was not run: {exc}", guard=exc.guard)
    except BaseException as exc:  # a tool's failure (SystemExit too) is the model's information
        return refuse(f"{name} failed: {type(exc).__name__}: {exc}", ran=True)
    call.took(reported.effects)
    # what the model and the store get: valid text, no configured secret in it
    output = redact(valid_text(reported.text), call.ctx.secrets)
    row = _keep_output(call, tool, output, state)
    if isinstance(row, ToolCallRecord):
        return row
    presented = policy.present(call.ctx, tool, call.id, output, row)
    call.took(presented.effects)
    state.record(call.effects)
    if row is not None and not output.endswith("\n"):  # the store hashed it already
        output_sha = output_trimmed = row.sha256
    else:
        output_sha, output_trimmed = ids.content_sha256_and_trimmed(output)
    received = {
        k: ids.content_sha256_and_trimmed(v)
        for k, v in real_arguments.items()
        if isinstance(v, str)
    }
    return ToolCallRecord(
        id=call.id,
        name=name,
        arguments=call.raw_arguments,
        result=presented.content,
        result_kind=presented.kind,
        output_chars=len(output),
        output_sha256=output_sha,
        received_sha256={k: full for k, (full, _) in received.items()},
        output_sha256_trimmed=output_trimmed,
        received_sha256_trimmed={k: trimmed for k, (_, trimmed) in received.items()},
        ran=True,
        provider_id=call.provider_id,
        guards=call.guards,
        server=tool.server,
    )


def _not_text_message(name: str) -> str:
    """The error for arguments to ``name`` that hold text which is not valid Unicode."""
    return (
        f"arguments for {name} hold text that is not valid Unicode (an unpaired surrogate such "
        "as \\ud83d, half of an emoji cut in two); nothing was run: send the arguments again "
        "as valid text"
    )


def _read_call(
    call: CallInProgress, tools: ToolRegistry, max_arguments_chars: int
) -> tuple[Tool, dict[str, Any]] | ToolCallRecord:
    """The tool a call names and its arguments as a JSON object (a wrapping unwrapped), or the
    error result refusing it: text that is not valid Unicode, arguments too long or too deep,
    malformed JSON, an unknown tool, not an object, a ``tool_call_id`` already used."""
    ctx, name, refuse, raw = call.ctx, call.name, call.refuse, call.raw_arguments
    if has_unpaired_surrogate(raw):
        return refuse(_not_text_message(name))
    if len(raw) > max_arguments_chars:
        return refuse(
            f"arguments for {name} are {len(raw):,} chars, over the limit of "
            f"{max_arguments_chars:,}; pass large values by reference instead"
        )
    try:
        arguments = json.loads(raw or "{}")
    except ValueError as exc:
        return refuse(f"malformed JSON arguments for {name}: {exc}")
    except RecursionError:
        return refuse(f"arguments for {name} are nested too deeply to read")
    try:
        tool, repaired = _named_tool(tools, name)
    except UnknownToolError as exc:
        return refuse(str(exc))
    call.guards += repaired
    name = tool.name
    arguments, repaired = _unwrapped_arguments(arguments)
    call.guards += repaired
    if not isinstance(arguments, dict):
        return refuse(f"{name} takes a JSON object of arguments, got {type(arguments).__name__}")
    if _nesting_depth(arguments, MAX_ARGUMENT_DEPTH) > MAX_ARGUMENT_DEPTH:
        return refuse(f"arguments for {name} are nested more than {MAX_ARGUMENT_DEPTH} levels deep")
    if _holds_unpaired_surrogate(arguments):
        return refuse(_not_text_message(name))
    if ctx.store is not None and not tool.internal and ctx.store.get(ctx.thread_id, call.id):
        return refuse(f"tool_call_id {call.id!r} was already used in this thread")
    return tool, arguments


def _keep_output(
    call: CallInProgress, tool: Tool, output: str, state: TurnState
) -> ToolOutput | ToolCallRecord | None:
    """Log a real tool's output to the store (``None``: an internal tool, or no store), counting
    its bytes in ``state.stored_bytes``, or the error result saying why it was not kept: over the
    turn's or the thread's byte limit (:class:`helpers.base.limits.TurnLimits`), or a
    ``tool_call_id`` already stored."""
    ctx, name, refuse = call.ctx, tool.name, call.refuse
    if ctx.store is None or tool.internal:
        return None
    stored_bytes = len(output.encode("utf-8")) + len(call.raw_arguments.encode("utf-8"))
    turn_cap = ctx.limits.max_stored_bytes_per_turn
    if turn_cap is not None and state.stored_bytes + stored_bytes > turn_cap:
        return refuse(
            f"{name} ran, but its output was not kept: this turn has stored "
            f"{state.stored_bytes:,} bytes, and {stored_bytes:,} more would pass the limit of "
            f"{turn_cap:,} bytes per turn. Answer with what you have, or ask for less "
            "(a smaller query, one page at a time).",
            ran=True,
            guard="refused_over_limit",
        )
    try:
        row = ctx.store.log_tool(
            ctx.thread_id,
            call.id,
            name,
            call.raw_arguments,
            output,
            provider_call_id=call.provider_id,
            max_thread_bytes=ctx.limits.max_stored_bytes_per_thread,
        )
    except DuplicateToolCallError as exc:
        return refuse(str(exc), ran=True)
    except StoreQuotaExceeded as exc:
        return refuse(
            f"{name} ran, but {exc}. Start a new thread, or prune this one's outputs "
            "(workbook outputs prune --thread …).",
            ran=True,
            guard="refused_over_limit",
        )
    state.stored_bytes += stored_bytes
    return row


def _arguments_for_shape_check(arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments with every whole reference counted as the string it stands for, so their
    shape can be checked before anything is unboxed (a resource-link object, or a reference in
    quotes, is the bare reference here)."""
    try:
        return canonicalize_references(arguments)
    except GuardRefusal:
        return arguments  # a malformed reference: the policy refuses it with its reason


@dataclass
class ProgramCalls:
    """The tool calls of the programs one turn runs (code mode, :mod:`helpers.context.code_mode`):
    the :class:`~helpers.tooling.program_sandbox.ProgramHost` the turn puts on its
    :class:`~helpers.tooling.registry.ToolContext`.

    Each call goes the way of any tool call (:func:`dispatch`: arguments read and checked,
    references unboxed, the tool, the store, the policy, errors as results, what it did into the
    turn's state), under its own client id, and counts against the turn's caps (``admit``); its
    record goes to the turn (``on_record``), marked with the ``run_program`` call that made it.

    Attributes:
        tools: the tools a program may call (the agent's registry, as a mode filtered it, and
            the policy's model-only tools): a name outside it is refused.
        policy: the turn's policy.
        ctx: the turn's tool context.
        state: the turn's state (the same the turn's own calls read and write).
        admit: ``None`` when one more call may run, else why not (a cap of the turn).
        on_record: takes each call's record.
        program_call_id: the ``run_program`` call running now (the turn sets it).
    """

    tools: ToolRegistry
    policy: ResultPolicy
    ctx: ToolContext
    state: TurnState
    admit: Callable[[], str | None]
    on_record: Callable[[ToolCallRecord], None]
    program_call_id: str | None = None

    def tool_names(self) -> list[str]:
        """The names of the tools a program may call."""
        return self.tools.names()

    def __call__(self, name: str, arguments_json: str) -> tuple[bool, str]:
        """Run one call of a program: ``(True, output)`` or ``(False, error message)``."""
        call_id = new_tool_call_id()
        refusal = self.admit()
        if refusal is not None:
            unrun = CallInProgress.start(call_id, name, arguments_json, None, self.ctx)
            record = unrun.refuse(refusal, guard="refused_over_limit")
        else:
            record = dispatch(
                call_id,
                name,
                arguments_json,
                self.tools,
                self.policy,
                self.ctx,
                state=self.state,
                max_arguments_chars=MAX_PROGRAM_ARGUMENTS_CHARS,
            )
        record.program_call_id = self.program_call_id
        self.on_record(record)
        if record.result_kind == "error":
            return False, record.error or record.result
        return True, record.result
