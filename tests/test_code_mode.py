"""Code mode: programs the model writes, run in a V8 isolate of their own, within limits.

The threat model's rows (issue 39): each escape attempt, runaway or fan-out ends in a clear error
result within the program's limits (memory under 256 MB, CPU time within the limit and the
kernel's backstop), and the turn goes on; a program starved of CPU (issue 47: a busy room) is
not stopped for the time it waited. Then the strategy end to end: the offline model through the real ``openai`` client
writes a program per case, the tools' outputs stay out of the context, references are unboxed in a
program's calls, a mode's withheld tool is out of reach, the turn's caps count a program's calls.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
from hang import HANG_GUARD_S

from helpers import Agent, RunConfig, ToolOutputStore, build_policy, default_registry, run_turn
from helpers.base.limits import TurnLimits
from helpers.cases.case_files import ALL_CASES, load_cases
from helpers.context.code_mode import RUN_PROGRAM, js_signature
from helpers.context.modes import for_mode
from helpers.evaluation.runs import run_case
from helpers.models.offline import offline_client
from helpers.models.offline_program import program_for
from helpers.tooling import program_sandbox, worker_pipes
from helpers.tooling.program_sandbox import (
    MAX_TOOL_CALLS_PER_PROGRAM,
    PROGRAM_WORKER_CPU_GRACE_S,
    ProgramLimits,
    run_program,
)
from tests.provider import scripted_client, tool_calls

#: The most memory a program's worker may reach, in bytes (issue 39's acceptance).
PEAK_MEMORY_LIMIT_BYTES = 256 * 2**20
#: A short CPU-time limit and idle limit, so the runaway rows end quickly.
TIME_LIMIT_S = 2.0
RUNAWAY_LIMITS = ProgramLimits(cpu_time_limit_s=TIME_LIMIT_S, idle_limit_s=1.0)
#: The most CPU time a stopped program may have used, in seconds: its limit, then the kernel's
#: backstop (RLIMIT_CPU, whole seconds past the limit and the grace) at the latest.
MOST_CPU_S = TIME_LIMIT_S + PROGRAM_WORKER_CPU_GRACE_S + 1


class RecordingHost:
    """A host whose tools echo their arguments (``fail`` fails), recording each call."""

    def __init__(self, names: tuple[str, ...] = ("echo", "fail")) -> None:
        self.names = list(names)
        self.calls: list[tuple[str, str]] = []

    def tool_names(self) -> list[str]:
        return self.names

    def __call__(self, name: str, arguments_json: str) -> tuple[bool, str]:
        self.calls.append((name, arguments_json))
        if name == "fail":
            return False, "fail failed: it always does"
        return True, f"echo:{arguments_json}"


def _run(code: str, limits: ProgramLimits | None = None) -> tuple[object, RecordingHost]:
    host = RecordingHost()
    return run_program(code, host, limits or ProgramLimits()), host


def test_a_program_calls_its_tools_and_returns_a_value() -> None:
    result, host = _run("const a = await tools.echo({x: 'é😀'}); return {a, n: 1}")
    assert result.ok, result.error
    assert json.loads(result.text) == {"a": 'echo:{"x":"é😀"}', "n": 1}
    assert host.calls == [("echo", '{"x":"é😀"}')]
    text, _ = _run("return 'plain text'")
    assert text.text == "plain text"  # a string as it is, not as JSON


def test_a_tools_error_rejects_and_the_program_may_catch_it() -> None:
    result, _ = _run("try { await tools.fail({}) } catch (e) { return 'caught: ' + e.message }")
    assert result.ok and result.text == "caught: fail failed: it always does"
    result, _ = _run("\nreturn await tools.fail({})")
    assert not result.ok
    assert result.error == "the program failed: Error: fail failed: it always does (program line 2)"


ESCAPES = {
    "require": ("return require('fs').readFileSync('/etc/passwd')", "require is not defined"),
    "process": ("return process.env", "process is not defined"),
    "dynamic import": ("return await import('fs')", "Not supported"),
    "WebAssembly memory": (
        "return new WebAssembly.Memory({initial: 1000})",
        "WebAssembly is not defined",
    ),
    "typed arrays": ("return new Uint8Array(2 ** 28).length", "Uint8Array is not defined"),
    "ArrayBuffer": ("return new ArrayBuffer(2 ** 28).byteLength", "ArrayBuffer is not defined"),
    "fetch": ("return await fetch('http://127.0.0.1/')", "fetch is not defined"),
    "the bridge": ("return __workbook_call('echo', '{}')", "__workbook_call is not defined"),
    "a withheld tool": ("return await tools.google_drive_write_file({})", "is not a function"),
}


@pytest.mark.parametrize("name", ESCAPES)
def test_an_escape_attempt_ends_in_a_clear_error(name: str) -> None:
    code, expected = ESCAPES[name]
    result, host = _run(code)
    assert not result.ok and expected in result.error, result
    assert host.calls == []
    assert result.peak_rss_bytes < PEAK_MEMORY_LIMIT_BYTES


def test_the_function_constructor_reaches_only_the_sandboxs_own_global() -> None:
    result, _ = _run(
        "const g = Function('return this')();"
        "return [typeof g.require, typeof g.process, typeof g.__workbook_call, typeof g.tools,"
        " Object.isFrozen(g.tools)].join(' ')"
    )
    assert result.ok and result.text == "undefined undefined undefined object true"


def test_tools_cannot_be_replaced_by_the_program() -> None:
    result, host = _run("tools.echo = async () => 'forged'; return await tools.echo({})")
    assert result.ok and result.text == "echo:{}" and len(host.calls) == 1


RUNAWAYS = {
    "an infinite loop": ("while (true) {}", "used more than 2 s of CPU time"),
    "a loop after a tool call": ("await tools.echo({}); for (;;) {}", "more than 2 s of CPU time"),
    "a promise that never settles": ("await new Promise(() => {})", "waited 1 s without running"),
    "a heap bomb": (
        "const a = []; for (;;) a.push('x'.repeat(1000) + Math.random())",
        "bytes of JavaScript heap",
    ),
    "a string bomb": ("let s = 'x'; for (;;) s += s; return s.length", "Invalid string length"),
    "a huge string returned": ("return 'x'.repeat(2 ** 27)", ""),
    "a huge array": ("return new Array(2 ** 26).fill(1.5).length", ""),
}


@pytest.mark.parametrize("name", RUNAWAYS)
def test_a_runaway_program_is_stopped_within_its_limits(name: str) -> None:
    code, expected = RUNAWAYS[name]
    result, _ = _run(code, RUNAWAY_LIMITS)
    assert not result.ok and expected in result.error, result
    assert result.cpu_seconds < MOST_CPU_S
    assert result.peak_rss_bytes < PEAK_MEMORY_LIMIT_BYTES


def test_a_returned_value_over_the_limit_is_an_error_not_a_cut() -> None:
    limits = ProgramLimits(max_result_chars=1_000)
    result, _ = _run("return 'y'.repeat(1001)", limits)
    assert not result.ok and "returned 1,001 characters, over the limit of 1,000" in result.error
    assert _run("return 'y'.repeat(1000)", limits)[0].ok


def test_fan_out_inside_one_program_is_capped() -> None:
    result, host = _run(
        "const all = []; for (let i = 0; i < 1000; i++) all.push(tools.echo({i}));"
        "const done = await Promise.allSettled(all);"
        "return done.filter((d) => d.status === 'fulfilled').length"
    )
    assert result.ok and result.text == str(MAX_TOOL_CALLS_PER_PROGRAM)
    assert len(host.calls) == MAX_TOOL_CALLS_PER_PROGRAM  # the rest never reached the host
    assert result.cpu_seconds < TIME_LIMIT_S


def test_a_tool_output_too_long_for_a_program_is_an_error_it_can_catch() -> None:
    limits = ProgramLimits(max_tool_output_chars=8)
    result, host = _run("try { await tools.echo({a: 1}) } catch (e) { return e.message }", limits)
    assert result.ok and "over the 8 a program may take in" in result.text
    assert len(host.calls) == 1  # the tool ran; only its output was kept from the program


def test_a_huge_error_message_is_cut() -> None:
    result, _ = _run("throw new Error('e'.repeat(1_000_000))")
    assert not result.ok and len(result.error) < 2_100 and "characters in all" in result.error


def test_bad_programs_are_errors_with_their_reason() -> None:
    assert "SyntaxError" in _run("return }{")[0].error
    assert "not JSON" in _run("const a = {}; a.a = a; return a")[0].error
    assert "not JSON" in _run("return 1n")[0].error
    assert _run("throw {toString() { throw 1 }}")[0].error == (
        "the program failed: the program threw a value that cannot be shown"
    )
    long = ProgramLimits(max_program_chars=10)
    assert "at most 10 are run" in run_program("return 12345678", RecordingHost(), long).error


@pytest.mark.parametrize("field", ["cpu_time_limit_s", "idle_limit_s", "hang_guard_s"])
def test_limits_must_be_positive(field: str) -> None:
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=field):
            ProgramLimits(**{field: bad})


class SlowHost(RecordingHost):
    """A host whose ``slow`` tool takes ``seconds``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(("echo", "slow"))
        self.seconds = seconds

    def __call__(self, name: str, arguments_json: str) -> tuple[bool, str]:
        if name == "slow":
            time.sleep(self.seconds)
        return super().__call__(name, arguments_json)


def test_a_tools_time_is_the_tools_and_the_programs_own_time_is_still_limited() -> None:
    """The limits count the program's own running, not a tool's (each tool has its own limit):
    a slow tool stops a short program neither for its CPU time nor for idling, and a loop
    after it is still stopped at the CPU limit."""
    short = ProgramLimits(cpu_time_limit_s=1.0, idle_limit_s=0.5, hang_guard_s=1.0)
    done = run_program("await tools.slow({}); return 'ok'", SlowHost(1.5), short)
    assert done.ok and done.text == "ok"
    limits = ProgramLimits(cpu_time_limit_s=1.0)
    looping = run_program("await tools.slow({}); while (true) {}", SlowHost(0.5), limits)
    assert not looping.ok and "used more than 1 s of CPU time" in looping.error
    assert 1.0 <= looping.cpu_seconds < 1.0 + PROGRAM_WORKER_CPU_GRACE_S + 1


#: A program of a fraction of a second of CPU time: a loop, then its answer.
BUSY_PROGRAM = "let n = 0; for (let i = 0; i < 3e7; i++) n += i % 7; return n"


def test_a_program_starved_of_cpu_is_not_stopped_for_the_wait(monkeypatch) -> None:
    """A busy room (issue 47): a worker that gets no core for three times its CPU limit and
    six times its idle limit (here it is stopped outright, SIGSTOP, then let go) still finishes
    its correct program: the limit counts the CPU time it used, not the time it waited, and a
    worker that cannot run is not idle."""
    limits = ProgramLimits(cpu_time_limit_s=1.0, idle_limit_s=0.5)
    start_clocks = program_sandbox._ProgramWorker.start_clocks

    def starved(worker) -> None:
        start_clocks(worker)
        os.kill(worker.pid, signal.SIGSTOP)
        threading.Timer(3.0, os.kill, (worker.pid, signal.SIGCONT)).start()

    monkeypatch.setattr(program_sandbox._ProgramWorker, "start_clocks", starved)
    result = run_program(BUSY_PROGRAM, RecordingHost(), limits)
    assert result.ok, result
    assert result.seconds > 3.0 > result.cpu_seconds  # it waited longer than its CPU limit


def test_the_hang_guard_counts_only_time_without_cpu(monkeypatch) -> None:
    """A program that works, however long the wall clock it takes, is never stopped by the hang
    guard (a starved room once took a 15 s-CPU program past it): here it works 4 times its
    guard of 0.5 s. A worker that cannot move at all (stopped, SIGSTOP, and never let go) is
    stopped by it, its CPU limit and idle limit unreached."""
    long_work = "let n = 0; for (let i = 0; i < 1.5e9; i++) n += i % 7; return n"
    worked = run_program(long_work, RecordingHost(), ProgramLimits(hang_guard_s=0.5))
    assert worked.ok and worked.seconds > 2.0, worked
    start_clocks = program_sandbox._ProgramWorker.start_clocks

    def frozen(worker) -> None:
        start_clocks(worker)
        os.kill(worker.pid, signal.SIGSTOP)

    monkeypatch.setattr(program_sandbox._ProgramWorker, "start_clocks", frozen)
    stuck = run_program(BUSY_PROGRAM, RecordingHost(), ProgramLimits(hang_guard_s=1.0))
    assert not stuck.ok and "used no CPU for 1 s" in stuck.error, stuck


def test_without_proc_the_kernel_limits_the_cpu_and_the_hang_guard_ends_a_wait(
    monkeypatch,
) -> None:
    """Where /proc is missing (macOS), the worker's RLIMIT_CPU is the CPU limit (the kernel ends
    it with SIGXCPU, said as the limit) and the hang guard ends a program that waits."""
    monkeypatch.setattr(worker_pipes, "cpu_seconds", lambda pid: None)
    looping, _ = _run("while (true) {}", ProgramLimits(cpu_time_limit_s=1.0, idle_limit_s=0.5))
    assert not looping.ok and "used more than 1 s of CPU time" in looping.error, looping
    limits = ProgramLimits(cpu_time_limit_s=1.0, idle_limit_s=0.5, hang_guard_s=2.0)
    waiting, _ = _run("await new Promise(() => {})", limits)
    assert not waiting.ok and "hang guard of 2 s" in waiting.error, waiting


#: A caller that starts a worker and then waits (``program``: a program awaiting a promise that
#: never settles, its idle limit far away; ``sql``: a run_sql query, its worker then idle in the
#: pool), printing the worker's pid, then its own end as the test chooses.
_CALLER = """
import sys, threading
from helpers.tooling import program_sandbox, sql_sandbox, worker_pipes
started, ready = worker_pipes.WorkerProcess.__init__, threading.Event()
def tell(self, *args, **kwargs):
    started(self, *args, **kwargs)
    print(self.pid, flush=True)
    ready.set()
worker_pipes.WorkerProcess.__init__ = tell
class Host:
    def tool_names(self): return ["echo"]
    def __call__(self, name, arguments): return True, ""
if sys.argv[1] == "program":
    limits = program_sandbox.ProgramLimits(idle_limit_s=3600, hang_guard_s=3600)
    threading.Thread(target=program_sandbox.run_program, daemon=True, args=(
        "await new Promise(() => {})", Host(), limits)).start()
else:
    sql_sandbox.run_query("SELECT 1")
ready.wait()
if len(sys.argv) > 2:  # a child forked now (multiprocessing's way) outlives the caller
    import os, time
    child = os.fork()
    if child == 0:
        time.sleep(3600)
        os._exit(0)
    print(child, flush=True)
print("waiting", flush=True)
threading.Event().wait()
"""


@pytest.mark.parametrize("kind", ["program", "sql", "sql-forked"])
@pytest.mark.parametrize("end", [signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_a_worker_ends_with_its_caller_however_the_caller_ends(kind: str, end: int) -> None:
    """A program waiting for ever, or a run_sql worker idle in its pool: the caller (workbook
    ask, a kernel) ends by a signal it does not handle, or SIGKILL (a kernel restart): no
    cleanup code of its runs, and the worker ends all the same (its lifeline closes)."""
    import subprocess
    import sys

    forked = kind.endswith("-forked")
    command = [sys.executable, "-c", _CALLER, kind.removesuffix("-forked"), *(["fork"] * forked)]
    caller = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert caller.stdout is not None
    worker = int(caller.stdout.readline())
    child = int(caller.stdout.readline()) if forked else None
    assert caller.stdout.readline().strip() == "waiting"
    if kind == "program":
        time.sleep(0.5)  # the program is running: the worker waits in V8
    os.kill(worker, 0)  # alive while its caller is
    caller.send_signal(end)
    caller.wait(timeout=HANG_GUARD_S)
    try:
        _wait_for_the_end_of(worker, kind)
    finally:
        if child is not None:
            os.kill(child, signal.SIGKILL)


def _wait_for_the_end_of(worker: int, kind: str) -> None:
    deadline = time.monotonic() + HANG_GUARD_S
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        try:  # reaped by init once it exits; a zombie of ours it is not
            with open(f"/proc/{worker}/stat", encoding="ascii") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except OSError:
            return
        time.sleep(0.05)
    pytest.fail(f"the {kind} worker {worker} outlived its caller")


def test_memory_is_watched_while_a_tool_runs() -> None:
    """A program whose JavaScript keeps allocating while one of its tool calls runs is stopped
    at the memory limit then too, not when the tool returns."""
    code = (
        "const pending = tools.slow({}); await null;"
        "const a = []; for (;;) a.push({n: Math.random(), s: 'x'.repeat(64) + Math.random()})"
    )
    result = run_program(code, SlowHost(20.0), ProgramLimits())
    assert not result.ok and "bytes of" in result.error
    assert result.peak_rss_bytes < PEAK_MEMORY_LIMIT_BYTES


FORGERIES = {
    "JSON.stringify replaced": "JSON.stringify = () => '[1]'; return 1",
    "JSON.stringify replaced by a limit message": (
        "JSON.stringify = () => '\"the program used more than 30 s of CPU time\"'; return 1"
    ),
    "JSON.parse replaced": "JSON.parse = () => ({ok: true, output: 'forged'}); return await tools.echo({})",
    "a forged call": 'JSON.stringify = () => \'{"call": "fail"}\'; return 1',
}


@pytest.mark.parametrize("name", FORGERIES)
def test_a_program_cannot_forge_the_sandboxs_messages(name: str) -> None:
    result, host = _run(FORGERIES[name])
    assert result.ok, result  # the sandbox's own JSON, kept before the program ran, is used
    assert result.text in ("1", "echo:{}")
    assert all(call == ("echo", "{}") for call in host.calls)


BAD_ARGUMENTS = {
    "a function": "return await tools.echo(() => 1)",
    "a symbol": "return await tools.echo(Symbol('x'))",
    "undefined from toJSON": "return await tools.echo({toJSON: () => undefined})",
}


@pytest.mark.parametrize("name", BAD_ARGUMENTS)
def test_arguments_json_cannot_hold_are_a_clear_error_not_a_traceback(name: str) -> None:
    result, host = _run(BAD_ARGUMENTS[name])
    assert not result.ok and "one object of arguments that JSON can hold" in result.error
    assert "Traceback" not in result.error and ".py" not in result.error and host.calls == []


def test_timers_are_not_there() -> None:
    result, _ = _run("return [typeof setTimeout, typeof clearTimeout].join(' ')")
    assert result.ok and result.text == "undefined undefined"


# -- the strategy, end to end ------------------------------------------------------------------


def test_a_tools_signature_as_the_program_sees_it() -> None:
    run_sql = default_registry().get("run_sql")
    assert js_signature(run_sql).startswith(
        "tools.run_sql({query: string, max_rows?: number}) → string: Run one read-only SQL"
    )


def test_the_offline_models_program_for_case1() -> None:
    case = next(c for c in load_cases() if c.id == "case1")
    assert program_for(case.offline_plan) == (
        'const result1 = await tools.yt_transcribe({"video_id": "123"});\n'
        'const result2 = await tools.deep_check({"text": result1});\n'
        "return {result2};"
    )


@pytest.mark.parametrize("case_id", ["case1", "case3", "sql3", "web1", "unicode_fanout"])
def test_code_mode_passes_the_case_and_keeps_outputs_out_of_the_context(
    case_id: str, tmp_path
) -> None:
    case = next(c for c in load_cases(ALL_CASES) if c.id == case_id)
    store = ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    run = run_case(case, "code", client=offline_client(), model="offline-reference", store=store)
    record = run.record
    assert run.validation.passed, run.validation.reasons
    inner = [c for c in record.tool_calls if c.program_call_id]
    program = [c for c in record.tool_calls if c.name == RUN_PROGRAM]
    assert len(program) == 1 and inner
    assert {c.program_call_id for c in inner} == {program[0].id}
    sent = json.dumps(record.messages)
    for call in inner:  # each output is stored, and none entered the context
        row = store.get(record.thread_id, call.id)
        assert row is not None and len(store.read_all(row.id)) == call.output_chars
        if call.output_chars > 200:
            assert store.read_all(row.id)[:200] not in sent
    assert [s["function"]["name"] for s in record.tool_schemas] == [RUN_PROGRAM]


def _agent(tmp_path, client, registry=None, limits=None):
    store = ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    policy = build_policy("code")
    agent = Agent(client, "scripted", policy, registry or default_registry(), store)
    config = RunConfig(limits=limits or TurnLimits())
    return agent, config, store


def _program(call_id: str, code: str) -> dict:
    return tool_calls((call_id, RUN_PROGRAM, json.dumps({"code": code})))


def test_a_failing_program_is_an_error_result_and_the_turn_goes_on(tmp_path) -> None:
    client, requests = scripted_client(
        [
            _program("c1", "return await tools.yt_transcribe({video: '123'})"),  # wrong argument
            _program(
                "c2", "const t = await tools.yt_transcribe({video_id: '123'}); return t.length"
            ),
            {"role": "assistant", "content": "The transcript has 10244 characters."},
        ]
    )
    agent, config, _ = _agent(tmp_path, client)
    record = run_turn("How long is the transcript of video 123?", agent, config)
    assert record.status == "ok"
    first, second = [c for c in record.tool_calls if c.name == RUN_PROGRAM]
    assert first.result_kind == "error" and "unexpected argument(s): video" in first.result
    assert second.result == "10244"
    tool_results = [m["content"] for m in requests[2]["messages"] if m["role"] == "tool"]
    assert tool_results[1] == "10244"  # the model saw the program's return, not the transcript


def test_a_long_return_is_boxed_and_a_program_passes_the_reference_back(tmp_path) -> None:
    client, _ = scripted_client(
        [
            _program("c1", "return await tools.yt_transcribe({video_id: '123'})"),
            {"role": "assistant", "content": "Here it is."},
        ]
    )
    agent, config, _ = _agent(tmp_path, client)
    first = run_turn("Transcribe video 123.", agent, config)
    returned = next(c for c in first.tool_calls if c.name == RUN_PROGRAM)
    assert returned.result_kind == "boxed" and returned.result.startswith("internal://")
    reference = returned.result.split()[0]
    client2, _ = scripted_client(
        [
            _program("c2", f"return await tools.deep_check({{text: {json.dumps(reference)}}})"),
            {"role": "assistant", "content": "Checked."},
        ]
    )
    agent.client = client2
    second = agent.run("Check it.", thread_id=first.thread_id, history=first.messages[1:])
    check = next(c for c in second.tool_calls if c.name == "deep_check")
    transcript = next(c for c in first.tool_calls if c.name == "yt_transcribe")
    assert check.received_sha256["text"] == transcript.output_sha256  # unboxed, byte for byte


def test_a_mode_withholds_its_tools_from_programs(tmp_path) -> None:
    explore = for_mode(default_registry(), "explore")
    client, _ = scripted_client(
        [
            _program("c1", "return typeof tools.google_drive_write_file"),
            {"role": "assistant", "content": "Not available."},
        ]
    )
    agent, config, _ = _agent(tmp_path, client, registry=explore)
    record = run_turn("Save a note.", agent, config)
    assert record.tool_calls[-1].result == "undefined"
    assert "google_drive_write_file" not in program_tool_of(record)


def program_tool_of(record) -> str:
    """The run_program tool's description as the model got it."""
    return next(s for s in record.tool_schemas if s["function"]["name"] == RUN_PROGRAM)["function"][
        "description"
    ]


def test_a_programs_calls_count_against_the_turns_cap(tmp_path) -> None:
    code = "const r = []; for (let i = 0; i < 5; i++) { try { r.push(await tools.yt_transcribe({video_id: '123'})) } catch (e) { r.push(e.message) } } return r.map((x) => x.slice(0, 12))"
    client, _ = scripted_client([_program("c1", code), {"role": "assistant", "content": "Done."}])
    agent, config, _ = _agent(tmp_path, client, limits=TurnLimits(max_tool_calls_per_turn=3))
    record = run_turn("Transcribe video 123 five times.", agent, config)
    inner = [c for c in record.tool_calls if c.program_call_id]
    assert len(inner) == 5
    assert [c.ran for c in inner] == [True, True, False, False, False]  # run_program is one
    assert all("refused_over_limit" in c.guards for c in inner[2:])
    assert json.loads(record.tool_calls[-1].result)[2].startswith("not run: thi")


def test_the_offline_model_in_code_mode_through_the_openai_client(tmp_path) -> None:
    store = ToolOutputStore(f"sqlite:///{tmp_path / 'store.sqlite'}")
    agent = Agent(
        offline_client(), "offline-reference", build_policy("code"), default_registry(), store
    )
    record = run_turn(
        "Generate a transcript of the YouTube video with video_id='123' and then pass it to "
        "Deep Check for analysis.",
        agent,
    )
    assert record.ok and "received 10244 chars" in record.answer
    assert len(record.model_calls) == 2


def test_ask_shows_a_programs_calls_as_the_programs(tmp_path, monkeypatch, capsys) -> None:
    """``workbook ask -s code``: the calls a program made are shown as the program's, with
    what the program got, never as results the model saw."""
    from helpers.cli import main

    monkeypatch.setenv("WORKBOOK_PROFILE", "offline")
    db = f"sqlite:///{tmp_path / 'store.sqlite'}"
    prompt = next(c for c in load_cases() if c.id == "case1").prompt
    assert main(["ask", prompt, "-s", "code", "--db", db, "--color", "never"]) == 0
    out = capsys.readouterr().out
    assert "⤷ in the program: yt_transcribe" in out
    assert "← to the program: 10,244 chars, not in the context" in out
    assert "→ run_program(" in out and "→ yt_transcribe" not in out
