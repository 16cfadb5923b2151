"""Exact o200k_base token counts, offline.

tiktoken downloads its encodings on first use, which fails without a network. It first looks in
``$TIKTOKEN_CACHE_DIR`` for a file named after the SHA-1 of the encoding's URL, and checks the
file's SHA-256 against the value it expects. The registry package ``bpe-openai`` ships
``o200k_base.tiktoken.gz`` with exactly those contents, so :func:`ensure_encoding_cache` unpacks
it into the run-time folder once and points tiktoken at it. Nothing here guesses: every number is
a count of real o200k_base tokens.

tiktoken parses the file's 200,000 base64 lines at every load (0.12 s of CPU), then builds its
Rust encoder from them (0.1 s). The parsed table is kept beside the file
(:func:`parsed_encoding_path`, named after the file's SHA-256 and tiktoken's version) and read back
in 0.03 s (:func:`encoding_arguments`). tiktoken checks the file's SHA-256 when it parses it;
the table is trusted only as the process's own user wrote it (a file another user owns, or one
others may write, is parsed again from the checked file).

How a chat request is counted (:func:`count_chat_tokens`) follows OpenAI's published recipe for
chat models: 3 tokens of framing per message, 1 more for a ``name``, 3 to prime the reply; tool
calls count their function name and JSON arguments; tool schemas count as their JSON text. A real
provider's own ``usage`` can differ by a few tokens of framing; the workbook always prefers the
``usage`` a response reports.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import marshal
import os
import re
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import tiktoken

from helpers.base.paths import var_dir

ENCODING_NAME = "o200k_base"
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
#: tiktoken's cache file name for o200k_base: ``sha1(O200K_URL)``.
O200K_CACHE_KEY = "fb374d419588a4632f3f557e76b4b70aebbca790"
#: The SHA-256 that tiktoken expects of the o200k_base file.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_REPLY_PRIMING = 3

#: Texts of at least this many characters have their count remembered under a digest of their
#: bytes; shorter ones under the text itself (a turn re-counts every earlier message at each
#: model call, and its roles, ids, tool names and arguments recur across calls).
REMEMBER_FROM_CHARS = 1_024
#: How many counts of long texts are remembered, least recently used first out (a key is 16
#: bytes).
REMEMBERED_COUNTS = 8_192
#: How many counts of short texts are remembered, least recently used first out. A key is the
#: text itself, kept alive while remembered: under 1,024 characters, at most about 8 KiB each
#: once tiktoken has encoded it (a str of 1,023 astral characters takes 4 KiB, and tiktoken
#: caches its UTF-8 bytes in it), so at most about 16 MiB whatever the characters.
REMEMBERED_SHORT_COUNTS = 2_048


def ensure_encoding_cache() -> Path:
    """Make o200k_base available to tiktoken without a download; return the cache folder.

    Uses ``$TIKTOKEN_CACHE_DIR`` when it already holds the file, else ``var/tiktoken``, filled
    from the ``bpe-openai`` package. Raises ``RuntimeError`` if the shipped file's SHA-256 is not
    the one tiktoken expects (a corrupted or changed package).
    """
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured and (Path(configured) / O200K_CACHE_KEY).is_file():
        return Path(configured)
    cache_dir = var_dir() / "tiktoken"
    target = cache_dir / O200K_CACHE_KEY
    if not target.is_file():
        data = gzip.decompress(_shipped_o200k_file().read_bytes())
        digest = hashlib.sha256(data).hexdigest()
        if digest != O200K_SHA256:
            raise RuntimeError(
                f"bpe-openai's o200k_base file has sha256 {digest}, tiktoken expects {O200K_SHA256}"
            )
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(data)
        tmp.replace(target)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    return cache_dir


def _shipped_o200k_file() -> Path:
    # find_spec locates the package without importing it (its import builds tokenizers).
    spec = find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the bpe-openai package is not installed; run `make test` or `make lab`")
    return Path(next(iter(spec.submodule_search_locations))) / "data" / "o200k_base.tiktoken.gz"


#: The first bytes of a parsed table's file (:func:`parsed_encoding_path`): what it is, and the
#: marshal format it was written in; a BLAKE2b digest of the rest follows.
PARSED_MAGIC = f"workbook o200k_base table, marshal {marshal.version}\n".encode()
#: Bytes of the digest after :data:`PARSED_MAGIC`.
PARSED_DIGEST_BYTES = 32
#: The keys of a parsed table: ``tiktoken.Encoding``'s arguments.
PARSED_KEYS = frozenset({"name", "pat_str", "mergeable_ranks", "special_tokens"})


def parsed_encoding_path(cache_dir: Path) -> Path:
    """Where :func:`encoding_arguments` keeps the parsed o200k_base table in ``cache_dir`` (the
    folder of :func:`ensure_encoding_cache`): its name holds the source file's SHA-256
    (:data:`O200K_SHA256`) and tiktoken's version, so another file or another tiktoken never
    reads a table it did not make."""
    version = getattr(tiktoken, "__version__", "unknown")
    return cache_dir / f"{ENCODING_NAME}-{O200K_SHA256[:16]}-tiktoken-{version}.marshal"


def _read_parsed(path: Path) -> dict[str, Any] | None:
    """The parsed table at ``path`` (``tiktoken.Encoding``'s arguments), or ``None`` when it is
    missing, unreadable, owned by another user or writable by others than its owner, or not
    exactly what :func:`_write_parsed` wrote (a digest mismatch, a marshal error, another
    shape): then the file is parsed again."""
    try:
        status = path.stat()
        if status.st_uid != os.geteuid() or status.st_mode & 0o022:
            return None  # not this user's own file: another user could have written the ranks
        blob = path.read_bytes()
    except OSError:
        return None
    start = len(PARSED_MAGIC) + PARSED_DIGEST_BYTES
    payload = memoryview(blob)[start:]
    digest = hashlib.blake2b(payload, digest_size=PARSED_DIGEST_BYTES).digest()
    if not blob.startswith(PARSED_MAGIC) or blob[len(PARSED_MAGIC) : start] != digest:
        return None
    try:
        arguments = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    if not (
        isinstance(arguments, dict)
        and arguments.keys() == PARSED_KEYS
        and arguments["name"] == ENCODING_NAME
        and isinstance(arguments["pat_str"], str)
        and isinstance(arguments["mergeable_ranks"], dict)
        and isinstance(arguments["special_tokens"], dict)
    ):
        return None
    return arguments


def _write_parsed(path: Path, arguments: dict[str, Any]) -> None:
    """Keep ``arguments`` at ``path`` for :func:`_read_parsed`: written to a file of this
    process and thread, then moved in place (a reader sees the whole file or none); a folder
    that cannot be written keeps nothing, and the table is parsed again next time."""
    payload = marshal.dumps(arguments)
    digest = hashlib.blake2b(payload, digest_size=PARSED_DIGEST_BYTES).digest()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(PARSED_MAGIC + digest + payload)
        tmp.chmod(0o644)  # whatever the umask: :func:`_read_parsed` reads only its owner's writes
        tmp.replace(path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


@cache
def encoding_arguments() -> dict[str, Any]:
    """``tiktoken.Encoding``'s arguments for o200k_base (``name``, ``pat_str``,
    ``mergeable_ranks``: ``{token bytes: token id}``, ``special_tokens``), loaded once per
    process: the parsed table at :func:`parsed_encoding_path` when it is there and intact;
    otherwise tiktoken loads the file (checking its SHA-256), and the table it parsed is kept
    there for the next process.

    Raises:
        RuntimeError: as :func:`ensure_encoding_cache`.
    """
    path = parsed_encoding_path(ensure_encoding_cache())
    arguments = _read_parsed(path)
    if arguments is not None:
        return arguments
    loaded = tiktoken.get_encoding(ENCODING_NAME)
    arguments = {
        "name": loaded.name,
        "pat_str": loaded._pat_str,
        "mergeable_ranks": loaded._mergeable_ranks,
        "special_tokens": loaded._special_tokens,
    }
    _write_parsed(path, arguments)
    return arguments


@cache
def encoding() -> tiktoken.Encoding:
    """The o200k_base encoding (built once per process, from :func:`encoding_arguments`: about
    0.1 s of CPU, most of it tiktoken's Rust tables).

    Raises:
        RuntimeError: as :func:`ensure_encoding_cache`.
    """
    return tiktoken.Encoding(**encoding_arguments())


def encode(text: str) -> list[int]:
    """The o200k_base token ids of ``text``, special-token text as ordinary text.

    Raises:
        RuntimeError: as :func:`ensure_encoding_cache`.
    """
    return encoding().encode(text, disallowed_special=())


#: A long text is counted in parts of at least this many characters (:func:`parts_for_counting`),
#: each part's count remembered on its own: a text that holds one counted before (a page and a
#: longer page of the same document, the scaling run's sizes, a document inside a tool's JSON
#: result) has only its new parts encoded.
PART_CHARS = 1 << 16
#: Of the places past :data:`PART_CHARS` where a text may be cut, about one in this many is
#: taken (:func:`_takes_cut`).
CUT_EVERY = 16


def parts_for_counting(text: str) -> list[str]:
    """``text`` cut into parts whose o200k_base tokens, one part after the other, are the
    whole's (so their counts add up), each part but the last at least :data:`PART_CHARS`
    characters, cut where the text's own characters say (:func:`_takes_cut`), so a text that
    holds another's characters after a different beginning is cut at the same places there.

    Where a cut may go (:func:`_may_cut`): tiktoken splits a text with o200k_base's regular
    expression and encodes each match on its own (BPE merges never cross a match), and the
    expression has no look-behind, so a cut is safe where a match ends in the whole text:

    - before a space whose previous character is not whitespace: only the whitespace
      alternatives (``\\s+``, ``\\s*[\\r\\n]+``) hold a space anywhere but first;
    - after a line break (``"\\n"``) followed by a character that is neither whitespace nor
      ``/``: every match that holds a line break ends with it, but a run of punctuation, which
      goes on through ``[\\r\\n/]*``.

    A text with no such place is one part. A test checks the rule against tiktoken on
    generated texts cut at every place it allows."""
    parts: list[str] = []
    start, end = 0, len(text)
    while end - start > PART_CHARS:
        cut = next(
            (
                k
                for place in _PLACES_RE.finditer(text, start + PART_CHARS)
                if (k := place.start() + (place[0] == "\n")) < end
                and _may_cut(text, k)
                and _takes_cut(text, k)
            ),
            None,
        )
        if cut is None:
            break
        parts.append(text[start:cut])
        start = cut
    parts.append(text[start:])
    return parts


#: The characters next to which a text may be cut (:func:`_may_cut`).
_PLACES_RE = re.compile("[ \n]")


def _may_cut(text: str, k: int) -> bool:
    """Whether cutting ``text`` before index ``k`` (0 < k < len) leaves o200k_base's matches
    as they are (:func:`parts_for_counting`). Python's ``isspace`` holds every character the
    expression's ``\\s`` does (and a few more: a cut is only ever refused for them)."""
    if text[k] == " ":
        return not text[k - 1].isspace()
    return text[k - 1] == "\n" and not text[k].isspace() and text[k] != "/"


def _takes_cut(text: str, k: int) -> bool:
    """Whether :func:`parts_for_counting` cuts at a place it may cut: about one place in
    :data:`CUT_EVERY`, chosen by the 32 characters before it (content-defined, as
    deduplicating backups cut files: two texts that differ before those characters are cut
    at the same places after them)."""
    window = text[max(0, k - 32) : k].encode("utf-8", "surrogatepass")
    return zlib.crc32(window) % CUT_EVERY == 0


class _Counts:
    """Token counts of long texts, keyed by a BLAKE2b digest of their UTF-8 bytes (hashing is
    far cheaper than encoding, and a digest holds no text in memory), a text over
    :data:`PART_CHARS` characters counted part by part (:func:`parts_for_counting`).
    Thread-safe."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.counts: OrderedDict[bytes, int] = OrderedDict()
        self.lock = threading.Lock()

    def count(self, text: str) -> int:
        # an exact str: a subclass cannot choose where it is cut or the bytes a count is kept under
        text = str.__str__(text)
        if len(text) <= PART_CHARS:
            return self._count_part(text)
        return sum(self._count_part(part) for part in parts_for_counting(text))

    def _count_part(self, text: str) -> int:
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self.lock:
            if key in self.counts:
                self.counts.move_to_end(key)
                return self.counts[key]
        n = len(encode(text))
        with self.lock:
            self.counts[key] = n
            if len(self.counts) > self.size:
                self.counts.popitem(last=False)
        return n


_COUNTS = _Counts(REMEMBERED_COUNTS)


@lru_cache(maxsize=REMEMBERED_SHORT_COUNTS)
def _count_short(text: str) -> int:
    """:func:`count_tokens` of a text under :data:`REMEMBER_FROM_CHARS` characters, remembered
    by the text itself (a dictionary lookup is about twenty times cheaper than encoding; unlike
    long texts, short ones are kept in memory: roles, ids, tool names and arguments recur at
    every model call of a turn)."""
    return len(encode(text))


def count_tokens(text: str) -> int:
    """Number of o200k_base tokens in ``text`` (special-token text counts as ordinary text).

    Counts are remembered: of texts of :data:`REMEMBER_FROM_CHARS` characters or more under a
    digest of their bytes (:data:`REMEMBERED_COUNTS` of them; a text over :data:`PART_CHARS`
    characters part by part, :func:`parts_for_counting`), of shorter ones under the text
    (:data:`REMEMBERED_SHORT_COUNTS`)."""
    if len(text) < REMEMBER_FROM_CHARS:
        return _count_short(text)
    return _COUNTS.count(text)


def count_message_tokens(message: Mapping[str, Any]) -> int:
    """Tokens one chat message costs in a request: framing + role + content + tool calls."""
    total = TOKENS_PER_MESSAGE + count_tokens(str(message.get("role", "")))
    content = message.get("content")
    if isinstance(content, str):
        total += count_tokens(content)
    elif isinstance(content, list):  # content parts
        total += sum(count_tokens(str(p.get("text", ""))) for p in content if isinstance(p, dict))
    if message.get("name"):
        total += TOKENS_PER_NAME + count_tokens(str(message["name"]))
    if message.get("tool_call_id"):
        total += count_tokens(str(message["tool_call_id"]))
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        total += count_tokens(str(call.get("id", "")))
        total += count_tokens(str(function.get("name", "")))
        total += count_tokens(str(function.get("arguments", "")))
    return total


def count_tools_tokens(tools: Iterable[Mapping[str, Any]] | None) -> int:
    """Tokens the tool schemas cost: their compact JSON text."""
    tools = list(tools or [])
    if not tools:
        return 0
    return count_tokens(json.dumps(tools, ensure_ascii=False, separators=(",", ":")))


def count_chat_tokens(
    messages: Iterable[Mapping[str, Any]], tools: Iterable[Mapping[str, Any]] | None = None
) -> int:
    """Prompt tokens of a chat-completions request (messages + tool schemas + reply priming)."""
    return (
        sum(count_message_tokens(m) for m in messages)
        + count_tools_tokens(tools)
        + TOKENS_REPLY_PRIMING
    )
