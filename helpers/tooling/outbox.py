"""The drive outbox: where ``google_drive_write_file`` writes, bounded in names, files and bytes.

A file name comes from the model, so it is checked before anything is written
(:func:`outbox_file_name`: plain names only, Unicode NFC, no trailing space or dot, no Windows
device name). Every write goes through a unique ``O_EXCL`` temporary file (mode 0600) and an
atomic rename, under an exclusive lock on a small usage ledger, so the quotas
(:data:`MAX_OUTBOX_FILE_BYTES`, :data:`MAX_OUTBOX_TOTAL_BYTES`, :data:`MAX_OUTBOX_FILES`) hold
exactly across threads and processes, and a write costs the same whatever the number of files.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import stat
import tempfile
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path

from helpers.base.paths import outbox_dir

_SAFE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,127}")


#: The largest file google_drive_write_file writes, in bytes (UTF-8).
MAX_OUTBOX_FILE_BYTES = 20_000_000
#: The most the outbox may hold in all, in bytes: a write that would pass it is refused.
MAX_OUTBOX_TOTAL_BYTES = 200_000_000
#: The most files the outbox may hold: a write of a new name past it is refused (overwriting a
#: file that is already there is not).
MAX_OUTBOX_FILES = 1_000
#: Names Windows gives to devices, refused as file names in any case and with any extension
#: (``CON``, ``nul.txt``, ``Com1.tar.gz``): a Drive client on Windows could not make such a file.
#: COM0 and LPT0 are in the list too, as Microsoft's naming rules list them.
WINDOWS_DEVICE_NAMES: frozenset[str] = frozenset(
    {"CON", "PRN", "AUX", "NUL"} | {f"{port}{n}" for port in ("COM", "LPT") for n in range(10)}
)
#: The outbox's bookkeeping folder, inside the outbox (a dot name, which no written file can
#: have). It holds the usage ledger, which is also the lock every write takes.
OUTBOX_LEDGER_DIR_NAME = ".ledger"
#: The usage ledger: JSON ``{"files": N, "bytes": N, "stamp": [...]}``, the number of regular
#: files in the outbox, their size in bytes, and the stamp of the outbox folder (device, inode,
#: modification and change times in nanoseconds, size in bytes) when they were counted.
OUTBOX_LEDGER_FILE_NAME = "usage.json"
#: The most bytes of the ledger file that are read (it holds a few dozen).
OUTBOX_LEDGER_MAX_BYTES = 4_096


def write_file(file_name: str, file_content: str) -> str:
    """Write ``file_content`` to the outbox as ``file_name`` (UTF-8), replacing a file of that name.

    Args:
        file_name: a plain file name such as 'transcript.txt' (see :func:`outbox_file_name`).
        file_content: the full content to write.

    Returns:
        A confirmation with the drive path and the size in characters and bytes, saying whether
        an existing file was replaced.

    Raises:
        ValueError: the name is not a plain file name, the content is over
            :data:`MAX_OUTBOX_FILE_BYTES` bytes, or the write would pass
            :data:`MAX_OUTBOX_TOTAL_BYTES` bytes or (a new name) :data:`MAX_OUTBOX_FILES` files.
        OSError: the file cannot be written (the disk is full, the name is a folder).
    """
    name = outbox_file_name(file_name)
    data = file_content.encode("utf-8")  # lone surrogates never get this far (the agent refuses)
    if len(data) > MAX_OUTBOX_FILE_BYTES:
        raise ValueError(
            f"{len(data):,} bytes is over the limit of {MAX_OUTBOX_FILE_BYTES:,} bytes per file"
        )
    folder = outbox_dir()
    target = folder / name
    with _outbox_usage(folder) as usage:
        replaced = _regular_file_size(target)
        in_use = max(0, usage.bytes - (replaced or 0))
        if replaced is None and usage.files >= MAX_OUTBOX_FILES:
            raise ValueError(
                f"the outbox holds {usage.files:,} files, its limit of {MAX_OUTBOX_FILES:,} "
                "files: a new file is refused (overwrite an existing one instead)"
            )
        if in_use + len(data) > MAX_OUTBOX_TOTAL_BYTES:
            raise ValueError(
                f"the outbox holds {in_use:,} bytes; {len(data):,} more would pass its limit of "
                f"{MAX_OUTBOX_TOTAL_BYTES:,} bytes"
            )
        # a fresh, unique temporary file (O_CREAT | O_EXCL, mode 0600: never an existing file or
        # a symlink), then an atomic rename, which replaces the directory entry and never follows
        # a symlink; the lock is held throughout, so the ledger counts every write exactly once
        fd, tmp_name = tempfile.mkstemp(prefix=".write-", suffix=".partial", dir=folder)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp_name, target)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)
            raise
        usage.files += replaced is None
        usage.bytes = in_use + len(data)
    note = f" (replaced an existing file of {replaced:,} bytes)" if replaced is not None else ""
    return f"Wrote drive://{name}: {len(file_content)} chars, {len(data)} bytes{note}."


def outbox_file_name(file_name: str) -> str:
    """``file_name`` as the outbox stores it (Unicode NFC), or an error saying why it is refused.

    A plain name: 1-128 characters of ASCII letters, digits, space, ``.``, ``_``, ``-``, starting
    with a letter or digit (no folders, no leading dot), without ``..``, not ending in a space or
    a dot (Windows and Drive clients drop those, so ``'a.txt '`` would be ``'a.txt'``), and not a
    Windows device name (:data:`WINDOWS_DEVICE_NAMES`) with or without an extension.

    Args:
        file_name: the name the model gave.

    Returns:
        The name in Unicode normal form C (the same name, for every name that is accepted).

    Raises:
        ValueError: the name is refused; the message says which rule it breaks.
    """
    name = unicodedata.normalize("NFC", file_name)
    if not _SAFE_NAME_RE.fullmatch(name) or ".." in name:
        raise ValueError(
            f"file_name {_clip(file_name)!r} is not a plain file name (letters, digits, space, "
            ". _ -; no folders, at most 128 characters)"
        )
    if name.endswith((" ", ".")):
        raise ValueError(
            f"file_name {name!r} ends in a space or a dot, which Windows and Drive clients drop "
            f"(it would be the same file as {name.rstrip(' .')!r})"
        )
    if name.split(".", 1)[0].rstrip(" ").upper() in WINDOWS_DEVICE_NAMES:
        raise ValueError(
            f"file_name {name!r} is a device name on Windows (CON, PRN, AUX, NUL, COM0-COM9, "
            "LPT0-LPT9, with or without an extension)"
        )
    return name


class _OutboxUsage:
    """How many regular files the outbox holds and their size in bytes (a mutable pair)."""

    def __init__(self, files: int, size_bytes: int) -> None:
        self.files = files
        self.bytes = size_bytes


def _folder_stamp(folder: Path) -> list[int]:
    """What changes when an entry of ``folder`` is made, removed or renamed: its device, inode,
    modification and change times (nanoseconds) and size (bytes)."""
    info = os.stat(folder)
    return [info.st_dev, info.st_ino, info.st_mtime_ns, info.st_ctime_ns, info.st_size]


def _scan_outbox(folder: Path) -> _OutboxUsage:
    """Count the regular files of ``folder`` (not following symlinks) and their bytes: one pass
    over the folder, made only when the ledger is missing, unreadable or out of date."""
    usage = _OutboxUsage(0, 0)
    with os.scandir(folder) as entries:
        for entry in entries:
            with contextlib.suppress(FileNotFoundError):
                if entry.is_file(follow_symlinks=False):
                    usage.bytes += entry.stat(follow_symlinks=False).st_size
                    usage.files += 1
    return usage


@contextlib.contextmanager
def _outbox_usage(folder: Path) -> Iterator[_OutboxUsage]:
    """Lock the outbox and yield its usage; on leaving, record the usage (as changed by the
    caller) in the ledger, then unlock.

    The lock is ``flock`` on the ledger file, exclusive: one write at a time, across threads and
    processes. The usage comes from the ledger when the folder's stamp is the one recorded with
    it, so a write costs the same whatever the number of files; when the stamp differs (a file
    was added, removed or renamed by hand), the folder is counted again. A file whose content is
    changed in place by hand (the folder's entries unchanged), or a change made by hand in the
    microseconds between a write's last two steps, is not seen until the folder changes again.

    Raises:
        OSError: the ledger cannot be made or opened (the ledger's folder is not a folder).
    """
    ledger_dir = folder / OUTBOX_LEDGER_DIR_NAME
    with contextlib.suppress(FileExistsError):
        ledger_dir.mkdir(mode=0o700)
    dir_fd = os.open(ledger_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fd = os.open(
            OUTBOX_LEDGER_FILE_NAME,
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW,
            0o600,
            dir_fd=dir_fd,
        )
    finally:
        os.close(dir_fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        stamp = _folder_stamp(folder)
        try:
            record = json.loads(os.pread(fd, OUTBOX_LEDGER_MAX_BYTES, 0))
            if record["stamp"] != stamp:
                raise ValueError("the outbox changed since the ledger was written")
            usage = _OutboxUsage(int(record["files"]), int(record["bytes"]))
        except (ValueError, KeyError, TypeError):  # missing, torn or out of date: count again
            usage = _scan_outbox(folder)
        try:
            yield usage
        finally:
            # the folder's modification time set to this clock's nanoseconds: a change by hand
            # later gets the kernel's time, never the very same nanosecond, so it is seen
            with contextlib.suppress(OSError):
                os.utime(folder, ns=(os.stat(folder).st_atime_ns, time.time_ns()))
            record = {"files": usage.files, "bytes": usage.bytes, "stamp": _folder_stamp(folder)}
            os.ftruncate(fd, 0)  # a write cut short leaves a ledger that is counted again
            os.pwrite(fd, json.dumps(record).encode("ascii"), 0)
    finally:
        os.close(fd)  # closing the file releases the lock


def _regular_file_size(path: Path) -> int | None:
    """The size of a regular file (not following symlinks), or ``None``."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _clip(text: str, width: int = 80) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def read_outbox(file_name: str) -> str:
    """The content of a file in the outbox, as written (for checks and notebooks)."""
    return (outbox_dir() / file_name).read_bytes().decode("utf-8", "surrogatepass")
