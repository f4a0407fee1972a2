"""Each of the 19 gates turned off alone through the one switch (``components.enabled``), its
family still turning them all off; the matrix's inference of a gate pair whose gates never
fired, checked against the run it stands for; and the committed matrix report holding, for
every gate and review, a case whose outcome changes without it (#31 item 4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness_cli import components
from harness_cli.eval import runner
from harness_cli.eval.cases import DEFAULT_DIR
from harness_cli.eval.trial import TrialResult, TrialSpec
from harness_cli.investigation.gates import TABLE, evaluate
from harness_cli.loop.report import extract_report

REPO = Path(__file__).resolve().parents[2]
MATRIX = REPO / "bench" / "results" / "eval-matrix" / "eval.json"

# COMPLETE at 90 with: an action without verify_action (N1), a root cause with no summary
# (N2), seven unchecked sources (A1's cap: 65), an empty assumption register (A3).
SOURCES = [{"name": f"s{i}", "access_status": "not yet queried"} for i in range(7)]
DEFECTIVE = "```json\n" + json.dumps({
    "status": "COMPLETE", "confidence": 90, "open_questions": [], "unchecked_sources": SOURCES,
    "contradiction_register": [], "assumption_register": [], "adjacent_problems": [],
    "causal_chain_complete": True,
    "root_cause": {"summary": "", "evidence": [
        {"claim": "discount.py: `>`", "kind": "HARD", "source": "acme/pricing-service@main"}]},
    "actions": [{"description": "use >=", "destructive": False, "maps_to_root_cause": True}],
    "draft_response": "fixed",
}) + "\n```"  # fmt: skip


def _verdict_without(
    names: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[set[str], int]:
    home = tmp_path / ("home-" + "-".join(names or ["none"]))
    home.mkdir()
    (home / components.TRIAL_FILE).write_text(json.dumps({"ablate": names}))
    monkeypatch.setenv("HARNESS_HOME", str(home))
    report = extract_report(DEFECTIVE).report
    assert report is not None
    verdict = evaluate(report)
    return set(verdict.codes), verdict.confidence


def test_each_gate_turns_off_alone_and_its_family_turns_off_all_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codes, confidence = _verdict_without([], tmp_path, monkeypatch)
    assert {"N1", "N2", "A1", "A3"} <= codes and confidence == 65
    codes, confidence = _verdict_without(["N2"], tmp_path, monkeypatch)
    assert "N2" not in codes and {"N1", "A1", "A3"} <= codes and confidence == 65
    codes, confidence = _verdict_without(["A1"], tmp_path, monkeypatch)
    assert "A1" not in codes and "A3" in codes and confidence == 90  # the cap is A1's alone
    codes, _ = _verdict_without(["n_gates"], tmp_path, monkeypatch)
    assert not {"N1", "N2"} & codes and {"A1", "A3"} <= codes
    codes, confidence = _verdict_without(["a_gates"], tmp_path, monkeypatch)
    assert not {"A1", "A3"} & codes and {"N1", "N2"} <= codes and confidence == 90


def test_every_gate_of_the_19_has_its_own_switch() -> None:
    counted = [g.code for g in TABLE if g.counted]
    assert len(counted) == 19
    for code in counted:
        alone = [c for c in components.COMPONENTS.values() if c.gates == (code,)]
        assert len(alone) == 1, f"no single switch for {code}"
        assert components.gate_on(code)  # outside a trial every gate runs
    with pytest.raises(KeyError):
        components.gate_on("G9")


def _result(
    case: str, variant: str, codes: list[str], *, deterministic: bool = True
) -> TrialResult:
    return TrialResult(0, "investigation", case, 1, variant, "pass",
                       signature={"codes": codes}, deterministic=deterministic)  # fmt: skip


def test_only_the_pairs_where_a_gate_fired_are_run() -> None:
    done = [_result("fires", "baseline", ["A6", "D"]), _result("quiet", "baseline", ["N1"]),
            _result("drawn", "baseline", [], deterministic=False)]  # fmt: skip
    specs = [TrialSpec(i, "investigation", case, "x.yaml", "anthropic", 1, ("A6",))
             for i, case in enumerate(("fires", "quiet", "drawn", "unknown"), 10)]  # fmt: skip
    run, same = runner.infer(specs, done)
    assert [s.case for s in run] == ["fires", "drawn", "unknown"]
    (quiet,) = same
    assert quiet.inferred and quiet.variant == "A6" and quiet.index == 11
    assert quiet.signature == {"codes": ["N1"]}  # the baseline's run, under the pair's name


def test_an_inferred_pair_is_the_run_it_stands_for() -> None:
    """The inference's premise, checked on the wire: a gate that never fired in a
    deterministic case changes nothing when it is off (run for real with ``exhaustive``), and
    that is the pair the matrix infers instead of running."""
    case = str(DEFAULT_DIR / "honest-complete.yaml")
    run = runner.evaluate([case], runs=1, ablate=["A6"], exhaustive=True, jobs=2)
    assert run.inferred == 0 and run.started == 2
    base, off = sorted(run.trials, key=lambda t: t.variant != "baseline")
    assert (base.variant, off.variant) == ("baseline", "A6")
    assert "A6" not in base.signature["codes"] and base.passed
    assert off.outcome == base.outcome and off.signature == base.signature
    rest, same = runner.infer([TrialSpec(9, base.suite, base.case, case, "anthropic", 1, ("A6",))],
                              [base])  # fmt: skip
    assert not rest and [(t.variant, t.outcome) for t in same] == [("A6", base.outcome)]


def test_the_committed_matrix_has_a_case_for_every_gate_and_review() -> None:
    """bench/results/eval-matrix: each of the 19 gates (G5 and D through the two reviews, A7
    through the context pin) has a case whose outcome changes without it; the delivery suite
    is in it too."""
    data = json.loads(MATRIX.read_text(encoding="utf-8"))
    assert {"investigation", "delivery"} <= set(data["suites"])
    moved = {a["component"]: a["outcome_flips"] for a in data["ablations"]}
    missing = []
    for spec in (g for g in TABLE if g.counted):
        (holder,) = [c for c in components.COMPONENTS.values() if c.gates == (spec.code,)]
        if holder.name not in moved:
            missing.append(f"{spec.code}: {holder.name} not ablated")
        elif not moved[holder.name]:
            missing.append(f"{spec.code}: no case changes outcome without {holder.name}")
    for name in ("empirical_anchor", "precommit_lock", "force_rules", "acceptance", "reply_gate"):
        if not moved.get(name):
            missing.append(f"{name}: no case")
    assert not missing, "; ".join(missing)


def test_a_variant_runs_only_on_the_cases_its_components_can_see() -> None:
    cases = runner.load([str(DEFAULT_DIR / "honest-complete.yaml"),
                         str(DEFAULT_DIR.parent / "delivery" / "ci-fix.yaml")])  # fmt: skip
    variants = runner.variants_for(cases, [], matrix=True)
    specs = runner.plan(cases, variants, runs=1, runtime="anthropic")
    seen = {(s.case, s.variant) for s in specs}
    assert ("honest-complete", "G1") in seen and ("ci-fix", "acceptance") in seen
    assert ("honest-complete", "acceptance") not in seen and ("ci-fix", "G1") not in seen
    assert ("honest-complete", "baseline") in seen and ("ci-fix", "baseline") in seen


def test_an_emulator_port_or_a_commit_id_is_no_decision() -> None:
    """Two runs of the same delivery differ in the emulators' ports and the commits' ids:
    neither is an outcome (the matrix showed every delivery case "changing" without each
    delivery component before), while the words around them still are."""
    from harness_cli.eval.trial import reached_operator

    one = reached_operator(["MR opened http://127.0.0.1:35037/acme/x/-/merge_requests/1",
                            "Done, updated in 501542e0: the docstring"])  # fmt: skip
    two = reached_operator(["MR opened http://127.0.0.1:46111/acme/x/-/merge_requests/1",
                            "Done, updated in e773ee05: the docstring"])  # fmt: skip
    assert one == two
    assert one != reached_operator(["MR opened http://127.0.0.1:1/acme/x/-/merge_requests/2",
                                    "Done, updated: the docstring"])  # fmt: skip
