"""The incident benchmark (#31 item 5): its data holds what it claims (each incident's evidence
query, run on its seeded world, shows the truth; the rubric accepts the truth and refuses the
distractor), its arithmetic is right on known inputs (Brier, ECE, percentiles), evidence is
graded from the world's record of calls and not from the report, and end to end — through
``harness investigate``, the Anthropic emulator, the world's MCP servers over HTTP and the
Jira emulator — the reference investigator passes where the careless one fails.

The end-to-end test runs one incident (both investigators, ~20 s); HARNESS_BENCH_FULL=1 adds a
blocked one and two more. The whole benchmark is ``bench/bench_incidents.py``."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.errors import ConfigError, InputError
from harness_cli.eval.incidents.grade import (
    CaseResult,
    EvidenceGrade,
    RubricJudge,
    brier,
    ece,
    grade_evidence,
    judge_for,
    percentile,
    rubric_missing,
    summarise,
)
from harness_cli.eval.incidents.investigators import library_case, survey
from harness_cli.eval.incidents.model import (
    INCIDENTS_DIR,
    Incident,
    load_incident,
    load_incidents,
)
from harness_cli.eval.incidents.run import IncidentBench, final_confidence
from harness_cli.loop.report import parse_report
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.jira_api import SANDBOX_TOKEN, SANDBOX_USER, JiraEmulator
from harness_cli.sandbox.model_script import load_script
from harness_cli.sandbox.runner import SANDBOX_TOKENS
from harness_cli.sandbox.world import knowledge, seeded, telemetry, tracker
from harness_cli.sandbox.world.incident import NOW, when

pytestmark = pytest.mark.filterwarnings("ignore:Field 'lifespan' has an incomplete definition")

INCIDENTS = load_incidents()
BY_ID = {i.id: i for i in INCIDENTS}
FULL = bool(os.environ.get("HARNESS_BENCH_FULL"))


# -- the data ----------------------------------------------------------------------------
def test_the_corpus_is_large_enough_and_has_both_exits() -> None:
    assert len(INCIDENTS) >= 20
    exits = [i.exit for i in INCIDENTS]
    assert exits.count("blocked") >= 3 and exits.count("complete") >= 15


@pytest.fixture(scope="module")
def jira() -> Iterator[JiraEmulator]:
    emulator = JiraEmulator(deployment="Cloud")
    emulator.start()
    yield emulator
    emulator.stop()


def _answer(incident: Incident, server: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """What the world's server would answer: logs, metrics and docs computed in-process from
    the seeded state; the tracker through the Jira emulator seeded with the incident's issues
    (a status it cannot render is a 500 there, as it would be in a run)."""
    world = seeded.parse(incident.seed_file())
    if server == "logs":
        return telemetry.search_logs(**args, lines=world.lines, services=world.services)
    if server == "metrics":
        return telemetry.query_metric(**args, metrics=world.metrics, buckets=world.buckets)
    if server == "docs" and tool == "get_doc":
        return knowledge.get_doc(args["doc_id"], world.docs)
    if server == "docs":
        return knowledge.search_docs(args["query"], docs=world.docs)
    return {"get_issue": tracker.issue, "get_comments": tracker.comments}[tool](args["key"])


@pytest.mark.parametrize("incident", INCIDENTS, ids=lambda i: i.id)
def test_each_evidence_query_shows_the_truth_on_its_seeded_world(
    incident: Incident, jira: JiraEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    jira.control("reset", {})
    jira.control("seed", incident.jira_seed())
    monkeypatch.setenv("JIRA_URL", jira.url)
    monkeypatch.setenv("JIRA_USER", SANDBOX_USER)
    monkeypatch.setenv("JIRA_TOKEN", SANDBOX_TOKEN)
    for e in incident.evidence:
        if e.outcome == "ok":
            said = json.dumps(_answer(incident, e.server, e.tool, e.args), ensure_ascii=False)
            assert e.shows in said, (e.mcp_name, e.args)
        else:  # a source that is down: the incident's faults take it down
            assert any(
                f["kind"] == e.outcome and f["server"] == e.server for f in incident.world.faults
            ), e
    query = incident.distractor.query
    if query is not None:
        said = json.dumps(_answer(incident, query.server, query.tool, query.args))
        assert query.shows in said, query
    for at, *_ in incident.seed_file()["logs"]:
        assert when(at, NOW) <= NOW, f"{at} is after the world's now: no search finds it"


@pytest.mark.parametrize("incident", INCIDENTS, ids=lambda i: i.id)
def test_the_rubric_takes_the_truth_and_refuses_the_distractor(incident: Incident) -> None:
    assert rubric_missing(incident.truth.rubric, incident.truth.root_cause) == []
    assert rubric_missing(incident.truth.rubric, incident.distractor.root_cause) != []


@pytest.mark.parametrize("incident", INCIDENTS, ids=lambda i: i.id)
def test_both_investigators_are_valid_model_scripts(incident: Incident) -> None:
    for who in ("reference", "bad"):
        case = library_case(incident, who)
        load_script(case.model_source())
    calls = {c["name"].split("__")[1] for c in survey(incident)}
    assert calls | {e.server for e in incident.evidence} == {"logs", "metrics", "tracker", "docs"}


def test_a_bad_incident_file_is_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "inc-x.yaml"
    path.write_text("schema_version: 1\nid: inc-x\ntitle: t\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"incident .*inc-x\.yaml"):
        load_incident(path)
    raw = Path(__file__).parents[2] / "evals" / "incidents" / "inc-02-metrics-denied.yaml"
    path.write_text(raw.read_text().replace("outcome: denied", "outcome: ok"))
    with pytest.raises(ConfigError, match="blocked incident needs an evidence call that fails"):
        load_incident(path)
    path.write_text(raw.read_text().replace("status: Done", "status: Closed"))
    with pytest.raises(ConfigError, match="status 'Closed' is not one of Jira's"):
        load_incident(path)


def test_the_cli_refuses_bad_input_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from harness_cli.cli import run

    assert run(["eval", "incidents", "--investigator", "worst"]) == 2
    assert run(["eval", "incidents", "inc-99-nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "harness: --investigator 'worst' — use reference or bad",
        f"harness: no incident 'inc-99-nope' in {INCIDENTS_DIR}",
    ]


# -- arithmetic on known inputs ----------------------------------------------------------
def test_brier_and_ece_on_known_inputs() -> None:
    pairs = [(0.9, True), (0.9, False), (0.2, False), (0.6, True)]
    assert brier(pairs) == pytest.approx((0.01 + 0.81 + 0.04 + 0.16) / 4)
    # bins: 90-100 % holds two (accuracy .5, confidence .9), 20-30 % one (0 vs .2), 60-70 %
    # one (1 vs .6): .5·.4 + .25·.2 + .25·.4
    assert ece(pairs) == pytest.approx(0.35)
    assert ece([(1.0, True), (0.0, False)]) == 0.0  # p = 1 lands in the last bin
    assert brier([(1.0, True), (0.0, False)]) == 0.0
    assert ece([(0.95, False)] * 3) == pytest.approx(0.95)
    # two bins: one bin for all hides the miscalibration the finer binning shows
    spread = [(0.1, True), (0.9, False)]
    assert ece(spread, bins=1) == pytest.approx(0.0) and ece(spread) == pytest.approx(0.9)
    assert brier([]) is None and ece([]) is None


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(10, 0, -1)]
    assert percentile(values, 0.5) == 5.0 and percentile(values, 0.95) == 10.0
    assert percentile([3.0], 0.95) == 3.0


def test_final_confidence_is_the_exit_lines() -> None:
    line = "exit=stalled        confidence=95%  iterations=3   elapsed=0min    (…)"
    assert final_confidence(line) == 0.95
    assert final_confidence("exit=failed") is None


# -- evidence from the wire --------------------------------------------------------------
def _report(evidence: list[dict[str, str]], unchecked: list[dict[str, str]] | None = None) -> Any:
    return parse_report(
        {
            "status": "COMPLETE",
            "confidence": 90,
            "root_cause": {"summary": "x", "evidence": evidence},
            "unchecked_sources": unchecked or [],
        }
    )


def _call(server: str, tool: str, outcome: str = "ok", **args: Any) -> dict[str, Any]:
    return {"server": server, "tool": tool, "outcome": outcome, "arguments": args}


def test_evidence_counts_only_calls_the_world_recorded() -> None:
    incident = BY_ID["inc-01-pool-leak"]
    cites = _report(
        [
            {"claim": "pool exhausted", "kind": "HARD", "source": "logs: mcp__logs__search_logs"},
            {
                "claim": "pool at 50",
                "kind": "HARD",
                "source": "metrics: mcp__metrics__query_metrics",
            },
        ]
    )
    made = [
        _call("logs", "search_logs", service="payments-gw", query="Pool Exhausted", limit=5),
        _call("metrics", "query_metrics", metric="payments.db.pool.active", step="1h"),
    ]
    assert grade_evidence(incident, cites, made).ok

    # the same report with no calls: the claim is not the proof, and it is unbacked
    none = grade_evidence(incident, cites, [])
    assert not none.ok and len(none.missing) == 2 and len(none.unbacked) == 2

    # a call to the right tool with other arguments is not the proving call
    wrong = [made[0], _call("metrics", "query_metrics", metric="checkout.http.5xx")]
    graded = grade_evidence(incident, cites, wrong)
    assert not graded.ok and graded.missing == [
        "mcp__metrics__query_metrics {'metric': 'payments.db.pool.active'}: no such call (ok) "
        "on the wire"
    ]

    # made but cited only as INFERRED: not cited
    soft = _report([{"claim": "pool", "kind": "INFERRED", "source": "logs"}])
    missing = grade_evidence(incident, soft, made).missing
    assert len(missing) == 2 and all(m.endswith("made but not cited") for m in missing)


def test_a_blocked_incident_wants_the_failed_call_and_its_source_named() -> None:
    incident = BY_ID["inc-02-metrics-denied"]
    hard = [{"claim": "batch 2900 ms", "kind": "HARD", "source": "logs: mcp__logs__search_logs"}]
    made = [
        _call("logs", "search_logs", service="ranker"),
        _call("metrics", "query_metrics", "denied", metric="ranker.batch_ms"),
    ]
    named = _report(hard, [{"name": "metrics", "access_status": "403 Forbidden"}])
    assert grade_evidence(incident, named, made).ok
    assert not grade_evidence(incident, _report(hard), made).ok  # the failure not reported
    # a denied fault the run never met: "metrics is down" is then a claim, not a record
    assert not grade_evidence(incident, named, made[:1]).ok


def test_the_judge_is_the_rubric_unless_live_and_live_needs_a_model() -> None:
    incident = BY_ID["inc-01-pool-leak"]
    assert isinstance(judge_for(live=False), RubricJudge)
    assert RubricJudge()(incident, incident.truth.root_cause).correct
    with pytest.raises(InputError, match="judge model"):
        judge_for(live=True)
    judge = judge_for(live=True, model=lambda prompt: '{"correct": true, "why": "same"}')
    verdict = judge(incident, "anything")
    assert verdict.correct and verdict.by == "model"
    prompts: list[str] = []
    garbled = judge_for(live=True, model=lambda p: prompts.append(p) or "yes")  # type: ignore[func-returns-value]
    assert not garbled(incident, "x").correct and incident.truth.root_cause in prompts[0]


def test_summary_sums_per_investigator() -> None:
    def result(who: str, ok: bool, p: float | None, seconds: float) -> CaseResult:
        return CaseResult(
            "i",
            who,
            "complete",
            "complete",
            p,
            ok,
            "",
            EvidenceGrade(ok=ok),
            usd=0.01,
            tokens=100,
            seconds=seconds,
        )

    rows = summarise(
        [
            result("reference", True, 0.8, 1.0),
            result("reference", True, 0.8, 3.0),
            result("bad", False, 0.95, 2.0),
            result("bad", False, None, 4.0),
        ]
    )
    ref, bad = rows
    assert (ref.investigator, ref.passed, ref.cases, ref.p50_s, ref.p95_s) == (
        "reference",
        2,
        2,
        1.0,
        3.0,
    )
    assert ref.brier == pytest.approx(0.04) and ref.ece == pytest.approx(0.2)
    assert bad.passed == 0 and bad.brier == pytest.approx((0.95**2 + 0) / 2)  # no number: 0 %
    assert bad.usd_per_case == pytest.approx(0.01)


# -- end to end --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IncidentBench]:
    with IncidentBench(tmp_path_factory.mktemp("incidents")) as running:
        yield running


E2E = ["inc-01-pool-leak"] + (
    ["inc-02-metrics-denied", "inc-05-feature-flag", "inc-18-logs-denied"] if FULL else []
)


@pytest.mark.slow
@pytest.mark.parametrize("incident_id", E2E)
def test_the_reference_passes_where_the_careless_one_fails(
    bench: IncidentBench, incident_id: str
) -> None:
    incident = BY_ID[incident_id]
    ref = bench.run(incident, "reference")
    assert ref.passed, ref.to_json()
    assert ref.exit == incident.exit and ref.usd > 0 and ref.tokens > 0 and ref.seconds > 0
    assert len(ref.evidence.cited) == len(incident.evidence)

    bad = bench.run(incident, "bad")
    assert not bad.passed and not bad.root_cause_ok
    assert bad.evidence.missing, bad.to_json()  # the proving calls are not on the wire
    assert bad.exit != "complete"  # the harness did not accept the careless report

    [r, b] = summarise([ref, bad])
    assert r.brier < b.brier


@pytest.mark.slow
def test_live_mode_hook_runs_the_same_path_with_a_judge_model(
    bench: IncidentBench, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``live``: the precommit and the investigator go to the environment's endpoint (here an
    emulator standing in for the real API, playing the reference's script), the root cause is
    graded by a judge model (here a function that reads the prompt it is given)."""
    incident = BY_ID["inc-01-pool-leak"]
    stand_in = AnthropicEmulator()
    stand_in.start()
    try:
        stand_in.load_script(library_case(incident, "reference").model_source())
        monkeypatch.setenv("ANTHROPIC_BASE_URL", stand_in.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", SANDBOX_TOKENS["ANTHROPIC_API_KEY"])
        asked: list[str] = []

        def judge_model(prompt: str) -> str:
            asked.append(prompt)
            right = "refund_batch" in prompt.split("ANSWER:", 1)[1]
            return json.dumps({"correct": right, "why": "names the leaking refund_batch"})

        bench.judge = judge_for(live=True, model=judge_model)
        result = bench.run(incident, "live")
        assert result.passed, result.to_json()
        assert result.root_cause_why == "names the leaking refund_batch" and len(asked) == 1
        assert {c.role for c in stand_in.calls} == {"precommit", "investigator"}
    finally:
        bench.judge = RubricJudge()
        stand_in.stop()
