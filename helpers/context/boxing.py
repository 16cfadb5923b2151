"""Opaque references: boxing long tool results, unboxing references in tool arguments.

Boxing (output side): a tool result longer than a threshold is stored, and the model sees a short
opaque reference instead, in one of two forms:

- ``opaque``: the string ``internal://<id>`` (as in *tool-context-relay* by grzegorz-aniol);
- ``json``: an MCP resource link, ``{"type": "resource_link", "uri": "internal://<id>", "name":
  …, "mimeType": …, "size": …}``. MCP 2025-06-18 ("Tools › Resource links") makes ``uri`` and
  ``name`` required; ``size`` is the size of the raw content in bytes, when known.

Unboxing (input side): before a real tool runs, every argument value, at any depth of the
arguments object, that *is* a reference, whole, is replaced by the stored value. Real tools
never see a reference; only the resolve tools take them. Models do not always write a reference
the way they got it, so the rules are (:func:`reference_id`, :func:`unbox_arguments`):

1. **Whole values only.** ``internal://<id>``, a resource-link object, or the JSON text of one.
2. **Wrappers are unwrapped.** Surrounding whitespace, quotes (``"…"``, ``'…'``, curly quotes),
   backticks and code fences, ``<…>`` and one trailing ``.`` ``,`` ``;`` ``:`` ``!`` ``?`` are
   stripped: the model plainly meant the reference.
3. **A reference of this thread inside longer text is refused** before the tool runs
   (:class:`EmbeddedReference`), with an error telling the model to pass the reference alone. It
   is never resolved in place (the model may have meant only a part) and never sent on as the
   literal text ``internal://…`` (the tool would get 27 bytes of nonsense). Its id is looked for
   anywhere in the text, with or without a scheme (:class:`IdFinder`). References inside
   text that this thread never produced are ordinary text.
4. **Malformed, unknown and other-thread references are refused**, each with its reason.

Ids are ``secrets.token_urlsafe`` strings (unguessable, unlike the ``hash()`` of the design
above), stored in ``tool_outputs.ref_id``, and valid only in the thread that made them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import re2

from helpers.base.guards import GuardRefusal
from helpers.text.patterns import re2_options

if TYPE_CHECKING:
    from helpers.store.reading import StoredOutput
    from helpers.store.tool_outputs import ToolOutputStore

SCHEME = "internal://"
#: What an id looks like: URL-safe base64, 8 to 64 characters.
REF_ID_RE = re.compile(r"[A-Za-z0-9_-]{8,64}")
BOXING_MODES = ("opaque", "json")

_BARE_RE = re.compile(r"internal://[A-Za-z0-9_-]{8,64}")
#: A well-formed reference at the start of a text that goes on after it.
_LEADING_REF_RE = re.compile(r"internal://[A-Za-z0-9_-]{8,64}(?=[^A-Za-z0-9_-])")
#: Pairs a model wraps a reference in: code spans and fences, quotes, angle brackets.
_WRAPPERS = (
    ("```", "```"),
    ("``", "``"),
    ("`", "`"),
    ('"', '"'),
    ("'", "'"),
    ("<", ">"),
    ("\u201c", "\u201d"),
    ("\u2018", "\u2019"),
    ("\u00ab", "\u00bb"),
)
_RE2_OPTIONS = re2_options(64 << 20)  # room for the ids of a long thread
#: The language tag of a code fence (```text): checked on the fence's first line only.
_FENCE_TAG_RE = re.compile(r"[A-Za-z0-9_+.-]*[ \t]*")
#: A reference anywhere in a text, in any letter case and with 1-3 slashes (what a model writes
#: when it copies a reference into a sentence).
_EMBEDDED_RE = re.compile(r"internal:/{1,3}([A-Za-z0-9_-]{8,64})", re.IGNORECASE)


class ReferenceRefused(GuardRefusal):
    """A reference that must not be resolved: malformed, unknown, from another thread, or inside
    longer text.

    ``str(exc)`` says which and why; the agent turns it into an error tool result and does not
    run the tool. Subclasses name the guard that refused it (:data:`helpers.base.guards.GUARDS`).
    """

    guard = "refused_reference"


class MalformedReference(ReferenceRefused):
    """``internal://…`` whose id is not 8-64 characters of ``A-Z a-z 0-9 _ -``."""

    guard = "refused_malformed_reference"


class UnknownReference(ReferenceRefused):
    """Nothing is stored under the id (a model invented it, or it was pruned)."""

    guard = "refused_unknown_reference"


class ForeignReference(ReferenceRefused):
    """The id belongs to another thread."""

    guard = "refused_foreign_reference"


class EmbeddedReference(ReferenceRefused):
    """A reference of this thread inside a longer string: never resolved, never sent as text."""

    guard = "refused_embedded_reference"


def make_reference(ref_id: str) -> str:
    """``internal://<ref_id>``."""
    return f"{SCHEME}{ref_id}"


def resource_link(ref_id: str, *, name: str, mime_type: str, size_bytes: int) -> dict[str, Any]:
    """An MCP resource link (MCP 2025-06-18) for a boxed value; ``name`` is required there."""
    return {
        "type": "resource_link",
        "uri": make_reference(ref_id),
        "name": name,
        "mimeType": mime_type,
        "size": size_bytes,
    }


def render_reference(
    ref_id: str,
    *,
    boxing: str,
    name: str,
    mime_type: str,
    size_bytes: int,
    size_chars: int | None = None,
    preview: str = "",
) -> str:
    """What the model sees for a boxed value: the bare URI, or the resource link as JSON text.

    With a ``preview`` (the head of the value, opaque boxing only), the reference stands alone on
    the first line, a bracketed note gives the size in characters and the MIME type, and the
    preview follows: the model can answer from the head, as from a truncated preview, and still
    pass the whole value on by its reference (:func:`presented_reference_id` reads it back).

    Raises:
        ValueError: ``boxing`` is not ``"opaque"`` or ``"json"``.
    """
    if boxing == "opaque":
        if preview:
            chars = f"{size_chars:,} chars" if size_chars is not None else f"{size_bytes:,} bytes"
            return f"{make_reference(ref_id)}\n[{chars} of {mime_type}; it begins:]\n{preview}"
        return make_reference(ref_id)
    if boxing == "json":
        link = resource_link(ref_id, name=name, mime_type=mime_type, size_bytes=size_bytes)
        return json.dumps(link, ensure_ascii=False)
    raise ValueError(f"boxing must be one of {BOXING_MODES}, got {boxing!r}")


def _ref_id_of_uri(uri: str) -> str:
    ref_id = uri[len(SCHEME) :]
    if not REF_ID_RE.fullmatch(ref_id):
        raise MalformedReference(
            f"malformed opaque reference {_shown(uri)!r}: expected internal://<id> with an id of "
            "8-64 characters from A-Z a-z 0-9 _ -"
        )
    return ref_id


def _shown(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _inside_code_fence(text: str) -> str | None:
    """What a code fence around the whole of ``text`` holds (```` ```tag\n…\n``` ````), else
    ``None``. A scanner, not a backtracking regex: linear in the text, whatever a model sends
    (the regex it replaces took 14 s on a 48,000-character argument)."""
    if len(text) < 7 or not (text.startswith("```") and text.endswith("```")):
        return None
    newline = text.find("\n", 3, len(text) - 3)
    if newline < 0 or not _FENCE_TAG_RE.fullmatch(text, 3, newline):
        return None
    return text[newline + 1 : len(text) - 3]


def unwrap_reference(value: str) -> str | None:
    """The bare ``internal://<id>`` that ``value`` is once its wrappers are stripped, else ``None``.

    Strips, repeatedly (at most five layers): surrounding whitespace, a trailing sentence mark
    (``. , ; : ! ?``), and a matching pair of backticks (1-3), straight or curly quotes, guillemets
    or angle brackets. ``"`internal://abc12345`"`` gives ``internal://abc12345``;
    ``"see internal://abc12345"`` gives ``None`` (that is a reference *inside* text).
    """
    text = value.strip()
    for _ in range(5):
        if _BARE_RE.fullmatch(text):
            return text
        if text[-1:] and text[-1] in ".,;:!?":
            text = text[:-1].strip()
            continue
        inside = _inside_code_fence(text)
        if inside is not None:
            text = inside.strip()
            continue
        for left, right in _WRAPPERS:
            if (
                len(text) > len(left) + len(right)
                and text.startswith(left)
                and text.endswith(right)
            ):
                text = text[len(left) : len(text) - len(right)].strip()
                break
        else:
            return None
    return text if _BARE_RE.fullmatch(text) else None


def reference_id(value: Any) -> str | None:
    """The id that ``value`` names if ``value`` is, whole, an opaque reference; else ``None``.

    A reference is one of: the string ``internal://<id>`` (also wrapped, see
    :func:`unwrap_reference`); a resource-link object whose ``uri`` is one; or the JSON text of
    such an object. Anything else (a string that merely contains a reference, another scheme such
    as ``INTERNAL://`` or ``internal:/``) is not a whole reference.

    Raises:
        MalformedReference: the value starts with ``internal://`` (or is a resource link to
            one) but no well-formed id follows.
    """
    if isinstance(value, dict):
        uri = value.get("uri")
        if value.get("type") == "resource_link" and isinstance(uri, str):
            bare = unwrap_reference(uri)
            if bare is not None:
                return bare[len(SCHEME) :]
            if uri.startswith(SCHEME):
                return _ref_id_of_uri(uri)
        return None
    if not isinstance(value, str):
        return None
    bare = unwrap_reference(value)
    if bare is not None:
        return bare[len(SCHEME) :]
    stripped = value.strip()
    if stripped.startswith(SCHEME):
        if _LEADING_REF_RE.match(stripped):
            return None  # a reference followed by more text: inside text, see unbox_arguments
        return _ref_id_of_uri(stripped)  # claims to be a reference, but its id is malformed
    if stripped.startswith("{") and '"resource_link"' in stripped and len(stripped) < 4096:
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return None
        if isinstance(parsed, dict):
            return reference_id(parsed)
    return None


def presented_reference_id(content: str) -> str | None:
    """The id of the reference a tool message stands for, as the box strategy presents it: a bare
    reference, a reference on its own first line followed by a note and a preview
    (:func:`render_reference`), or a resource link's JSON text. ``None`` for anything else."""
    first, newline, rest = content.partition("\n")
    if newline and rest.startswith("[") and _BARE_RE.fullmatch(first):
        return first[len(SCHEME) :]
    try:
        return reference_id(content)
    except ReferenceRefused:
        return None


def canonical_reference(value: Any) -> Any:
    """``internal://<id>`` if ``value`` is a whole reference in any accepted form (wrapped,
    resource-link object or its JSON text), else ``value`` unchanged. Raises like
    :func:`reference_id`."""
    ref_id = reference_id(value)
    return value if ref_id is None else make_reference(ref_id)


def embedded_reference_ids(text: str) -> list[str]:
    """Ids of every ``internal://<id>`` look-alike inside ``text`` (any letter case of the scheme,
    one to three slashes), in order of appearance."""
    return [match[1] for match in _EMBEDDED_RE.finditer(text)]


#: Called with a guard name (:data:`helpers.base.guards.GUARDS`) when unboxing repairs a mistake.
GuardHook = Callable[[str], None]


class IdFinder:
    """Unguessable ids of one thread (reference ids, tool-call ids), found *inside* any text.

    A reference id is 16 unguessable characters, so an id of this thread anywhere in a tool
    argument means the model copied a reference: with its scheme, without it, glued to other
    characters (``_internal://<id>_``), or behind a look-alike scheme (``internal:\\/\\/``,
    ``internal%3A%2F%2F``, a full-width colon, a zero-width space). RE2 matches all ids at once,
    in time linear in the text.
    """

    def __init__(self, ref_ids: Iterable[str]):
        self.ids = frozenset(ref_ids)
        self._regex = (
            re2.compile("|".join(re.escape(i) for i in sorted(self.ids)), _RE2_OPTIONS)
            if self.ids
            else None
        )

    def find(self, text: str) -> str | None:
        """The first id of this thread inside ``text``, or ``None``."""
        if self._regex is None:
            return None
        match = self._regex.search(text)
        return match.group(0) if match else None


def unbox_arguments(
    arguments: Any,
    resolve: Callable[[str], str],
    *,
    known: IdFinder | None = None,
    on_guard: GuardHook | None = None,
) -> Any:
    """A copy of ``arguments`` in which every whole reference is replaced by ``resolve(id)``.

    Walks dicts and lists to any depth. ``resolve`` takes a reference id and returns the stored
    value, raising :class:`ReferenceRefused` if it must not be resolved (unknown id, another
    thread); that error propagates, so a call with any bad reference runs with none.

    Args:
        arguments: the parsed arguments object (any JSON value).
        resolve: reference id → stored value.
        known: this thread's reference ids; when given, a string (or a key) that holds one of
            them anywhere but as a whole reference raises :class:`EmbeddedReference` instead of
            reaching the tool as text.
        on_guard: called with ``"reference_unwrapped"`` for each reference that was wrapped.

    Raises:
        ReferenceRefused: a malformed, unknown, foreign or embedded reference.
    """

    def walk(value: Any, path: str) -> Any:
        ref_id = reference_id(value)
        if ref_id is not None:
            if known is not None and ref_id not in known.ids:
                # internal://<id>-1 and the like: a reference of this thread with more glued on
                refuse_embedded(value if isinstance(value, str) else json.dumps(value), path, known)
            if on_guard is not None and value != make_reference(ref_id):
                on_guard("reference_unwrapped")
            return resolve(ref_id)
        if isinstance(value, dict):
            out = {}
            for key, item in value.items():
                refuse_embedded(str(key), f"{path} (a key)" if path else "a key", known)
                out[key] = walk(item, f"{path}.{key}" if path else str(key))
            return out
        if isinstance(value, list):
            return [walk(item, f"{path}[{i}]") for i, item in enumerate(value)]
        if isinstance(value, str):
            refuse_embedded(value, path or "the arguments", known)
        return value

    return walk(arguments, "")


def refuse_embedded(text: str, where: str, known: IdFinder | None) -> None:
    """Raise :class:`EmbeddedReference` if ``text`` holds an id of ``known`` (any part of it).

    ``where`` names the argument in the message (``"text"``, ``"files[0].content"``).
    """
    where = where or "the arguments"
    if known is None:
        return
    ref_id = known.find(text)
    if ref_id is None:
        return
    at = text.find(ref_id)
    context = " ".join(text[max(0, at - 40) : at + len(ref_id) + 20].split())
    raise EmbeddedReference(
        f"argument {where!r} holds the opaque reference {make_reference(ref_id)} inside longer "
        f"text (...{context}...). A reference is replaced by its value only when it is the "
        f'whole argument value: pass "{make_reference(ref_id)}" alone, exactly as you received '
        "it. To use only a part of the value, read that part first with "
        "internal_resource_read_slice or internal_resource_grep."
    )


def canonicalize_references(arguments: Any, *, on_guard: GuardHook | None = None) -> Any:
    """A copy of ``arguments`` with every whole reference, in any accepted form (wrapped, a
    resource-link object or its JSON text), written as the bare ``internal://<id>``; nothing is
    read from the store. ``on_guard("reference_unwrapped")`` is called for each one rewritten.

    Raises:
        MalformedReference: a value claims to be a reference but its id is malformed.
    """
    ref_id = reference_id(arguments)
    if ref_id is not None:
        bare = make_reference(ref_id)
        if on_guard is not None and arguments != bare:
            on_guard("reference_unwrapped")
        return bare
    if isinstance(arguments, dict):
        return {k: canonicalize_references(v, on_guard=on_guard) for k, v in arguments.items()}
    if isinstance(arguments, list):
        return [canonicalize_references(v, on_guard=on_guard) for v in arguments]
    return arguments


def find_references(arguments: Any) -> list[str]:
    """The ids of every whole reference in ``arguments`` (any depth); malformed ones raise."""
    found: list[str] = []

    def record(ref_id: str) -> str:
        found.append(ref_id)
        return ""

    unbox_arguments(arguments, record)
    return found


def resolve_in_thread(store: ToolOutputStore, thread_id: str, ref_id: str) -> StoredOutput:
    """The stored row a reference id names, if it belongs to ``thread_id`` (without content).

    Raises:
        UnknownReference: no value is stored under ``ref_id``.
        ForeignReference: it belongs to another thread (references are scoped to the thread
            whose tool call produced them).
    """
    row = store.get_by_ref(ref_id)
    if row is None:
        raise UnknownReference(
            f"unknown opaque reference {make_reference(ref_id)}: nothing is stored under it. "
            "Use only references you received in a tool result of this conversation, exactly as "
            "you received them; never make one up"
        )
    if row.thread_id != thread_id:
        raise ForeignReference(
            f"opaque reference {make_reference(ref_id)} belongs to another thread; references "
            "are only valid in the thread whose tool call produced them"
        )
    return row
