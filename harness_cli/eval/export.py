"""``harness eval export CASE``: a case with a finished investigation as an eval case — its
ticket, the model's recorded answers per iteration and role, and its outcome as what the
grader expects — so a change to prompts, SOPs or gates can be replayed against it.

The recorded answers are the final texts each role gave (iterations/NN.json ``output``, the
reviews' verdicts, the locked slate); the tool calls inside a round are not replayed, so a
rule that reads the round's tool calls (G4, stalled) sees none. The exported case says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_cli import clock
from harness_cli.errors import InputError
from harness_cli.investigation.precommit import FILE as LOCK_FILE
from harness_cli.loop.report import extract_report
from harness_cli.workspace import registry

FORCES = ("CONFIDENCE_FORCE", "CAUSAL_CHAIN_FORCE", "G_BLOCKER_FORCE")


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def export_case(case_id: str) -> dict[str, Any]:
    case = registry.load_case(case_id)
    folder = registry.case_dir(case_id)
    records = [_json(p) for p in sorted((folder / "iterations").glob("[0-9]*.json"))]
    if not records or not case.exit:
        raise InputError(
            f"case {case_id} has no finished investigation to export",
            hint=f"run `harness investigate {case_id}` first",
        )
    exit_name = case.exit.split()[0].removeprefix("exit=")
    investigator = [
        {
            "name": f"iteration {r['iteration']} (recorded)",
            "when": {"user_contains": f"iteration {r['iteration']} of"},
            "reply": {"text": str(r.get("output") or "(no answer was recorded)")},
        }
        for r in records
    ]
    roles: dict[str, list[dict[str, Any]]] = {"investigator": investigator}
    lock = folder / LOCK_FILE
    if lock.exists():
        slate = _json(lock)
        body = {k: slate[k] for k in ("hypothesis_slate", "selection_criteria") if k in slate}
        roles["precommit"] = [
            {"name": "the recorded slate", "reply": {"text": f"```json\n{json.dumps(body)}\n```"}}
        ]
    outputs = {int(r["iteration"]): str(r.get("output") or "") for r in records}
    adversarial, red = _reviews(folder, outputs)
    if adversarial:
        roles["adversarial-reviewer"], roles["red-team"] = adversarial, red
    forced = any(str(r.get("reason", "")).startswith(FORCES) for r in records)
    return {
        "schema_version": 1,
        "id": f"export-{case_id}".lower(),
        "description": f"replay of case {case_id} ({case.exit.split('  ')[0].strip()}, "
        f"{len(records)} iteration(s)), exported {clock.now().date().isoformat()}; tool calls "
        "inside a round are not replayed",
        "honest": not forced,
        "defect": f"replay of {case_id}",
        "script": "inv_honest",
        "roles": roles,
        "setup": {"ticket": _ticket(folder)},
        "expect": {
            "exit": exit_name,
            "exit_code": 4 if exit_name == "budget" else 0,
            "iterations": len(records),
            "confidences": [int(r["verdict"]["confidence"]) for r in records],
        },
    }


def _ticket(folder: Path) -> str:
    try:
        message = _json(folder / "message.json")
    except (OSError, ValueError):
        return ""
    return str(message.get("text", "")) if isinstance(message, dict) else str(message)


def _reviews(
    folder: Path, outputs: dict[int, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The recorded verdicts, the latest first. The adversarial reviewer's narrative holds
    every round up to the one it reviews (``### Iteration N``), so each verdict is keyed on
    its round's heading; the red team sees only the ticket and the conclusion, so its answer
    is keyed on the conclusion (the same conclusion gets the latest answer)."""
    adversarial: list[dict[str, Any]] = []
    red: list[dict[str, Any]] = []
    seen: set[str] = set()
    for path in sorted((folder / "review").glob("[0-9]*.json"), reverse=True):
        data = _json(path)
        raw = dict(data.get("review") or {})
        n = int(data.get("after_iteration", 0))
        team = raw.pop("red_team", {"hypothesis": "", "diverges": False})
        name = f"review after iteration {n} (recorded)"
        adversarial.append({"name": name, "when": {"user_contains": f"### Iteration {n}\n"},
                            "reply": {"text": json.dumps(raw)}})  # fmt: skip
        report = extract_report(outputs.get(n, "")).report
        key = report.root_cause.summary[:80] if report and report.root_cause else ""
        if key in seen:
            continue
        seen.add(key)
        when = {"user_contains": key} if key else {}
        red.append({"name": name, "when": when, "reply": {"text": json.dumps(team)}})
    return adversarial, red
