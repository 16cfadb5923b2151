"""Hard-stop checkpoints: an attendee's function against the lesson's properties, on generated
inputs.

A checkpoint is a list of :class:`Property` objects. Each states one thing the lesson teaches
("a prune with both filters deletes only the rows that are old *and* in the thread"), draws its
inputs from a Hypothesis strategy that covers the whole input space of the TODO's contract (edge
cases included), and checks the attendee's function on each input, usually against the library's
reference implementation (a *differential* check). Hypothesis runs derandomized, so a checkpoint
is deterministic, and it shrinks a failing input to a smallest one.

What a checkpoint cell shows is always a few lines, never a traceback through the checker:

- the TODO still the stub (run before it is written: *Run All*, or cells in order), one line::

    TODO 2 (prune) is not written yet: replace the raise NotImplementedError in the TODO 2 cell
    above with your code, run that cell, then this one · stuck? hint('02', 2)

- a property that does not hold: the property, the smallest failing input, what was expected
  and what the attendee's code returned, and where to look next::

    ✗ TODO 2 failed · prune: with both filters, only rows old AND in the thread go
       input     prune(older_than=1 day, thread_id='t0') over rows: t0 2 days old, t0 1 min old
       expected  1 deleted; left: t0 1 min old
       got       2 deleted; left: (none)
       stuck? hint('02', 2) · the whole input: why()

- the attendee's code raised where the contract says it must not: under its own headline, the
  exception, the input, and the property being checked::

    ✗ TODO 2 failed · guarded_call: your code raised KeyError: 'boom'
       input     guarded_call(registry of ['get_page'], 'explore', 'get_page', {'text': ''})
       checking  a tool the mode allows runs once, with the arguments as given, …
       stuck? hint('07', 2) · the whole input and your traceback: why()

``why()`` (in :data:`helpers.__all__`, imported by every notebook with ``hint``) prints the last
stop in full: the whole input and, when the attendee's code raised, its traceback. A success
says what was checked, once: ``✓ TODO 2 passed — 5 properties held on up to 125 generated
inputs``. The marks ✓ and ✗ (:mod:`helpers.display.marks`, in every desktop font) always stand beside the
words *passed* and *failed*.
"""

from __future__ import annotations

import contextlib
import os
import random
import reprlib
import time
import traceback
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from helpers.display.marks import FAIL_MARK, PASS_MARK
from helpers.text.escaping import for_terminal

T = TypeVar("T")

#: Generated inputs per property unless the property says otherwise.
DEFAULT_EXAMPLES = 60
#: Runs of the attendee's code spent shrinking a failing input to a smaller one.
SHRINK_RUNS = 80
#: The longest line a failure shows, in characters (``why()`` shows everything).
SHOWN_CHARS = 150


class Broken(Exception):
    """Raised by a property's check: the attendee's code did not do what the property says.

    Args:
        expected: what the reference (or the rule) gives, as short text.
        got: what the attendee's code gave, as short text.
    """

    def __init__(self, expected: str, got: str):
        super().__init__(f"expected {expected}, got {got}")
        self.expected, self.got = expected, got


class Raised(Exception):
    """The attendee's code raised where it must not: carries the exception and its traceback."""

    def __init__(self, exc: BaseException):
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.exc = exc
        self.trace = "".join(traceback.format_exception(exc))


def attempt(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call the attendee's ``fn``; any exception becomes :class:`Raised` (the stub's
    ``NotImplementedError`` passes through unchanged: :meth:`Checkpoint.run` turns it into the
    one line :class:`TodoNotWritten`).
    """
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise
    except Exception as exc:
        raise Raised(exc) from exc


def attempt_or(
    allowed: type[Exception] | tuple[type[Exception], ...],
    fn: Callable[..., T],
    *args: Any,
    **kwargs: Any,
) -> T | Exception:
    """:func:`attempt`, except that an exception of the ``allowed`` types (one the TODO's
    contract asks for, such as ``ValueError``) is returned, for the property to judge."""
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        raise
    except allowed as exc:
        return exc
    except Exception as exc:
        raise Raised(exc) from exc


def expect(holds: bool, expected: str, got: Any) -> None:
    """Raise :class:`Broken` unless ``holds``; ``got`` is shown with :func:`short`."""
    if not holds:
        raise Broken(expected, got if isinstance(got, str) else short(got))


_REPR = reprlib.Repr()  # keyword arguments only from Python 3.12
_REPR.maxstring, _REPR.maxother, _REPR.maxlevel = 70, 70, 4
_REPR.maxlist = _REPR.maxdict = _REPR.maxtuple = 6


def short(value: Any, width: int = SHOWN_CHARS) -> str:
    """A one-line ``repr`` of ``value`` of at most ``width`` characters (long strings and
    collections elided in the middle by :mod:`reprlib`), safe for a terminal."""
    text = for_terminal(_REPR.repr(value)).replace("\n", "\\n")
    return text if len(text) <= width else text[: width - 1] + "…"


def _one_line(text: str, at: int, newline: str = "\\n") -> tuple[str, int]:
    # each line break is shown as ``newline``: the index moves with them
    return text.replace("\n", newline), at + (len(newline) - 1) * text.count("\n", 0, at)


def _window(text: str, start: int, width: int) -> str:
    end = start + width
    cut = ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
    return for_terminal(cut)


def _start(at: int, longest: int, width: int) -> int:
    return min(max(at - width // 3, 0), max(longest - width, 0))


def around(text: str, at: int, width: int = SHOWN_CHARS, newline: str = "\\n") -> str:
    """``text`` on one line, safe for a terminal, showing its character ``at``: whole when it has
    at most ``width`` characters, else a window of ``width`` characters with ``at`` a third of
    the way in, and ``…`` where the window cuts (escapes of invisible characters add a few).
    A line break is shown as ``newline``: ``\\n``, as JSON writes it, or ``\\x0a`` in a text
    (a program's source) where ``\\n`` is two characters of its own."""
    text, at = _one_line(text, at, newline)
    return _window(text, _start(at, len(text), width), width)


def first_difference(one: str, other: str) -> int:
    """The index of the first character where ``one`` and ``other`` differ (the shorter one's
    length when it is the other's start; the length when they are equal)."""
    return next(
        (i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b),
        min(len(one), len(other)),
    )


def differing(expected: str, got: str, width: int = SHOWN_CHARS) -> tuple[str, str]:
    """``expected`` and ``got`` each shown as :func:`around` shows a text, in the same window:
    the one around their first difference (two long texts that differ near their end show
    their ends, not their starts), whole when both fit in ``width`` characters."""
    at = first_difference(expected, got)
    (expected, at), (got, _) = _one_line(expected, at), _one_line(got, at)
    start = _start(at, max(len(expected), len(got)), width)
    return _window(expected, start, width), _window(got, start, width)


def expect_same(want: Any, got: Any) -> None:
    """Raise :class:`Broken` unless ``got == want``: each shown as :func:`short` shows it, or,
    when both would be elided, their reprs in one window around their first difference (two
    values that differ only in a part :func:`short` cuts out would look the same)."""
    if got == want:
        return
    shown = short(want), short(got)
    full = repr(want), repr(got)
    if all(s != for_terminal(f).replace("\n", "\\n") for s, f in zip(shown, full, strict=True)):
        shown = differing(*full, width=SHOWN_CHARS - 4)
    raise Broken(*shown)


@dataclass(frozen=True)
class Property(Generic[T]):
    """One thing a TODO's function must do, checked on generated inputs.

    Args:
        statement: the rule in the lesson's words, shown when it fails.
        inputs: the Hypothesis strategy of inputs (the whole space the TODO's contract names).
        check: given one input, returns when the rule holds and raises :class:`Broken` (or
            :class:`Raised`, through :func:`attempt`) when it does not.
        show: the input as one short line (default :func:`short`).
        terms: the words the TODO's text must contain for this rule to be doable from the page
            (``tests/test_notebooks.py`` checks them).
        examples: how many inputs to generate (fewer for inputs that touch a database).
        always: inputs checked every time, before any is generated: the edges a generator may
            not happen to draw in ``examples`` tries (a hidden count of four digits, the one
            shape of result a rule is about), each as small as the edge allows.
    """

    statement: str
    inputs: st.SearchStrategy[T]
    check: Callable[[T], None]
    show: Callable[[T], str] = short
    terms: tuple[str, ...] = ()
    examples: int = DEFAULT_EXAMPLES
    always: tuple[T, ...] = ()


def _cut(text: str) -> str:
    """``text`` on one line of at most :data:`SHOWN_CHARS` characters, safe for a terminal."""
    text = " ".join(for_terminal(text).split("\n"))
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _is_cut(text: str) -> bool:
    """Whether :func:`_cut` cuts ``text``."""
    return len(" ".join(for_terminal(text).split("\n"))) > SHOWN_CHARS


@dataclass
class Failure:
    """A property that did not hold, on its smallest failing input.

    Attributes:
        todo: the TODO's label, ``"TODO 2 · prune"``.
        statement: the property, in the lesson's words.
        shown_input: the input as one short line; ``full_input`` is all of it (``why()``).
        expected, got: what the rule gives and what the attendee's code gave, as short text.
        trace: the traceback of the attendee's code, when it raised.
        raised: ``"KeyError: 'boom'"`` when the attendee's code raised where the contract says
            it must not; the report then has its own headline.
        hint: the hint call to show, ``"hint('02', 2)"``.
    """

    todo: str
    statement: str
    shown_input: str
    expected: str
    got: str
    full_input: str
    trace: str = ""
    raised: str = ""
    hint: str = ""

    @property
    def headline(self) -> str:
        """The first line: the TODO, the word *failed*, and what failed."""
        number, _, name = self.todo.partition(" · ")
        what = f"your code raised {self.raised}" if self.raised else self.statement
        return f"{FAIL_MARK} {number} failed · {name}: {what}"

    def lines(self) -> list[str]:
        """The short report: at most five lines of at most :data:`SHOWN_CHARS` characters (the
        headline may be longer: it is the property, whole)."""
        pointer = f"   stuck? {self.hint + ' · ' if self.hint else ''}"
        if self.raised:
            return [
                _cut(self.headline),
                f"   input     {_cut(self.shown_input)}",
                f"   checking  {_cut(self.statement)}",
                f"{pointer}the whole input and your traceback: why()",
            ]
        expected, got = _cut(self.expected), _cut(self.got)
        if _is_cut(self.expected) and _is_cut(self.got):  # both cut: show where they differ
            expected, got = differing(self.expected, self.got, SHOWN_CHARS - 4)
        return [
            self.headline,
            f"   input     {_cut(self.shown_input)}",
            f"   expected  {expected}",
            f"   got       {got}",
            f"{pointer}the whole input: why()",
        ]


class CheckpointStop(AssertionError):
    """A checkpoint stopped the notebook; ``str()`` is all the attendee sees, a few lines (in
    IPython, instead of a traceback: :func:`_install_short_reports`)."""


class CheckpointFailed(CheckpointStop):
    """A property did not hold; ``str()`` is the short report (:meth:`Failure.lines`)."""

    def __init__(self, failure: Failure):
        super().__init__("\n".join(failure.lines()))
        self.failure = failure


class TodoNotWritten(CheckpointStop):
    """The checkpoint ran the TODO's stub (its ``raise NotImplementedError``): the TODO is not
    written yet. ``str()`` is one line naming the TODO, what to do and the hint."""

    def __init__(self, notebook: str, todo: int, name: str):
        super().__init__(
            f"TODO {todo} ({name}) is not written yet: replace the raise NotImplementedError in "
            f"the TODO {todo} cell above with your code, run that cell, then this one · "
            f"stuck? hint({notebook!r}, {todo})"
        )
        self.notebook, self.todo, self.name = notebook, todo, name


#: The last stop of a checkpoint in this kernel (what ``why()`` shows).
_last_stop: CheckpointStop | None = None
#: The last checkpoint run for each (notebook, TODO): what the tests read the properties from.
REGISTERED: dict[tuple[str, int], Checkpoint] = {}


def why() -> None:
    """Print the last checkpoint stop of this kernel in full: the TODO, the property, the whole
    input, what was expected and what the attendee's code gave, and its traceback when it
    raised. After a stop for a TODO not written yet, says so; with no stop yet, says that."""
    if _last_stop is None:
        print("No checkpoint has stopped in this kernel: nothing to show.")
        return
    if isinstance(_last_stop, TodoNotWritten):
        print(str(_last_stop))
        return
    f = _last_stop.failure  # type: ignore[attr-defined]
    print(f"{f.todo}: {for_terminal(f.statement)}\n\ninput:\n{for_terminal(f.full_input)}\n")
    if f.raised:
        print(f"your code raised {for_terminal(f.raised)}; its traceback:\n{for_terminal(f.trace)}")
        return
    print(f"expected:\n{for_terminal(f.expected)}\n\ngot:\n{for_terminal(f.got)}")


def _show_short(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None):
    # IPython's custom exception handler: the short report instead of a traceback wall. The
    # cell still fails (nbval, nbclient and "Run all" stop at it).
    stb = str(value).splitlines()
    shell._showtraceback(etype, value, stb)
    return stb


def _install_short_reports() -> None:
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: the exception's message is the report
        return
    shell = get_ipython()
    if shell is not None and CheckpointStop not in shell.custom_exceptions:
        shell.set_custom_exc((CheckpointStop,), _show_short)


def _settings(examples: int) -> settings:
    # no explain phase: it reruns the attendee's code to annotate the failing input, which a
    # checkpoint's short report never shows (it took three quarters of a failing check's time)
    return settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        print_blob=False,
    )


@dataclass(frozen=True)
class Verdict:
    """How a property failed on one input: ``expected`` and ``got`` (short text), and, when
    the attendee's code raised, ``raised`` (``"KeyError: 'boom'"``) and its ``trace``."""

    expected: str
    got: str
    trace: str = ""
    raised: str = ""


def _run_once(prop: Property[Any], case: Any) -> Verdict | None:
    """``None`` if ``prop`` holds on ``case``, else how it failed.

    Raises:
        NotImplementedError: the attendee's function is still the stub.
    """
    try:
        prop.check(case)
    except NotImplementedError:
        raise
    except Broken as broken:
        return Verdict(broken.expected, broken.got)
    except Raised as raised:
        return Verdict("no exception", f"raised {raised}", raised.trace, str(raised))
    except Exception as exc:  # the attendee's code failed in a way attempt() did not wrap
        said = f"{type(exc).__name__}: {exc}"
        return Verdict("no exception", f"raised {said}", traceback.format_exc(), said)
    return None


def counterexample(prop: Property[T]) -> tuple[T, Verdict] | None:
    """The smallest generated input on which ``prop`` fails, with how it failed; ``None`` when
    it held on every generated input. Deterministic (derandomized). The inputs of
    :attr:`Property.always` are checked first, in order; the first that fails is returned as it
    is (each is already as small as its edge allows).

    Raises:
        NotImplementedError: the attendee's function is still the stub.
    """
    for case in prop.always:
        verdict = _run_once(prop, case)
        if verdict is not None:
            return case, verdict
    seed = zlib.crc32(prop.statement.encode("utf-8"))
    verdicts: dict[str, bool] = {}
    shrink_runs = 0

    def fails(case: T) -> bool:
        # shrinking is bounded by a count of runs, not a clock, so it stays deterministic: once
        # the budget is spent, every input not run yet is declined (and stays declined), and the
        # smallest failing input found so far stands
        nonlocal shrink_runs
        key = repr(case)
        if key not in verdicts:
            if any(verdicts.values()):
                if shrink_runs >= SHRINK_RUNS:
                    verdicts[key] = False
                    return False
                shrink_runs += 1
            verdicts[key] = _run_once(prop, case) is not None
        return verdicts[key]

    try:
        case = find(
            prop.inputs, fails, settings=_settings(prop.examples), random=random.Random(seed)
        )
    except NoSuchExample:
        return None
    verdict = _run_once(prop, case)
    if verdict is None:  # flaky: it failed while shrinking, not on a replay
        verdict = Verdict("the same answer every time", "a different answer on a second run")
    return case, verdict


def _record(notebook: str, todo: int, *, passed: bool) -> None:
    """Record the run in the attendee's store, for the room's progress (:mod:`helpers.course.room`)."""
    from helpers.course.room import record_checkpoint

    record_checkpoint(notebook, todo, passed=passed)


@dataclass
class Checkpoint:
    """The hard-stop checkpoint of one TODO.

    Args:
        notebook: the notebook's number, ``"02"``.
        todo: the TODO's number in that notebook.
        name: the function under test, for messages.
        properties: what must hold.
    """

    notebook: str
    todo: int
    name: str
    properties: Sequence[Property[Any]] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"TODO {self.todo} · {self.name}"

    def run(self) -> None:
        """Check every property in order; stop at the first that fails. On success, print
        ``✓ TODO N passed — …`` (once: nothing is returned for the cell to echo).

        Raises:
            TodoNotWritten: the TODO is still the stub (its ``NotImplementedError``).
            CheckpointFailed: a property failed (its short report is the message).
        """
        global _last_stop
        REGISTERED[(self.notebook, self.todo)] = self
        _install_short_reports()
        started = time.perf_counter()
        for prop in self.properties:
            try:
                found = counterexample(prop)
            except NotImplementedError:
                _last_stop = TodoNotWritten(self.notebook, self.todo, self.name)
                raise _last_stop from None
            if found is None:
                continue
            case, verdict = found
            failure = Failure(
                todo=self.label,
                statement=prop.statement,
                shown_input=prop.show(case),
                expected=verdict.expected,
                got=verdict.got,
                full_input=repr(case),
                trace=verdict.trace,
                raised=verdict.raised,
                hint=f"hint({self.notebook!r}, {self.todo})",
            )
            _record(self.notebook, self.todo, passed=False)
            _last_stop = CheckpointFailed(failure)
            raise _last_stop from None
        _record(self.notebook, self.todo, passed=True)
        inputs = sum(p.examples for p in self.properties)
        print(
            f"{PASS_MARK} TODO {self.todo} passed — {len(self.properties)} "
            f"{'property' if len(self.properties) == 1 else 'properties'} held on up to "
            f"{inputs:,} generated inputs ({time.perf_counter() - started:.1f} s)"
        )


@contextlib.contextmanager
def local_time_zone(name: str) -> Iterator[None]:
    """Run the block with the process's local time zone set to ``name`` (an IANA name): a
    checkpoint that involves times runs far from UTC, where a naive local time shows."""
    saved = os.environ.get("TZ")
    os.environ["TZ"] = name
    time.tzset()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
        time.tzset()
