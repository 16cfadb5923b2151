"""Code mode's sandbox: a program the model wrote, run in a fresh V8 isolate, bounded.

In code mode (:mod:`helpers.context.code_mode`) the model writes a JavaScript program that calls
the tools; this module runs it. Each program gets a **worker process of its own** with a fresh
V8 isolate (mini-racer, the maintained embedding of V8 for Python: bpcreech/PyMiniRacer), as
OpenAI's programmatic tool calling runs each program "in a fresh isolated V8 runtime"
(developers.openai.com, "Programmatic tool calling"). A process, not a thread of the caller's:
V8 ends the whole process when a heap outgrows its limit ("Fatal JavaScript out of memory"),
and that process must never be a notebook's kernel. Where the kernel has pidfds the worker is
forked from a fork server that has imported what it needs (:mod:`helpers.tooling.fork_server`):
more than half the CPU time of a short program was Python's start and imports.

The program's only reach is ``tools``: one async function per tool it may call, each of which
sends the call to the caller (:class:`ProgramHost`) and resolves to the tool's output text (a
tool's error rejects it, with the error's text). Nothing else is there: no ``require``, no
``process``, no ``fetch``, no file or network access (V8 alone has none), no dynamic
``import()`` (there is no module loader: it rejects), and the globals that reach memory outside
the JavaScript heap are deleted before the program runs (``WebAssembly``, ``ArrayBuffer``, the
typed arrays, ``DataView``, ``Atomics``: a typed array's bytes are not counted by the heap
limit).

Every limit is a field of :class:`ProgramLimits`, checked where it can be checked first:

- **time**: the limit counts the program's own work, never the machine's business. The caller
  kills the worker once it has used ``cpu_time_limit_s`` seconds of **CPU time** on the program
  (read from ``/proc``; ``RLIMIT_CPU`` behind it, and alone where there is no ``/proc``): the
  time it waits for a core on a busy machine is not counted, nor the time its tool calls take
  (they run in the caller, each within its own limit, at most ``max_tool_calls`` of them). A
  worker idle for ``idle_limit_s`` seconds (no CPU used, every thread asleep: not waiting for a
  core or the disk) while none of its tool calls runs waits for something that cannot come (the
  isolate has no timers: a promise that never settles), and is stopped; ``hang_guard_s`` of wall
  clock in which the worker used no CPU at all (tool calls left out; from the start where there
  is no ``/proc``) is the last line, many times the CPU limit, for a worker that neither works
  nor idles (stopped, or stuck on the disk): a correct program that a busy machine gives a
  sliver of a core still moves, and is never stopped by it;
- **memory**: the caller kills a worker whose resident memory passes ``max_rss_bytes``, and it
  looks while a tool runs too (the program's JavaScript goes on meanwhile): the limit that always
  holds. Behind it, V8's heap limit (``heap_limit_bytes``: mini-racer checks it at V8's garbage
  collections, and stops the program with an error when it finds it passed; a long string often
  outgrows it between two) and V8's old-space cap, and ``RLIMIT_DATA`` on what the process may
  map at all. ``/proc`` gives the resident memory; on macOS, which has none, the limits behind
  it hold alone;
- **tool calls**: at most ``max_tool_calls`` per program (and the host counts each against the
  turn's caps, :class:`helpers.base.limits.TurnLimits`);
- **sizes**: the program's text (``max_program_chars``), each message from the worker
  (``max_message_bytes``), the value returned (``max_result_chars``).

:func:`run_program` never raises for anything a program does: it returns a
:class:`ProgramResult` whose ``error`` says which limit stopped it, or what the program threw.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import selectors
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

from helpers.tooling.fork_server import fork_server
from helpers.tooling.worker_pipes import (
    WORKER_READY,
    FrameTooLarge,
    WorkerProcess,
    WorkWatch,
    next_job,
    read_frame,
    rss_bytes,
    set_limit,
    worker_replies,
    write_frame,
)

#: A program's time limit by default, in seconds of its worker's CPU time (user and system, all
#: threads; waiting for a core and the tool calls' own time are not counted).
PROGRAM_CPU_TIME_LIMIT_S = 30.0
#: Seconds of wall clock a worker may be idle (no CPU used, every thread asleep:
#: :class:`helpers.tooling.worker_pipes.WorkWatch`) while none of its tool calls runs: the
#: isolate has no timers, so a program idle so long waits for a promise that never settles. A
#: worker waiting for a core or for the disk on a busy machine is not idle.
PROGRAM_IDLE_LIMIT_S = 10.0
#: A program's hang guard by default, in seconds of wall clock (tool calls left out) in which
#: its worker used no CPU at all: 20 times the CPU limit. Where ``/proc`` is missing it counts
#: from the program's start, so a program that needs all of its CPU time still ends on a machine
#: that gives it a twentieth of a core (four busy processes per core at a higher priority give
#: about a thirteenth).
PROGRAM_HANG_GUARD_S = 20 * PROGRAM_CPU_TIME_LIMIT_S
#: The V8 heap a program may use, in bytes; past it, mini-racer stops the program.
PROGRAM_HEAP_LIMIT_BYTES = 64 * 2**20
#: The resident memory of a program's worker process (V8, Python and all), in bytes; the caller
#: kills a worker past it. A worker starts at about 65 MB; the caller looks every
#: :data:`RSS_CHECK_INTERVAL_S`, so a program that allocates fast overshoots by a few MB before
#: it is stopped, and this leaves room below 256 MB for that.
PROGRAM_MAX_RSS_BYTES = 224 * 2**20
#: Tool calls one program may make.
MAX_TOOL_CALLS_PER_PROGRAM = 16
#: The longest tool output handed to a program, in characters: a longer one rejects the call
#: (room for the largest document the workbook's tools return, 6.4 MB; a string of this many
#: characters fits the heap limit).
MAX_PROGRAM_TOOL_OUTPUT_CHARS = 16_000_000
#: The longest program text, in characters.
MAX_PROGRAM_CHARS = 100_000
#: The longest text a program may return, in characters (a longer one is an error, not cut).
MAX_PROGRAM_RESULT_CHARS = 16_000_000
#: The largest message a worker may send (a tool call's arguments, the returned value), in bytes
#: of UTF-8: room for a result of :data:`MAX_PROGRAM_RESULT_CHARS` characters of ASCII-escaped
#: JSON.
MAX_PROGRAM_MESSAGE_BYTES = 128 * 2**20
#: How often the caller looks at the worker's memory while it waits, in seconds.
RSS_CHECK_INTERVAL_S = 0.005
#: V8's old-space cap in the worker, in MB: behind the heap limit, it ends the worker (V8's
#: fatal out-of-memory) if a program outgrows the heap limit between two of its checks.
V8_MAX_OLD_SPACE_MB = 128
#: What the worker may map (``RLIMIT_DATA``), in bytes: V8 reserves its code range as writable
#: memory at start (it does not start under 500 MB here), so this is a last line, far above
#: :data:`PROGRAM_MAX_RSS_BYTES`, which the caller enforces.
PROGRAM_WORKER_DATA_BYTES = 1_200_000_000
#: Seconds of wall clock a worker may take to start (Python, mini-racer, V8): a hang guard (it
#: takes 0.1 s on an idle machine, and was seen taking 30 s beside busy processes of a higher
#: priority).
PROGRAM_WORKER_START_TIMEOUT_S = 600.0
#: Seconds of CPU time a worker gets beyond its program's time limit before ``RLIMIT_CPU``.
PROGRAM_WORKER_CPU_GRACE_S = 2

#: The globals deleted before a program runs: those that reach memory outside the JavaScript
#: heap, which V8's heap limit does not count.
_DELETED_GLOBALS = (
    "WebAssembly",
    "ArrayBuffer",
    "SharedArrayBuffer",
    "DataView",
    "Atomics",
    "Int8Array",
    "Uint8Array",
    "Uint8ClampedArray",
    "Int16Array",
    "Uint16Array",
    "Int32Array",
    "Uint32Array",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "BigInt64Array",
    "BigUint64Array",
)
#: The globals set to ``undefined`` (declared with ``var``, they cannot be deleted): mini-racer's
#: timers, which need the ``SharedArrayBuffer`` deleted above; a program has no use for a timer
#: that outlives it.
_DISABLED_GLOBALS = ("setTimeout", "clearTimeout", "__timer_manager")


@dataclass(frozen=True)
class ProgramLimits:
    """The limits of one program (see the module's docstring); each must be positive.

    Attributes:
        cpu_time_limit_s: seconds of the worker's CPU time the program may use.
        idle_limit_s: seconds of wall clock the worker may be idle (no CPU, every thread
            asleep) while no tool call of its runs (a program waiting for a promise that never
            settles).
        hang_guard_s: seconds of wall clock in which the worker used no CPU (tool calls left
            out; from the start where ``/proc`` is missing): the last line, for a worker that
            is neither working nor idle (see :data:`PROGRAM_HANG_GUARD_S`).
        heap_limit_bytes: V8 heap bytes.
        max_rss_bytes: the worker process's resident bytes.
        max_tool_calls: tool calls per program.
        max_tool_output_chars: characters of one tool output handed to the program.
        max_program_chars: characters of program text.
        max_result_chars: characters of the returned value's text.
        max_message_bytes: bytes of one message from the worker.
    """

    cpu_time_limit_s: float = PROGRAM_CPU_TIME_LIMIT_S
    idle_limit_s: float = PROGRAM_IDLE_LIMIT_S
    hang_guard_s: float = PROGRAM_HANG_GUARD_S
    heap_limit_bytes: int = PROGRAM_HEAP_LIMIT_BYTES
    max_rss_bytes: int = PROGRAM_MAX_RSS_BYTES
    max_tool_calls: int = MAX_TOOL_CALLS_PER_PROGRAM
    max_tool_output_chars: int = MAX_PROGRAM_TOOL_OUTPUT_CHARS
    max_program_chars: int = MAX_PROGRAM_CHARS
    max_result_chars: int = MAX_PROGRAM_RESULT_CHARS
    max_message_bytes: int = MAX_PROGRAM_MESSAGE_BYTES

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            number = isinstance(value, int | float) and not isinstance(value, bool)
            if not number or not math.isfinite(value) or value <= 0:
                raise ValueError(f"ProgramLimits.{name} must be a positive number, got {value!r}")


class ProgramHost(Protocol):
    """What runs a program's tool calls (the turn's: :class:`helpers.loop.dispatch.ProgramCalls`).

    ``tool_names`` are the tools a program may call (the functions of its ``tools`` object);
    calling the host runs one: ``host(name, arguments_json)`` returns ``(True, output)`` or
    ``(False, error_message)`` and never raises for a bad call.
    """

    def tool_names(self) -> list[str]: ...

    def __call__(self, name: str, arguments_json: str) -> tuple[bool, str]: ...


@dataclass(frozen=True)
class ProgramResult:
    """How a program ended.

    Attributes:
        ok: it returned a value (else ``error`` says why not).
        text: the returned value as text: a string as it is, anything else as JSON
            (``undefined`` as ``null``); ``""`` when not ``ok``.
        error: what stopped it: what it threw, or the limit it passed; ``""`` when ``ok``.
        tool_calls: the tool calls it asked for (refused ones too).
        seconds: wall-clock seconds from start to end, the worker's start included.
        peak_rss_bytes: the worker's largest resident memory the caller saw, in bytes.
        cpu_seconds: the worker's CPU time on the program, in seconds (what
            ``cpu_time_limit_s`` counts; 0 where ``/proc`` is missing).
    """

    ok: bool
    text: str
    error: str
    tool_calls: int
    seconds: float
    peak_rss_bytes: int
    cpu_seconds: float = 0.0


class ProgramError(RuntimeError):
    """A program did not return a value; the message says why (the run_program tool raises it,
    so the model reads it as the call's error result)."""


#: The JavaScript run before the program: ``tools`` (one async function per tool name, calling
#: the host through the one Python function, which is then out of the program's reach) and the
#: deleted globals. ``%s``: the tool names, then the deleted globals, as JSON arrays.
_PRELUDE = """
(() => {
  const call = globalThis.__workbook_call, stringify = JSON.stringify, parse = JSON.parse;
  delete globalThis.__workbook_call;
  for (const name of %s) delete globalThis[name];
  for (const name of %s) globalThis[name] = undefined;
  const tools = Object.create(null);
  for (const name of %s) {
    tools[name] = async (args = {}) => {
      const reply = parse(await call(name, stringify(args === undefined ? {} : args) ?? null));
      if (!reply.ok) throw new Error(reply.error);
      return reply.output;
    };
  }
  Object.defineProperty(globalThis, "tools", { value: Object.freeze(tools) });
})();
"""

#: The program, compiled as the body of an async function (a syntax error is the program's own
#: error, and its text cannot reach outside the function), and what it returns as JSON text.
_RUN = r"""
(async () => {
  const stringify = JSON.stringify;  // the program may replace JSON's; this one is kept
  const describe = (e) => {
    try {
      if (!(e instanceof Error)) return `the program threw ${typeof e}: ${String(e)}`;
      // the program's line: its frame is "eval at ... <anonymous>:LINE:COLUMN", and the
      // function's text starts with two lines of its own ("async function anonymous(tools", ") {")
      const at = /eval at [^\n]*?, <anonymous>:(\d+):\d+\)?\s*$/m.exec(String(e.stack || ""));
      return `${e.name}: ${e.message}` + (at ? ` (program line ${Number(at[1]) - 2})` : "");
    } catch { return "the program threw a value that cannot be shown"; }
  };
  let value;
  try {
    const AsyncFunction = (async () => {}).constructor;
    value = await new AsyncFunction("tools", %s)(tools);
  } catch (e) {
    return stringify({ ok: false, error: describe(e) });
  }
  try {
    const text = typeof value === "string" ? value : stringify(value === undefined ? null : value);
    return stringify({ ok: true, text: text === undefined ? "null" : text });
  } catch (e) {
    return stringify({ ok: false, error: "the returned value is not JSON: " + describe(e) });
  }
})()
"""


def run_program(code: str, host: ProgramHost, limits: ProgramLimits | None = None) -> ProgramResult:
    """Run the JavaScript ``code`` (the body of an async function; ``return`` gives its value)
    in a fresh V8 isolate of its own worker process, within ``limits``.

    Args:
        code: the program: statements, with ``await tools.NAME({...})`` for each tool call.
        host: runs its tool calls (:class:`ProgramHost`): the program's only reach.
        limits: :class:`ProgramLimits` (default: the module's constants).

    Returns:
        A :class:`ProgramResult`. Never raises for anything the program does (a syntax error,
        a throw, a limit passed, a worker that dies): ``ok`` is then ``False`` and ``error``
        says why, naming the limit and its value.
    """
    limits = limits or ProgramLimits()
    started = time.monotonic()
    if not isinstance(code, str):
        return _failed("the program must be a string of JavaScript", 0, started, 0)
    if len(code) > limits.max_program_chars:
        return _failed(
            f"the program is {len(code):,} characters long; at most "
            f"{limits.max_program_chars:,} are run",
            0,
            started,
            0,
        )
    try:
        worker = _ProgramWorker(limits)
    except OSError as exc:
        return _failed(str(exc), 0, started, 0)
    try:
        return worker.run(code, host, started)
    finally:
        worker.kill()


def _bounded(reply: tuple[bool, str], limits: ProgramLimits) -> tuple[bool, str]:
    """A tool call's reply as the program gets it: an output over
    ``limits.max_tool_output_chars`` becomes an error saying so (the tool ran; its output is in
    the store)."""
    ok, text = reply
    if ok and len(text) > limits.max_tool_output_chars:
        return False, (
            f"the tool's output is {len(text):,} characters, over the "
            f"{limits.max_tool_output_chars:,} a program may take in; ask the tool for less"
        )
    return ok, text


#: The longest error text a program's end may carry, in characters (a program may throw a
#: message of megabytes; the model reads this much of it).
MAX_PROGRAM_ERROR_CHARS = 2_000


def _failed(
    error: str, calls: int, started: float, peak_rss: int, cpu_s: float = 0.0
) -> ProgramResult:
    if len(error) > MAX_PROGRAM_ERROR_CHARS:
        error = error[:MAX_PROGRAM_ERROR_CHARS] + f"… ({len(error):,} characters in all)"
    return ProgramResult(False, "", error, calls, time.monotonic() - started, peak_rss, cpu_s)


class _ProgramWorker(WorkerProcess):
    """One worker process, running :func:`_program_worker_main`, for one program: its pipes,
    its memory and its CPU time watched (:meth:`over_a_limit`)."""

    def __init__(self, limits: ProgramLimits) -> None:
        """Start the worker (with an empty environment but ``PATH``) and wait until it is
        ready.

        Raises:
            OSError: it did not start, or did not say it was ready in time (it is killed).
        """
        self.limits = limits
        self.peak_rss = 0
        env = {"PATH": os.environ.get("PATH", "")}
        self._hang_deadline = 0.0
        super().__init__(
            "helpers.tooling.program_sandbox",
            "_program_worker_main",
            what="the program's worker process",
            start_timeout_s=PROGRAM_WORKER_START_TIMEOUT_S,
            env=env,
            forker=fork_server(__name__, "_program_worker_imports", "_program_worker_main", env),
        )
        self.watch = WorkWatch(self.pid)

    @property
    def cpu_used_s(self) -> float:
        """The worker's CPU seconds on the program so far."""
        return self.watch.cpu_used_s

    def start_clocks(self) -> None:
        """Start counting the program's CPU time, its idle time and its hang guard (from now:
        the worker's own start is not the program's)."""
        self.watch.start()
        self._hang_deadline = time.monotonic() + self.limits.hang_guard_s

    def over_a_limit(self, *, in_tool_call: bool = False) -> str | None:
        """Why the worker must stop now, or ``None``: its resident memory, its CPU time on the
        program, and (unless one of its tool calls is running) its idle time and the hang
        guard (which every moment of the worker's CPU pushes back)."""
        limits = self.limits
        if self.ended():  # its pipe says how it ended; its pid may be another's already
            return None
        rss = rss_bytes(self.pid)
        self.peak_rss = max(self.peak_rss, rss)
        if rss > limits.max_rss_bytes:
            return _over_memory(rss, limits)
        cpu, idle_s = self.watch.look()
        if cpu is not None and cpu > limits.cpu_time_limit_s:
            return _over_cpu(limits)
        if cpu is not None:  # still working, however slowly: the guard counts from its last CPU
            moved_until = self.watch.cpu_moved_at + limits.hang_guard_s
            self._hang_deadline = max(self._hang_deadline, moved_until)
        if in_tool_call:
            return None
        if cpu is not None and idle_s > limits.idle_limit_s:
            return (
                f"the program waited {limits.idle_limit_s:g} s without running (nothing can wake "
                "it: a promise that never settles?) and was stopped"
            )
        if time.monotonic() >= self._hang_deadline:
            if cpu is not None:
                return (
                    f"the program's worker used no CPU for {limits.hang_guard_s:g} s of wall "
                    "clock, neither working nor waiting (its hang guard), and was stopped"
                )
            return (
                f"the program's worker did not end within its hang guard of "
                f"{limits.hang_guard_s:g} s of wall clock and was stopped"
            )
        return None

    def tool_call_took(self, seconds: float) -> None:
        """A tool call of the program's ran ``seconds``: the tool's time, not the program's."""
        self._hang_deadline += seconds
        self.watch.rest()

    def failed(self, error: str, calls: int, started: float) -> ProgramResult:
        return _failed(error, calls, started, self.peak_rss, self.cpu_used_s)

    def send(self, message: dict[str, Any]) -> None:
        write_frame(self.to_worker, json.dumps(message).encode("ascii"))

    def receive(self) -> dict[str, Any] | str:
        """The worker's next message, or why there is none: a limit of :meth:`over_a_limit`
        passed, it ended, or its message is too large (a ``str``)."""
        while True:
            stop = self.over_a_limit()
            if stop is not None:
                return stop
            if not self._readable(time.monotonic() + RSS_CHECK_INTERVAL_S):
                continue
            try:  # a message, once it starts, is read whole (within the hang guard)
                payload = read_frame(
                    self.from_worker, self._hang_deadline, max_bytes=self.limits.max_message_bytes
                )
            except EOFError:
                return self._ended()
            except FrameTooLarge as exc:
                return f"the program sent {exc}"
            if payload is not None:
                return _checked_message(payload)

    def _readable(self, until: float) -> bool:
        """Whether the worker's pipe has something to read (or closed) before ``until``."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.from_worker, selectors.EVENT_READ)
            return bool(selector.select(max(until - time.monotonic(), 0)))

    def _ended(self) -> str:
        status = self.exit_status()
        if status == -signal.SIGXCPU:  # RLIMIT_CPU: the limit where /proc is missing
            return _over_cpu(self.limits)
        return (
            f"the program's process ended (exit status {status}) before the program did; a "
            f"program that outgrows its memory limits (a heap of "
            f"{self.limits.heap_limit_bytes:,} bytes) ends so"
        )

    def run(self, code: str, host: ProgramHost, started: float) -> ProgramResult:
        """Send the program, answer its tool calls, and return how it ended."""
        limits, calls = self.limits, 0
        try:
            self.send({"program": code, "tools": host.tool_names(), **vars(limits)})
        except OSError as exc:
            return self.failed(f"the program's worker process ended: {exc}", 0, started)
        self.start_clocks()
        while True:
            message = self.receive()
            if isinstance(message, str):
                return self.failed(message, calls, started)
            if message["kind"] == "end":
                break
            calls += 1
            if calls > limits.max_tool_calls:
                reply = (False, f"over the limit of {limits.max_tool_calls} tool calls per program")
            else:
                called = time.monotonic()
                reply = self.call_host(host, message["call"], message["arguments"])
                self.tool_call_took(time.monotonic() - called)
                if isinstance(reply, str):
                    return self.failed(reply, calls, started)
            try:
                self.send({"ok": reply[0], "output" if reply[0] else "error": reply[1]})
            except OSError:
                return self.failed(self._ended(), calls, started)
        if not message["ok"]:
            return self.failed(message["error"], calls, started)
        text = message["text"]
        if len(text) > limits.max_result_chars:
            return self.failed(
                f"the program returned {len(text):,} characters, over the limit of "
                f"{limits.max_result_chars:,}; return only what the answer needs",
                calls,
                started,
            )
        seconds = time.monotonic() - started
        return ProgramResult(True, text, "", calls, seconds, self.peak_rss, self.cpu_used_s)

    def call_host(
        self, host: ProgramHost, name: str, arguments_json: str
    ) -> tuple[bool, str] | str:
        """The host's reply to one call, bounded (:func:`_bounded`), while the worker's memory
        and CPU time are watched: the program's JavaScript goes on running while a tool runs, so
        a worker past either limit is killed then too (the reason, a ``str``, once the tool is
        done)."""
        done: list[tuple[bool, str]] = []
        failed: list[BaseException] = []

        def work() -> None:
            try:
                done.append(_bounded(host(name, arguments_json), self.limits))
            except BaseException as exc:  # the host's own bug: the program's error, not a raise
                failed.append(exc)

        worker = threading.Thread(target=work, name="program-tool-call", daemon=True)
        worker.start()
        stopped = None
        while worker.is_alive():
            worker.join(RSS_CHECK_INTERVAL_S)
            if stopped is None:
                stopped = self.over_a_limit(in_tool_call=True)
                if stopped is not None:
                    self.kill()
        if stopped is not None:
            return stopped
        if failed:
            return f"the tool call {name!r} failed in the host: {type(failed[0]).__name__}"
        return done[0]


def _over_cpu(limits: ProgramLimits) -> str:
    return f"the program used more than {limits.cpu_time_limit_s:g} s of CPU time and was stopped"


def _over_memory(rss: int, limits: ProgramLimits) -> str:
    return (
        f"the program's process used {rss:,} bytes of memory, over the limit of "
        f"{limits.max_rss_bytes:,}, and was stopped"
    )


def _checked_message(payload: bytes) -> dict[str, Any] | str:
    """A worker's message, if it is one of its two kinds with the fields of its kind (a call:
    ``call`` and ``arguments``, strings; an end: ``ok`` and ``text`` or ``error``); else why
    not, as the program's error."""
    try:
        message = json.loads(payload)
    except ValueError:
        message = None
    if isinstance(message, dict):
        kind = message.get("kind")
        ending = "text" if message.get("ok") else "error"
        fields = {"call": ("call", "arguments"), "end": (ending,)}
        wanted = fields.get(kind) if isinstance(kind, str) else None
        typed = kind == "call" or isinstance(message.get("ok"), bool)
        if wanted and typed and all(isinstance(message.get(f), str) for f in wanted):
            return message
    return "the program's worker sent a message that is not one of its own, and was stopped"


# -- the worker's side --------------------------------------------------------------------------


def _program_worker_imports() -> None:
    """What a worker imports before V8 starts, run once in its fork server
    (:mod:`helpers.tooling.fork_server`): no V8 yet, whose threads would not survive a fork."""
    import resource  # noqa: F401

    import py_mini_racer  # noqa: F401


def _program_worker_main() -> None:
    """The body of a worker process: lower its limits, start V8, say it is ready, run one
    program (the job on stdin), send its tool calls and its end on stdout, and exit."""
    import resource

    from py_mini_racer import init_mini_racer

    replies = worker_replies()
    set_limit(resource.RLIMIT_DATA, PROGRAM_WORKER_DATA_BYTES)
    init_mini_racer(flags=("--single-threaded", f"--max-old-space-size={V8_MAX_OLD_SPACE_MB}"))
    write_frame(replies, WORKER_READY)
    job = next_job(PROGRAM_WORKER_CPU_GRACE_S)
    if job is None:
        return
    try:
        end = asyncio.run(_run_in_isolate(job, replies))
    except Exception as exc:  # mini-racer's own errors (the heap limit): the program's end
        end = {"kind": "end", "ok": False, "error": _isolate_error(exc, job)}
    write_frame(replies, json.dumps(end).encode("ascii"))


def _isolate_error(exc: BaseException, job: dict[str, Any]) -> str:
    from py_mini_racer import JSOOMException

    if isinstance(exc, JSOOMException):
        return (
            f"the program used more than its {job['heap_limit_bytes']:,} bytes of JavaScript "
            "heap and was stopped"
        )
    return f"{type(exc).__name__}: {exc}"


async def _run_in_isolate(job: dict[str, Any], replies: int) -> dict[str, Any]:
    """Run the job's program in a fresh isolate; each tool call goes to the caller as a message
    (``{"kind": "call", "call", "arguments"}``) and waits for its reply. Returns the end
    message: ``{"kind": "end", "ok": True, "text"}`` or ``{"kind": "end", "ok": False,
    "error"}``, built here from what the program's wrapper gave (never taken from it whole)."""
    from py_mini_racer import mini_racer

    async def call(name: object, arguments_json: object) -> str:
        if not isinstance(name, str) or not isinstance(arguments_json, str):
            error = "a tool takes one object of arguments that JSON can hold"
            return json.dumps({"ok": False, "error": error})
        message = {"kind": "call", "call": name, "arguments": arguments_json}
        write_frame(replies, json.dumps(message).encode("ascii"))
        reply = read_frame(0, None)
        assert reply is not None
        return reply.decode("ascii")

    with mini_racer() as ctx:
        ctx.set_hard_memory_limit(job["heap_limit_bytes"])
        async with ctx.wrap_py_function(call) as js_call:
            ctx.eval("this")["__workbook_call"] = js_call
            prelude = (_DELETED_GLOBALS, _DISABLED_GLOBALS, job["tools"])
            ctx.eval(_PRELUDE % tuple(json.dumps(names) for names in prelude))
            wrapped = await ctx.eval(_RUN % json.dumps(job["program"]))
    return _end_message(wrapped)


def _end_message(wrapped: object) -> dict[str, Any]:
    """The end message from the wrapper's JSON text (``{"ok", "text"}`` or ``{"ok", "error"}``);
    a program that ended otherwise is said to have."""
    try:
        end = json.loads(wrapped) if isinstance(wrapped, str) else None
    except ValueError:
        end = None
    if isinstance(end, dict) and end.get("ok") is True and isinstance(end.get("text"), str):
        return {"kind": "end", "ok": True, "text": end["text"]}
    if isinstance(end, dict) and end.get("ok") is False and isinstance(end.get("error"), str):
        return {"kind": "end", "ok": False, "error": f"the program failed: {end['error']}"}
    return {"kind": "end", "ok": False, "error": "the program ended without a value it could give"}
