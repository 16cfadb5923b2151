"""Hard-stop checkpoints: an attendee's function against the lesson's properties, on generated
inputs.

A checkpoint is a list of :class:`Property` objects. Each states one thing the lesson teaches
("a prune with both filters deletes only the rows that are old *and* in the thread"), draws its
inputs from a Hypothesis strategy that covers the whole input space of the TODO's contract (edge
cases included), and checks the attendee's function on each input, usually against the library's
reference implementation (a *differential* check). Hypothesis runs derandomized, so a checkpoint
is deterministic, and it shrinks a failing input to a smallest one.

A failure is short: the property, the smallest failing input, what was expected and what the
attendee's code returned (or raised), and where to look next. ``why()`` prints the whole input
and, when the attendee's code raised, its traceback::

    ❌ TODO 2 · prune: with both filters, only rows old AND in the thread go
       input     prune(older_than=1 day, thread_id='t0') over rows: t0 2 days old, t0 1 min old
       expected  1 deleted; left: t0 1 min old
       got       2 deleted; left: (none)
       stuck? hint('02', 2) · the whole input and any traceback: why()

A success says what was checked: ``✅ TODO 2 passed — 5 properties held on 180 generated inputs``.
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

from helpers.escaping import for_terminal

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
    ``NotImplementedError`` passes through unchanged, so its pointer is what the attendee sees).
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
    """

    statement: str
    inputs: st.SearchStrategy[T]
    check: Callable[[T], None]
    show: Callable[[T], str] = short
    terms: tuple[str, ...] = ()
    examples: int = DEFAULT_EXAMPLES


@dataclass
class Failure:
    """A property that did not hold, on its smallest failing input."""

    todo: str
    statement: str
    shown_input: str
    expected: str
    got: str
    full_input: str
    trace: str = ""
    hint: str = ""

    def lines(self) -> list[str]:
        """The short report: at most six lines of at most :data:`SHOWN_CHARS` characters."""

        def cut(text: str) -> str:
            text = " ".join(for_terminal(text).split("\n"))
            return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"

        return [
            f"❌ {self.todo}: {self.statement}",
            f"   input     {cut(self.shown_input)}",
            f"   expected  {cut(self.expected)}",
            f"   got       {cut(self.got)}",
            f"   stuck? {self.hint + ' · ' if self.hint else ''}"
            "the whole input" + (" and the traceback" if self.trace else "") + ": why()",
        ]


class CheckpointFailed(AssertionError):
    """A checkpoint stopped the notebook; ``str()`` is the short report."""

    def __init__(self, failure: Failure):
        super().__init__("\n".join(failure.lines()))
        self.failure = failure


_last_failure: Failure | None = None
#: The last checkpoint run for each (notebook, TODO): what the tests read the properties from.
REGISTERED: dict[tuple[str, int], Checkpoint] = {}


def why() -> None:
    """Print the last failed checkpoint in full: the input, expected, got, and the traceback of
    the attendee's code when it raised."""
    if _last_failure is None:
        print("No checkpoint has failed in this kernel.")
        return
    f = _last_failure
    print(f"{f.todo}: {f.statement}\n\ninput:\n{for_terminal(f.full_input)}\n")
    print(f"expected:\n{for_terminal(f.expected)}\n\ngot:\n{for_terminal(f.got)}")
    if f.trace:
        print(f"\nyour code raised:\n{for_terminal(f.trace)}")


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
    if shell is not None and CheckpointFailed not in shell.custom_exceptions:
        shell.set_custom_exc((CheckpointFailed,), _show_short)


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


def _run_once(prop: Property[Any], case: Any) -> tuple[str, str, str] | None:
    """``None`` if ``prop`` holds on ``case``, else (expected, got, traceback)."""
    try:
        prop.check(case)
    except NotImplementedError:
        raise
    except Broken as broken:
        return broken.expected, broken.got, ""
    except Raised as raised:
        return "no exception", f"raised {raised}", raised.trace
    except Exception as exc:  # the attendee's code failed in a way attempt() did not wrap
        return "no exception", f"raised {type(exc).__name__}: {exc}", traceback.format_exc()
    return None


def counterexample(prop: Property[T]) -> tuple[T, tuple[str, str, str]] | None:
    """The smallest generated input on which ``prop`` fails, with (expected, got, traceback);
    ``None`` when it held on every generated input. Deterministic (derandomized)."""
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
        verdict = ("the same answer every time", "a different answer on a second run", "")
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

    def run(self, *, passed: str = "") -> str:
        """Check every property in order; stop at the first that fails.

        Returns:
            The success line (also printed): ``✅ TODO N passed — …``.

        Raises:
            CheckpointFailed: a property failed (its short report is the message).
            NotImplementedError: the TODO is still the stub.
        """
        global _last_failure
        REGISTERED[(self.notebook, self.todo)] = self
        _install_short_reports()
        started = time.perf_counter()
        for prop in self.properties:
            found = counterexample(prop)
            if found is None:
                continue
            case, (expected, got, trace) = found
            _last_failure = Failure(
                todo=self.label,
                statement=prop.statement,
                shown_input=prop.show(case),
                expected=expected,
                got=got,
                full_input=repr(case),
                trace=trace,
                hint=f"hint({self.notebook!r}, {self.todo})",
            )
            _record(self.notebook, self.todo, passed=False)
            raise CheckpointFailed(_last_failure) from None
        _record(self.notebook, self.todo, passed=True)
        inputs = sum(p.examples for p in self.properties)
        line = (
            f"✅ TODO {self.todo} passed — {len(self.properties)} "
            f"{'property' if len(self.properties) == 1 else 'properties'} held on up to "
            f"{inputs:,} generated inputs ({time.perf_counter() - started:.1f} s)"
        )
        if passed:
            line += f"\n   {passed}"
        print(line)
        return line


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
