"""The outbox of google_drive_write_file: names checked after Unicode normalisation, a quota in
files and in bytes that holds exactly under concurrent writers, owner-only modes, and a write
whose cost does not grow with the number of files (a ledger, not a scan of the folder).

Each test gets an outbox of its own (``WORKBOOK_VAR_DIR`` in a temporary folder).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from helpers.base.paths import PROJECT_ROOT, outbox_dir
from helpers.tooling import outbox as outbox_module
from helpers.tooling.outbox import OUTBOX_LEDGER_DIR_NAME, OUTBOX_LEDGER_FILE_NAME, read_outbox
from helpers.tooling.tools import google_drive_write_file


@pytest.fixture(autouse=True)
def own_outbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("WORKBOOK_VAR_DIR", str(tmp_path / "var"))
    return outbox_dir()


def _files(folder: Path) -> dict[str, int]:
    """The regular files of the outbox (not its ledger folder), name to size in bytes."""
    return {p.name: p.lstat().st_size for p in folder.iterdir() if p.is_file()}


def _ledger(folder: Path) -> dict:
    path = folder / OUTBOX_LEDGER_DIR_NAME / OUTBOX_LEDGER_FILE_NAME
    return json.loads(path.read_text())


# -- names -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("report.txt ", "ends in a space or a dot"),
        ("report.txt.", "ends in a space or a dot"),
        ("report ", "ends in a space or a dot"),
        ("notes...", "not a plain file name"),  # '..' is refused anyway
        ("CON", "device name on Windows"),
        ("con", "device name on Windows"),
        ("NUL.txt", "device name on Windows"),
        ("nul.tar.gz", "device name on Windows"),
        ("Aux .txt", "device name on Windows"),
        ("PRN.csv", "device name on Windows"),
        ("COM1", "device name on Windows"),
        ("com9.log", "device name on Windows"),
        ("LPT1.txt", "device name on Windows"),
        ("lpt9", "device name on Windows"),
        (".hidden", "not a plain file name"),
        (".ledger", "not a plain file name"),
        ("a/b.txt", "not a plain file name"),
        ("../escape.txt", "not a plain file name"),
        ("", "not a plain file name"),
        ("caf\u00e9.txt", "not a plain file name"),
        ("x" * 129, "not a plain file name"),
    ],
)
def test_refused_names_write_nothing(own_outbox: Path, name: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        google_drive_write_file(name, "content")
    assert _files(own_outbox) == {}


@pytest.mark.parametrize("name", ["CONSOLE.txt", "nullable.txt", "COM10", "LPT.txt", "auxiliary"])
def test_names_that_only_start_like_a_device_are_accepted(own_outbox: Path, name: str) -> None:
    google_drive_write_file(name, "ok")
    assert _files(own_outbox) == {name: 2}


def test_names_are_normalised_to_nfc_before_the_checks(own_outbox: Path) -> None:
    # U+212A KELVIN SIGN is canonically the letter K: NFC turns the name into 'K.txt'
    assert "Wrote drive://K.txt:" in google_drive_write_file("\u212a.txt", "kelvin")
    assert "replaced an existing file of 6 bytes" in google_drive_write_file("K.txt", "K")
    assert _files(own_outbox) == {"K.txt": 1}
    # and one that NFC leaves non-ASCII is refused whatever its form (composed or not)
    for name in ("e\u0301.txt", "\u00e9.txt"):
        with pytest.raises(ValueError, match="not a plain file name"):
            google_drive_write_file(name, "x")


# -- quotas ------------------------------------------------------------------------------------


def test_the_file_count_quota_refuses_a_new_name_but_not_an_overwrite(
    own_outbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox_module, "MAX_OUTBOX_FILES", 3)
    for i in range(3):
        google_drive_write_file(f"f{i}.txt", "x")
    with pytest.raises(ValueError, match="holds 3 files, its limit of 3 files"):
        google_drive_write_file("f3.txt", "x")
    assert "replaced" in google_drive_write_file("f0.txt", "again")
    assert sorted(_files(own_outbox)) == ["f0.txt", "f1.txt", "f2.txt"]
    (own_outbox / "f1.txt").unlink()  # removed by hand: the ledger sees the folder changed
    google_drive_write_file("f3.txt", "x")
    assert sorted(_files(own_outbox)) == ["f0.txt", "f2.txt", "f3.txt"]


def test_the_byte_quota_holds_to_the_byte(
    own_outbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox_module, "MAX_OUTBOX_TOTAL_BYTES", 100)
    google_drive_write_file("a.txt", "a" * 60)
    google_drive_write_file("b.txt", "b" * 40)  # exactly 100 bytes in all
    with pytest.raises(ValueError, match="holds 100 bytes; 1 more would pass its limit of 100"):
        google_drive_write_file("c.txt", "c")
    with pytest.raises(ValueError, match="holds 40 bytes; 61 more would pass"):
        google_drive_write_file("a.txt", "a" * 61)  # the old 60 bytes do not count twice
    google_drive_write_file("a.txt", "é" * 30)  # 60 bytes of UTF-8: fits exactly
    assert _files(own_outbox) == {"a.txt": 60, "b.txt": 40}
    assert _ledger(own_outbox)["files"] == 2 and _ledger(own_outbox)["bytes"] == 100


def test_concurrent_writers_never_pass_the_count_quota(
    own_outbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox_module, "MAX_OUTBOX_FILES", 50)
    accepted: list[str] = []
    refused: list[str] = []

    def writer(n: int) -> None:
        for i in range(30):
            name = f"w{n}-{i}.txt"
            try:
                google_drive_write_file(name, f"{name}\n" * 20)
                accepted.append(name)
            except ValueError:
                refused.append(name)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(accepted) == 50 and len(refused) == 70
    files = _files(own_outbox)
    assert sorted(files) == sorted(accepted)
    assert _ledger(own_outbox)["files"] == 50
    assert _ledger(own_outbox)["bytes"] == sum(files.values())


_WRITER = """
import sys
from helpers.tooling import outbox, tools
outbox.MAX_OUTBOX_FILES = 40
accepted = 0
for i in range(25):
    try:
        tools.google_drive_write_file(f"p{sys.argv[1]}-{i}.txt", "from another process")
        accepted += 1
    except ValueError:
        pass
print(accepted)
"""


def test_writers_in_other_processes_share_the_quota(own_outbox: Path) -> None:
    env = {**os.environ, "WORKBOOK_VAR_DIR": str(own_outbox.parent)}
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(n)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=PROJECT_ROOT,
            env=env,
        )
        for n in range(3)
    ]
    accepted = [int(w.communicate()[0]) for w in writers]
    assert sum(accepted) == 40 and len(_files(own_outbox)) == 40
    assert _ledger(own_outbox)["files"] == 40


def test_the_ledger_follows_changes_made_by_hand(
    own_outbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    google_drive_write_file("kept.txt", "k" * 10)
    (own_outbox / "by-hand.txt").write_bytes(b"h" * 30)  # added without the tool
    monkeypatch.setattr(outbox_module, "MAX_OUTBOX_TOTAL_BYTES", 50)
    with pytest.raises(ValueError, match="holds 40 bytes; 11 more"):
        google_drive_write_file("new.txt", "n" * 11)
    (own_outbox / "by-hand.txt").unlink()
    google_drive_write_file("new.txt", "n" * 40)
    (own_outbox / OUTBOX_LEDGER_DIR_NAME / OUTBOX_LEDGER_FILE_NAME).write_text("{torn")
    with pytest.raises(ValueError, match="holds 50 bytes; 1 more"):
        google_drive_write_file("one-more.txt", "1")
    assert _ledger(own_outbox) | {"stamp": None} == {"files": 2, "bytes": 50, "stamp": None}


def test_a_failed_write_leaves_the_ledger_exact(
    own_outbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    google_drive_write_file("first.txt", "12345")
    real_replace = os.replace

    def failing_replace(src: str, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outbox_module.os, "replace", failing_replace)
    with pytest.raises(OSError, match="No space left"):
        google_drive_write_file("second.txt", "67890")
    monkeypatch.setattr(outbox_module.os, "replace", real_replace)
    assert _files(own_outbox) == {"first.txt": 5}
    assert _ledger(own_outbox)["files"] == 1 and _ledger(own_outbox)["bytes"] == 5


# -- modes -------------------------------------------------------------------------------------


def test_the_outbox_is_owner_only(own_outbox: Path) -> None:
    google_drive_write_file("private.txt", "mine")
    assert stat.S_IMODE(own_outbox.stat().st_mode) == 0o700
    assert stat.S_IMODE((own_outbox / "private.txt").stat().st_mode) == 0o600
    ledger_dir = own_outbox / OUTBOX_LEDGER_DIR_NAME
    assert stat.S_IMODE(ledger_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((ledger_dir / OUTBOX_LEDGER_FILE_NAME).stat().st_mode) == 0o600
    assert read_outbox("private.txt") == "mine"


# -- cost: the same at 10 files and at 5,000 ---------------------------------------------------
# Measured as what a write does, not as how long it takes (a busy machine makes any timing
# ratio flaky; the speed itself is make bench's): after the first write has counted the folder
# into the ledger, a write lists no folder at all, so its cost cannot grow with the files.


def _listings_per_write(folder: Path, prefix: str, monkeypatch, writes: int = 5) -> int:
    """Folder listings (``os.scandir``, ``os.listdir``) made by ``writes`` writes of new files,
    after one write that may count the folder."""
    import os

    google_drive_write_file(f"{prefix}-warm.txt", "warm")
    calls = []
    for name in ("scandir", "listdir"):
        real = getattr(os, name)

        def counted(*args, _real=real, _name=name, **kwargs):
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(os, name, counted)
    for i in range(writes):
        google_drive_write_file(f"{prefix}-{i}.txt", "x" * 200)
    monkeypatch.undo()
    return len(calls)


def test_a_write_costs_the_same_at_5000_files_as_at_10(
    own_outbox: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox_module, "MAX_OUTBOX_FILES", 10_000)
    for i in range(10):
        (own_outbox / f"seed-{i}.txt").write_bytes(b"s" * 100)
    few = _listings_per_write(own_outbox, "few", monkeypatch)
    monkeypatch.setattr(outbox_module, "MAX_OUTBOX_FILES", 10_000)
    for i in range(10, 5_000):
        (own_outbox / f"seed-{i}.txt").write_bytes(b"s" * 100)
    many = _listings_per_write(own_outbox, "many", monkeypatch)
    assert len(_files(own_outbox)) > 5_000
    assert few == many == 0, f"folder listings per 5 writes: {few} at 10 files, {many} at 5,000"
