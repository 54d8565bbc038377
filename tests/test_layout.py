"""The house rules of the package: rooms import downwards only, no import circle, a thin API.

Read from the installed package's source files (every ``import`` and ``from ... import``,
at module level or inside functions), so a later change that runs an import back up, closes a
circle or grows ``api.py`` into a pipeline again fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import aligner

PACKAGE = Path(aligner.__file__).resolve().parent

#: each room's floor: a module may import from its own floor and the ones below only
FLOORS = {"errors": 0, "frames": 0, "phonetics": 0, "runtime": 0, "learn": 0, "_models": 0,
          "io": 1, "features": 1, "words": 2, "alignment": 3, "plotting": 3, "vowels": 4, "api": 5, "cli": 6}


def _modules() -> dict:
    """``{dotted name: path}`` of every module of the package."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("aligner",) + path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(modules: dict) -> dict:
    """``{module: set of the package's modules it imports}`` (a name imported from a package
    counts as its submodule when there is one)."""
    edges = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            found |= {t for t in targets if t in modules and t != name}
        edges[name] = found
    return edges


def _floor(module: str):
    parts = module.split(".")
    return FLOORS.get(parts[1]) if len(parts) > 1 else None


def test_no_import_circle():
    edges = _imports(_modules())
    state: dict = {}
    circles = []

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                circles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    # a package's __init__ that re-exports its own submodules is no circle of meaning
    circles = [c for c in circles if not all(m.startswith(c[0] + ".") or m == c[0] for m in c)]
    assert circles == []


def test_imports_run_downwards_only():
    edges = _imports(_modules())
    upward = [(a, b) for a, targets in edges.items() for b in targets
              if _floor(a) is not None and _floor(b) is not None and _floor(b) > _floor(a)]
    assert upward == []
    unknown = sorted({m.split(".")[1] for m in edges if len(m.split(".")) > 1} - set(FLOORS))
    assert unknown == [], f"new top-level rooms need a floor in FLOORS: {unknown}"


def test_rooms_stay_small():
    top_level = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top_level) <= 8, top_level
    lines = {path.relative_to(PACKAGE).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
             for path in PACKAGE.rglob("*.py")}
    assert lines["api.py"] <= 300
    assert [name for name, n in lines.items() if n > 1000] == []
