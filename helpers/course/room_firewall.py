"""No attendee can hold the room's PostgreSQL connections: a per-Linux-user cap in the kernel.

PostgreSQL gives every incoming connection a server slot before it knows who is connecting: a
client that sends its startup packet and then stops at the password exchange holds one until
``authentication_timeout`` (60 s by default), and a role's ``CONNECTION LIMIT`` is checked only
after the password (PostgreSQL's docs: ``CREATE ROLE``, "the limit is enforced ... when the
role logs in"). So one attendee opening a hundred such connections from her kernel filled
every slot, the superuser's reserved ones included (issue 47, on PostgreSQL 15). A connection
that never sends its startup packet takes no slot but counts against the postmaster's limit
of live children (twice the backends: ``MaxLivePostmasterChildren`` in
``src/backend/postmaster/postmaster.c``), so neither ``peer`` authentication on a Unix socket
nor a pooler in front (PgBouncer's ``max_client_conn`` is one pool for every client, 1.18 has no
per-user client limit) bounds what one attendee holds.

The room's design: the kernel counts each Linux user's connections to PostgreSQL's port, in
every state (opened, stalled, logged in), and refuses the one past
:data:`helpers.course.room.ATTENDEE_SOCKET_CAP` with a TCP reset: an nftables rule keyed by the
socket's owner, ``meta skuid``, with ``ct count`` (nft(8): "ct count", and the nftables wiki's
"Meters"/"Connlimits"), for every user from :data:`FIRST_ATTENDEE_UID` up (attendees are
ordinary users; root, which runs the hub and its hook, and the system's users are not capped).
PostgreSQL's Unix socket must then be closed to attendees (``unix_socket_permissions`` without
the bits for others: ``workbook room check`` says so), or it would be a way around the cap.
Then one attendee holds at most the cap, and the room's budget
(:func:`helpers.course.room.connection_budget`) counts it for everyone.

:func:`nft_ruleset` writes the rules (``workbook room firewall | sudo nft -f -``);
:func:`probe_cap` checks them as an attendee meets them (``workbook room check``).
"""

from __future__ import annotations

import errno as errno_codes
import os
import pwd
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.course.room import ATTENDEE_SOCKET_CAP

#: The nftables table of the room's rules (its own, so applying them again replaces them and
#: touches no other table).
NFT_TABLE = "workbook_room"
#: The first user id the cap applies to: Debian's and Ubuntu's first ordinary user (``FIRST_UID``
#: in ``/etc/adduser.conf``, ``UID_MIN`` in ``/etc/login.defs``), which attendees are, on a plain
#: hub and on TLJH alike.
FIRST_ATTENDEE_UID = 1000
#: Tracked connections (everything but loopback) one ordinary user may hold at once: far above
#: what an attendee's work opens, far below the kernel's table (``nf_conntrack_max``, 65,536 and
#: up) for a room of thirty.
TRACKED_PER_USER = 1_024
#: The user a root ``room check`` probes the cap as (``nobody``: an ordinary user id, 65534).
PROBE_USER = "nobody"
#: The kernel's connection-tracking table the room wants, in entries
#: (``net.netfilter.nf_conntrack_max``; the kernel's default is 65,536 and up, about 300 bytes
#: each), and the longest a closed TCP connection keeps its entry, in seconds
#: (``nf_conntrack_tcp_timeout_time_wait``, 120 by default: the kernel's
#: Documentation/networking/nf_conntrack-sysctl.rst). The per-user cap counts open connections
#: only (a closed one no longer counts: ``nf_conncount``), so an attendee who opens and closes
#: connections fast fills the table with closed ones; a table four times larger that empties
#: four times faster needs sixteen times her rate (thousands a second, sustained).
CONNTRACK_MIN_ENTRIES = 262_144
CONNTRACK_TIME_WAIT_MAX_S = 30
#: Where the room's two settings are kept across reboots, and what it holds.
CONNTRACK_SYSCTL_FILE = "/etc/sysctl.d/60-workbook-room.conf"
CONNTRACK_SYSCTL = (
    f"net.netfilter.nf_conntrack_max = {CONNTRACK_MIN_ENTRIES}\n"
    f"net.netfilter.nf_conntrack_tcp_timeout_time_wait = {CONNTRACK_TIME_WAIT_MAX_S}\n"
)


def conntrack_settings(proc: str = "/proc/sys/net/netfilter") -> tuple[int, int] | None:
    """The kernel's ``nf_conntrack_max`` and ``nf_conntrack_tcp_timeout_time_wait`` (seconds),
    or ``None`` where connection tracking is not loaded (no rule of the room's yet)."""
    try:
        return tuple(  # type: ignore[return-value]
            int(Path(proc, name).read_text().split()[0])
            for name in ("nf_conntrack_max", "nf_conntrack_tcp_timeout_time_wait")
        )
    except (OSError, ValueError, IndexError):
        return None


#: Seconds of wall clock one probe connection may take: a hang guard.
PROBE_GUARD_S = 30.0


def nft_ruleset(port: int, cap: int = ATTENDEE_SOCKET_CAP) -> str:
    """The nftables script of the room: each ordinary user's connections to TCP port ``port``
    capped at ``cap`` at once; the connection tracking that needs kept to PostgreSQL's port on
    loopback (the rest of loopback untracked: an attendee's own listener cannot fill the
    kernel's table, which would drop every tracked connection on the machine) and each ordinary
    user's other tracked connections capped at :data:`TRACKED_PER_USER`. Applying it again
    replaces the table (the "create, delete, define" idiom of ``nft -f``, one transaction).

    Raises:
        ValueError: a port outside 1-65535 or a cap below 1.
    """
    if not 1 <= port <= 65_535 or cap < 1:
        raise ValueError(f"a port in 1-65535 and a cap of at least 1, got {port} and {cap}")
    # one test a line, each match ending the chain with accept: nft merges adjacent payload
    # matches, and "tcp sport != P tcp dport != P" became one 32-bit inequality that matched
    # PostgreSQL's own packets (their counter showed it), leaving them untracked and uncapped
    untracked = (
        f'{{io}}ifname != "lo" accept\n'
        f"    tcp dport {port} accept\n"
        f"    tcp sport {port} accept\n"
        "    notrack"
    )
    return f"""#!/usr/sbin/nft -f
# The Context Relay Workbook's room: each Linux user from uid {FIRST_ATTENDEE_UID} up may hold at
# most {cap} connections to PostgreSQL (TCP port {port}) at once, in any state; the next is reset.
# Loopback is untracked but for that port, and each such user may hold at most
# {TRACKED_PER_USER} other tracked connections. `workbook room firewall` wrote this;
# `workbook room check` probes it (deploy/README.md).
table inet {NFT_TABLE}
delete table inet {NFT_TABLE}
table inet {NFT_TABLE} {{
  set per_user {{
    typeof meta skuid
    size 65535
    flags dynamic
  }}
  set tracked_per_user {{
    typeof meta skuid
    size 65535
    flags dynamic
  }}
  chain untracked_out {{
    type filter hook output priority raw; policy accept;
    {untracked.format(io="o")}
  }}
  chain untracked_in {{
    type filter hook prerouting priority raw; policy accept;
    {untracked.format(io="i")}
  }}
  chain output {{
    type filter hook output priority filter; policy accept;
    tcp dport {port} meta skuid >= {FIRST_ATTENDEE_UID} ct state new add @per_user {{ meta skuid ct count over {cap} }} counter reject with tcp reset
    meta skuid >= {FIRST_ATTENDEE_UID} ct state new add @tracked_per_user {{ meta skuid ct count over {TRACKED_PER_USER} }} counter reject
  }}
}}
"""


@dataclass(frozen=True)
class Probe:
    """What :func:`probe_cap` found: ``opened`` connections held at once, the ``errno`` of the
    attempt after them (0: every attempt connected), and ``whom`` it probed as."""

    opened: int
    errno: int
    whom: str

    def capped_at(self, cap: int) -> bool:
        """Whether exactly ``cap`` connections opened and the next was refused (a TCP reset:
        ``ECONNREFUSED``), as the room's rule does; anything else (fewer, a timeout, another
        error) is no proof of the cap."""
        return self.opened == cap and self.errno == errno_codes.ECONNREFUSED

    def said(self) -> str:
        """What happened, in words."""
        after = (
            "every one connected"
            if not self.errno
            else f"the next: {os.strerror(self.errno)} (errno {self.errno})"
        )
        return f"probed as {self.whom}: {self.opened} open at once, {after}"


def _open_at_once(address: tuple[int, Any], most: int) -> tuple[int, int]:
    """How many of ``most`` connections to ``address`` (a family and a socket address, resolved
    beforehand: a child that dropped to another user may not read the modules a name's lookup
    imports) were open at once, and the errno of the first that failed (0: none did). Nothing
    is sent on them; all are closed before it returns."""
    family, sockaddr = address
    held, failed = [], 0
    try:
        for _ in range(most):
            connection = socket.socket(family, socket.SOCK_STREAM)
            held.append(connection)
            connection.settimeout(PROBE_GUARD_S)
            connection.connect(sockaddr)
    except TimeoutError:
        held.pop().close()
        failed = errno_codes.ETIMEDOUT
    except OSError as exc:
        held.pop().close()
        failed = exc.errno or errno_codes.EIO
    finally:
        for connection in held:
            connection.close()
    return len(held), failed


def _address(host: str, port: int) -> tuple[int, Any]:
    """``host``:``port`` resolved (its first TCP address: give the address PostgreSQL answered
    on, ``inet_server_addr()``)."""
    family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    return family, sockaddr


def probe_cap(host: str, port: int, cap: int = ATTENDEE_SOCKET_CAP) -> Probe | None:
    """Probe the cap as an ordinary user meets it: open connections to ``host``:``port``, one
    more than ``cap``, sending nothing on them (each is closed at once): as
    :data:`PROBE_USER` when this process is root (in a forked child that drops to that user: no
    program of root's need be readable by it), as itself when it is an ordinary user; ``None``
    when neither (a system user: it cannot tell).

    Raises:
        OSError: the probe could not run (the user is missing, the child failed).
    """
    uid, address = os.geteuid(), _address(host, port)
    if uid >= FIRST_ATTENDEE_UID:
        return Probe(*_open_at_once(address, cap + 1), f"uid {uid}")
    if uid != 0:
        return None
    try:
        nobody = pwd.getpwnam(PROBE_USER)
    except KeyError:
        raise OSError(f"no user {PROBE_USER!r} to probe as") from None
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # the child: drop to the ordinary user, probe, say what happened, and go
        code = 1
        try:
            os.close(read_end)
            os.setgroups([])
            os.setgid(nobody.pw_gid)
            os.setuid(nobody.pw_uid)
            opened, failed = _open_at_once(address, cap + 1)
            os.write(write_end, f"{opened} {failed}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as said:
        words = said.read(64).split()
    _, status = os.waitpid(child, 0)
    if status != 0 or len(words) != 2 or not all(w.isdigit() for w in words):
        raise OSError(f"the probe as {PROBE_USER} failed (wait status {status})")
    return Probe(int(words[0]), int(words[1]), PROBE_USER)
