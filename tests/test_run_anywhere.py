"""The workbook where attendees are: as a wheel (built, installed in a fresh venv from the runtime
lock, and run from a folder outside the repository, as on Colab or a laptop without the
checkout), on Binder (binder/postBuild) and in a devcontainer (Codespaces): each install step
run in a fresh venv, each giving the locked versions."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from hang import HANG_GUARD_S

from helpers.course.student_notebooks import solution_notebooks

ROOT = Path(__file__).resolve().parent.parent
UV = Path(sys.executable).with_name("uv")


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, f"{args[:3]}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workbook's wheel, built from this checkout."""
    dist = tmp_path_factory.mktemp("dist")
    _run(UV, "build", "--wheel", "--quiet", "-o", dist, ROOT, cwd=dist)
    return next(dist.glob("context_relay_workbook-*.whl"))


def test_the_wheel_is_the_workbook_not_the_projects_tooling(wheel) -> None:
    """The wheel carries the library and the course; the bench, the measured figures, the
    instructor guide, the timed set-up and the room simulation stay in the checkout (devtools/),
    and nothing the wheel holds imports them."""
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    tooling = {p.stem for p in (ROOT / "devtools").glob("*.py")} - {"__init__"}
    assert tooling >= {"bench", "readme_figures", "instructor_guide", "setup_timing"}
    shipped = [n for n in names if n.startswith("devtools/") or Path(n).stem in tooling]
    assert not shipped, f"the wheel ships the project's tooling: {shipped}"
    assert "helpers/loop/agent.py" in names and "helpers/_course/notebooks/00_setup.ipynb" in names
    for name in (n for n in names if n.endswith(".py")):
        text = zipfile.ZipFile(wheel).read(name).decode("utf-8")
        assert not re.search(r"^\s*(from|import) devtools", text, re.M), f"{name} imports devtools"


def test_the_wheel_runs_the_notebooks_from_a_folder_of_its_own(tmp_path, wheel) -> None:
    venv, room = tmp_path / "venv", tmp_path / "room"
    _run(UV, "venv", "--quiet", "--python", sys.executable, venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    _run(UV, "pip", "sync", "--quiet", "--require-hashes", "--python", python,
         ROOT / "requirements.lock", cwd=tmp_path)  # fmt: skip
    _run(UV, "pip", "install", "--quiet", "--no-deps", "--python", python, wheel, cwd=tmp_path)

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "WORKBOOK_VAR_DIR", "VIRTUAL_ENV") and not k.startswith("PYTEST")
    }
    env |= {"WORKBOOK_PROFILE": "offline", "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}"}
    room.mkdir()
    where = _run(python, "-c", "import helpers.base.paths as p; print(p.INSTALLED, p.PROJECT_ROOT)",
                 cwd=room, env=env)  # fmt: skip
    assert where.startswith("True ") and str(venv) in where and str(ROOT) not in where

    copied = _run(
        venv / "bin" / "workbook", "copy-notebooks", ".", "--solutions", cwd=room, env=env
    )
    course = len(solution_notebooks())  # each in both copies: notebooks/ and solutions/
    assert f"wrote {2 * course} notebooks" in copied, copied
    _run(venv / "bin" / "workbook", "build-data", cwd=room, env=env)
    assert (room / "var" / "iso_reference.sqlite").is_file()  # var/ in the folder of one's own

    solutions = sorted((room / "solutions").glob("0[0-4]_*.ipynb"))
    assert [p.name[:2] for p in solutions] == ["00", "01", "02", "03", "04"]
    out = tmp_path / "executed"
    for folder, notebooks in (("solutions", solutions), ("attendee", [room / "00_setup.ipynb"])):
        _run(venv / "bin" / "jupyter", "nbconvert", "--to", "notebook", "--execute",
             f"--ExecutePreprocessor.timeout={HANG_GUARD_S}", "--output-dir", out / folder, *notebooks,
             cwd=room, env=env)  # fmt: skip
    assert len(list((out / "solutions").glob("*.ipynb"))) == 5
    # the solutions ran in room/solutions and used the workspace's var/, marked by copy-notebooks
    assert not (room / "solutions" / "var").exists() and (room / "var" / "pages").is_dir()
    assert (room / ".env.example").is_file()
    assert "offline reference model" in (out / "attendee" / "00_setup.ipynb").read_text("utf-8")
    assert not (ROOT / "helpers" / "_course").exists()  # the checkout was never the course root
    kept = _run(venv / "bin" / "workbook", "copy-notebooks", ".", cwd=room, env=env)
    # an attendee's copies are theirs
    assert "wrote 0 notebooks" in kept and f"kept {course}" in kept


def _locked(lock: Path) -> dict[str, str]:
    """``name -> version`` of every pin of a lock file that applies to this interpreter (a
    universal lock pins some packages twice, by environment marker; names normalised)."""
    from packaging.markers import Marker

    pins = re.findall(
        r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)(?: ; ([^\\\n]+))?", lock.read_text("utf-8"), re.M
    )
    return {
        re.sub(r"[-_.]+", "-", name).lower(): version
        for name, version, marker in pins
        if not marker or Marker(marker.strip()).evaluate()
    }


def _installed(python: Path) -> dict[str, str]:
    freeze = _run(UV, "pip", "freeze", "--python", python, cwd=python.parent)
    pins = re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)$", freeze, re.M)
    return {re.sub(r"[-_.]+", "-", n).lower(): v for n, v in pins}


def _working_copy(into: Path) -> Path:
    """The files of this checkout (tracked, and new ones not ignored) copied into ``into``."""
    listed = _run("git", "ls-files", "-co", "--exclude-standard", "-z", cwd=ROOT)
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, into / name)
    return into


def _clean_env(venv_bin: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "WORKBOOK_VAR_DIR", "VIRTUAL_ENV", "MAKEFLAGS", "MAKELEVEL")
        and not k.startswith("PYTEST")
    }
    return env | {"WORKBOOK_PROFILE": "offline", "PATH": f"{venv_bin}{os.pathsep}{env['PATH']}"}


def test_binder_postbuild_installs_the_locked_versions_and_the_data(tmp_path) -> None:
    """binder/postBuild, run as repo2docker runs it: in the repository, with the image's Python
    (a fresh venv here) first on PATH."""
    postbuild = (ROOT / "binder" / "postBuild").read_text("utf-8")
    makefile = (ROOT / "Makefile").read_text("utf-8")
    uv_version = re.search(r"^UV_VERSION := (\S+)$", makefile, re.M)[1]
    assert f"UV_VERSION={uv_version} " in postbuild, (
        "binder/postBuild and the Makefile pin uv alike"
    )
    repo = _working_copy(tmp_path / "repo")
    image = tmp_path / "image"
    _run(UV, "venv", "--quiet", "--seed", "--python", sys.executable, image, cwd=tmp_path)
    env = _clean_env(image / "bin")
    _run("bash", repo / "binder" / "postBuild", cwd=repo, env=env)
    installed = _installed(image / "bin" / "python")
    locked = _locked(ROOT / "requirements.lock")
    differ = {
        n: (v, installed.get(n)) for n, v in locked.items() if n in installed and installed[n] != v
    }
    assert not differ and len(set(locked) & set(installed)) >= 0.9 * len(locked), differ
    assert "workbook" in _run(image / "bin" / "workbook", "--version", cwd=repo, env=env)
    assert (repo / "var" / "iso_reference.sqlite").is_file()
    assert (image / "share" / "jupyter" / "lab" / "settings" / "overrides.json").is_file()


def test_the_devcontainer_builds_what_make_test_builds(tmp_path) -> None:
    """.devcontainer/devcontainer.json's postCreateCommand, run in a fresh copy, makes the venv
    of the dev lock and the data; its forwarded port is make lab's."""
    spec = json.loads((ROOT / ".devcontainer" / "devcontainer.json").read_text("utf-8"))
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert int(re.search(r"^LAB_PORT \?= (\d+)$", makefile, re.M)[1]) in spec["forwardPorts"]
    repo = _working_copy(tmp_path / "repo")
    python_dir = str(Path(sys.executable).parent)
    env = _clean_env(Path(python_dir))
    _run("bash", "-c", spec["postCreateCommand"], cwd=repo, env=env)
    installed = _installed(repo / ".venv" / "bin" / "python")
    locked = _locked(ROOT / "requirements-dev.lock")
    differ = {
        n: (v, installed.get(n)) for n, v in locked.items() if n in installed and installed[n] != v
    }
    assert not differ and len(set(locked) & set(installed)) >= 0.9 * len(locked), differ
    assert (repo / "var" / "iso_reference.sqlite").is_file()


def test_the_readmes_steps_without_make_set_up_the_workbook(tmp_path) -> None:
    """The README's commands for a machine without make, run one by one in a fresh copy (all but
    the last, which starts JupyterLab: its options are checked against the Makefile's)."""
    readme = (ROOT / "README.md").read_text("utf-8")
    block = re.search(r"<!-- example:no-make -->\n```sh\n(.*?)```", readme, re.DOTALL)
    assert block, "README.md lost its <!-- example:no-make --> block"
    lines = block[1].strip().splitlines()
    assert lines[-1].startswith(".venv/bin/jupyter lab ")
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert re.search(r"^UV_VERSION := (\S+)$", makefile, re.M)[1] in block[1]
    for option in ("--ServerApp.ip=127.0.0.1", "--ServerApp.root_dir=notebooks"):
        assert option in lines[-1] and option in makefile
    repo = _working_copy(tmp_path / "repo")
    env = _clean_env(Path(sys.executable).parent)
    for line in lines[:-1]:
        _run("bash", "-c", line, cwd=repo, env=env)
    installed = _installed(repo / ".venv" / "bin" / "python")
    locked = _locked(ROOT / "requirements.lock")
    assert {n: v for n, v in locked.items() if n in installed} == {
        n: installed[n] for n in locked if n in installed
    }
    assert (repo / "var" / "iso_reference.sqlite").is_file()
    assert "offline" in _run(
        repo / ".venv" / "bin" / "workbook", "models", "--names", cwd=repo, env=env
    )


def test_on_colab_the_first_cell_installs_the_wheel_and_the_notebook_runs(tmp_path, wheel) -> None:
    """Colab, as near as this machine gets: a Jupyter kernel whose Python has pip and most of the
    dependencies, with Colab's ipywidgets 7.7.1, one dependency missing (shtab) and one too old
    (rich 12, imported before the install cell runs), but not the workbook; attendee notebooks
    opened on their own in a folder with the uploaded wheel.

    Without a wheel the cell stops with one sentence naming the folder. With it, the cell
    installs the wheel (pip fetches what is missing), builds the data in that folder, and stops
    asking for a restart, since rich was replaced while loaded; after the restart (a fresh
    kernel) it says the workbook is installed and notebooks 00 and 05 (widgets) run to the end
    on ipywidgets 7.7.1, which pip left alone."""
    from helpers.course.install_cell import INSTALL_CELL_TAG
    from helpers.course.student_notebooks import SOLUTIONS_DIR, student_text

    venv, content = tmp_path / "colab", tmp_path / "content"
    _run(UV, "venv", "--quiet", "--seed", "--python", sys.executable, venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    _run(UV, "pip", "sync", "--quiet", "--require-hashes", "--python", python,
         ROOT / "requirements.lock", cwd=tmp_path)  # fmt: skip
    _run(UV, "pip", "uninstall", "--quiet", "--python", python, "shtab", cwd=tmp_path)
    _run(UV, "pip", "install", "--quiet", "--python", python, "ipywidgets==7.7.1", "rich==12.6.0",
         cwd=tmp_path)  # fmt: skip
    env = _clean_env(venv / "bin")
    content.mkdir()
    for name in ("00_setup.ipynb", "05_truncation_vs_boxing.ipynb"):
        (content / name).write_text(student_text(SOLUTIONS_DIR / name), encoding="utf-8")
    first = content / "00_setup.ipynb"
    notebook = nbformat.read(first, as_version=4)
    assert INSTALL_CELL_TAG in notebook.cells[1].metadata["tags"]
    notebook.cells.insert(1, nbformat.v4.new_code_cell("import rich  # the kernel's own"))
    nbformat.write(notebook, first)

    def execute(path: Path) -> subprocess.CompletedProcess:
        return subprocess.run(
            [venv / "bin" / "jupyter", "nbconvert", "--to", "notebook", "--execute",
             f"--ExecutePreprocessor.timeout={HANG_GUARD_S}", "--output-dir", tmp_path / "out",
             path],
            cwd=content, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S,
        )  # fmt: skip

    refused = execute(first)
    assert refused.returncode != 0
    assert f"upload context_relay_workbook-*.whl to {content}, or set WHEEL_URL" in refused.stderr
    shutil.copy2(wheel, content / wheel.name)
    restart = execute(first)
    assert restart.returncode != 0
    assert "pip replaced rich, already in use: restart the session" in restart.stderr
    assert (content / "var" / "iso_reference.sqlite").is_file()  # the data is in this folder
    for path in (first, content / "05_truncation_vs_boxing.ipynb"):
        done = execute(path)
        assert done.returncode == 0, done.stderr[-3000:]
        ran = (tmp_path / "out" / path.name).read_text("utf-8")
        assert "The workbook 0.1.0 is installed." in ran
    assert "offline reference model" in (tmp_path / "out" / first.name).read_text("utf-8")
    where = _run(python, "-c", "import helpers, shtab, ipywidgets; print(helpers.__file__, "
                 "ipywidgets.__version__)", cwd=content, env=env)  # fmt: skip
    assert str(venv) in where and str(ROOT) not in where and where.split()[-1] == "7.7.1"


def test_the_wheel_does_not_ask_pip_to_replace_colabs_kernel(wheel) -> None:
    """Colab's runtime pins its kernel stack, and upgrading ipython, ipykernel, tornado,
    prompt-toolkit or pyzmq breaks it (googlecolab/colabtools#2837): the wheel requires none of
    them, nor JupyterLab, except through its ``lab`` extra."""
    import zipfile

    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(name).decode("utf-8")
    requirements = [Requirement(line.split(":", 1)[1]) for line in metadata.splitlines()
                    if line.startswith("Requires-Dist:")]  # fmt: skip
    plain = {r.name.lower() for r in requirements if r.marker is None}
    kernel = {"ipython", "ipykernel", "tornado", "prompt-toolkit", "pyzmq", "jupyterlab"}
    assert plain and not plain & kernel, plain & kernel
    lab = {r.name.lower() for r in requirements if r.marker and r.marker.evaluate({"extra": "lab"})}
    assert {"jupyterlab", "ipykernel"} <= lab
