"""docs/BEHAVIOURS.md stays true: every locator resolves in the live repository (file and
function, class or class member) and every test it names exists; every gate code, exit,
investigation threshold, budget and ablatable component has its row. 003: "Chaque locator
doit pouvoir être résolu dans le dépôt actif."""

from __future__ import annotations

import ast
import re
import typing
from functools import cache
from pathlib import Path

from harness_cli.components import COMPONENTS
from harness_cli.cost.prices import Budgets
from harness_cli.investigation.gates.table import TABLE
from harness_cli.investigation.thresholds import InvestigationThresholds
from harness_cli.loop.verdict import Action
from tests.conftest import REPO

MAP = REPO / "docs" / "BEHAVIOURS.md"
LOCATOR = re.compile(r"`((?:harness_cli|tests)/[\w/.-]+\.py)::([\w.]+)`")


def rows() -> list[str]:
    return [ln for ln in MAP.read_text(encoding="utf-8").splitlines()
            if ln.startswith("| ") and "::" in ln]  # fmt: skip


@cache
def names(path: Path) -> frozenset[str]:
    """Every dotted name defined in a module: functions, classes, class members (methods,
    annotated fields, assignments), module-level assignments."""
    found: set[str] = set()

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.add(prefix + node.name)
                if isinstance(node, ast.ClassDef):
                    walk(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found.add(prefix + node.target.id)
            elif isinstance(node, ast.Assign):
                found.update(prefix + t.id for t in node.targets if isinstance(t, ast.Name))

    walk(ast.parse(path.read_text(encoding="utf-8")).body, "")
    return frozenset(found)


def test_every_locator_and_test_of_the_map_resolves() -> None:
    table = rows()
    assert len(table) > 80
    broken = []
    for line in table:
        locators = LOCATOR.findall(line)
        assert len(locators) >= 2, f"a row needs a locator and a test: {line}"
        assert any(p.startswith("tests/") for p, _ in locators), f"no test pins: {line}"
        for rel, name in locators:
            path = REPO / rel
            if not path.is_file():
                broken.append(f"{rel} does not exist")
            elif name not in names(path):
                broken.append(f"{rel}::{name} does not resolve")
    assert not broken, "stale entries in docs/BEHAVIOURS.md:\n" + "\n".join(broken)


def test_every_rule_of_the_reference_has_a_row() -> None:
    text = MAP.read_text(encoding="utf-8")
    first_cells = [ln.split("|")[1] for ln in rows()]
    missing = [f"gate {g.code}" for g in TABLE
               if not any(re.search(rf"\b{g.code}\b", c) for c in first_cells)]  # fmt: skip
    exits = [a.removeprefix("exit_") for a in typing.get_args(Action) if a.startswith("exit_")]
    missing += [f"exit={e}" for e in exits if f"exit={e}:" not in text]
    for model, rel in ((InvestigationThresholds, "investigation/thresholds.py"),
                       (Budgets, "cost/prices.py")):  # fmt: skip
        missing += [
            f"{model.__name__}.{f}"
            for f in model.model_fields
            if f"harness_cli/{rel}::{model.__name__}.{f}`" not in text
        ]
    missing += [f"component {c}" for c in COMPONENTS if f"| component {c} |" not in text]
    forces = ("CONFIDENCE_FORCE", "CAUSAL_CHAIN_FORCE", "G_BLOCKER_FORCE")
    missing += [f for f in forces if f"| {f}:" not in text]
    assert not missing, "rules without a row in docs/BEHAVIOURS.md: " + ", ".join(missing)


def test_a_stale_locator_is_caught(tmp_path: Path) -> None:
    stale = "| x | 1 | `harness_cli/investigation/rules.py::no_such_function` | `tests/x.py::t` |"
    rel, name = LOCATOR.findall(stale)[0]
    assert name not in names(REPO / rel)
