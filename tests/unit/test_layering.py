"""The shared loop skeleton sits below the layers (ARCHITECTURE, "One skeleton, four sizes"):
``harness_cli/loop/`` imports no layer, and no layer reaches into another layer's folder for
the skeleton's parts."""

from __future__ import annotations

import ast
from pathlib import Path

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
