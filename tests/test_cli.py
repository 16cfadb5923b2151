"""The workbook command, run as a user runs it: a process of its own (forked from one that
imported the command line once, :mod:`forked_cli`, or ``python -m helpers.cli`` when the test
is about the process), JSON on stdout, exit codes."""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from forked_cli import run_workbook
from hang import HANG_GUARD_S
from hypothesis import given, settings
from hypothesis import strategies as st

CASE1 = "Generate a transcript of the YouTube video with video_id='123' and then pass it to Deep Check for analysis."
CLI = (sys.executable, "-m", "helpers.cli")
SQL = "Using run_sql, list the ISO 3166-2 subdivisions of Norway (code, name and type)."


def workbook(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
    """``workbook ARGS`` offline, ``stdin`` on its standard input, in a process of its own
    (forked from one that imported the CLI once: :mod:`forked_cli`)."""
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    return run_workbook(args, env=env, stdin=stdin)


def test_a_forked_command_is_what_python_m_helpers_cli_gives(tmp_path) -> None:
    """The tests' forked commands (:func:`workbook`) against ``python -m helpers.cli`` itself:
    the same exit code, standard output and standard error, whatever the environment (a profile
    of the settings), the working folder (a store path relative to it), standard input (a
    prompt piped in) or a usage error."""
    from helpers.store.tool_outputs import ToolOutputStore

    store = ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    store.log_tool("thread_a", "call_1", "get_page", {}, "é\tline\n" * 3)
    store.close()
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1", "MINE_BASE_URL": "x"}
    runs = [
        (["models", "--json"], ""),
        (["outputs", "list", "--db", "sqlite:///store.sqlite"], ""),
        (["outputs", "show", "call_1", "--raw", "--db", "sqlite:///store.sqlite"], ""),
        (["ask", "--json", "--db", "sqlite://"], "what is the title of the json page?"),
        (["ask", "--strategy", "nope"], ""),
        (["cases", "--json", "no/such/*.md"], ""),
    ]
    for args, stdin in runs:
        forked = run_workbook(args, env=env, stdin=stdin, cwd=tmp_path)
        started = subprocess.run(
            [*CLI, *args],
            capture_output=True,
            text=True,
            env=env,
            input=stdin,
            cwd=tmp_path,
            timeout=HANG_GUARD_S,
        )
        same = lambda text: re.sub(  # noqa: E731  ids and times differ from run to run
            r"thread_[0-9a-f]{16}|call_[A-Za-z0-9]{24}|(?<=seconds\": )[0-9.e-]+", "X", text
        )
        assert forked.returncode == started.returncode, (args, forked.stderr, started.stderr)
        assert same(forked.stdout) == same(started.stdout), args
        assert same(forked.stderr) == same(started.stderr), args


def test_a_stdout_that_cannot_write_every_character_gets_escapes_not_an_error() -> None:
    """``PYTHONIOENCODING=ascii`` (or a pipe in a Windows code page): the turn's arrows are
    written as escapes and rich draws its boxes in ASCII; the command does not end in an
    internal error (a start setting: :func:`workbook` starts this one)."""
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "NO_COLOR": "1"}
    done = run_workbook(
        ["ask", CASE1, "--db", "sqlite://"], env={**env, "PYTHONIOENCODING": "ascii"}
    )
    assert done.returncode == 0, done.stderr
    assert "\\u2192 yt_transcribe" in done.stdout and "+----" in done.stdout


def ask_json(prompt: str, *extra: str) -> dict:
    done = workbook("ask", prompt, "--json", *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_case1_box_truncate_inline() -> None:
    runs = {s: ask_json(CASE1, "--strategy", s) for s in ("box", "truncate", "inline")}
    box = runs["box"]
    assert box["model"] == "offline-reference" and box["thread_id"].startswith("thread_")
    result = box["tool_calls"][0]["result"]
    ref, note = result.split("\n", 2)[:2]  # the reference, its note, then the preview
    assert ref.startswith("internal://") and "10,244 chars of text/plain" in note
    assert json.loads(box["tool_calls"][1]["arguments"]) == {"text": ref}
    assert [t["name"] for t in runs["truncate"]["tool_calls"]] == [
        "yt_transcribe",
        "fetch_tool_output",
        "deep_check",
    ]
    answers = {r["answer"] for r in runs.values()}
    assert len(answers) == 1  # the same byte-exact analysis under every strategy
    p = {s: r["usage"]["prompt_tokens"] for s, r in runs.items()}
    assert p["box"] < p["truncate"] and p["box"] < p["inline"]
    assert set(box["usage"]) == {"prompt_tokens", "completion_tokens", "calls"}


def test_json_boxing_and_thresholds() -> None:
    run = ask_json(CASE1, "--boxing", "json")
    assert json.loads(run["tool_calls"][0]["result"])["type"] == "resource_link"
    huge = ask_json(CASE1, "--threshold", "100000")
    assert not huge["tool_calls"][0]["result"].startswith("internal://")


@pytest.mark.parametrize(
    ("strategy", "flags", "boxing"),
    [
        ("box-tcr", ["--boxing", "json"], "json"),
        ("box-tcr", [], "opaque"),
        ("box-json", [], "json"),
        ("box", ["--boxing", "json"], "json"),
    ],
)
def test_boxing_means_the_same_in_ask_and_cases(tmp_path, strategy, flags, boxing) -> None:
    asked = ask_json(CASE1, "--strategy", strategy, *flags)
    assert asked["boxing"] == boxing
    first = asked["tool_calls"][0]["result"]
    if boxing == "json":
        assert json.loads(first)["type"] == "resource_link", first
    else:
        assert first.startswith("internal://"), first
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    done = workbook("cases", "data/cases/case1.md", "-s", strategy, *flags, "--db", db, "-j")
    assert done.returncode == 0, done.stderr
    [run] = json.loads(done.stdout)["runs"]
    assert (run["boxing"], run["passed"]) == (boxing, True)


def test_short_video_is_never_boxed() -> None:
    for strategy in ("box", "truncate", "inline"):
        run = ask_json(CASE1.replace("'123'", "'999'"), "--strategy", strategy)
        assert all(t["result_kind"] == "inline" for t in run["tool_calls"])


def test_run_sql_returns_real_rows_under_every_strategy() -> None:
    for strategy in ("box", "truncate", "inline"):
        run = ask_json(SQL, "--strategy", strategy)
        assert "NO-03 | Oslo | County" in run["answer"], strategy


def test_human_output_names_the_model_and_marks_boxed_results() -> None:
    done = workbook("ask", CASE1, "--print-tools", "--dump-context", "--color", "never")
    assert done.returncode == 0
    assert "offline reference model" in done.stdout
    assert "← boxed" in done.stdout and '"tool_search"' in done.stdout  # the first call's tools
    assert '"role": "tool"' in done.stdout


@pytest.mark.parametrize(
    ("args", "help_named"),
    [
        (("ask",), None),  # no prompt: the handler says so
        (("ask", "x", "--strategy", "nope"), "workbook ask"),
        (("ask", "x", "--limit", "-1"), "workbook ask"),
        (("ask", "x", "--profile", "nosuch"), None),  # the profile's problem, said by the handler
        (("ask", "x", "--compact-at", "0"), "workbook ask"),
        (("ask", "x", "--nope"), "workbook ask"),
        (("outputs", "show"), "workbook outputs show"),
        (("outputs", "prune", "--older-than", "-7d"), "workbook outputs prune"),
        (("nope",), "workbook"),
    ],
)
def test_bad_usage_exits_2_with_one_line_naming_the_help_to_read(args, help_named) -> None:
    """docs/threat-model.md: bad usage is exit 2 with one line (argparse's own error prints its
    whole usage block first); a line the parser wrote names the ``--help`` that explains."""
    done = workbook(*args)
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1, done.stderr
    if help_named is not None:
        assert done.stderr.endswith(f"(see {help_named} --help)\n"), done.stderr


def test_a_failed_run_exits_1() -> None:
    done = workbook("ask", CASE1, "--max-iterations", "1", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["status"] == "max_iterations"


def test_help_shows_shared_options_once_with_short_flags_and_environment_defaults() -> None:
    top = workbook("--help").stdout
    assert "WORKBOOK_PROFILE" in top and "WORKBOOK_DB_URL" in top and "outputs" in top
    for command in ("ask", "cases", "compare"):
        text = workbook(command, "--help").stdout
        for flag in ("-p PROFILE, --profile PROFILE", "-m MODEL, --model MODEL", "\n  --db URL"):
            assert text.count(flag) == 1, (command, flag)
        assert "$WORKBOOK_PROFILE" in text
        store_default = "a temporary SQLite file" if command == "compare" else "$WORKBOOK_DB_URL"
        assert store_default in text
        assert "-t THRESHOLD, --threshold THRESHOLD" in text and "-l LIMIT, --limit LIMIT" in text
    assert "-s STRATEGY, --strategy STRATEGY" in workbook("ask", "--help").stdout
    assert "-j, --json" in workbook("cases", "--help").stdout
    for action in ("list", "show", "prune"):
        assert "--db URL" in workbook("outputs", action, "--help").stdout


def test_outputs_list_show_and_prune_a_real_thread(tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    run = ask_json(CASE1, "--db", db, "--thread", "talk-1", "--new-thread")
    listed = json.loads(workbook("outputs", "list", "--db", db, "--thread", "talk-1", "-j").stdout)
    rows = listed["outputs"]
    assert [r["tool_call_id"] for r in rows] == [c["id"] for c in run["tool_calls"]]
    transcript = rows[0]
    assert (transcript["tool_name"], transcript["n_chars"]) == ("yt_transcribe", 10_244)
    assert transcript["n_bytes"] == 10_280  # some characters take two bytes
    threads = json.loads(workbook("outputs", "list", "--db", db, "--json").stdout)["threads"]
    assert [(t["thread_id"], t["outputs"]) for t in threads] == [("talk-1", 2)]
    human = workbook("outputs", "list", "--db", db, "--thread", "talk-1", "--color", "never")
    assert "yt_" in human.stdout and "10,244" in human.stdout and "10,280" in human.stdout
    for wanted in (transcript["reference"], transcript["tool_call_id"]):
        shown = workbook(
            "outputs", "show", wanted, "--db", db, "--start", "10", "--length", "20", "-j"
        )
        data = json.loads(shown.stdout)
        assert data["content"] == " Class definitions\n[" and (data["start"], data["end"]) == (
            10,
            30,
        )
    whole = workbook("outputs", "show", transcript["reference"], "--db", db, "--color", "never")
    assert whole.returncode == 0 and whole.stdout.count("\n[00:") > 50
    missing = workbook("outputs", "show", "internal://nosuchreference1", "--db", db)
    assert missing.returncode == 1 and "no output behind" in missing.stderr
    dry = json.loads(workbook("outputs", "prune", "--db", db, "--thread", "talk-1", "-j").stdout)
    assert dry == {"would_delete": 2}
    assert json.loads(workbook("outputs", "list", "--db", db, "-j").stdout)["threads"]
    old = json.loads(
        workbook("outputs", "prune", "--db", db, "--older-than", "1d", "--yes", "-j").stdout
    )
    assert old["deleted"] == 0  # nothing is a day old
    gone = json.loads(
        workbook("outputs", "prune", "--db", db, "--thread", "talk-1", "--yes", "-j").stdout
    )
    assert gone["deleted"] == 2 and gone["freed_bytes"] >= 0
    assert json.loads(workbook("outputs", "list", "--db", db, "-j").stdout)["threads"] == []
    bad = workbook("outputs", "prune", "--db", db, "--older-than", "soon")
    assert bad.returncode == 2 and "an age is a number and a unit" in bad.stderr


def test_top_level_help_loads_neither_the_sdk_nor_the_store() -> None:
    """``workbook --help`` imports only what lists the commands (its CPU goal, under 0.3 s, is
    measured in ``make bench``)."""
    probe = (
        "import sys, contextlib, io\n"
        "from helpers.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--help'])\n"
        "heavy = ('openai', 'sqlalchemy', 'alembic', 'tiktoken', 'httpx', 'pydantic', 'rich')\n"
        "print([m for m in heavy if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_the_profile_names_completion_asks_for_load_neither_the_sdk_nor_the_store() -> None:
    """``workbook models --names``, which bash completion runs at every press of Tab after
    ``--profile``, reads the settings only (it imported the openai package: 0.6 s a press)."""
    probe = (
        "import sys, contextlib, io\n"
        "from helpers.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    main(['models', '--names'])\n"
        "heavy = ('openai', 'sqlalchemy', 'tiktoken', 'httpx2')\n"
        "print([m for m in heavy if m in sys.modules], 'offline' in out.getvalue().split())\n"
    )
    env = {**os.environ, "WORKBOOK_PROFILE": "offline"}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=HANG_GUARD_S, env=env
    )
    assert done.stdout.strip() == "[] True", done.stdout + done.stderr


def test_prune_gives_the_disk_back_and_says_how_much(tmp_path) -> None:
    from helpers.store.tool_outputs import ToolOutputStore

    path = tmp_path / "big.sqlite"
    store = ToolOutputStore(f"sqlite:///{path}")
    for i in range(8):  # 8 outputs of 1,000,000 characters, no chunk alike: about 8 MB on disk
        output = random.Random(i).randbytes(500_000).hex()
        store.log_tool("big", f"call_{i}", "yt_transcribe", {}, output)
    store.log_tool("kept", "call_k", "yt_transcribe", {}, "kept")
    store.close()

    def on_disk() -> int:
        return sum(
            f.stat().st_size for f in tmp_path.glob("big.sqlite*") if f.name != "big.sqlite-shm"
        )

    before = on_disk()
    assert before > 8_000_000
    done = workbook(
        "outputs", "prune", "--db", f"sqlite:///{path}", "--thread", "big", "--yes", "-j"
    )
    report = json.loads(done.stdout)
    assert report["deleted"] == 8
    assert report["freed_bytes"] == before - on_disk() > 7_000_000  # what it says is what went
    human = workbook("outputs", "prune", "--db", f"sqlite:///{path}", "--thread", "kept", "--yes")
    assert "deleted 1 output(s);" in human.stdout and "freed on disk (VACUUM)" in human.stdout


def test_compare_leaves_no_store_behind_unless_given_db(tmp_path) -> None:
    var = tmp_path / "var"
    small = ("--cases", "data/cases/web3.md", "--no-design-steps", "--no-scaling", "--no-personas")
    env = {
        **os.environ,
        "WORKBOOK_PROFILE": "offline",
        "WORKBOOK_VAR_DIR": str(var),
        "NO_COLOR": "1",
    }
    env.pop("WORKBOOK_DB_URL", None)
    command = [sys.executable, "-m", "helpers.cli", "compare", *small]
    done = subprocess.run(
        [*command, "--out", str(tmp_path / "c1")],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "c1" / "compare.json").exists()
    assert not list(var.glob("tool_outputs.sqlite*"))  # the default store was not used
    db = tmp_path / "kept.sqlite"
    done = subprocess.run(
        [*command, "--out", str(tmp_path / "c2"), "--db", f"sqlite:///{db}"],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr
    threads = json.loads(workbook("outputs", "list", "--db", f"sqlite:///{db}", "-j").stdout)
    assert threads["threads"]  # the runs' outputs, kept where --db said


def test_cases_and_compare_use_the_store_given_by_db(tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 'elsewhere.sqlite'}"
    done = workbook("cases", "data/cases/web3.md", "-s", "box", "--db", db, "-j")
    assert done.returncode == 0, done.stderr
    threads = json.loads(workbook("outputs", "list", "--db", db, "-j").stdout)["threads"]
    assert len(threads) == 1 and threads[0]["outputs"] == 1
    bad = workbook("compare", "--db", "nosuch://x", "--out", str(tmp_path / "c"))
    assert bad.returncode == 2 and "cannot use 'nosuch://x' as the store" in bad.stderr


def test_cases_take_the_files_a_shell_expands_as_well_as_a_quoted_glob(tmp_path) -> None:
    """``workbook cases data/cases/web*.md`` unquoted hands the command a list of files (issue
    50): each runs once, in the order given; a quoted glob is expanded by the command; a name
    that matches nothing is refused with its name."""
    db = f"sqlite:///{tmp_path / 's.sqlite'}"
    files = workbook("cases", "data/cases/web3.md", "data/cases/web1.md", "-s", "box", "-j")
    assert files.returncode == 0, files.stderr
    assert [r["case"] for r in json.loads(files.stdout)["runs"]] == ["web3", "web1"]
    both = workbook("cases", "data/cases/web[13].md", "data/cases/web3.md", "-s", "box", "-j")
    assert [r["case"] for r in json.loads(both.stdout)["runs"]] == ["web1", "web3"]
    typo = workbook("cases", "data/cases/web3.md", "data/cases/nosuch*.md", "--db", db)
    assert typo.returncode == 2 and "no case files match 'data/cases/nosuch*.md'" in typo.stderr


def test_an_option_the_strategy_does_not_honour_is_refused_not_ignored() -> None:
    """-l means nothing to box, -t nothing to truncate or an anchor (issue 50): the run is
    refused with the flag and what each strategy takes; where one strategy of the run honours
    it (``--strategy all``), it runs."""
    box = workbook("ask", "-s", "box", "-l", "100", CASE1)
    assert box.returncode == 2, box.stderr
    assert "-l/--limit does nothing for box (box takes --boxing, -t/--threshold)" in box.stderr
    codex = workbook("cases", "data/cases/web3.md", "-s", "codex", "-t", "5")
    assert codex.returncode == 2 and "codex takes none of them" in codex.stderr
    boxing = workbook("cases", "data/cases/web3.md", "-s", "truncate", "--boxing", "json")
    assert boxing.returncode == 2 and "--boxing does nothing for truncate" in boxing.stderr
    every = workbook("cases", "data/cases/web3.md", "-s", "all", "-l", "100", "-t", "5", "-j")
    assert every.returncode == 0, every.stderr


def test_version_is_the_installed_packages() -> None:
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    done = workbook("--version")
    assert done.returncode == 0 and done.stdout == f"workbook {project['project']['version']}\n"


def test_a_piped_prompt_and_continue_the_last_thread(tmp_path) -> None:
    """In the manner of simonw/llm: the prompt from standard input ('-' or none given), and
    -c/--continue for the thread written to last."""
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    first = workbook("ask", "--db", db, "--json", stdin=CASE1 + "\n")
    assert first.returncode == 0, first.stderr
    started = json.loads(first.stdout)
    assert [c["name"] for c in started["tool_calls"]] == ["yt_transcribe", "deep_check"]
    dash = json.loads(workbook("ask", "-", "--db", db, "--json", stdin=SQL).stdout)
    assert dash["status"] == "ok" and dash["thread_id"] != started["thread_id"]
    again = json.loads(workbook("ask", "-c", "Thanks!", "--db", db, "--json").stdout)
    assert again["thread_id"] == dash["thread_id"]  # the thread written to last
    both = workbook("ask", "-c", "--thread", dash["thread_id"], "x", "--db", db)
    assert both.returncode == 2 and "leave out --thread" in both.stderr
    empty = workbook("ask", "-c", "x", "--db", f"sqlite:///{tmp_path / 'empty.sqlite'}")
    assert empty.returncode == 2 and "no thread to continue" in empty.stderr
    assert not (tmp_path / "empty.sqlite").exists()  # refused before a store is made
    nothing = workbook("ask", "--db", db, stdin="")
    assert nothing.returncode == 2 and "no prompt" in nothing.stderr


def test_outputs_list_piped_is_one_tab_separated_row_per_output(tmp_path) -> None:
    """Piped, rows are whole (nothing wrapped or cut): every id and reference can be cut out."""
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    ask_json(CASE1, "--db", db, "--thread", "tsv-1", "--new-thread")
    wanted = json.loads(workbook("outputs", "list", "--db", db, "--thread", "tsv-1", "-j").stdout)
    lines = workbook("outputs", "list", "--db", db, "--thread", "tsv-1").stdout.splitlines()
    assert lines[0].split("\t") == [
        "tool_call_id",
        "tool",
        "chars",
        "bytes",
        "reference",
        "kind",
        "created",
    ]
    rows = [line.split("\t") for line in lines[1:]]
    assert [(r[0], r[4]) for r in rows] == [
        (o["tool_call_id"], o["reference"]) for o in wanted["outputs"]
    ]
    threads = workbook("outputs", "list", "--db", db).stdout.splitlines()
    assert threads[0].startswith("thread\t") and threads[1].split("\t")[0] == "tsv-1"


def test_every_command_help_ends_with_examples_that_parse() -> None:
    """Each command's --help shows examples; each example is a command line the parser takes
    (shell quoting and pipes aside), so none is a typo."""

    from helpers.cli import COMMANDS, build_parser

    parser = build_parser()
    for name, command in COMMANDS.items():
        shown = workbook(name, "--help").stdout
        assert "examples:" in shown, name
        for line in command.examples:
            assert line in shown, (name, line)
            segments = line.split("#")[0].split(" | ")
            command_line = next(s for s in segments if s.lstrip().startswith("workbook"))
            words = shlex.split(command_line.split(" > ")[0])  # a redirection is the shell's
            assert words[:2] == ["workbook", name], line
            parser.parse_args(words[1:])  # a bad option exits 2 here


def test_models_lists_the_profiles_and_checks_their_endpoints() -> None:
    """workbook models: every profile the settings name, the model it runs or why it cannot
    run, the default marked; --check asks each endpoint (a live loopback server answers, a
    closed port does not), and without it nothing leaves the machine."""
    from helpers.models.offline_server import OfflineServer

    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_BASE_URL", "_PROVIDER", "_MODEL"))
        and k != "WORKBOOK_PROFILE"
    }
    with OfflineServer() as server:
        env = {
            **clean,
            "NO_COLOR": "1",
            "LOCAL_BASE_URL": server.base_url,
            "LOCAL_MODEL": "offline-reference",
            "GONE_BASE_URL": "http://127.0.0.1:9/v1",
            "GONE_MODEL": "m",
            "ODD_PROVIDER": "zzz",
        }
        run = [sys.executable, "-m", "helpers.cli", "models", "--json"]
        listed = subprocess.run(run, capture_output=True, text=True, env=env, timeout=HANG_GUARD_S)
        checked = subprocess.run(
            [*run, "--check", "--timeout", "60"],  # a hang guard: the closed port answers at once
            capture_output=True,
            text=True,
            env=env,
            timeout=HANG_GUARD_S,
        )
    rows = {r["profile"]: r for r in json.loads(listed.stdout)["profiles"]}
    assert list(rows) == ["offline", "local", "gone", "odd"]
    assert rows["offline"]["default"] and rows["local"]["model"] == "offline-reference"
    assert rows["local"]["endpoint"] == server.base_url and rows["local"]["usable"] == "ok"
    assert "ODD_PROVIDER='zzz' is not one of" in rows["odd"]["usable"]
    assert all("reachable" not in r for r in rows.values())
    reach = {r["profile"]: r.get("reachable") for r in json.loads(checked.stdout)["profiles"]}
    assert reach["local"].startswith("reachable (") and "models" in reach["local"]
    assert reach["gone"].startswith("unreachable")
    assert reach["offline"] == "reachable (in this process)" and reach["odd"] is None


def test_models_survives_hostile_settings_and_never_prints_a_url_secret() -> None:
    """A URL urllib cannot read marks its profile unusable (the others still listed); a password
    or a query string in a base URL is never printed; --check never crashes on a strange URL.
    WORKBOOK_PROFILE names the unusable one: none is marked the default, and why ``ask``
    without -p cannot run is said (stderr; ``default_error`` under --json)."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_BASE_URL", "_PROVIDER", "_MODEL"))
        and k != "WORKBOOK_PROFILE"
    }
    env = {
        **clean,
        "NO_COLOR": "1",
        "ZED_BASE_URL": "http://[::1",
        "ZED_MODEL": "m",
        "ZED_API_KEY": "k" * 12,
        "QUX_BASE_URL": "http://user:sk-SECRETPASS123@127.0.0.1:9/v1?key=sk-SECRETQUERY456",
        "QUX_MODEL": "m",
        "QUX_API_KEY": "x" * 12,
        "ESC_BASE_URL": "http://127.0.0.1:9/v1\x1b[31m",
        "ESC_MODEL": "m",
        "NOSCHEME_BASE_URL": "user:sk-SECRETPASS123@127.0.0.1:1/v1",  # reads as scheme "user"
        "NOSCHEME_MODEL": "m",
        "INPATH_BASE_URL": "http://127.0.0.1:bad/v1/sk-SECRETQUERY456",  # a key pasted in
        "INPATH_MODEL": "m",
        "WORKBOOK_PROFILE": "qux",
    }
    for extra in ([], ["--check", "--timeout", "2"], ["--json", "--check", "--timeout", "2"]):
        done = subprocess.run(
            [sys.executable, "-m", "helpers.cli", "models", *extra],
            capture_output=True,
            text=True,
            env=env,
            timeout=HANG_GUARD_S,
        )
        shown = done.stdout + done.stderr
        assert done.returncode == 0, shown
        assert "SECRETPASS" not in shown and "SECRETQUERY" not in shown and "\x1b" not in shown
        assert "offline" in shown and "zed" in shown and "qux" in shown and "esc" in shown
        assert "ESC_BASE_URL holds a control character (" in shown and "position 21 " in shown
        if "--json" in extra:
            data = json.loads(done.stdout)
            assert not any(row["default"] for row in data["profiles"])
            assert data["default_error"].startswith("QUX_BASE_URL=")
        else:
            assert "workbook: ask without -p cannot run: " in done.stderr
            assert " *" not in done.stdout  # no profile marked the default


def test_models_lists_the_profile_workbook_profile_names_with_what_it_lacks() -> None:
    """``WORKBOOK_PROFILE=local`` with nothing of ``local`` set: ``models`` lists ``local`` with
    what to set, not only ``offline``; a value that is no profile name adds no row."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_BASE_URL", "_PROVIDER", "_MODEL"))
    }
    listed = run_workbook(("models", "--json"), env={**clean, "WORKBOOK_PROFILE": "local"})
    rows = {row["profile"]: row for row in json.loads(listed.stdout)["profiles"]}
    assert list(rows) == ["offline", "local"] and not rows["local"]["default"]
    assert "LOCAL_MODEL" in rows["local"]["usable"]
    assert "LOCAL_MODEL" in json.loads(listed.stdout)["default_error"]
    bad = run_workbook(("models", "--json"), env={**clean, "WORKBOOK_PROFILE": "no such"})
    assert [row["profile"] for row in json.loads(bad.stdout)["profiles"]] == ["offline"]
    assert "not a profile name" in json.loads(bad.stdout)["default_error"]
    # my_prof is the profile MY_PROF_… make, listed as my-prof: one row, the default
    own = {**clean, "MY_PROF_BASE_URL": "http://127.0.0.1:9/v1", "MY_PROF_MODEL": "m"}
    listed = run_workbook(("models", "--json"), env={**own, "WORKBOOK_PROFILE": "my_prof"})
    rows = json.loads(listed.stdout)["profiles"]
    assert [(r["profile"], r["default"]) for r in rows] == [("offline", False), ("my-prof", True)]
    # a key pasted as the profile's name is never shown
    key = "sk-PASTEDKEY1234567890"
    pasted = {**clean, "OPENAI_API_KEY": key, "WORKBOOK_PROFILE": key}
    listed = run_workbook(("models",), env={**pasted, "NO_COLOR": "1"})
    assert key not in listed.stdout and key not in listed.stderr


def test_outputs_list_keeps_one_row_per_thread_whatever_its_id() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{folder}/s.sqlite"
        for thread in ("tab\there", "two\nlines"):
            ask_json(CASE1, "--db", db, "--thread", thread, "--new-thread")
        lines = workbook("outputs", "list", "--db", db).stdout.splitlines()
    assert len(lines) == 3 and all(len(line.split("\t")) == 5 for line in lines)
    assert {line.split("\t")[0] for line in lines[1:]} == {"tab\\there", "two\\nlines"}


def test_print_tools_shows_what_the_first_call_offers() -> None:
    """box narrows the tools to those the prompt names (tool search): --print-tools shows that
    list, not the whole registry."""
    prompt = "What is the title of the page https://docs.python.org/3/library/json.html?"
    done = workbook("ask", prompt, "--json", "--print-tools")
    names = [t["function"]["name"] for t in json.loads(done.stderr.strip().splitlines()[0])]
    assert names == ["get_page", "tool_search"]


def _bash_completions(script: Path, words: list[str], env: dict[str, str]) -> list[str]:
    """What bash offers for the last of ``words`` with ``script`` sourced, as TAB would."""
    driver = (
        f"source {shlex.quote(str(script))}\n"
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})\n"
        'COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMP_LINE="${COMP_WORDS[*]}"\n'
        "COMP_POINT=${#COMP_LINE}; COMPREPLY=()\n"
        '_shtab_workbook workbook "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"\n'
        "printf '%s\\n' \"${COMPREPLY[@]}\"\n"
    )
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", driver],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr
    return sorted(line for line in done.stdout.splitlines() if line)


def test_completion_offers_commands_options_choices_profiles_and_threads(tmp_path) -> None:
    """workbook completion bash, sourced in a real bash and asked as TAB asks: commands,
    options, a choice's values, and what is on this machine (profiles, notebook numbers); text
    from a store or .env never reaches the shell as code."""
    from helpers.context.strategies import strategy_names
    from helpers.course.student_notebooks import solution_notebooks

    script = tmp_path / "workbook.bash"
    done = workbook("completion", "bash")
    assert done.returncode == 0, done.stderr
    script.write_text(done.stdout, encoding="utf-8")
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    thread = ask_json(SQL, "--db", db)["thread_id"]
    bin_dir = str(Path(sys.executable).parent)  # where the workbook script is installed
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "WORKBOOK_PROFILE": "offline",
        "WORKBOOK_DB_URL": db,
    }
    from helpers.cli import COMMANDS

    assert _bash_completions(script, ["workbook", ""], env) == sorted(COMMANDS)
    assert _bash_completions(script, ["workbook", "ask", "--pro"], env) == ["--profile"]
    assert _bash_completions(script, ["workbook", "ask", "-s", ""], env) == sorted(strategy_names())
    assert "offline" in _bash_completions(script, ["workbook", "ask", "-p", ""], env)
    # thread ids are any text: never completed, never handed to the shell
    assert _bash_completions(script, ["workbook", "outputs", "list", "--thread", ""], env) == []
    assert thread not in script.read_text(encoding="utf-8")
    hostile = {**env, "EVIL_$(touch PWNED)_PROVIDER": "local", "EVIL_$(touch PWNED)_BASE_URL": "x"}
    assert "offline" in _bash_completions(script, ["workbook", "ask", "-p", ""], hostile)
    assert not (Path.cwd() / "PWNED").exists()
    notebooks = _bash_completions(script, ["workbook", "restore", "0"], env)
    assert notebooks == [p.name[:2] for p in solution_notebooks()]
    for shell in ("zsh", "fish", "tcsh", "powershell"):
        other = workbook("completion", shell)
        assert other.returncode == 0 and "workbook" in other.stdout, (shell, other.stderr)
    assert workbook("completion", "cmd.exe").returncode == 2


def test_a_reader_that_stops_early_gets_silence_not_an_error(tmp_path) -> None:
    """``workbook outputs show … | head``: when the reader closes the pipe, the command stops
    with 141 (128 + SIGPIPE, as a shell reports it) and writes nothing to stderr."""
    from helpers.store.tool_outputs import ToolOutputStore

    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    store = ToolOutputStore(db)
    store.log_tool("t", "call_big", "yt_transcribe", {}, "line\n" * 400_000)  # 2 MB of text
    store.close()
    env = {**os.environ, "WORKBOOK_PROFILE": "offline"}
    reader = subprocess.Popen(
        [*CLI, "outputs", "show", "call_big", "--raw", "--length", "2000000", "--db", db],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert reader.stdout is not None and reader.stdout.read(5) == b"line\n"  # no header
    reader.stdout.close()  # as head does once it has its lines
    _, stderr = reader.communicate(timeout=HANG_GUARD_S)
    assert reader.returncode == 141, stderr
    assert b"rror" not in stderr and b"Traceback" not in stderr, stderr  # only the header


class _ReaderGoneAfter:
    """A stdout whose reader goes away (``| head -N``) after ``lines`` lines."""

    def __init__(self, lines: int) -> None:
        self.left, self.text = lines, ""

    def write(self, text: str) -> int:
        if self.left <= 0:
            raise BrokenPipeError
        self.left -= text.count("\n")
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


@pytest.mark.parametrize("lines", [0, 1, 3])
def test_a_reader_gone_during_the_turn_gets_141_and_the_turn_saved_whole(
    monkeypatch, tmp_path, lines
):
    """``workbook ask … | true``, ``| head -1``, ``| head -3``: the reader goes before the
    heading, within it, or while the turn's progress is printed. The turn goes on unseen (stdout
    to the null device), its thread is saved whole, and the exit is 141 as for any reader gone,
    not 1 for a turn its own progress line broke, nor before the turn has run."""
    from helpers.cli import ask, main
    from helpers.cli.output import console
    from helpers.store.tool_outputs import ToolOutputStore

    stdout = _ReaderGoneAfter(lines)  # 3: the Model and Strategy lines, then one more
    quieted = []
    monkeypatch.setattr(ask, "console", lambda color: console(color, stdout))
    monkeypatch.setattr(ask, "quiet_stdout", lambda: quieted.append(True))
    monkeypatch.setenv("WORKBOOK_PROFILE", "offline")
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    assert main(["ask", CASE1, "--db", db]) == 141
    assert quieted == [True] and ("Model:" in stdout.text) == (lines > 0)
    store = ToolOutputStore(db)
    try:
        thread_id = store.last_thread()
        assert thread_id is not None
        messages = store.thread_messages(thread_id)
    finally:
        store.close()
    assert messages[-1]["role"] == "assistant" and messages[-1].get("content")  # the answer
    assert sum(m["role"] == "tool" for m in messages) >= 1


@pytest.mark.parametrize(
    "command",
    [
        ("outputs", "show", "call_big"),
        ("outputs", "show", "call_big", "--raw"),
        ("outputs", "list"),
    ],
)
def test_a_reader_gone_before_the_first_line_gets_141_whatever_prints_it(tmp_path, command) -> None:
    """``workbook … | true``: the reader is gone before anything is written. Whether rich's
    console (the header, the table) or a plain write meets the closed pipe first, the exit is
    141 and no error is printed (rich's own handler would exit 1)."""
    from helpers.store.tool_outputs import ToolOutputStore

    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    store = ToolOutputStore(db)
    store.log_tool("t", "call_big", "yt_transcribe", {}, "line\n" * 50_000)
    store.close()
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `| true` does before the command has started
    done = subprocess.run(
        [*CLI, *command, "--db", db],
        stdout=write_end,
        stderr=subprocess.PIPE,
        env={**os.environ, "WORKBOOK_PROFILE": "offline"},
        timeout=HANG_GUARD_S,
    )
    os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert b"rror" not in done.stderr and b"Traceback" not in done.stderr  # --raw: the header


def test_outputs_show_raw_writes_the_stored_characters_and_nothing_else(tmp_path) -> None:
    """--raw is for a file or a pipe: stdout holds exactly the stored characters (control
    characters, no newline added); what it is and what is left go to stderr."""
    from helpers.store.tool_outputs import ToolOutputStore

    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    stored = "a\x1b[31mred\ttab\r\nno final newline é"
    store = ToolOutputStore(db)
    store.log_tool("t", "call_x", "yt_transcribe", {}, stored)
    store.close()
    raw = subprocess.run(
        [*CLI, "outputs", "show", "call_x", "--raw", "--db", db, "--length", "10"],
        capture_output=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=HANG_GUARD_S,
    )
    assert raw.returncode == 0 and raw.stdout == stored[:10].encode("utf-8")
    assert "call_x" in raw.stderr.decode() and "characters 0-10" in raw.stderr.decode()
    long_output = "é" * 150_000  # past the 100,000 characters shown on a terminal
    store = ToolOutputStore(db)
    store.log_tool("t", "call_long", "yt_transcribe", {}, long_output)
    store.close()
    whole = subprocess.run(
        [*CLI, "outputs", "show", "call_long", "--raw", "--db", db],
        capture_output=True,
        timeout=HANG_GUARD_S,
    )
    assert whole.returncode == 0 and whole.stdout.decode("utf-8") == long_output  # all of it
    shown = workbook("outputs", "show", "call_x", "--db", db)
    assert "\x1b" not in shown.stdout and "call_x" in shown.stdout  # escaped on a terminal


def test_a_prompt_or_an_ask_option_first_means_ask(tmp_path) -> None:
    """simonw/llm's habit: ``workbook "PROMPT"`` and ``workbook -c "PROMPT"`` are ``workbook ask``;
    a single unknown word is a mistyped command, reported, never sent to a model."""
    from helpers.cli import with_default_command

    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    first = json.loads(workbook(SQL, "--db", db, "--json").stdout)
    assert first["status"] == "ok" and first["tool_calls"][0]["name"] == "run_sql"
    again = json.loads(workbook("-c", "Thanks!", "--db", db, "--json").stdout)
    assert again["thread_id"] == first["thread_id"]
    typo = workbook("compre")
    assert typo.returncode == 2 and "invalid choice: 'compre'" in typo.stderr
    assert with_default_command(["--version"]) == ["--version"]
    assert with_default_command(["outputs", "list"]) == ["outputs", "list"]
    assert with_default_command(["-", "--json"]) == ["ask", "-", "--json"]
    assert "short for workbook ask" in " ".join(workbook("--help").stdout.split())


def test_copy_notebooks_onto_a_file_is_a_one_line_error_and_the_hint_is_quoted(tmp_path) -> None:
    """A path that is a file (or runs through one) is exit 2 with a sentence, never an internal
    error; the ``cd`` hint is quoted for the shell, so a folder name with a space or a quote
    pasted back into the shell goes to that folder."""
    a_file = tmp_path / "afile"
    a_file.write_text("mine\n", encoding="utf-8")
    for target in (a_file, a_file / "sub"):
        done = workbook("copy-notebooks", str(target))
        assert done.returncode == 2, done.stderr
        assert "a file is in the way" in done.stderr and "internal error" not in done.stderr
    assert a_file.read_text(encoding="utf-8") == "mine\n"
    folder = tmp_path / "my work's"
    done = workbook("copy-notebooks", str(folder))
    assert done.returncode == 0, done.stderr
    hint = done.stdout.splitlines()[-1]
    assert hint.startswith("next: cd ") and hint.endswith(" && jupyter lab")
    command = hint.removeprefix("next: ").removesuffix(" && jupyter lab")
    went = subprocess.run(
        ["bash", "-c", f"{command} && pwd"], capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert went.stdout.strip() == str(folder), went.stderr
    assert workbook("copy-notebooks", "").returncode == 2  # never the current folder by accident
    dash = subprocess.run(
        [*CLI, "copy-notebooks", "--", "-dash"], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "WORKBOOK_PROFILE": "offline"}, timeout=HANG_GUARD_S,
    )  # fmt: skip
    assert dash.stdout.splitlines()[-1] == "next: cd ./-dash && jupyter lab", dash.stderr
    for name in ("esc\x1b[31mred", "tab\there", "new\nline"):
        odd = workbook("copy-notebooks", str(tmp_path / name))
        assert odd.stdout.splitlines()[-1] == "next: go to that folder and run jupyter lab"
        assert "\x1b" not in odd.stdout
    on_a_hub = subprocess.run(
        [*CLI, "copy-notebooks"], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, "WORKBOOK_PROFILE": "offline", "JUPYTERHUB_USER": "ann"},
        timeout=HANG_GUARD_S,
    )  # fmt: skip
    assert on_a_hub.stdout.splitlines()[-1].startswith("next: open workbook in the file browser")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("json_flag", [(), ("--json",)])
def test_a_full_disk_on_stdout_is_one_line_on_stderr(tmp_path, json_flag) -> None:
    """``workbook … > /dev/full``: stdout cannot be written, so the verdict goes to stderr in one
    line (under --json too, where the error object itself cannot reach stdout), never two
    tracebacks."""
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*CLI, "outputs", "list", "--db", db, *json_flag],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "WORKBOOK_PROFILE": "offline"},
            timeout=HANG_GUARD_S,
        )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "No space left on device" in done.stderr
    assert "Traceback" not in done.stderr


# -- the offline model's prompts: anything else gets the nearest ones, and exit code 4 -----------

#: Paraphrases users really sent, and the case whose prompt each should name first.
PARAPHRASES = {
    "Transcribe video 123 and send the text to deep check": "case1",
    SQL.replace("Norway", "Sweden"): "sql1",  # the example of `workbook ask --help`, changed
}


def test_no_plan_has_an_exit_code_of_its_own_documented_everywhere_codes_are() -> None:
    from helpers.cli import build_parser
    from helpers.cli.exits import (
        EXIT_CODES,
        EXIT_FAILED,
        EXIT_INCOMPLETE,
        EXIT_NO_PLAN,
        EXIT_OK,
        EXIT_USAGE,
    )

    from_main = {EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCOMPLETE, 130, 141}
    assert EXIT_CODES["no_plan"] == EXIT_NO_PLAN and EXIT_NO_PLAN not in from_main
    docs = (Path(__file__).parent.parent / "docs" / "cli.md").read_text()
    for status, code in EXIT_CODES.items():
        assert f"| `{status}` | {code} |" in docs, status
    assert f"no_plan {EXIT_NO_PLAN} (" in workbook("ask", "--help").stdout
    assert f"{EXIT_NO_PLAN} no plan" in build_parser().epilog


def test_the_exit_codes_are_named_in_one_module_and_imported_from_it() -> None:
    """``helpers.cli.exits`` names every exit code; the package neither defines nor passes them
    on, so each user imports them from there (one way to name an exit code)."""
    import helpers.cli as cli
    from helpers.cli import exits

    codes = {name for name in vars(exits) if name.startswith("EXIT_")}
    assert {"EXIT_OK", "EXIT_CODES", "EXIT_NO_PLAN", "EXIT_BROKEN_PIPE"} <= codes
    assert [name for name in vars(cli) if name.startswith("EXIT_")] == []
    assert not any(name.startswith("EXIT_") for name in cli.__all__)
    with pytest.raises(ImportError):
        exec("from helpers.cli import EXIT_OK", {})


@pytest.mark.parametrize(("prompt", "case_id"), list(PARAPHRASES.items()))
def test_a_prompt_the_offline_model_has_no_plan_for_names_the_nearest_cases_and_exits_4(
    tmp_path, prompt, case_id
) -> None:
    from helpers.cases.case_files import ALL_CASES, load_cases

    wanted = next(c.prompt for c in load_cases(ALL_CASES) if c.id == case_id)
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    done = workbook("ask", prompt, "--json", "--db", db)
    assert done.returncode == 4, done.stderr
    data = json.loads(done.stdout)
    assert data["status"] == "no_plan" and data["tool_calls"] == []
    suggestions = data["suggestions"]
    assert 1 <= len(suggestions) <= 3 and suggestions[0]["case_id"] == case_id
    assert suggestions[0]["prompt"] == " ".join(wanted.split())
    for n, s in enumerate(suggestions, 1):  # the answer names the same, in the same order
        assert f"\n{n}. {s['case_id']}: {s['prompt']}\n" in data["answer"]
    human = workbook("ask", prompt, "--db", db, "--color", "never")
    assert human.returncode == 4
    assert "No plan:" in human.stdout and f"1. {case_id}:" in human.stdout
    assert f"names the {len(suggestions)} nearest" in " ".join(human.stdout.split())


def test_a_case_prompt_exits_0_and_nothing_near_exits_4_with_no_suggestion(tmp_path) -> None:
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    spaced = workbook("ask", "  " + SQL.replace(" ", "\n "), "--json", "--db", db)
    assert spaced.returncode == 0 and "suggestions" not in json.loads(spaced.stdout)
    poem = workbook("ask", "Write a poem", "--json", "--db", db)
    assert poem.returncode == 4
    data = json.loads(poem.stdout)
    assert data["status"] == "no_plan" and data["suggestions"] == []
    assert "None of the prompts I know is near yours." in data["answer"]


def test_compact_takes_no_value_and_compact_at_sets_the_threshold(
    tmp_path, monkeypatch, capsys
) -> None:
    """``ask --compact "PROMPT"`` runs that prompt (never reads it as a token count), and
    ``--compact-at TOKENS`` folds a thread's earlier tool calls once its context (about 17,500
    tokens after three turns of three calls) passes TOKENS, keeping the last 6 whole."""
    from helpers.cli import main

    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    first = ask_json(CASE1, "--compact", "--db", db, "--strategy", "truncate")
    assert first["status"] == "ok" and first["compactions"] == []  # nothing earlier to fold
    monkeypatch.setenv("WORKBOOK_PROFILE", "offline")
    for _ in range(2):  # two more turns of history, in this process (a second each saved)
        assert main(["ask", "-c", CASE1, "-s", "truncate", "--json", "--db", db]) == 0
    capsys.readouterr()
    kept = ask_json(CASE1, "--compact-at", "100000", "-c", "-s", "truncate", "--db", db)
    assert kept["compactions"] == []
    folded = ask_json(CASE1, "--compact-at", "2000", "-c", "-s", "truncate", "--db", db)
    event = folded["compactions"][0]
    assert event["before_model_call"] == 0 and event["folded_calls"] == 6  # 12 earlier, 6 kept
    assert event["tokens_after"] < event["tokens_before"]


def test_a_thread_over_the_context_window_says_to_go_on_with_compact(monkeypatch, capsys, tmp_path):
    """Inline, case1's transcript overflows a 3,000-token window: the verdict says to continue
    the thread with --compact (as it is, every later request overflows too), and -c --compact
    does go on: the endpoint's refusal folds the earlier turn and the request goes once more."""
    from helpers.cli import main

    monkeypatch.setenv("WORKBOOK_PROFILE", "offline")
    monkeypatch.setenv("OFFLINE_CONTEXT_WINDOW", "3000")
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    assert main(["ask", CASE1, "-s", "inline", "--db", db, "--color", "never"]) == 1
    said = " ".join(capsys.readouterr().out.split())
    assert "No answer (context_exceeded)" in said
    thread = re.search(r"continue it: --thread (thread_\w+) --compact, which folds", said)
    assert thread, said
    follow = ["ask", "-c", "--compact", CASE1.replace("'123'", "'999'"), "-s", "inline"]
    assert main([*follow, "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["thread_id"] == thread[1] and data["compactions"][0]["folded_calls"] == 1
    # compacting already, a turn whose own results overflow: a strategy that keeps them out
    words = ["ask", CASE1, "-s", "inline", "--compact", "--color", "never"]
    assert main([*words, "--db", db]) == 1
    said = " ".join(capsys.readouterr().out.split())
    assert "--compact -s box: this turn's own tool results are longer than the window" in said


def test_continuing_a_thread_offline_carries_out_only_a_case_prompt(tmp_path) -> None:
    """The offline model plans from the last user message: a follow-up in a thread is a prompt
    like any other, with a plan if it is a case prompt, else the nearest ones."""
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    first = ask_json(CASE1, "--db", db)
    follow = workbook("ask", "-c", "And what is the title of the json page?", "--json", "--db", db)
    assert follow.returncode == 4, follow.stderr
    later = json.loads(follow.stdout)
    assert later["thread_id"] == first["thread_id"] and later["history_messages"] > 0
    assert later["suggestions"][0]["case_id"] == "web3"
    back = workbook("ask", "-c", later["suggestions"][0]["prompt"], "--json", "--db", db)
    assert back.returncode == 0, back.stderr
    done = json.loads(back.stdout)
    assert done["status"] == "ok" and done["thread_id"] == first["thread_id"]
    assert [t["name"] for t in done["tool_calls"]] == ["get_page"]


def test_a_real_server_answers_anything_so_its_answer_exits_0(monkeypatch, capsys, tmp_path):
    """Only the offline model in this process has plans: the same model served over HTTP is, to
    the CLI, a local server like any other, and its answer (whatever it says) is an answer."""
    from helpers.cli import main
    from helpers.models.offline_server import OfflineServer

    with OfflineServer() as server:
        monkeypatch.setenv("WORKBOOK_PROFILE", "local")
        monkeypatch.setenv("LOCAL_BASE_URL", server.base_url)
        monkeypatch.setenv("LOCAL_MODEL", "offline-reference")
        prompt = next(iter(PARAPHRASES))
        code = main(["ask", prompt, "--json", "--db", f"sqlite:///{tmp_path / 's.sqlite'}"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["status"] == "ok" and "suggestions" not in data
    assert "no plan for this prompt" in data["answer"]  # never read to decide the exit code


def test_the_bench_times_a_turn_the_offline_model_has_a_plan_for() -> None:
    """``make bench`` times ``workbook ask`` on case0's prompt: a prompt without a plan ends
    with exit code 4 (no_plan), and the bench would time a refusal, or stop."""
    from devtools.bench import CASE0_PROMPT
    from helpers.base.paths import DATA_DIR
    from helpers.cases.case_files import load_case

    assert load_case(DATA_DIR / "cases" / "case0.md").prompt.strip() == CASE0_PROMPT


def test_the_cli_packages_docstring_names_every_command() -> None:
    """The package's docstring lists the commands; a new one in ``COMMANDS`` is named there."""
    import helpers.cli as cli

    head = (cli.__doc__ or "").split("Exit codes", 1)[0]
    assert [c for c in cli.COMMANDS if c not in head] == []


def test_only_a_process_that_runs_one_command_freezes_what_it_imported(tmp_path) -> None:
    """``workbook ask`` pauses the garbage collector while it imports; the console script (and
    ``python -m helpers.cli``) then freezes every object for the rest of its short life. Called
    in-process (a test, a notebook), it freezes nothing: garbage there must stay collectable."""
    import gc
    import subprocess
    import sys

    from devtools.bench import CASE0_PROMPT
    from helpers.cli import main

    db = f"sqlite:///{tmp_path / 's.sqlite'}"
    words = ["ask", "-p", "offline", "--db", db, CASE0_PROMPT]
    frozen = gc.get_freeze_count()
    assert main(words) == 0
    assert gc.get_freeze_count() == frozen and gc.isenabled()
    code = (
        "import gc, sys\n"
        "import helpers.cli as cli\n"
        f"sys.argv = ['workbook', *{words!r}]\n"
        "code = cli.console_main()\n"
        "print(code, gc.get_freeze_count() > 0, gc.isenabled())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.split()[-3:] == ["0", "True", "True"], done.stderr  # after the answer


@settings(derandomize=True, max_examples=300, deadline=None)
@given(st.from_regex(r"\A[0-9]{1,25}[smhdw]\Z") | st.text(max_size=30))
def test_an_age_is_a_timedelta_up_to_a_century_or_a_usage_error(text: str) -> None:
    """``outputs prune --older-than``: any text is an age within MAX_AGE or the one usage
    error argparse turns into exit 2, never an OverflowError (99999999999d once was a
    traceback)."""
    import argparse
    from datetime import timedelta

    from helpers.cli.outputs import MAX_AGE, parse_age

    try:
        age = parse_age(text)
    except argparse.ArgumentTypeError:
        return
    assert timedelta(0) <= age <= MAX_AGE


def test_a_huge_prune_age_is_a_one_line_usage_error(tmp_path) -> None:
    done = workbook(
        "outputs", "prune", "--db", f"sqlite:///{tmp_path / 's'}", "--older-than", "99999999999d"
    )
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_thread_with_no_outputs_lists_as_empty_with_or_without_json(tmp_path) -> None:
    """An empty listing is no failure, whatever the output's form (it exited 1, and 0 under
    --json)."""
    db = f"sqlite:///{tmp_path / 's.sqlite'}"
    human = workbook("outputs", "list", "--db", db, "--thread", "nosuch")
    as_json = workbook("outputs", "list", "--db", db, "--thread", "nosuch", "--json")
    assert human.returncode == as_json.returncode == 0, human.stderr + as_json.stderr
    assert "no outputs in thread 'nosuch'" in human.stdout
    assert json.loads(as_json.stdout) == {"thread_id": "nosuch", "outputs": []}
