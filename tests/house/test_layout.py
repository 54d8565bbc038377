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

#: each room's floor: a module may import from its own floor and the ones below only. A room
#: inside a room ("alignment.decoding") has a floor of its own; a module takes the floor of the
#: longest name here that holds it
FLOORS = {"errors": 0, "frames": 0, "runtime": 0, "learn": 0, "_models": 0,
          "io": 1, "features": 1, "phones": 1, "words": 2, "alignment": 3, "plotting": 3, "vowels": 4,
          "api": 5, "cli": 6, "__main__": 7,
          # the aligner's rooms: decoders first, their review and scoring above them, the model,
          # pipelines and training above those, adaptation (which drives all of them) on top
          "alignment.decoding": 3.0, "alignment.durations": 3.0, "alignment.review": 3.1, "alignment.evaluation": 3.1,
          "alignment.model": 3.2, "alignment.conditions": 3.2, "alignment.pipeline": 3.2,
          "alignment.corpus": 3.2, "alignment.training": 3.2, "alignment.distillation": 3.2,
          "alignment.universal": 3.2, "alignment.universal_training": 3.2, "alignment.adaptation": 3.3}
#: the most modules one folder may hold, and the most lines one file
MAX_MODULES_PER_FOLDER = 12
MAX_LINES = 1000


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
    parts = module.split(".")[1:]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in FLOORS:
            return FLOORS[".".join(parts[:n])]
    return None


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
    assert [name for name, n in lines.items() if n > MAX_LINES] == []
    crowded = {folder.relative_to(PACKAGE).as_posix(): n for folder in [PACKAGE, *PACKAGE.rglob("*/")]
               if folder.is_dir() and "__pycache__" not in folder.parts
               and (n := len([p for p in folder.glob("*.py") if p.name != "__init__.py"])) > MAX_MODULES_PER_FOLDER}
    assert crowded == {}


def test_every_alignment_module_sits_in_a_room_with_a_floor():
    """A new module of ``alignment/`` (or a new room there) gets its floor here, so the order of
    the rooms is a decision, not an accident."""
    edges = _imports(_modules())
    unplaced = sorted(m for m in edges if m.startswith("aligner.alignment.")
                      and not any(m == f"aligner.{k}" or m.startswith(f"aligner.{k}.")
                                  for k in FLOORS if k.startswith("alignment.")))
    assert unplaced == []


REPO = Path(__file__).resolve().parents[2]


def _tree_modules(root: Path, package: str) -> dict:
    """``{dotted name: path}`` of the modules of a folder of the checkout (``benchmarks``, ...)."""
    out = {}
    for path in (REPO / root).rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        parts = (package,) + path.relative_to(REPO / root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _circles(edges: dict) -> list:
    state: dict = {}
    found = []

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(edges[node]):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return [c for c in found if not all(m.startswith(c[0] + ".") or m == c[0] for m in c)]


def test_benchmarks_have_no_import_circle():
    """The measurement tools import one another one way only (shared helpers sit in modules of
    their own, such as ``benchmarks.alignment.folds``)."""
    if not (REPO / "benchmarks").is_dir():
        import pytest

        pytest.skip("no benchmarks/ beside the tests")
    assert _circles(_imports(_tree_modules(Path("benchmarks"), "benchmarks"))) == []


def test_no_folder_of_the_checkout_is_crowded():
    """Source, benchmarks and tests: at most MAX_MODULES_PER_FOLDER modules a folder, in rooms."""
    crowded = {}
    for root in ("src", "benchmarks", "tests", "recipes"):
        for folder in [REPO / root, *(REPO / root).rglob("*/")]:
            if not folder.is_dir() or "__pycache__" in folder.parts:
                continue
            n = len([p for p in folder.glob("*.py") if p.name not in ("__init__.py", "conftest.py")])
            if n > MAX_MODULES_PER_FOLDER:
                crowded[folder.relative_to(REPO).as_posix()] = n
    assert crowded == {}
