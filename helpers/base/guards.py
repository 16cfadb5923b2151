"""Guards: what the client checks so that a model's mistake never reaches a tool as data.

Real models make mistakes the offline reference model never makes: they wrap a reference in
backticks, put it inside a sentence, invent one, pass a truncated preview as if it were the full
output; real servers reuse tool-call ids and want their reasoning fields back. Each guard either
*repairs* the mistake when the intent is unambiguous (an event is noted, the tool runs on the
right bytes) or *refuses* the call before the tool runs, with an error result that tells the
model what to do instead; a few only *note* what went through unrepaired (a prompt the server
cut, a server's tool's call checked only in part).

Every guard has a stable name, recorded on the tool call (:attr:`ToolCallRecord.guards`) or the
turn (:attr:`TurnRecord.guard_events`), so a run can say which guard caught which mistake.
:data:`GUARDS` describes each one; the "Guards" table of docs/models.md is generated from the same words.
"""

from __future__ import annotations

#: Guard name → what it catches and what it does (shown in reports and docs/models.md).
GUARDS: dict[str, str] = {
    "reference_unwrapped": "a whole reference wrapped in quotes, backticks, <…> or whitespace "
    "(or a resource-link object) is read as the bare reference, so the tool gets the stored value",
    "refused_embedded_reference": "a reference of this thread inside longer text is refused "
    "before the tool runs: pass the reference alone as the whole value",
    "refused_malformed_reference": "internal://… with an id that is not 8-64 URL-safe characters",
    "refused_unknown_reference": "a reference nothing is stored under (an invented one)",
    "refused_foreign_reference": "a reference that belongs to another thread",
    "refused_preview_as_value": "under truncate, a value that still holds a truncation marker "
    "is refused: fetch the full output first",
    "refused_unknown_tool_call_id": "fetch_tool_output with a tool_call_id this thread never had",
    "refused_too_much_to_unbox": "more references in one call, or more characters behind them, "
    "than one call may unbox (checked before anything is read)",
    "refused_over_limit": "a tool call past a cap of the turn (tool calls per reply or per "
    "turn, bytes stored per turn or per thread: helpers.base.limits.TurnLimits) gets an error result "
    "saying which; it is not run, or its output is not kept",
    "refused_repeated_calls": "the same tool calls (names and arguments) as the model's "
    "previous replies, max_identical_replies times in a row: not run, and the turn stops",
    "tool_name_unprefixed": "a tool named functions.<tool> (gpt-oss's Harmony recipient, passed "
    "through by some servers) is run as <tool> when no tool has the whole name",
    "arguments_double_encoded": "arguments sent as a JSON string holding the JSON object "
    "(double-encoded) are read as that object",
    "arguments_check_unfinished": "an MCP server's tool's arguments whose check against its "
    "input schema found nothing wrong but did not get to its end (it ran out of its steps, "
    "helpers.tooling.argument_checks.MAX_SCHEMA_STEPS, or jsonschema could not apply the schema): "
    "the call went to the server unchecked beyond that point, as the server must validate its "
    "inputs (MCP, Server › Tools › Security Considerations)",
    "tool_call_id_replaced": "the provider's tool-call id was missing, empty, repeated in the "
    "message or already used in the thread; the client's own id is used (every call gets one)",
    "prompt_cut_by_server": "the server reported far fewer prompt tokens than it was sent (over "
    "12 characters a token): it cut the prompt to its window without an error, as Ollama does "
    "past num_ctx; raise the server's context size",
    "provider_fields_echoed": "reasoning_content / reasoning / reasoning_details, and a tool "
    "call's extra_content (Gemini's thought signature), sent back to the provider that sent "
    "them, as it requires, and to no other (helpers.models.replies.for_endpoint)",
}


class GuardRefusal(ValueError):
    """A tool call refused by a guard before its tool ran; ``str(exc)`` is the model's error.

    Subclasses set :attr:`guard` to a name in :data:`GUARDS`. :attr:`repaired` names the guards
    that repaired the call before this one refused it (a policy's ``prepare_arguments`` sets it
    as the refusal leaves it: it returns its repairs, and a refusal returns nothing else); the
    call's record lists them, then :attr:`guard`.
    """

    guard: str = "refused"
    repaired: tuple[str, ...] = ()
