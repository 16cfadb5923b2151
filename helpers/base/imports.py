"""Imports the workbook makes cheaper than a library would make them.

jsonschema (nbformat's notebook checks, an MCP server's input schemas) imports the optional
backend of its ``iri`` and ``iri-reference`` format checks, ``rfc3987_syntax``, when it is
installed (nbformat asks for it: jsonschema's ``format-nongpl`` extra). That module builds 38
Earley parsers when imported: 1.1 to 1.3 s of CPU, most of jsonschema's import
(python-jsonschema/jsonschema#1428, jupyter-server/jupyter_server#1559).
"""

from __future__ import annotations

import sys

#: The optional module :func:`import_jsonschema` keeps out.
IRI_BACKEND = "rfc3987_syntax"


def import_jsonschema() -> None:
    """Import jsonschema, if this process has not, without its ``iri`` format backend.

    jsonschema imports that backend inside ``try``/``except ImportError``. During this one import
    the backend's ``sys.modules`` entry is ``None``, which makes ``import`` raise ImportError (the
    Python reference, "The module cache"). jsonschema then goes on without ``iri`` checks. Nothing
    the workbook does changes:

    - it checks no formats: it passes no format checker, and in JSON Schema 2020-12 ``format`` is
      an annotation (Validation §7.2);
    - nbformat validates notebooks with no format checker at all (``nbformat/json_compat.py``).

    What does change is jsonschema's own format checking in this process: its
    :class:`jsonschema.FormatChecker` checks no ``iri`` and ``iri-reference`` for the rest of
    it (they pass, as any format without a checker does). The backend can be imported again by
    whoever wants it afterwards, and a jsonschema this process imported before is left as it
    was. Call it before nbformat or jsonschema is imported.
    """
    if "jsonschema" in sys.modules:
        return
    blocked = IRI_BACKEND not in sys.modules
    if blocked:
        sys.modules[IRI_BACKEND] = None  # type: ignore[assignment]
    try:
        import jsonschema  # noqa: F401
    finally:
        if blocked and sys.modules.get(IRI_BACKEND, IRI_BACKEND) is None:  # still the block
            del sys.modules[IRI_BACKEND]
