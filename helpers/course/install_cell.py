"""The first code cell of every course notebook: it installs the workbook where it is missing.

Colab (or any Jupyter with Python but without the workbook) opens one notebook on its own, with
no ``make lab`` behind it. So each notebook carries, right after its title and introduction, the few lines that
install the workbook from its wheel (``context_relay_workbook-*.whl``, built by ``uv build
--wheel`` and shared by the instructor: uploaded beside the notebook, or its URL pasted into the
cell) and build the reference data. Where the workbook is installed (``make lab``, Binder,
Codespaces, ``pip install``) the cell finds its distribution and says which version it is.

The wheel requires nothing of the kernel's own stack (JupyterLab and ipykernel are its ``lab``
extra), so pip leaves Colab's pinned ipykernel and IPython alone (googlecolab/colabtools#2837);
should pip still replace a package the kernel has already imported, the cell stops and asks for
a restart of the session, since the old version stays loaded until then. It installs only the
wheel it is given: with several in the folder it installs none and names them (one may have been
planted beside the instructor's), and it runs pip and ``build-data`` with ``python -P``, so a
``pip/`` or ``helpers/`` folder planted beside the notebook is never imported. A failure is one
sentence (what to upload, and where; or that pip failed, above).

In JupyterLab the cell is collapsed to its first line, a comment that says what it is for
(so a notebook opens on its content, not 55 lines of installer), and in Colab it is a form
(:data:`INSTALL_CELL_METADATA`). The cell is written here once; ``python -m helpers.course.install_cell`` puts it into every
solution notebook (``make student`` then gives the attendee notebooks the same cell), and
``--check`` exits 1 when a solution notebook's cell is missing or differs.
``tests/test_run_anywhere.py`` runs it in a fresh venv that lacks the workbook.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from helpers.course.student_notebooks import render, solution_notebooks

#: The tag that marks the cell (in its metadata), so it is found and rewritten, never doubled.
INSTALL_CELL_TAG = "workbook-install"

#: The cell's code: the standard library only, since nothing else may be installed yet.
INSTALL_CELL_SOURCE = r"""# @title Installs the workbook where it is missing (Colab): run this cell first
# It installs the wheel your instructor shared (upload context_relay_workbook-*.whl into the
# folder its message names, or paste its URL here) and builds the data; elsewhere it says so.
WHEEL_URL = ""  # @param {type:"string"}
import glob
import importlib
import importlib.metadata as metadata
import os
import re
import subprocess
import sys

WHEEL_RE = r"context_relay_workbook-(\d+(?:\.\d+)*)-py3-none-any\.whl"


def normal(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def versions():
    return {normal(d.name): d.version for d in metadata.distributions()}


before = versions()
if globals().get("RESTART_NEEDED"):  # cleared only by a restart of the session
    raise RuntimeError("restart the session (Runtime → Restart session), then run this cell")
if "context-relay-workbook" in before:
    print(f"The workbook {before['context-relay-workbook']} is installed.")
else:
    found = sorted(p for p in glob.glob("*.whl") if re.fullmatch(WHEEL_RE, p))
    if len(found) > 1 and not WHEEL_URL:  # never pick one: another may have been planted
        raise RuntimeError(
            f"several wheels in {os.getcwd()} ({', '.join(found)}): keep only the one your "
            "instructor shared, or set WHEEL_URL to its name"
        )
    wheel = WHEEL_URL or (found[0] if found else "")
    if not wheel:
        copies = sorted(set(glob.glob("context_relay_workbook-*.whl")) - set(found))
        renamed = f" ({', '.join(copies)}: a renamed copy; give it its own name back)"
        raise RuntimeError(
            f"upload context_relay_workbook-*.whl to {os.getcwd()}, or set WHEEL_URL"
            + (renamed if copies else "")
        )
    safe = [sys.executable, "-P"]  # this folder is not on sys.path: no pip/ or helpers/ here runs
    if subprocess.run([*safe, "-m", "pip", "install", "--quiet", wheel]).returncode:
        raise RuntimeError(f"pip could not install {wheel}: its message is above")
    importlib.invalidate_caches()
    subprocess.run([*safe, "-m", "helpers.cli", "build-data"], check=True)
    after = versions()
    print(f"Installed {wheel}: the workbook {after['context-relay-workbook']}.")
    in_use = {
        normal(dist)
        for module, dists in metadata.packages_distributions().items()
        if module in sys.modules
        for dist in dists
    }
    replaced = sorted(n for n in in_use if n in before and before[n] != after.get(n))
    if replaced:
        RESTART_NEEDED = True
        raise RuntimeError(
            f"pip replaced {', '.join(replaced)}, already in use: restart the session "
            "(Runtime → Restart session), then run the cells below"
        )"""


#: The cell's metadata: its tag; its code collapsed in JupyterLab (``jupyter.source_hidden``,
#: nbformat's documented cell metadata: the collapsed cell shows its first line, the comment
#: that says what it is for); in Colab a form (``cellView``), which shows the ``@title`` line and
#: a text field for the ``@param`` ``WHEEL_URL`` (Colab's forms: colab.research.google.com's
#: "Forms" example notebook).
INSTALL_CELL_METADATA = {
    "cellView": "form",
    "jupyter": {"source_hidden": True},
    "tags": [INSTALL_CELL_TAG],
}


def install_cell() -> nbformat.NotebookNode:
    """A new code cell holding :data:`INSTALL_CELL_SOURCE`, with :data:`INSTALL_CELL_METADATA`."""
    metadata = {
        k: (dict(v) if isinstance(v, dict) else v) for k, v in INSTALL_CELL_METADATA.items()
    }
    metadata["tags"] = [INSTALL_CELL_TAG]
    return nbformat.v4.new_code_cell(INSTALL_CELL_SOURCE, metadata=metadata)


def _tagged(cell: nbformat.NotebookNode) -> bool:
    return INSTALL_CELL_TAG in cell.get("metadata", {}).get("tags", [])


def with_install_cell(notebook: nbformat.NotebookNode) -> bool:
    """Make the install cell the first cell after ``notebook``'s title and introduction (its
    first cell, when that is Markdown), with today's source: a tagged cell is rewritten and put
    there, never doubled. Cell ids are renumbered as nbstripout numbers them (``"0"``,
    ``"1"``…), so the notebook stays stripped.

    Returns:
        whether ``notebook`` changed.
    """
    before = render(notebook)
    cells = [c for c in notebook.cells if not _tagged(c)]
    at = 1 if cells and cells[0].cell_type == "markdown" else 0
    notebook.cells = [*cells[:at], install_cell(), *cells[at:]]
    for number, cell in enumerate(notebook.cells):  # the cell ids nbstripout leaves: 0, 1, 2…
        cell["id"] = str(number)
    return render(notebook) != before


def main(argv: list[str] | None = None) -> int:
    """Write the install cell into every solution notebook, or with ``--check`` list those whose
    cell is missing or differs and exit 1."""
    parser = argparse.ArgumentParser(prog="python -m helpers.course.install_cell")
    parser.add_argument("--check", action="store_true", help="only say which notebooks differ")
    args = parser.parse_args(argv)
    stale: list[Path] = []
    for path in solution_notebooks():
        notebook = nbformat.reads(path.read_text(encoding="utf-8"), as_version=4)
        if with_install_cell(notebook):
            stale.append(path)
            if not args.check:
                path.write_text(render(notebook), encoding="utf-8")
    for path in stale:
        print(f"{'differs' if args.check else 'wrote'}: {path.name}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
