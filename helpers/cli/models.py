"""``workbook models``: the profiles the settings name, the model each runs, and (with
``--check``) whether its endpoint answers.

In the manner of ``llm models`` (simonw/llm). Profiles come from ``.env`` and the environment
(:func:`helpers.models.settings.configured_profiles`); a profile that cannot run says why, in the
words :func:`helpers.models.llm.resolve_model` uses. ``--check`` asks each endpoint for its model
list (``GET …/models``, one try, ``--timeout`` seconds): a profile is *reachable* when the
endpoint answers at all, even with an error status (a wrong key answers 401), and *unreachable*
when nothing answers. Without ``--check`` nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from helpers.cli.exits import EXIT_OK, print_json
from helpers.cli.output import console, output_options, rows_table
from helpers.text.escaping import for_terminal

#: A profile name ``--names`` prints (tab completion reads it as shell words).
SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: Seconds ``--check`` waits for an endpoint by default: a hang guard, many times what an
#: endpoint that answers takes, so a busy machine never reports a live one unreachable.
CHECK_TIMEOUT_S = 30.0


def add_command(sub: Any, name: str, help: str) -> None:
    """Add ``models`` to the ``workbook`` subparsers, with :func:`run` as its handler."""
    models = sub.add_parser(name, help=help, parents=[output_options()])
    models.add_argument(
        "--check",
        action="store_true",
        help="ask each endpoint for its models (GET /models): does it answer?",
    )
    models.add_argument(
        "--timeout",
        type=float,
        default=CHECK_TIMEOUT_S,
        help="seconds to wait for each endpoint with --check (default %(default)s)",
    )
    models.add_argument(
        "--names",
        action="store_true",
        help="only the profile names, one per line (for scripts and tab completion)",
    )
    models.set_defaults(handler=run)


def _reachable(config: Any, timeout_s: float) -> str:
    """What the profile's endpoint said to ``GET /models``, in a few words."""
    import openai

    from helpers.models.llm import make_client

    if config.offline:
        return "reachable (in this process)"
    try:
        client = make_client(config, max_retries=0, timeout_s=timeout_s)
        listed = client.models.list()
    except openai.APIStatusError as exc:
        return f"reachable (HTTP {exc.status_code})"
    except Exception as exc:  # a probe: any failure to get an answer is "unreachable"
        return f"unreachable: {type(exc).__name__}"
    return f"reachable ({len(listed.data)} models)"


def default_profile() -> tuple[str | None, str | None]:
    """The profile ``ask`` runs without ``-p`` (the same rule,
    :func:`helpers.models.llm.resolve_model`), and ``None``; or ``None`` and why that profile
    cannot run (``WORKBOOK_PROFILE`` may name one the settings do not make usable), its
    secrets redacted."""
    from helpers.models.llm import resolve_model
    from helpers.text.redaction import configured_secrets, redact

    try:
        return resolve_model().profile, None
    except ValueError as exc:  # ConfigError, or a URL urllib cannot read
        return None, redact(str(exc), configured_secrets())


def profile_rows(default: str | None, check: bool, timeout_s: float) -> list[dict[str, Any]]:
    """One row per configured profile, and one for the profile ``WORKBOOK_PROFILE`` names when
    no settings name it (``WORKBOOK_PROFILE=local`` and no ``LOCAL_…`` set: its row says what
    to set): ``profile``, ``default`` (it is ``default``, the one ``ask`` uses without ``-p``:
    :func:`default_profile`), ``provider``, ``model``, ``endpoint``, ``usable`` (``ok`` or why
    not) and, with ``check``, ``reachable``."""
    from helpers.models.llm import ConfigError, resolve_model
    from helpers.models.settings import (
        PROFILE_NAME_RE,
        configured_profiles,
        load_env,
        settings_prefix,
    )
    from helpers.text.redaction import configured_secrets, endpoint_shown, redact

    secrets = configured_secrets()
    names = configured_profiles()
    chosen = (load_env().get("WORKBOOK_PROFILE") or "").strip()
    # one profile, however spelled: my_prof and my-prof read MY_PROF_… alike (settings_prefix)
    if PROFILE_NAME_RE.fullmatch(chosen) and settings_prefix(chosen) not in {
        settings_prefix(n) for n in names
    }:
        names.append(chosen)  # not a name: default_profile's problem says so
    rows = []
    for name in names:
        is_default = default is not None and settings_prefix(name) == settings_prefix(default)
        # a key pasted as WORKBOOK_PROFILE is shown as the settings show it: redacted
        row: dict[str, Any] = {"profile": redact(name, secrets), "default": is_default}
        try:
            config = resolve_model(name)
        except (ConfigError, ValueError) as exc:  # ValueError: a URL urllib cannot read
            usable = redact(str(exc), secrets)
            rows.append({**row, "provider": "", "model": "", "endpoint": "", "usable": usable})
            continue
        endpoint = "in-process" if config.offline else endpoint_shown(config.base_url)
        row |= {"provider": config.provider, "model": config.model, "endpoint": endpoint}
        row["usable"] = "ok"
        if check:
            row["reachable"] = _reachable(config, timeout_s)
        rows.append(row)
    return rows


def run(args: argparse.Namespace) -> int:
    """Print the profiles (a table, tab-separated lines when piped, ``--json``, or with
    ``--names`` their names alone, usable or not: tab completion offers them without importing
    the SDK). When the profile ``ask`` runs without ``-p`` cannot run, why: a line on stderr, or
    ``default_error`` under ``--json``."""
    if args.names:
        from helpers.models.settings import configured_profiles

        print("\n".join(n for n in configured_profiles() if SAFE_NAME_RE.match(n)))
        return EXIT_OK
    default, problem = default_profile()
    rows = profile_rows(default, args.check, args.timeout)
    if args.json:
        print_json({"profiles": rows} | ({"default_error": problem} if problem else {}))
        return EXIT_OK
    columns = ("profile", "provider", "model", "endpoint", "usable")
    columns += ("reachable",) if args.check else ()
    cells = [
        [
            row["profile"] + (" *" if row["default"] else ""),
            *(for_terminal(str(row.get(c, ""))) for c in columns[1:]),
        ]
        for row in rows
    ]
    rows_table(console(args.color), "Profiles (* is the one ask uses without -p)", columns, cells)
    if problem:  # on stderr: piped, stdout stays the table's lines
        print(f"workbook: ask without -p cannot run: {for_terminal(problem)}", file=sys.stderr)
    return EXIT_OK
