"""What a process of a test has held at most: its peak resident memory, read from Linux's
``/proc`` (a test that reads it skips where there is none)."""

from __future__ import annotations


def peak_bytes(pid: int) -> int:
    """The peak resident memory of the live process ``pid`` (``VmHWM``), in bytes."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"/proc/{pid}/status has no VmHWM")
