"""The public API is declared once, in ``helpers._PUBLIC`` (name → module); ``__all__`` and the
``TYPE_CHECKING`` imports editors read are generated from it (tests/public_api.py) and must say
the same (issue 38)."""

from __future__ import annotations

import importlib

from public_api import public, written_forms

import helpers


def test_all_and_the_editors_imports_are_public_as_declared() -> None:
    declared = public()
    listed, imported = written_forms()
    fix = "run .venv/bin/python tests/public_api.py --write"
    assert sorted(listed) == sorted(declared) and len(listed) == len(set(listed)), fix
    assert imported == declared, fix
    assert helpers.__all__ == listed


def test_every_public_name_is_where_it_is_declared() -> None:
    for name, module in public().items():
        assert hasattr(importlib.import_module(module), name), f"{module} has no {name}"
        assert getattr(helpers, name) is getattr(importlib.import_module(module), name)


def test_a_public_name_is_declared_once() -> None:
    """``_PUBLIC`` is a dict literal: a name written twice silently keeps the second module,
    hiding the first (a notebook's helper once shadowed ``WorkbookMcpServer`` so)."""
    import ast

    from public_api import INIT

    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    (table,) = [
        node.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_PUBLIC"
    ]
    names = [key.value for key in table.keys if isinstance(key, ast.Constant)]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
