"""``workbook room check``: the instructor's pre-flight before the day, against the room's
PostgreSQL and the hub's configuration file, one :class:`Finding` per setting.

Each finding says in one line what is right, or what to run to fix it (and as whom). What is
checked, and why:

- the server's version (the room is tested on PostgreSQL 15; 14's ``public`` schema is writable
  by every role, and 16 changed what ``CREATEROLE`` grants);
- the admin's rights: ``CREATEROLE``, not a superuser, owner of the room's database (it creates
  each attendee's schema and revokes the database's ``PUBLIC`` connect);
- ``max_connections`` against :func:`helpers.course.room.connection_budget` for the room's size,
  plus ``superuser_reserved_connections``;
- ``password_encryption`` (``scram-sha-256``) and a TCP connection (a password, not a socket's
  peer or trust authentication);
- no role but the owner may create in the room database's ``public`` schema;
- no other database lets ``PUBLIC`` connect (an attendee's role could log in there);
- no attendee may take advisory locks (the workbook uses none; one session holding thousands
  fills the shared lock table, and every new connection fails "out of shared memory");
- no attendee can hold the room's connections: the firewall's per-user cap, probed as an
  ordinary user would meet it (:mod:`helpers.course.room_firewall`), and PostgreSQL's Unix socket
  closed to others (it would be a way around the cap);
- no attendee's home is open to the others (a home others may enter shows her notebooks, their
  outputs and her ``.env``);
- PostgreSQL listens on this machine alone (the firewall caps this machine's users only);
- the hub's configuration file is in place and wires the hook;
- the room's admin URL (its password) is kept from the attendees: its file readable by root
  alone, and not in the hub unit's ``Environment=``.

Every statement runs with ``search_path`` ``pg_catalog, pg_temp`` and reads the catalogs only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.course.room import (
    ATTENDEE_SOCKET_CAP,
    admin_connection,
    connection_budget,
    recorded_attendees,
)
from helpers.course.room_firewall import (
    CONNTRACK_MIN_ENTRIES,
    CONNTRACK_SYSCTL,
    CONNTRACK_SYSCTL_FILE,
    CONNTRACK_TIME_WAIT_MAX_S,
    FIRST_ATTENDEE_UID,
    conntrack_settings,
    probe_cap,
)
from helpers.course.room_homes import attendee_account, open_homes

#: The oldest PostgreSQL the room is tested on (``server_version_num``).
TESTED_VERSION_NUM = 150000


@dataclass(frozen=True)
class Finding:
    """One pre-flight check: ``name`` (short, stable), ``ok``, and ``line``: what was found when
    ok, else what to do (untrusted text from the server is in it: escape it for its sink)."""

    name: str
    ok: bool
    line: str

    def as_json(self) -> dict[str, Any]:
        """``{"check", "ok", "line"}``."""
        return {"check": self.name, "ok": self.ok, "line": self.line}


@dataclass(frozen=True)
class _Server:
    """What the pre-flight reads of the server, with the admin's URL."""

    version_num: int
    version: str
    admin: str
    database: str
    superuser: bool
    createrole: bool
    owner: str
    max_connections: int
    reserved: int
    encryption: str
    address: str | None
    public_create: bool
    open_databases: list[str]
    advisory_public: bool
    host: str
    port: int
    socket: tuple[int, str, str] | None
    listen: str | None
    attendees: list[tuple[str, str]]


_SETTING = "SELECT pg_catalog.current_setting('{}')"
_PUBLIC_CREATE = (
    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_namespace n, pg_catalog.aclexplode("
    "COALESCE(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) a "
    "WHERE n.nspname = 'public' AND a.grantee = 0 AND a.privilege_type = 'CREATE')"
)
_OPEN_DATABASES = (
    "SELECT d.datname FROM pg_catalog.pg_database d, pg_catalog.aclexplode("
    "COALESCE(d.datacl, pg_catalog.acldefault('d', d.datdba))) a "
    "WHERE d.datallowconn AND d.datname <> current_database() "
    "AND a.grantee = 0 AND a.privilege_type = 'CONNECT' ORDER BY 1"
)


_ADVISORY_PUBLIC = (
    "SELECT pg_catalog.has_function_privilege('public', "
    "'pg_catalog.pg_advisory_lock(bigint)', 'EXECUTE')"
)
#: Revokes every advisory-lock function from PUBLIC, in the database it runs in.
REVOKE_ADVISORY = (
    "DO $$DECLARE f regprocedure; BEGIN FOR f IN SELECT oid::regprocedure FROM pg_proc "
    "WHERE proname LIKE 'pg%advisory%lock%' LOOP EXECUTE format('REVOKE EXECUTE ON FUNCTION "
    "%s FROM PUBLIC', f); END LOOP; END$$"
)


def _may_read_settings(one: Any) -> bool:
    """Whether the admin may read the settings only ``pg_read_all_settings`` may."""
    return bool(one("SELECT pg_catalog.pg_has_role(current_user, 'pg_read_all_settings', 'USAGE')"))


def _socket_settings(one: Any) -> tuple[int, str, str] | None:
    """``unix_socket_permissions`` (as a number), ``unix_socket_directories`` and
    ``unix_socket_group``, which only a member of ``pg_read_all_settings`` may read; ``None``
    when the admin is not one."""
    if not _may_read_settings(one):
        return None
    permissions = int(str(one(_SETTING.format("unix_socket_permissions"))), 8)
    directories = str(one(_SETTING.format("unix_socket_directories")))
    return permissions, directories, str(one(_SETTING.format("unix_socket_group")))


def _read_server(room_url: str) -> _Server:
    with admin_connection(room_url) as db:

        def one(query: str, *args: Any) -> Any:
            return db.execute(query, args or None).fetchone()[0]

        admin = one("SELECT current_user")
        superuser, createrole = db.execute(
            "SELECT rolsuper, rolcreaterole FROM pg_catalog.pg_roles WHERE rolname = %s",
            (admin,),
        ).fetchone()
        address = one("SELECT pg_catalog.inet_server_addr()")
        port = int(one("SELECT pg_catalog.inet_server_port()") or 5432)
        return _Server(
            version_num=int(one(_SETTING.format("server_version_num"))),
            version=str(one(_SETTING.format("server_version"))),
            admin=admin,
            database=one("SELECT current_database()"),
            superuser=bool(superuser),
            createrole=bool(createrole),
            owner=one(
                "SELECT pg_catalog.pg_get_userbyid(datdba) FROM pg_catalog.pg_database "
                "WHERE datname = current_database()"
            ),
            max_connections=int(one(_SETTING.format("max_connections"))),
            reserved=int(one(_SETTING.format("superuser_reserved_connections"))),
            encryption=str(one(_SETTING.format("password_encryption"))),
            address=None if address is None else str(address),
            public_create=bool(one(_PUBLIC_CREATE)),
            open_databases=[row[0] for row in db.execute(_OPEN_DATABASES).fetchall()],
            advisory_public=bool(one(_ADVISORY_PUBLIC)),
            host=db.info.host,
            port=port,
            socket=_socket_settings(one),
            listen=str(one(_SETTING.format("listen_addresses")))
            if _may_read_settings(one)
            else None,
            attendees=sorted((role, name) for role, (name, _) in recorded_attendees(db).items()),
        )


#: How each fix that needs the superuser is introduced.
AS_POSTGRES = "(as the postgres superuser: sudo -u postgres psql -c ...)"


def check_room(
    room_url: str, attendees: int, *, hub_config: str | Path, env_file: str | Path = ""
) -> list[Finding]:
    """The pre-flight of a room of ``attendees`` on the admin's URL ``room_url``, and of the hub's
    copy of ``deploy/jupyterhub_config.d/workbook.py`` at ``hub_config``: one :class:`Finding`
    per check, in the order the module's docstring lists them.

    Raises:
        ValueError: ``room_url`` is not a PostgreSQL URL, or fewer than one attendee.
        psycopg.Error: the database cannot be reached with that URL.
    """
    budget = connection_budget(attendees)
    server = _read_server(room_url)
    return [
        _version(server),
        _admin(server),
        _connections(server, attendees, budget),
        _encryption(server),
        Finding(
            "tcp",
            server.address is not None,
            f"over TCP to {server.address}"
            if server.address is not None
            else "the room URL reaches a Unix socket: give it a host (127.0.0.1), so every role "
            "logs in with a password",
        ),
        Finding(
            "public_schema",
            not server.public_create,
            "only its owner may create in the public schema"
            if not server.public_create
            else f"every role may create in {server.database}'s public schema: REVOKE CREATE ON "
            f"SCHEMA public FROM PUBLIC (as the database's owner, in {server.database})",
        ),
        _other_databases(server),
        Finding(
            "advisory_locks",
            not server.advisory_public,
            "attendees may not take advisory locks"
            if not server.advisory_public
            else "every role may take advisory locks, and one session holding thousands fills "
            "the server's lock table (every new connection then fails): "
            f'sudo -u postgres psql {server.database} -c "{REVOKE_ADVISORY}"',
        ),
        _firewall(server),
        _conntrack(),
        _socket(server),
        _listening(server),
        _homes(server),
        _hook_finding(Path(hub_config)),
        _secret(Path(env_file)),
    ]


def _version(server: _Server) -> Finding:
    tested = server.version_num >= TESTED_VERSION_NUM
    return Finding(
        "version",
        tested,
        f"PostgreSQL {server.version}"
        if tested
        else f"PostgreSQL {server.version} is older than the tested 15: upgrade, and see the "
        "public-schema check",
    )


def _admin(server: _Server) -> Finding:
    fixes = [
        f'ALTER ROLE "{server.admin}" CREATEROLE {AS_POSTGRES}' if not server.createrole else "",
        f"{server.admin} is a superuser: give the room a role with CREATEROLE only "
        "(deploy/README.md, step 1)"
        if server.superuser
        else "",
        f'ALTER DATABASE "{server.database}" OWNER TO "{server.admin}" {AS_POSTGRES}'
        if server.owner != server.admin
        else "",
    ]
    fixes = [fix for fix in fixes if fix]
    return Finding(
        "admin",
        not fixes,
        "; ".join(fixes) or f"{server.admin} may create roles and owns {server.database}",
    )


def _connections(server: _Server, attendees: int, budget: int) -> Finding:
    need = budget + server.reserved
    enough = server.max_connections >= need
    return Finding(
        "max_connections",
        enough,
        f"{server.max_connections} ≥ {need} (the room's budget {budget} + {server.reserved} "
        "reserved)"
        if enough
        else f"max_connections is {server.max_connections}; a room of {attendees} needs {need}: "
        f"ALTER SYSTEM SET max_connections = {need} {AS_POSTGRES}, then restart PostgreSQL",
    )


def _encryption(server: _Server) -> Finding:
    scram = server.encryption == "scram-sha-256"
    return Finding(
        "password_encryption",
        scram,
        "scram-sha-256"
        if scram
        else f"password_encryption is {server.encryption}: ALTER SYSTEM SET "
        f"password_encryption = 'scram-sha-256' {AS_POSTGRES}, reload, then run room url again "
        "for each attendee",
    )


def _other_databases(server: _Server) -> Finding:
    names = server.open_databases
    return Finding(
        "other_databases",
        not names,
        "attendees may connect to the room's database only"
        if not names
        else f"attendees may connect to {', '.join(names)}: "
        + " ".join(f'REVOKE CONNECT ON DATABASE "{d}" FROM PUBLIC;' for d in names)
        + f" {AS_POSTGRES}",
    )


#: What ``room check`` tells to run to put the firewall's cap in place.
FIREWALL_FIX = "workbook room firewall | sudo nft -f -"


def _conntrack(proc: str = "/proc/sys/net/netfilter") -> Finding:
    settings = conntrack_settings(proc)
    fix = (
        f"printf '{CONNTRACK_SYSCTL}' | sudo tee {CONNTRACK_SYSCTL_FILE} && sudo sysctl -p "
        f"{CONNTRACK_SYSCTL_FILE} (deploy/README.md, step 3)"
    ).replace("\n", "\\n")
    if settings is None:
        return Finding(
            "conntrack",
            False,
            f"the kernel tracks no connection yet: apply the firewall, then {fix}",
        )
    entries, time_wait_s = settings
    if entries >= CONNTRACK_MIN_ENTRIES and time_wait_s <= CONNTRACK_TIME_WAIT_MAX_S:
        return Finding(
            "conntrack",
            True,
            f"the kernel tracks up to {entries:,} connections and forgets a closed one after "
            f"{time_wait_s} s",
        )
    return Finding(
        "conntrack",
        False,
        f"the kernel tracks up to {entries:,} connections and keeps a closed one {time_wait_s} s: "
        "an attendee opening and closing connections fast fills the table, and every new "
        f"connection on the machine is dropped: {fix}",
    )


def _firewall(server: _Server) -> Finding:
    host = server.address or server.host
    try:
        probed = probe_cap(host, server.port)
    except OSError as exc:
        return Finding("firewall", False, f"the probe could not run ({exc}): run room check again")
    if probed is None:
        return Finding(
            "firewall",
            False,
            "not probed: run room check as root (sudo), or as an ordinary user",
        )
    if probed.capped_at(ATTENDEE_SOCKET_CAP):
        return Finding(
            "firewall",
            True,
            f"an attendee may hold {ATTENDEE_SOCKET_CAP} connections to {host} port "
            f"{server.port} at once ({probed.said()})",
        )
    if probed.opened > ATTENDEE_SOCKET_CAP:
        return Finding(
            "firewall",
            False,
            f"an attendee may open as many connections to port {server.port} as she likes "
            f"({probed.said()}), and connections that stall before logging in fill every server "
            f"slot: {FIREWALL_FIX} (deploy/README.md, step 3)",
        )
    return Finding(
        "firewall",
        False,
        f"the probe proves no cap ({probed.said()}): the room's rule opens "
        f"{ATTENDEE_SOCKET_CAP} and resets the next; is another rule in the way? "
        f"{FIREWALL_FIX} (deploy/README.md, step 3)",
    )


def _socket(server: _Server) -> Finding:
    if server.socket is None:
        return Finding(
            "unix_socket",
            False,
            f"not read (the admin may not read PostgreSQL's socket settings): GRANT "
            f'pg_read_all_settings TO "{server.admin}" {AS_POSTGRES}',
        )
    permissions, directories, group = server.socket
    shared = permissions & 0o070 and group_holds_ordinary_users(group)
    closed = not directories.strip(", ") or not (permissions & 0o007 or shared)
    fix = (
        f"ALTER SYSTEM SET unix_socket_permissions = '0770' {AS_POSTGRES}, then restart PostgreSQL"
        if permissions & 0o007
        else f"ALTER SYSTEM SET unix_socket_group = '' {AS_POSTGRES} (its group holds "
        "ordinary users), then restart PostgreSQL"
    )
    return Finding(
        "unix_socket",
        closed,
        "PostgreSQL's Unix socket is closed to attendees"
        if closed
        else f"PostgreSQL's Unix socket is open to attendees (unix_socket_permissions "
        f"{permissions:04o}, group {group or 'postgres'}), a way around the firewall: {fix}",
    )


def _listening(server: _Server) -> Finding:
    if server.listen is None:
        return Finding("listen", False, "not read: see the unix_socket line")
    addresses = [a.strip() for a in server.listen.split(",") if a.strip()]
    local = all(a in LOOPBACK_NAMES for a in addresses)
    return Finding(
        "listen",
        local,
        f"PostgreSQL listens on {', '.join(addresses) or 'no TCP address'} only"
        if local
        else f"PostgreSQL listens on {server.listen}: a client elsewhere could stall its "
        "connections past the firewall, which caps this machine's users only: ALTER SYSTEM SET "
        f"listen_addresses = 'localhost' {AS_POSTGRES}, then restart PostgreSQL",
    )


#: ``listen_addresses`` entries that are this machine alone.
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def group_holds_ordinary_users(group: str) -> bool:
    """Whether the group ``group`` (``""``: the PostgreSQL server's own, ``postgres``) holds an
    ordinary user (uid 1000 and up), as a member or as her primary group."""
    import grp
    import pwd

    try:
        entry = grp.getgrnam(group or "postgres")
    except KeyError:
        return False
    members = set(entry.gr_mem)
    return any(
        user.pw_uid >= FIRST_ATTENDEE_UID
        and (user.pw_name in members or user.pw_gid == entry.gr_gid)
        for user in pwd.getpwall()
    )


def _homes(server: _Server) -> Finding:
    names = [name for _, name in server.attendees]
    opened = open_homes(names)
    if opened:
        shown = " ".join(str(home) for home in opened)
        return Finding(
            "homes",
            False,
            f"{len(opened)} attendee home(s) open to other users: sudo chmod 0700 {shown} (the "
            "hub's hook closes each home when her server starts)",
        )
    with_account = sum(attendee_account(name) is not None for name in names)
    if not names:
        line = "no attendee yet (the hook closes each home when her server starts)"
    elif with_account == len(names):
        line = f"the {len(names)} attendees' homes are closed to other users"
    else:
        line = (
            f"{with_account} of the {len(names)} attendees' homes are closed to other users; "
            f"{len(names) - with_account} {'has' if len(names) - with_account == 1 else 'have'} "
            "no Linux account yet (the hub makes it, and "
            "the hook closes its home, when her server first starts)"
        )
    return Finding("homes", True, line)


#: The systemd unit of the hub (TLJH's) whose ``Environment=`` must not hold the room's URL.
HUB_UNIT = "jupyterhub"


def _secret(env_file: Path) -> Finding:
    """The room's admin URL kept from the attendees: its file (``env_file``, when given and
    present) readable by its owner alone, and not in the hub unit's ``Environment=``, which
    ``systemctl show`` shows every user (systemd.exec(5): "exposed to unprivileged clients")."""
    import shutil
    import subprocess

    fixes = []
    try:
        mode = env_file.stat().st_mode if str(env_file) else None
    except OSError:
        mode = None
    if mode is not None and mode & 0o077:
        fixes.append(f"{env_file} is readable by others: sudo chmod 600 {env_file}")
    systemctl = shutil.which("systemctl")
    if systemctl:
        shown = subprocess.run(
            [systemctl, "show", "-p", "Environment", HUB_UNIT],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        if "WORKBOOK_ROOM_URL=" in shown.stdout:
            fixes.append(
                f"the {HUB_UNIT} unit's Environment= holds the room's URL, and systemctl show "
                f"gives it to every user: move it to {env_file or 'a file only root reads'} "
                "(EnvironmentFile=, deploy/README.md, step 4)"
            )
    return Finding(
        "secret",
        not fixes,
        "; ".join(fixes) or "the room's admin URL is kept from other users",
    )


def _hook_finding(path: Path) -> Finding:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return Finding(
            "hook",
            False,
            f"{path}: {exc.strerror or exc}: copy deploy/jupyterhub_config.d/workbook.py there "
            "and reload the hub (deploy/README.md, step 4)",
        )
    wired = "c.Spawner.pre_spawn_hook = pre_spawn_hook" in text and "async def" in text
    return Finding(
        "hook",
        wired,
        f"{path} wires the hook"
        if wired
        else f"{path} is not this workbook's hub configuration (an older copy?): copy "
        "deploy/jupyterhub_config.d/workbook.py over it and reload the hub",
    )
