"""Shared fixtures: every test session gets its own run-time folder, with a real reference
database and a real SQLite store file in it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_VAR = Path(tempfile.mkdtemp(prefix="workbook-test-var-"))
os.environ["WORKBOOK_VAR_DIR"] = str(_VAR)
os.environ["WORKBOOK_PROFILE"] = "offline"
os.environ.pop("WORKBOOK_DB_URL", None)

import pytest  # noqa: E402

from helpers.models.offline import offline_client  # noqa: E402
from helpers.store.tool_outputs import ToolOutputStore  # noqa: E402
from helpers.tooling.dataset import build_reference_db  # noqa: E402
from helpers.tooling.tools import default_registry  # noqa: E402

build_reference_db()


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    """A fresh SQLite file for one test."""
    return f"sqlite:///{tmp_path / 'store.sqlite'}"


@pytest.fixture
def store(db_url: str):
    s = ToolOutputStore(db_url)
    yield s
    s.close()


@pytest.fixture(scope="session")
def client():
    """The offline reference model behind the real openai client (mock transport)."""
    return offline_client()


@pytest.fixture
def registry():
    return default_registry()


@pytest.fixture
def ask(tmp_path, monkeypatch, capsys):
    """``workbook ask PROMPT --json`` in-process against a scripted provider, its invariants
    checked (:func:`provider.ask_runner`)."""
    from provider import ask_runner

    return ask_runner(tmp_path, monkeypatch, capsys)


# -- how `make test` spreads the tests over its workers (pytest-xdist, --dist loadfile) ----------

#: The longest work units, in seconds on one worker of a busy two-core machine (measured; every
#: other unit takes a few seconds, and only their order matters): they are handed out first, so
#: that the short ones fill the gaps at the end instead of a long one starting when the rest are
#: done. A stale figure costs time, never a check.
SLOWEST_UNITS = {
    "tests/test_mcp_client.py": 67,
    "tests/test_cli.py": 56,
    "tests/test_readme.py": 45,
    "tests/test_code_mode.py": 38,
    "tests/test_mcp_server.py": 38,
    "tests/test_faults.py": 35,
    "tests/test_untrusted_text.py": 29,
    "tests/test_compare.py": 29,
    "tests/test_file_modes.py": 28,
    "tests/test_checkpoint_answers.py": 26,
    "tests/test_providers.py": 23,
    "tests/test_notebooks.py::08_code_mode": 21,
    "tests/test_mcp_guard.py": 20,
    "tests/test_notebooks.py::02_persist_tool_outputs": 19,
    "tests/test_notebooks.py::04_opaque_reference_boxing": 18,
    "tests/test_sql_bounds.py": 18,
    "tests/test_reference_data.py": 16,
    "tests/test_notebooks.py::07_modes_and_dual_stream": 16,
    "tests/test_notebooks.py::09_real_mcp": 15,
    "tests/test_store.py": 15,
    "solutions/08_code_mode.ipynb": 13,
    "tests/test_notebooks.py::03_truncated_preview": 13,
    "tests/test_checkpoints.py": 12,
    "solutions/09_real_mcp.ipynb": 12,
    "tests/test_provider_limits.py": 12,
    "tests/test_modes.py": 11,
    "solutions/05_truncation_vs_boxing.ipynb": 11,
    "tests/test_security.py": 9,
    "tests/test_setup.py": 8,
}

#: tests/test_notebooks.py's checkpoint test: one work unit per notebook, its TODOs in order.
CHECKPOINT_TEST = "tests/test_notebooks.py::test_checkpoint_stops_stub_and_wrong_answers_then_"


def work_unit(nodeid: str) -> str:
    """What one worker runs whole, in order: a test's file (a solution notebook's cells under
    nbval: one kernel), except the checkpoint test, whose unit is its notebook (a notebook's
    TODOs go on in one kernel), so that the notebooks spread over the workers."""
    if nodeid.startswith(CHECKPOINT_TEST) and "[" in nodeid:
        notebook = nodeid.split("[", 1)[1].rsplit("-TODO", 1)[0]
        return f"tests/test_notebooks.py::{notebook}"
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: one worker per core, as xdist counts them, and one more, which works while
    another's test waits out a timeout or a hang guard, or a child process starts.
    ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still sets the number itself (xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    from xdist.plugin import pytest_xdist_auto_num_workers as per_core

    return per_core(config) + 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadfile`` by :func:`work_unit`, the slowest units first.

    Built as xdist builds its own ``LoadFileScheduling`` (a subclass of ``LoadScopeScheduling``
    that overrides ``_split_scope``), reordering ``workqueue``, the scopes-to-tests map its
    class docstring describes. These are xdist's internals, so pyproject.toml bounds it below 4;
    should they change, the run gets slower, never wrong: without ``_split_scope`` a file is the
    unit (a notebook's TODOs still run in order on one worker), without ``_assign_work_unit``
    the order is xdist's own, and without ``workqueue`` the run stops with an AttributeError."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class Scheduling(LoadFileScheduling):
        sorted = False

        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            if not self.sorted:  # the whole queue is known by the first assignment
                units = sorted(self.workqueue.items(), key=lambda u: -SLOWEST_UNITS.get(u[0], 0))
                self.workqueue.clear()
                self.workqueue.update(units)
                self.sorted = True
            super()._assign_work_unit(node)

    return Scheduling(config, log)
