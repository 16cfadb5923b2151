"""Every solution notebook runs to the end against a model that chooses differently.

An attendee's model is rarely the offline reference model: a real model, or one of the offline
personas (``OFFLINE_MODEL=offline-reference:<persona>``, each making one mistake real models
make), may fetch where the reference model does not, pass a preview on, read what it only
routes. A notebook must then say what the model did and go on (``explain_choice``), never stop
the room on an assert about a model's choice. This test runs each solution notebook, top to
bottom in a fresh kernel, under each persona, as ``.env`` would choose it: the kernel starts with
``WORKBOOK_PROFILE=offline`` and ``OFFLINE_MODEL`` set, and ``resolve_model()`` in the notebook
picks the persona up.

``make test-personas`` runs it (``.ci/run`` calls it); ``make test`` runs the same notebooks
under the reference model itself (nbval), and stays under ten minutes without this one.
"""

from __future__ import annotations

import re

import nbformat
import pytest
from hang import HANG_GUARD_S
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from helpers.course.choices import STRICT_ENV
from helpers.course.student_notebooks import SOLUTIONS_DIR, solution_notebooks
from helpers.models.personas import MISTAKE_PERSONAS, PERSONAS

NOTEBOOKS = solution_notebooks()
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []))


@pytest.mark.parametrize("persona", MISTAKE_PERSONAS)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_a_solution_notebook_runs_to_the_end_under_a_persona(path, persona, monkeypatch) -> None:
    monkeypatch.setenv("WORKBOOK_PROFILE", "offline")
    monkeypatch.delenv(STRICT_ENV, raising=False)  # a persona may choose otherwise: it says so
    monkeypatch.setenv("OFFLINE_MODEL", PERSONAS[persona].model_name)
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=HANG_GUARD_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(SOLUTIONS_DIR)}},
    )
    try:
        client.execute()
    except CellExecutionError as exc:
        said = ANSI_RE.sub("", str(exc)).strip().splitlines()
        pytest.fail(f"{path.name} stopped under {persona}:\n" + "\n".join(said[-12:]))
    model_lines = [
        line
        for cell in notebook.cells
        if cell.cell_type == "code"
        for line in _text(cell).splitlines()
        if line.startswith("Model:")
    ]
    # the notebook really ran against the persona (resolve_model read OFFLINE_MODEL)
    assert all(PERSONAS[persona].model_name in line for line in model_lines), model_lines
