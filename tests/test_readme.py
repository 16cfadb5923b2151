"""The README's figures are generated, not typed: they must match what the code measures now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hang import HANG_GUARD_S


def test_readme_figures_are_current() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "helpers.course.readme_figures", "--check"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr + " (run `make figures`)"


def test_the_public_api_example_in_the_readme_runs(tmp_path) -> None:
    """The README's library example, run as a user would run it (its own process and folder)."""
    import os
    import re
    import subprocess
    import sys

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- example:api -->\n```python\n(.*?)```", readme, re.DOTALL)
    assert block, "README.md lost its <!-- example:api --> block"
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
    assert done.stdout.startswith("ok ") and "('yt_transcribe', 'boxed')" in done.stdout


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


def test_the_readme_layout_names_every_module() -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("```")[1]
    root = Path(__file__).parent.parent / "helpers"
    for path in sorted(root.rglob("*.py")):
        if path.name == "__init__.py" and path.parent != root:
            assert f"{path.parent.name}/" in layout, f"README's layout lacks {path.parent.name}/"
            continue
        assert path.name in layout, (
            f"README's layout does not name helpers/{path.relative_to(root)}"
        )


def test_imports_flow_one_way_through_the_layers() -> None:
    """Every module is in a layer of ``helpers._LAYERS`` (the root's modules are the foundation,
    each subpackage a layer) and imports only from its own layer or the layers below it."""
    import ast

    import helpers

    rank = {layer: i for i, layer in enumerate(helpers._LAYERS)}
    root = Path(__file__).parent.parent / "helpers"

    def layer(dotted: str) -> str:
        parts = dotted.split(".")
        return parts[1] if len(parts) >= 2 and parts[1] in rank else "foundation"

    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        if module == "helpers":
            continue
        own = layer(module)
        assert own in rank, module
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ImportFrom)
                and node.module
                and node.module.startswith("helpers.")
            ):
                target = layer(node.module)
                assert rank[target] <= rank[own], (
                    f"{module} ({own}) imports {node.module} ({target}), a layer above"
                )


def test_the_threat_model_states_the_limits_in_force() -> None:
    """The README's threat model names each cap of issue 17 with the value the code enforces."""
    from helpers import limits
    from helpers.cases import MAX_CASE_FILE_BYTES
    from helpers.context import compaction
    from helpers.tooling import outbox, sql_sandbox

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    threat_model = readme.split("### Threat model", 1)[1]
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
    }
    missing = {name: text for name, text in stated.items() if text not in threat_model}
    assert not missing, f"README's threat model does not say: {missing}"


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
