"""The public API's two written forms, made from ``helpers._PUBLIC`` (name → module), the one
place a public name is declared: ``__all__`` (what ``from helpers import *`` and linters read)
and the ``if TYPE_CHECKING:`` imports (what editors and type checkers see). Both are generated
between markers in ``helpers/__init__.py``; ``tests/test_public_api.py`` fails when they differ
from ``_PUBLIC``.

    .venv/bin/python tests/public_api.py --write   # after adding a name to _PUBLIC
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INIT = ROOT / "helpers" / "__init__.py"
ALL_START, ALL_END = "# -- __all__: generated from _PUBLIC", "# -- end of __all__"
IMPORTS_START, IMPORTS_END = "    # -- imports: generated from _PUBLIC", "    # -- end of imports"


def public() -> dict[str, str]:
    """``_PUBLIC`` as ``helpers/__init__.py`` writes it (read from its source, not imported)."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_PUBLIC":
            return ast.literal_eval(node.value)
    raise LookupError("helpers/__init__.py has no _PUBLIC")


def written_forms() -> tuple[list[str], dict[str, str]]:
    """``(__all__, {name: module imported from under TYPE_CHECKING})`` as the file has them."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    names: list[str] = []
    imported: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            names = list(ast.literal_eval(node.value))
        if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    imported.update({a.name: str(statement.module) for a in statement.names})
    return names, imported


def generated() -> tuple[str, str]:
    """The text of the two generated blocks (before ``ruff`` sorts and formats them)."""
    names = public()
    listed = "".join(f'    "{name}",\n' for name in sorted(names))
    by_module: dict[str, list[str]] = defaultdict(list)
    for name, module in names.items():
        by_module[module].append(name)
    imports = "".join(
        f"    from {module} import ({', '.join(sorted(found))})\n"
        for module, found in sorted(by_module.items())
    )
    return f"__all__ = [\n{listed}]\n", imports


def _between(text: str, start: str, end: str, body: str) -> str:
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}: do not edit (tests/public_api.py --write)\n{body}{end}{tail}"


def write() -> None:
    """Write both blocks into ``helpers/__init__.py``, then let ruff sort and format them."""
    all_block, imports = generated()
    text = INIT.read_text(encoding="utf-8")
    text = _between(text, ALL_START, ALL_END, all_block)
    text = _between(text, IMPORTS_START, IMPORTS_END, imports)
    INIT.write_text(text, encoding="utf-8")
    ruff = Path(sys.executable).with_name("ruff")  # the venv running this script
    subprocess.run([ruff, "check", "--fix", "-q", "--select", "I,RUF022", str(INIT)], check=False)
    subprocess.run([ruff, "format", "-q", str(INIT)], check=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    write()
