"""The incidents through the harness's real investigation loop: one sandbox world (its MCP host
over streamable HTTP), one Jira emulator behind its tracker, one Anthropic emulator playing the
investigator's script; per incident and investigator the world is reseeded (``incident.json``,
the Jira issues, the incident's faults, the call record cleared) and ``harness init``, ``case
new`` and ``harness investigate`` run in a fresh home (``eval.investigation_driver``), with
the world's logs, metrics, tracker and docs in agent-config/mcp.json.

What is graded comes from the wire and the disk: the world's record of the calls it answered,
the final iteration's report as the model wrote it, the exit line, the cost log.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from harness_cli import resources
from harness_cli.eval.incidents.grade import CaseResult, Judge, RubricJudge, answer_text
from harness_cli.eval.incidents.grade import grade_evidence as _grade_evidence
from harness_cli.eval.incidents.investigators import Investigator, library_case
from harness_cli.eval.incidents.model import SOURCES, Incident
from harness_cli.eval.investigation_driver import run_case
from harness_cli.loop.report import CompletionReport, extract_report
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.jira_api import SANDBOX_TOKEN, SANDBOX_USER, JiraEmulator
from harness_cli.sandbox.world.runner import World

__all__ = ["IncidentBench", "bench"]

_CONFIDENCE_PREFIX = "confidence="


class IncidentBench:
    """The emulators and the world, started once; ``run`` plays one incident."""

    def __init__(self, root: Path, runtime: str = "anthropic", judge: Judge | None = None):
        self.root, self.runtime, self.judge = root, runtime, judge or RubricJudge()
        self.world: World | None = None
        self.jira: JiraEmulator | None = None
        self.anthropic: AnthropicEmulator | None = None
        self.config = root / "config"

    def start(self) -> IncidentBench:
        self.root.mkdir(parents=True, exist_ok=True)
        self.jira = JiraEmulator(deployment="Cloud")
        self.jira.start()
        self.anthropic = AnthropicEmulator()
        self.anthropic.start()
        env = {"JIRA_URL": self.jira.url, "JIRA_USER": SANDBOX_USER, "JIRA_TOKEN": SANDBOX_TOKEN}
        self.world = World(self.root / "world", env).start()
        self.world.wait_ready()
        self._config_root(self.world)
        return self

    def stop(self) -> None:
        for part in (self.world, self.anthropic, self.jira):
            if part is not None:
                part.stop()

    def __enter__(self) -> IncidentBench:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _config_root(self, world: World) -> None:
        """The packaged example config with the world's four sources as mcp.json (all over
        HTTP: one host serves every run; a stdio server would be a process per run)."""
        root = self.config
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(resources.example_config(), root / "agent-config")
        shutil.copytree(resources.example_sops(), root / "sops")
        servers = {name: world.http_entry(name) for name in SOURCES}
        (root / "agent-config" / "mcp.json").write_text(
            json.dumps({"mcpServers": servers}, indent=2) + "\n", encoding="utf-8"
        )

    def seed(self, incident: Incident) -> None:
        """The world as the incident tells it; nothing of the last run is left."""
        assert self.world is not None and self.jira is not None
        self.world.act("reset")
        seed = self.world.root / "incident.json"
        fresh = seed.with_suffix(".tmp")
        fresh.write_text(json.dumps(incident.seed_file()), encoding="utf-8")
        os.replace(fresh, seed)
        self.jira.control("reset", {})
        self.jira.control("seed", incident.jira_seed())
        for fault in incident.world.faults:
            self.world.fault(**fault)

    def run(self, incident: Incident, who: Investigator) -> CaseResult:
        assert self.world is not None, "IncidentBench.start() first"
        self.seed(incident)
        case = library_case(incident, who)
        case.setup.env["HARNESS_EVAL_LEAN"] = "1"  # no `review`/`case show` after the run
        keep = Path(tempfile.mkdtemp(prefix="inc-", dir=self.root))
        try:
            seen = run_case(
                case, self.runtime, anthropic=self.anthropic, keep=keep, config_root=self.config
            )
            report = final_report(keep)
            calls = self.world.calls()
        finally:
            shutil.rmtree(keep, ignore_errors=True)
        verdict = self.judge(incident, answer_text(report))
        problems = [f"the script left a request unmatched: {u[:120]}" for u in seen.unmatched]
        return CaseResult(
            incident=incident.id,
            investigator=who,
            exit=seen.exit,
            expected_exit=incident.exit,
            confidence=final_confidence(seen.exit_line),
            root_cause_ok=verdict.correct,
            root_cause_why=verdict.why,
            evidence=_grade_evidence(incident, report, calls),
            usd=seen.usd,
            tokens=seen.tokens,
            seconds=round(seen.wall_seconds, 3),
            iterations=seen.iterations,
            problems=problems,
        )


def final_report(keep: Path) -> CompletionReport | None:
    """The last iteration's report as the model wrote it (iterations/NN.json ``output``)."""
    found = sorted(keep.glob("*/workspace/case-workspaces/*/iterations/[0-9]*.json"))
    for path in reversed(found):
        output = json.loads(path.read_text(encoding="utf-8")).get("output", "")
        report = extract_report(str(output)).report
        if report is not None:
            return report
    return None


def final_confidence(exit_line: str) -> float | None:
    """The number the operator was given: the exit line's ``confidence=NN%``, as 0..1."""
    for word in exit_line.split():
        if word.startswith(_CONFIDENCE_PREFIX) and word.endswith("%"):
            digits = word[len(_CONFIDENCE_PREFIX) : -1]
            if digits.isdigit():
                return int(digits) / 100
    return None


@contextmanager
def bench(root: Path | None = None, **options: Any) -> Iterator[IncidentBench]:
    made = root is None
    where = root or Path(tempfile.mkdtemp(prefix="harness-incidents-"))
    running = IncidentBench(where, **options).start()
    try:
        yield running
    finally:
        running.stop()
        if made:
            shutil.rmtree(where, ignore_errors=True)


def run_all(
    incidents: Sequence[Incident],
    investigators: Sequence[Investigator],
    *,
    on_result: Callable[[CaseResult], None] | None = None,
    **options: Any,
) -> list[CaseResult]:
    """Every incident with every investigator, incident by incident (the world is one)."""
    results: list[CaseResult] = []
    with bench(**options) as running:
        for incident in incidents:
            for who in investigators:
                result = running.run(incident, who)
                results.append(result)
                if on_result is not None:
                    on_result(result)
    return results
