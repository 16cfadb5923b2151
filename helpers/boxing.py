"""Opaque references: boxing long tool results, unboxing references in tool arguments.

Boxing (output side): a tool result longer than a threshold is stored, and the model sees a short
opaque reference instead, in one of two forms:

- ``opaque``: the string ``internal://<id>`` (the reference design, seed 000);
- ``json``: an MCP resource link, ``{"type": "resource_link", "uri": "internal://<id>", "name":
  …, "mimeType": …, "size": …}``. MCP 2025-06-18 ("Tools › Resource links") makes ``uri`` and
  ``name`` required; ``size`` is the size of the raw content in bytes, when known.

Unboxing (input side): before a real tool runs, every argument value, at any depth of the
arguments object, that *is* a reference, whole, is replaced by the stored value. A reference
inside a longer string is text, not a reference, and stays as it is. Real tools never see a
reference; only the resolve tools take them.

Ids are ``secrets.token_urlsafe`` strings (unguessable, unlike the reference design's
``hash()``), stored in ``tool_outputs.ref_id``, and valid only in the thread that made them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from helpers.store import StoredOutput, ToolOutputStore

SCHEME = "internal://"
#: What an id looks like: URL-safe base64, 8 to 64 characters.
REF_ID_RE = re.compile(r"[A-Za-z0-9_-]{8,64}")
BOXING_MODES = ("opaque", "json")


class ReferenceRefused(ValueError):
    """A reference that must not be resolved: malformed, unknown, or from another thread.

    ``str(exc)`` says which and why; the agent turns it into an error tool result and does not
    run the tool.
    """


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
    ref_id: str, *, boxing: str, name: str, mime_type: str, size_bytes: int
) -> str:
    """What the model sees for a boxed value: the bare URI, or the resource link as JSON text.

    Raises:
        ValueError: ``boxing`` is not ``"opaque"`` or ``"json"``.
    """
    if boxing == "opaque":
        return make_reference(ref_id)
    if boxing == "json":
        link = resource_link(ref_id, name=name, mime_type=mime_type, size_bytes=size_bytes)
        return json.dumps(link, ensure_ascii=False)
    raise ValueError(f"boxing must be one of {BOXING_MODES}, got {boxing!r}")


def _ref_id_of_uri(uri: str) -> str:
    ref_id = uri[len(SCHEME) :]
    if not REF_ID_RE.fullmatch(ref_id):
        shown = uri if len(uri) <= 80 else uri[:77] + "..."
        raise ReferenceRefused(
            f"malformed opaque reference {shown!r}: expected internal://<id> with an id of "
            "8-64 characters from A-Z a-z 0-9 _ -"
        )
    return ref_id


def reference_id(value: Any) -> str | None:
    """The id that ``value`` names if ``value`` is, whole, an opaque reference; else ``None``.

    A reference is one of: the string ``internal://<id>``; a resource-link object whose ``uri``
    is one; or the JSON text of such an object. Anything else (including a string that merely
    contains a reference, or another scheme such as ``INTERNAL://`` or ``internal:/``) is a
    plain value.

    Raises:
        ReferenceRefused: the value claims to be a reference (``internal://…`` or a resource
            link to ``internal://…``) but its id is malformed.
    """
    if isinstance(value, dict):
        uri = value.get("uri")
        if value.get("type") == "resource_link" and isinstance(uri, str) and uri.startswith(SCHEME):
            return _ref_id_of_uri(uri)
        return None
    if not isinstance(value, str):
        return None
    if value.startswith(SCHEME):
        return _ref_id_of_uri(value)
    stripped = value.strip()
    if stripped.startswith("{") and '"resource_link"' in stripped and len(stripped) < 4096:
        try:
            parsed = json.loads(stripped)
        except ValueError:
            return None
        if isinstance(parsed, dict):
            return reference_id(parsed)
    return None


def unbox_arguments(arguments: Any, resolve: Callable[[str], str]) -> Any:
    """A copy of ``arguments`` in which every whole reference is replaced by ``resolve(id)``.

    Walks dicts and lists to any depth. ``resolve`` takes a reference id and returns the stored
    value, raising :class:`ReferenceRefused` if it must not be resolved (unknown id, another
    thread); that error propagates, so a call with any bad reference runs with none.
    """
    ref_id = reference_id(arguments)
    if ref_id is not None:
        return resolve(ref_id)
    if isinstance(arguments, dict):
        return {key: unbox_arguments(value, resolve) for key, value in arguments.items()}
    if isinstance(arguments, list):
        return [unbox_arguments(item, resolve) for item in arguments]
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
        ReferenceRefused: no value is stored under ``ref_id``, or it belongs to another thread
            (references are scoped to the thread whose tool call produced them).
    """
    row = store.get_by_ref(ref_id)
    if row is None:
        raise ReferenceRefused(
            f"unknown opaque reference {make_reference(ref_id)}: nothing is stored under it"
        )
    if row.thread_id != thread_id:
        raise ReferenceRefused(
            f"opaque reference {make_reference(ref_id)} belongs to another thread; references "
            "are only valid in the thread whose tool call produced them"
        )
    return row
