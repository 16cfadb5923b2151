"""The README and docs/: figures generated, not typed (they must match what the code measures
now), examples that run, a layout that names every module, links that lead somewhere, and every
cited project linked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hang import HANG_GUARD_S

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"


def test_readme_figures_are_current() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "devtools.readme_figures", "--check"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr + " (run `make figures`)"


def run_page_example(page: str, name: str, tmp_path: Path) -> str:
    """The ``<!-- example:NAME -->`` Python block of ``docs/PAGE``, run as a user would run it
    (its own process and folder, offline, the public API only); returns its standard output."""
    import os
    import re

    text = (DOCS / page).read_text(encoding="utf-8")
    block = re.search(rf"<!-- example:{name} -->\n```python\n(.*?)```", text, re.DOTALL)
    assert block, f"docs/{page} lost its <!-- example:{name} --> block"
    code = block[1]
    assert "from helpers import" in code and "from helpers." not in code  # the public API only
    (tmp_path / "var").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={
            **os.environ,
            "WORKBOOK_VAR_DIR": str(tmp_path / "var"),
            "WORKBOOK_PROFILE": "offline",
        },
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_public_api_example_in_the_readme_runs(tmp_path) -> None:
    """The library page's example, run as a user would run it (its own process and folder)."""
    out = run_page_example("library.md", "api", tmp_path)
    assert out.startswith("ok ") and "('yt_transcribe', 'boxed')" in out


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("mcp-server", "resource_link text/plain 10280 bytes; 10244 characters read back"),
        ("mcp-client", "ok [('yt_transcribe', 'boxed'), ('deep_check', 'inline')]"),
    ],
)
def test_the_mcp_pages_examples_run(tmp_path, name, says) -> None:
    """docs/mcp.md's examples: the SDK's client on workbook mcp-server, and a turn whose tools
    an MCP server serves."""
    assert run_page_example("mcp.md", name, tmp_path).strip() == says


def test_the_public_api_is_listed_and_every_name_loads() -> None:
    import subprocess
    import sys

    import helpers

    assert len(helpers.__all__) >= 40 and len(set(helpers.__all__)) == len(helpers.__all__)
    for name in helpers.__all__:
        assert getattr(helpers, name) is not None, name
    done = subprocess.run(
        [sys.executable, "-c", "import helpers; print(helpers.__all__)"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0 and "run_turn" in done.stdout and "ToolOutputStore" in done.stdout


def test_no_import_cycles_between_the_helpers_modules() -> None:
    import ast

    root = Path(__file__).parent.parent / "helpers"
    modules = {
        ".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
        for p in root.rglob("*.py")
    }
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in modules and module != "helpers":
                graph[module].add(node.module)
    seen: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        seen[module] = 1
        for target in graph[module]:
            assert seen.get(target) != 1, "import cycle: " + " → ".join([*path, target])
            if target not in seen:
                visit(target, [*path, target])
        seen[module] = 2

    for module in graph:
        if module not in seen:
            visit(module, [module])


def test_the_rules_several_modules_share_are_defined_once() -> None:
    """RE2's options are made by one function, in the lowest layer that fits
    (:func:`helpers.text.patterns.re2_options`), for the modules that differ only in the memory
    a pattern may take; a strategy's name has one rule (``STRATEGY_NAME``, in the cases layer,
    below the strategies that import it)."""
    import ast

    from helpers.cases import case_files
    from helpers.context import boxing, resolve_tools, strategies
    from helpers.tooling import argument_checks

    root = ROOT / "helpers"
    made_options, named_rule = [], []
    for path in sorted(root.rglob("*.py")):
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = node.func if isinstance(node, ast.Call) else None
            if isinstance(called, ast.Attribute) and called.attr == "Options":  # re2.Options()
                made_options.append(where)
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "STRATEGY_NAME" for t in targets):
                    named_rule.append(where)
    assert made_options == ["helpers/text/patterns.py"], made_options
    assert named_rule == ["helpers/cases/case_files.py"], named_rule
    assert strategies.STRATEGY_NAME is case_files.STRATEGY_NAME
    memory = {
        module.__name__: (module._RE2_OPTIONS.max_mem, module._RE2_OPTIONS.never_capture)
        for module in (argument_checks, boxing, resolve_tools)
    }
    assert memory == {
        "helpers.tooling.argument_checks": (argument_checks.RE2_MAX_MEM, True),
        "helpers.context.boxing": (64 << 20, False),
        "helpers.context.resolve_tools": (8 << 20, False),
    }
    assert not any(m._RE2_OPTIONS.log_errors for m in (argument_checks, boxing, resolve_tools))


def test_the_layout_names_every_module() -> None:
    page = (DOCS / "library.md").read_text(encoding="utf-8")
    layout = page.split("## Layout", 1)[1].split("```")[1]
    root = Path(__file__).parent.parent / "helpers"
    for path in sorted((root.parent / "devtools").glob("*.py")):
        assert path.name == "__init__.py" or path.name in layout.split("devtools/", 1)[1], (
            f"docs/library.md's layout does not name devtools/{path.name}"
        )
    for path in sorted(root.rglob("*.py")):
        if path.name == "__init__.py" and path.parent != root:
            assert f"{path.parent.name}/" in layout, (
                f"docs/library.md's layout lacks {path.parent.name}/"
            )
            continue
        assert path.name in layout, (
            f"docs/library.md's layout does not name helpers/{path.relative_to(root)}"
        )


def test_imports_flow_one_way_through_the_layers() -> None:
    """Every module is in a layer of ``helpers._LAYERS`` (each subpackage a layer; the root holds
    only the public API) and imports only from its own layer or the layers below it."""
    import ast

    import helpers

    rank = {layer: i for i, layer in enumerate(helpers._LAYERS)}
    root = Path(__file__).parent.parent / "helpers"

    def layer(dotted: str) -> str:
        parts = dotted.split(".")
        assert len(parts) >= 2 and parts[1] in rank, f"{dotted} is in no layer of helpers._LAYERS"
        return parts[1]

    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        if module == "helpers":
            continue
        own = layer(module)
        assert own in rank, module
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target_module in targets:
                assert target_module != "helpers", (
                    f"{module} imports the public API (helpers), which loads every layer: "
                    "import from the defining module"
                )
                if not target_module.startswith("helpers."):
                    continue
                target = layer(target_module)
                assert rank[target] <= rank[own], (
                    f"{module} ({own}) imports {target_module} ({target}), a layer above"
                )


def test_the_threat_model_states_the_limits_in_force() -> None:
    """The threat model names each cap of issue 17 with the value the code enforces."""
    from helpers.base import limits
    from helpers.cases.case_files import MAX_CASE_FILE_BYTES
    from helpers.context import compaction, resolve_tools
    from helpers.mcp import settings, stdio_guard
    from helpers.tooling import outbox, program_sandbox, sql_sandbox

    page = (DOCS / "threat-model.md").read_text(encoding="utf-8")
    threat_model = page.split("### Threat model", 1)[1]
    stated = {
        "tool calls per reply": f"at most {limits.MAX_TOOL_CALLS_PER_REPLY} tool calls per reply",
        "tool calls per turn": f"{limits.MAX_TOOL_CALLS_PER_TURN} per turn",
        "bytes per turn": f"{limits.MAX_STORED_BYTES_PER_TURN // 1_000_000} MB stored per turn",
        "bytes per thread": f"{limits.MAX_STORED_BYTES_PER_THREAD // 1_000_000} MB per thread",
        "worker memory": f"{sql_sandbox.SQL_WORKER_ADDRESS_SPACE_BYTES // 1_000_000} MB address",
        "outbox files": f"at most {outbox.MAX_OUTBOX_FILES:,} files",
        "summary item": f"at most {compaction.MAX_SUMMARY_ITEM_CHARS} characters",
        "summary lines": f"at most {compaction.MAX_SUMMARY_DETAIL_LINES} detail lines",
        "summary size": f"{compaction.MAX_SUMMARY_CHARS:,} characters",
        "case file": f"at most {MAX_CASE_FILE_BYTES // 1024} KB",
        "program calls": f"at most {program_sandbox.MAX_TOOL_CALLS_PER_PROGRAM} tool calls per "
        "program",
        "program memory": f"{program_sandbox.PROGRAM_MAX_RSS_BYTES // 2**20} MiB",
        "program error": f"{program_sandbox.MAX_PROGRAM_ERROR_CHARS:,} characters",
        "program cpu": f"used {program_sandbox.PROGRAM_CPU_TIME_LIMIT_S:g} s of CPU time",
        "program idle": f"no CPU for {program_sandbox.PROGRAM_IDLE_LIMIT_S:g} s, every thread asleep",
        "program hang": f"hang guard of {program_sandbox.PROGRAM_HANG_GUARD_S:g} s",
        "sql cpu": f"after {sql_sandbox.SQL_CPU_TIME_LIMIT_S:g} s of its worker's CPU time",
        "sql idle": f"no CPU for {sql_sandbox.SQL_IDLE_LIMIT_S:g} s, every thread asleep",
        "sql hang": f"wall-clock guard is {sql_sandbox.SQL_HANG_GUARD_S:g} s",
        "grep cpu": f"after {resolve_tools.GREP_CPU_TIME_LIMIT_S:g} s of CPU time",
        "mcp message": f"holding at most {stdio_guard.DEFAULT_MAX_MESSAGE_BYTES:,} bytes",
        "mcp stderr": f"up to {stdio_guard.DEFAULT_MAX_STDERR_BYTES:,} bytes",
        "mcp timeout": f"({settings.DEFAULT_MCP_TIMEOUT_S:g} s by default)",
    }
    missing = {name: text for name, text in stated.items() if text not in threat_model}
    assert not missing, f"docs/threat-model.md does not say: {missing}"


def test_no_function_in_helpers_is_over_80_lines() -> None:
    """Small functions, one job each (issue 19): every function and method in helpers/ fits in
    80 lines, its docstring included."""
    import ast

    root = Path(__file__).parent.parent / "helpers"
    long = [
        f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({length} lines)"
        for path in sorted(root.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := node.end_lineno - node.lineno + 1) > 80
    ]
    assert not long, "functions over 80 lines: " + "; ".join(long)


def _pages() -> list[Path]:
    from devtools.readme_figures import documents

    return documents()


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to -."""
    import re

    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def test_every_relative_link_and_anchor_leads_somewhere() -> None:
    """A link in the README or docs/ to a file names a file that exists, and a ``#anchor`` one
    of the target page's headings."""
    import re

    broken = []
    for page in _pages():
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.name}: {target}")
            elif anchor and file.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", file.read_text(encoding="utf-8"), re.M)
                if anchor not in {_slug(h) for h in headings}:
                    broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


def test_every_cited_project_is_linked_where_it_is_named() -> None:
    """A page that names a project of ``CITED_PROJECTS`` links it, so a reader can follow it."""
    from helpers.course.sources import CITED_PROJECTS

    unlinked = [
        f"{page.relative_to(ROOT)} names {project.name} without {project.url}"
        for page in _pages()
        for project in CITED_PROJECTS
        if project.name in (text := page.read_text(encoding="utf-8")) and project.url not in text
    ]
    assert not unlinked, unlinked


def test_the_readme_starts_with_the_attendee_quick_start() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sections = [line for line in readme.splitlines() if line.startswith("## ")]
    assert sections[0] == "## Quick start (attendees)", sections
    quick = readme.split("## Quick start (attendees)", 1)[1].split("\n## ", 1)[0]
    for must in ("Who it is for", "What you need", "make lab", "make test", "How long", "token"):
        assert must in quick, must
    assert (ROOT / "LICENSE").is_file() and (ROOT / "CONTRIBUTING.md").is_file()
    contents = (DOCS / "README.md").read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "README.md":
            assert f"]({page.name})" in contents, f"docs/README.md does not list {page.name}"


#: The files the project keeps at its root (the README's two commands, the project's own files);
#: anything else there is a stray (a terminal's log, a pid file) a commit picked up.
ROOT_FILES = {
    ".env.example",
    ".gitignore",
    ".pre-commit-config.yaml",
    "CONTRIBUTING.md",
    "LICENSE",
    "Makefile",
    "README.md",
    "pyproject.toml",
    "requirements-dev.lock",
    "requirements.lock",
}


def test_the_root_holds_no_stray_file() -> None:
    """Every file tracked at the root is one the project names (a fresh clone shows no more)."""
    root = Path(__file__).parent.parent
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(
        ["git", "ls-files"], capture_output=True, text=True, cwd=root, check=True
    ).stdout.splitlines()
    stray = sorted({name for name in tracked if "/" not in name} - ROOT_FILES)
    assert not stray, f"files tracked at the root that the project does not name: {stray}"


def test_box_reads_end_to_end_within_the_goal() -> None:
    """docs/library.md's reading order (devtools/reading_order.py) follows box from the turn to
    the resolve tool in at most 1,500 lines across at most 6 files (issue 50), and every step
    names a definition that exists (``measure`` raises otherwise)."""
    from devtools.reading_order import MAX_FILES, MAX_LINES, measure

    rows = measure()
    assert sum(row.lines for row in rows) <= MAX_LINES
    assert len({row.path for row in rows}) <= MAX_FILES
