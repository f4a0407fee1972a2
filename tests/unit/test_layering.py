"""The floors of ARCHITECTURE.md, held over every import — at module top and inside function
bodies (#29): no room imports above its floor, no import cycle of more than two modules, at
most a tenth of internal imports deferred into functions. And the shared loop skeleton sits
below the layers: ``harness_cli/loop/`` imports no layer, and no layer reaches into another
layer's folder for the skeleton's parts."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit import import_graph

PACKAGE = Path(__file__).resolve().parents[2] / "harness_cli"
LAYERS = ("intake", "investigation", "delivery", "memory", "improvement")
SKELETON_MOVED = ("prompts", "jsonblocks", "report", "verdict", "evidence", "runs")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at module level or inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_the_loop_skeleton_imports_no_layer() -> None:
    offenders = {
        f"{path.relative_to(PACKAGE)} imports {module}"
        for path in (PACKAGE / "loop").rglob("*.py")
        for module in imported_modules(path)
        if module.split(".")[:2] in (["harness_cli", layer] for layer in LAYERS)
    }
    assert not offenders, sorted(offenders)


def test_no_layer_keeps_a_copy_of_the_skeleton() -> None:
    stale = [name for name in SKELETON_MOVED if (PACKAGE / "investigation" / f"{name}.py").exists()]
    assert not stale, f"skeleton modules back under investigation/: {stale}"
    assert not (PACKAGE / "investigation" / "gates" / "notes.py").exists()


# The floors of ARCHITECTURE.md ("four floors, ports passed down"), bottom up. A room imports
# from its own floor or below — at module top or inside a function body alike
# (tests/unit/import_graph.py); the tools beside the edge are imported by the edge only.
FLOORS: dict[str, tuple[str, ...]] = {
    "base": ("harness_cli", "clock", "errors", "paths", "logs", "redaction", "faults",
             "bounded", "bounds", "resources", "result", "approval", "progress"),
    "floor": ("state", "config", "services", "workspace", "cost", "dispatch", "outbox",
              "sessions", "run_slots", "dryrun", "components"),
    "kernel": ("agents", "loop"),
    "layers": ("intake", "investigation", "delivery", "memory", "improvement", "ops"),
    "runner": ("workflows",),
    "edge": ("wiring", "commands", "cli", "__main__", "output", "crash"),
    "tools": ("sandbox", "eval"),
}  # fmt: skip
RANK = {name: rank for rank, name in enumerate(FLOORS)}
ROOM = {room: floor for floor, rooms in FLOORS.items() for room in rooms}

KNOWN_DEBT: dict[tuple[str, str], str] = {}
"""Imports that break the floors today, each with its reason. The list only shrinks: a new
one fails the test below, and an entry that no longer happens fails it too (delete it)."""


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "harness_cli"


def _short(module: str) -> str:
    return module.removeprefix("harness_cli.")


def _floor_breaks(graph: import_graph.Graph) -> dict[tuple[str, str], str]:
    """(importer, imported) -> where, for each import that reaches above the importer's floor.
    A leaf — a module that imports nothing above base, such as the settings models config
    reads — may be imported from any floor: it can neither pull a floor in nor close a cycle."""
    base = {m for m in graph.modules if ROOM.get(_room(m)) == "base"}
    targets: dict[str, set[str]] = {}
    for imp in graph.imports:
        targets.setdefault(imp.source, set()).add(imp.target)
    leaves = {m for m in graph.modules if targets.get(m, set()) <= base}
    found: dict[tuple[str, str], str] = {}
    for imp in graph.imports:
        src, dst = ROOM[_room(imp.source)], ROOM[_room(imp.target)]
        if src == "tools" or (imp.target in leaves and dst != "tools"):
            continue
        tool = dst == "tools" and src != "edge"
        if tool or (dst != "tools" and RANK[dst] > RANK[src]):
            key = (_short(imp.source), _short(imp.target))
            where = "inside a function" if imp.deferred else "at module top"
            found.setdefault(key, f"{imp.source}:{imp.line} ({src}) imports {imp.target} ({dst}) "
                             f"{where}")  # fmt: skip
    return found


GRAPH = import_graph.build()


def test_every_room_has_a_floor() -> None:
    rooms = {_room(m) for m in GRAPH.modules}
    assert not rooms - ROOM.keys(), f"give these a floor in FLOORS: {sorted(rooms - ROOM.keys())}"


def test_no_room_imports_above_its_floor() -> None:
    found = _floor_breaks(GRAPH)
    new = sorted(v for k, v in found.items() if k not in KNOWN_DEBT)
    assert not new, "imports above their floor (pass a door or a callable down instead):\n" + (
        "\n".join(new)
    )
    stale = sorted(f"{a} -> {b}" for a, b in KNOWN_DEBT if (a, b) not in found)
    assert not stale, "mended: delete from KNOWN_DEBT:\n" + "\n".join(stale)


def test_no_import_cycle_of_more_than_two_modules() -> None:
    big = [[_short(m) for m in c] for c in GRAPH.cycles() if len(c) > 2]
    assert not big, f"import cycles, imports inside functions counted: {big}"


def test_at_most_a_tenth_of_internal_imports_are_deferred() -> None:
    deferred = [i for i in GRAPH.imports if i.deferred]
    assert len(GRAPH.imports) > 1000, "the graph lost its imports: is PACKAGE right?"
    share = len(deferred) / len(GRAPH.imports)
    assert share <= 0.10, f"{len(deferred)} of {len(GRAPH.imports)} imports are deferred"


def test_the_graph_sees_deferred_imports_and_cycles(tmp_path: Path) -> None:
    """The counter itself: an import inside a function is an edge, one under TYPE_CHECKING is
    not, and three modules importing each other in a ring are one cycle of three."""
    pkg = tmp_path / "harness_cli"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from harness_cli import b\n")
    (pkg / "b.py").write_text("from harness_cli import c\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nimport harness_cli.a\nif TYPE_CHECKING:\n"
        "    from harness_cli import b\n"
    )
    graph = import_graph.build(pkg)
    assert [sorted(map(_short, c)) for c in graph.cycles()] == [["a", "b", "c"]]
    assert sum(i.deferred for i in graph.imports) == 1 and len(graph.imports) == 3
