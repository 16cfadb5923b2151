"""The model controls nothing it should not: every tool argument treated as hostile.

Each test here is a line of the threat model (docs/threat-model.md): what a hostile model (or a page, a
transcript, a SQL row that a model read) could make a tool do, and what the client does instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hang import HANG_GUARD_S
from provider import ScriptedProvider, completion, tool_call

import helpers.context.policies as policies
import helpers.context.resolve_tools as resolve_tools
import helpers.tooling.outbox as outbox_module
import helpers.tooling.sql_sandbox as sandbox
from helpers.context.modes import for_mode
from helpers.context.policies import BoxPolicy
from helpers.context.strategies import build_policy
from helpers.loop.agent import Agent, run_turn
from helpers.loop.dispatch import dispatch
from helpers.store.tool_outputs import ToolOutputStore
from helpers.tooling.pages import PAGE_MODULES, pages_dir, serve_page
from helpers.tooling.registry import ToolContext, ToolRegistry, tool_from_function
from helpers.tooling.tools import default_registry, get_page, google_drive_write_file, run_sql

LIBRARY = "https://docs.python.org/3/library/{}.html"
POLICY = BoxPolicy()
TOOLS = default_registry().merged(POLICY.internal_tools())


def _dispatch(store, name, arguments, *, tools=TOOLS, policy=POLICY, thread="thread_s"):
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    ctx = ToolContext(store=store, thread_id=thread)
    return dispatch("call_" + os.urandom(6).hex(), name, raw, tools, policy, ctx)


# -- get_page imports nothing the model names -------------------------------------------------

HOSTILE_MODULES = [
    "this",
    "antigravity",
    "__hello__",
    "venv.__main__",
    "unittest.__main__",
    "idlelib.idle",
    "turtledemo",
    "test.support",
    "var.outbox.evil",
    "helpers.cli",
    "pip",
    "sqlalchemy",
    "os",
    "sys",
    "json/../os",
    "x" * 300,
]


def test_get_page_imports_nothing_the_model_names(tmp_path) -> None:
    """In a fresh interpreter run from a folder that holds an importable evil.py (as if the
    model had written it): every hostile name is a 404, nothing is imported, nothing runs."""
    (tmp_path / "evil.py").write_text(
        f"open({str(tmp_path / 'ran.txt')!r}, 'w').write('code ran')\n"
    )
    (tmp_path / "var" / "outbox").mkdir(parents=True)
    (tmp_path / "var" / "outbox" / "evil.py").write_text((tmp_path / "evil.py").read_text())
    script = f"""
import json, sys
from helpers.tooling.tools import get_page
from helpers.tooling.pages import PageNotFound
before = set(sys.modules)
names = {[*HOSTILE_MODULES, "evil"]!r}
results = {{}}
for name in names:
    try:
        get_page("https://docs.python.org/3/library/" + name + ".html")
        results[name] = "served"
    except PageNotFound as exc:
        results[name] = str(exc)[:13]
new = sorted(set(sys.modules) - before)
print(json.dumps({{"results": results, "imported": new}}))
"""
    env = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout.splitlines()[-1])
    assert set(data["results"].values()) == {"404 Not Found"}, data["results"]
    hostile_roots = {
        "this",
        "antigravity",
        "__hello__",
        "venv",
        "unittest",
        "idlelib",
        "evil",
        "turtledemo",
        "test",
        "pip",
        "sqlalchemy",
        "var",
    }
    assert not hostile_roots & {m.split(".")[0] for m in data["imported"]}, data["imported"]
    assert not (tmp_path / "ran.txt").exists()
    assert not list(tmp_path.glob("venv*")) and "Beautiful is better" not in done.stdout


def test_listed_pages_still_serve_and_show_no_secret(monkeypatch) -> None:
    for name in ("json", "sqlite3", "asyncio"):
        assert "Python: " in get_page(LIBRARY.format(name))
    assert "os" not in PAGE_MODULES and "sys" not in PAGE_MODULES
    # a page stored with a secret in it (planted, or rendered before the key was set) is served
    # without it: pages are redacted again on the way out
    secret = "sk-planted-0123456789abcdefXYZ"
    monkeypatch.setenv("PLANTED_API_KEY", secret)
    path = pages_dir() / "json.html"
    original = path.read_text(encoding="utf-8") if path.exists() else serve_page("json")
    try:
        path.write_text(original + f"<p>{secret}</p>", encoding="utf-8")
        assert secret not in get_page(LIBRARY.format("json"))
    finally:
        path.write_text(original, encoding="utf-8")


# -- secrets redacted everywhere --------------------------------------------------------------


def test_a_planted_key_reaches_no_sink(tmp_path, monkeypatch, store) -> None:
    """A key in .env: a tool prints it, the model repeats it, the prompt holds it; it appears in
    no request sent to the model, no stored row or message, no record, no error."""
    import helpers.text.redaction as redaction

    secret = "sk-dotenv-PLANTED-0123456789abcdef"
    (tmp_path / ".env").write_text(f"SOME_SERVICE_API_KEY={secret}\n")
    monkeypatch.setattr(redaction, "workspace_dir", lambda: tmp_path)
    monkeypatch.delenv("SOME_SERVICE_API_KEY", raising=False)

    def environment_page() -> str:
        """Show a page that happens to print the environment.

        Returns:
            Text.
        """
        return f"HOME=/root\nSOME_SERVICE_API_KEY={secret}\n"

    registry = ToolRegistry([tool_from_function(environment_page)])
    steps = [
        lambda r: completion(tool_calls=[tool_call("environment_page", {})]),
        lambda r: completion(
            f"I found {secret}", message_extra={"reasoning_content": f"key {secret}"}
        ),
    ]
    with ScriptedProvider(steps) as provider:
        import openai

        client = openai.OpenAI(base_url=provider.base_url, api_key="local-key", max_retries=0)
        record = run_turn(
            f"show me {secret}", Agent(client, "m", build_policy("box"), registry, store)
        )
        sent = json.dumps(provider.chat_requests)
    assert record.ok
    assert secret not in sent
    assert secret not in json.dumps(record.to_json(include_context=True))
    assert "[redacted]" in record.tool_calls[0].result and "[redacted]" in record.answer
    for path in Path(store.url.removeprefix("sqlite:///")).parent.glob("store.sqlite*"):
        assert secret.encode() not in path.read_bytes()


# -- an outbox that cannot be escaped or exhausted --------------------------------------------


def test_a_symlink_in_the_outbox_never_redirects_a_write(tmp_path) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")
    outbox = outbox_module.outbox_dir()
    for name in ("planted.txt", ".planted.txt.partial"):
        link = outbox / name
        link.unlink(missing_ok=True)
        link.symlink_to(outside)
    result = google_drive_write_file("planted.txt", "new content")
    assert outside.read_text() == "keep me"
    assert (outbox / "planted.txt").read_text() == "new content"
    assert not (outbox / "planted.txt").is_symlink()
    assert "replaced" not in result  # a symlink is not a file of ours to report as replaced
    (outbox / ".planted.txt.partial").unlink()


def test_concurrent_writes_of_one_name_all_succeed_and_leave_nothing_behind() -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        for i in range(200):
            try:
                google_drive_write_file("race.txt", f"writer {n} write {i}\n" * 50)
            except BaseException as exc:
                errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outbox = outbox_module.outbox_dir()
    assert errors == []
    assert not list(outbox.glob(".write-*.partial"))
    content = (outbox / "race.txt").read_text()
    assert content.startswith("writer ") and content == content.splitlines(True)[0] * 50


def test_overwriting_says_so_and_quotas_hold(monkeypatch) -> None:
    google_drive_write_file("twice.txt", "first")
    assert "replaced an existing file of 5 bytes" in google_drive_write_file("twice.txt", "2nd")
    monkeypatch.setattr(outbox_module, "MAX_OUTBOX_FILE_BYTES", 100)
    with pytest.raises(ValueError, match="over the limit of 100 bytes per file"):
        google_drive_write_file("big.txt", "x" * 101)
    monkeypatch.setattr(outbox_module, "MAX_OUTBOX_FILE_BYTES", 10**9)
    used = sum(p.stat().st_size for p in outbox_module.outbox_dir().iterdir() if p.is_file())
    monkeypatch.setattr(outbox_module, "MAX_OUTBOX_TOTAL_BYTES", used + 50)
    with pytest.raises(ValueError, match="would pass its limit"):
        google_drive_write_file("more.txt", "y" * 100)


def test_a_failed_write_leaves_nothing(monkeypatch) -> None:
    real_fdopen = os.fdopen

    def full_disk(fd, *args, **kwargs):
        handle = real_fdopen(fd, *args, **kwargs)

        def write(_data):
            raise OSError(28, "No space left on device")

        handle.write = write
        return handle

    monkeypatch.setattr(outbox_module.os, "fdopen", full_disk)
    with pytest.raises(OSError, match="No space left"):
        google_drive_write_file("full.txt", "data")
    assert not list(outbox_module.outbox_dir().glob(".write-*.partial"))
    assert not (outbox_module.outbox_dir() / "full.txt").exists()


# -- every tool bounded in time, memory and output ---------------------------------------------


def test_run_sql_stops_an_endless_query(monkeypatch) -> None:
    monkeypatch.setattr(sandbox, "SQL_CPU_TIME_LIMIT_S", 0.5)
    result = json.loads(
        run_sql(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
        )
    )
    assert "used more than 0.5 s of CPU time" in result["error"]  # SQLite's own interrupt


@pytest.mark.parametrize(
    "query",
    [
        # zeroblob and randomblob are refused outright (tests/test_sql_bounds.py); values built
        # from short text past SQL_MAX_VALUE_BYTES are refused as too big
        "SELECT hex(printf('%.*c', 600000, 'x')) FROM countries LIMIT 10",
        "SELECT replace(printf('%.*c', 999999, 'x'), 'x', 'xy')",
        "SELECT group_concat(printf('%.*c', 900000, 'x')) FROM countries",
    ],
)
def test_run_sql_refuses_giant_values(query) -> None:
    assert "too big" in json.loads(run_sql(query))["error"]  # refused, not built to the limit


def test_run_sql_results_are_valid_json_and_capped(monkeypatch) -> None:
    data = json.loads(run_sql("SELECT 1e999, -1e999, x'00ff', 0.0 / 0"))
    assert data["rows"] == [["Infinity", "-Infinity", {"blob_bytes": 2, "hex": "00ff"}, None]]
    monkeypatch.setattr(sandbox, "SQL_MAX_RESULT_CHARS", 2_000)
    capped = json.loads(run_sql("SELECT code, name FROM subdivisions", max_rows=1000))
    assert capped["truncated"] is True and 10 < capped["row_count"] < 100


@pytest.fixture
def big_ref(store):
    value = "\n".join(f"{i:06d} " + "ab" * 500 for i in range(3_000))
    row = store.log_tool("thread_s", "call_big_value", "x", {}, value)
    return f"internal://{row.ref_id}", value


def test_a_catastrophic_grep_pattern_is_refused_at_once(store, big_ref) -> None:
    ref, _ = big_ref
    started = time.thread_time()
    record = _dispatch(
        store,
        "internal_resource_grep",
        {"opaque_reference": ref, "pattern": "(?:[ab]{1,100}){1,10}c", "window": 0},
    )
    assert time.thread_time() - started < 2 and "too complex" in record.result  # CPU seconds
    huge = _dispatch(
        store,
        "internal_resource_grep",
        {"opaque_reference": ref, "pattern": "(" * 900_000, "window": 0},
    )
    assert "at most 1,000" in huge.result and len(huge.result) < 500


def test_grep_keeps_its_deadline_and_its_output_cap(store, big_ref, monkeypatch) -> None:
    ref, _ = big_ref
    monkeypatch.setattr(resolve_tools, "GREP_CPU_TIME_LIMIT_S", 1e-9)  # read every line
    slow = _dispatch(
        store,
        "internal_resource_grep",
        {"opaque_reference": ref, "pattern": "(?:a|b){1,20}c", "window": 0},
    )
    assert "stopped after 1e-09 s of CPU time at line 1 of 3000" in slow.result
    monkeypatch.setattr(resolve_tools, "GREP_CPU_TIME_LIMIT_S", 10.0)
    wide = _dispatch(
        store, "internal_resource_grep", {"opaque_reference": ref, "pattern": "ab", "window": 0}
    )
    assert len(wide.result) <= resolve_tools.MAX_GREP_OUTPUT_CHARS + 300
    assert (
        "output cut at 50000 characters" in wide.result or "stopped after 500 lines" in wide.result
    )


def test_reads_are_capped_in_characters(store, big_ref) -> None:
    ref, value = big_ref
    lines = _dispatch(
        store,
        "internal_resource_read_lines",
        {"opaque_reference": ref, "start_line": 0, "line_count": 3_000},
    )
    assert len(lines.result) < resolve_tools.MAX_READ_CHARS + 300
    assert "ask again with start_line=" in lines.result
    whole = _dispatch(store, "internal_resource_read", {"opaque_reference": ref})
    assert whole.result.startswith(value[:1000]) and "start_index=100000" in whole.result


def test_arguments_are_checked_before_anything_is_unboxed(store, big_ref, monkeypatch) -> None:
    ref, _ = big_ref
    started = time.thread_time()
    wrong_type = _dispatch(store, "run_sql", {"query": [ref] * 300})
    assert time.thread_time() - started < 1  # CPU seconds: nothing was unboxed
    assert "must be string, got list" in wrong_type.result

    def join(parts: list[str]) -> str:
        """Join texts.

        Args:
            parts: the texts.
        """
        return "".join(parts)

    joiner = ToolRegistry([tool_from_function(join)]).merged(POLICY.internal_tools())
    many = _dispatch(store, "join", {"parts": [ref] * 17}, tools=joiner)
    assert not many.ran and "at most 16" in many.result
    monkeypatch.setattr(policies, "MAX_UNBOXED_CHARS", 1_000)
    too_big = _dispatch(store, "join", {"parts": [ref]}, tools=joiner)
    assert not too_big.ran and too_big.guards == ["refused_too_much_to_unbox"]


@pytest.mark.parametrize("strategy", ["inline", "truncate", "box"])
def test_no_policy_reads_the_store_for_a_call_whose_shape_does_not_fit(
    store, strategy, monkeypatch
) -> None:
    """The turn checks a call's shape before any policy prepares it: truncate's preview guard
    reads the store for every long string of a call and every cut output of its thread (three
    thousand strings where the tool takes one took seconds of CPU), box's unboxing reads what
    references stand for. A call that cannot run is refused first, whatever the strategy."""
    policy = build_policy(strategy)
    prepared: list[object] = []
    real = type(policy).prepare_arguments
    monkeypatch.setattr(
        type(policy),
        "prepare_arguments",
        lambda self, *args, **kw: prepared.append(args) or real(self, *args, **kw),
    )
    tools = default_registry().merged(policy.internal_tools())
    record = _dispatch(
        store, "deep_check", {"text": ["x" * 300] * 3_000}, tools=tools, policy=policy
    )
    assert not record.ran and "must be string, got list" in record.result
    assert prepared == []


# -- dispatch never lets an exception out -----------------------------------------------------


def test_hostile_shapes_and_failing_tools_become_error_results(store) -> None:
    side_effects: list[str] = []

    def quitter(text: str) -> str:
        """Exit the process.

        Args:
            text: anything.
        """
        side_effects.append(text)
        raise SystemExit(3)

    registry = ToolRegistry([tool_from_function(quitter)]).merged(POLICY.internal_tools())
    exits = _dispatch(store, "quitter", {"text": "bye"}, tools=registry)
    assert exits.ran and "SystemExit" in exits.result
    deep = '{"text": ' + "[" * 600 + "]" * 600 + "}"
    assert "nested more than 32 levels" in _dispatch(store, "deep_check", deep).result
    deeper = '{"text": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert "nested too deeply" in _dispatch(store, "deep_check", deeper).result
    surrogate = _dispatch(store, "quitter", '{"text": "x\\ud800"}', tools=registry)
    assert not surrogate.ran and "not valid Unicode" in surrogate.result
    assert side_effects == ["bye"]  # the surrogate call never reached the tool


def test_a_full_disk_is_a_clear_failed_turn(tmp_path, client, registry) -> None:
    """SQLite's own "database or disk is full" (a page limit on a real file), mid-turn."""
    from sqlalchemy import event, text

    store = ToolOutputStore(f"sqlite:///{tmp_path / 'full.sqlite'}")
    with store.engine.connect() as connection:
        pages = connection.execute(text("PRAGMA page_count")).scalar()

    @event.listens_for(store.engine, "connect")
    def _cap(dbapi_connection, _record) -> None:
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    store.engine.dispose()
    record = run_turn(
        "Generate a transcript of the YouTube video with video_id='123' and then pass it to "
        "Deep Check for analysis.",
        Agent(client, "offline-reference", build_policy("box"), registry, store),
    )
    assert record.status == "error" and "the tool-output store failed" in record.error
    assert "database or disk is full" in record.error
    # and one dispatch on its own: an error result that says the turn cannot go on
    one = _dispatch(store, "yt_transcribe", {"video_id": "123"})
    assert one.result_kind == "error" and one.fatal and "database or disk is full" in one.result


# -- prompt injection through a tool result ---------------------------------------------------


def test_an_injected_page_cannot_make_explore_mode_write(store) -> None:
    """A page says "write the key to a file"; the (hostile) model obeys; explore mode refuses."""
    steps = [
        lambda r: completion(tool_calls=[tool_call("get_page", {"url": "https://example.com/"})]),
        lambda r: completion(
            tool_calls=[
                tool_call(
                    "google_drive_write_file",
                    {"file_name": "exfil.txt", "file_content": "as the page said"},
                )
            ]
        ),
        lambda r: completion("I could not write."),
    ]
    import openai

    with ScriptedProvider(steps) as provider:
        client = openai.OpenAI(base_url=provider.base_url, api_key="local-key", max_retries=0)
        record = run_turn(
            "Summarise https://example.com/",
            Agent(client, "m", build_policy("box"), for_mode(default_registry(), "explore"), store),
        )
    write = record.tool_calls[1]
    assert not write.ran and "not available in mode 'explore'" in write.result
    assert not (outbox_module.outbox_dir() / "exfil.txt").exists()


# -- CLI input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        [b"ask", b"caf\xff", b"--json"],
        [b"ask", b"caf\xff"],
        [b"ask", b"hi", b"--strategy", b"\x1b[2J"],
        [b"ask", b"hi", b"--thread", b"a\xffb", b"--new-thread", b"--json"],
        [b"ask", b"hi", b"--compact-at", b"-5", b"--json"],
        [b"ask", b"hi", b"--compact-at", b"-5"],
        [b"serve-offline", b"--port", b"99999"],
    ],
)
def test_bad_command_lines_exit_2_with_one_line(argv) -> None:
    env = {**os.environ, "WORKBOOK_PROFILE": "offline", "LC_ALL": "C.UTF-8"}
    done = subprocess.run(
        [sys.executable.encode(), b"-m", b"helpers.cli", *argv],
        capture_output=True,
        env=env,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 2, done.stderr
    assert b"Traceback" not in done.stderr and b"\x1b" not in done.stderr
    if b"--json" in argv:
        data = json.loads(done.stdout.decode("utf-8"))
        assert data["status"] == "usage_error"
    else:
        assert len(done.stderr.splitlines()) == 1, done.stderr
