"""The investigate workflow end to end: case → runtime → loop → publish."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness_cli.agents.factory import configured_runtime
from harness_cli.config import Config, load_config
from harness_cli.errors import PolicyRefused
from harness_cli.investigation.loop import Loop, cache_prefix
from harness_cli.investigation.publish import publish, read_ticket
from harness_cli.investigation.runs import CaseRunner, evidence_paths
from harness_cli.ops import status_message
from harness_cli.workspace import registry

STARTABLE = ("new", "investigating", "awaiting_approval", "failed", "escalated")


def investigate_case(case_id: str, *, post: bool = True) -> dict[str, Any]:
    cfg = load_config()
    case = registry.load_case(case_id)
    if case.status not in STARTABLE:
        raise PolicyRefused(
            f"case {case_id} is {case.status}; not investigating it again",
            hint="reopen it first if that is what you want",
        )
    with registry.update_case(case_id, cfg.harness.thresholds, "investigating") as fresh:
        fresh.move("investigating", by="investigate")
    folder = registry.case_dir(case_id)
    _archive_previous_run(folder)
    runtime = configured_runtime(cfg)
    status = _live_status(cfg, case_id) if post else None
    runner = CaseRunner(
        runtime,
        cfg,
        folder,
        cache_prefix=cache_prefix(cfg, case.project),
        status=status,
        evidence=evidence_paths(cfg, case.project),
    )
    try:
        ticket = read_ticket(folder, cfg.harness.inputs.ticket_chars)
        result = Loop(cfg, case, folder, runner, ticket).run()
    except BaseException as exc:
        if status is not None:
            status.failed(status_message.reason(exc))
        with registry.update_case(case_id, cfg.harness.thresholds, "investigation failed") as c:
            c.move("failed", by="investigate")
        raise
    out = None
    if post:
        from harness_cli.services import factory

        out = factory.outbound(cfg)
    done = publish(cfg, case_id, result, out)
    if status is not None:
        status.done(done.exit_line)
    return {
        "case_id": case_id,
        "exit_line": done.exit_line,
        "status": done.status,
        "iterations": result.iterations,
        "posted_ts": done.posted_ts,
        "confidence": result.history[-1].confidence,
    }


def _live_status(cfg: Config, case_id: str) -> status_message.StatusReporter | None:
    from harness_cli.services import factory

    out = factory.outbound(cfg, factory.lazy_slack())
    return status_message.for_case(cfg, out, case_id, f"investigate {case_id}")


def _archive_previous_run(folder: Path) -> None:
    """A re-investigation keeps the earlier run: its iterations and reviews move under
    ``runs/<stamp>/`` instead of being overwritten from ``01.json`` on."""
    from harness_cli import clock

    moved = [
        d for d in (folder / "iterations", folder / "review") if d.is_dir() and any(d.iterdir())
    ]
    if not moved:
        return
    target = folder / "runs" / clock.stamp()
    target.mkdir(parents=True, exist_ok=True)
    for path in moved:
        path.rename(target / path.name)


def review_case(case_id: str) -> dict[str, Any]:
    """Both reviews of the latest report in ``iterations/``; saved under ``review/``."""
    import json

    from harness_cli import clock
    from harness_cli.errors import InputError
    from harness_cli.investigation import precommit
    from harness_cli.investigation.gates import evaluate
    from harness_cli.investigation.prompts import render
    from harness_cli.investigation.report import extract_report
    from harness_cli.investigation.reviewer import review
    from harness_cli.state.store import atomic_write_json

    cfg = load_config()
    case = registry.load_case(case_id)
    folder = registry.case_dir(case_id)
    latest = sorted((folder / "iterations").glob("*.json"))
    found = None
    for path in reversed(latest):
        found = extract_report(json.loads(path.read_text()).get("output", "")).report
        if found is not None:
            break
    if found is None:
        raise InputError(
            f"case {case_id} has no completion report to review",
            hint=f"run `harness investigate {case_id}` first",
        )
    slate, _ = precommit.load_locked(folder)
    runtime = configured_runtime(cfg)
    runner = CaseRunner(runtime, cfg, folder, cache_prefix=cache_prefix(cfg, case.project))
    outcome = review(
        runner,
        render=lambda name, **v: render(cfg, name, **v),
        ticket=read_ticket(folder, cfg.harness.inputs.ticket_chars),
        slate=json.dumps(slate.model_dump() if slate else {}, indent=2),
        analysis=(folder / "ANALYSIS.md").read_text() if (folder / "ANALYSIS.md").exists() else "",
        report=found,
    )
    verdict = evaluate(found, None, outcome.verdict, cfg.harness.investigation)
    atomic_write_json(
        folder / "review" / f"manual-{clock.stamp()}.json",
        {"review": outcome.raw, "verdict": verdict.to_json(), "calls": runner.drain()},
    )
    return {"case_id": case_id, "review": outcome.raw, "verdict": verdict.to_json()}
