"""`harness eval`: one-component ablations on the misbehaving library, the validator that
refuses a pair differing in two components, a stochastic suite whose true rate is known, and
every trial started counted (timeouts and dead workers included). Trials run the real
`harness init / case new / investigate / review` in worker processes on the emulators."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness_cli import components
from harness_cli.eval.cases import DEFAULT_DIR
from harness_cli.eval.pool import run_trials
from harness_cli.eval.stats import wilson
from harness_cli.eval.trial import TrialSpec
from harness_cli.sandbox.model_script import uniform

INV = DEFAULT_DIR


def _eval(cli: Any, *args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = cli("eval", *args, "--json")
    data = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    return code, data.get("data") or data, err


def test_a_pair_that_differs_in_two_components_is_refused(cli: Any) -> None:
    # 003's snippet: control and treatment differ only in progress_handoff → valid
    assert components.validate_pair(frozenset({"red_team"}), frozenset()) == "red_team"
    with pytest.raises(ValueError, match="differs in 2: a_gates, red_team"):
        components.validate_pair(frozenset(), frozenset({"red_team", "a_gates"}))
    with pytest.raises(ValueError, match="differs in 0"):
        components.validate_pair(frozenset({"red_team"}), frozenset({"red_team"}))
    with pytest.raises(ValueError, match="unknown component"):
        components.validate_pair(frozenset(), frozenset({"evaluator"}))
    code, _, err = cli("eval", str(INV / "honest-complete.yaml"), "--ablate",
                       "red_team+precommit_lock")  # fmt: skip
    assert code == 2 and "exactly one component" in err and "differs in 2" in err
    code, _, err = cli("eval", "no-such-suite")
    assert code == 2 and "investigation" in err  # the shipped suites are named


def test_ablating_the_red_team_turns_the_cases_it_exists_for_from_pass_to_fail(
    cli: Any, tmp_path: Path
) -> None:
    cases = [str(INV / f"{c}.yaml") for c in
             ("anchored-on-cache", "anchored-on-rounding", "honest-complete")]  # fmt: skip
    out = tmp_path / "report"
    code, data, err = _eval(cli, *cases, "--runs", "1", "--ablate", "red_team", "--out", str(out))
    assert code == 0, err
    assert data["trials_started"] == 6  # 3 cases × 1 seed × (baseline, without red_team)
    (ablation,) = data["ablations"]
    assert ablation["component"] == "red_team"
    assert ablation["cases"] == {
        "anchored-on-cache": {"without": 0.0, "with": 1.0},
        "anchored-on-rounding": {"without": 0.0, "with": 1.0},
        "honest-complete": {"without": 1.0, "with": 1.0},
    }
    assert ablation["delta"] == pytest.approx(2 / 3) and ablation["only_treatment"] == 2
    without = data["variants"]["red_team"][-1]
    assert without["passed"] == 1 and without["defective_accepted"] == 2  # complete, but wrong
    baseline = data["variants"]["baseline"][-1]
    assert baseline["passed"] == 3 and baseline["defective_accepted"] == 0
    assert baseline["usd"] > 0 and baseline["tokens"] > 0
    # the report --matrix writes: the markdown table and the plot, from these trials
    md = (out / "report.md").read_text()
    assert "| red_team | 33% | 100% | +67% [" in md and "![pass rate" in md
    assert "- red_team: anchored-on-cache (0% → 100%), anchored-on-rounding (0% → 100%)" in md
    assert (out / "ablation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "without red_team" in (out / "ablation.svg").read_text()
    assert json.loads((out / "eval.json").read_text())["trials_started"] == 6


def test_the_matrix_is_the_baseline_and_every_single_component_ablation_of_its_suites() -> None:
    from harness_cli.eval import runner

    investigation = runner.load([str(INV / "honest-complete.yaml")])
    variants = runner.variants_for(investigation, [], matrix=True)
    assert variants[0] == () and all(len(v) == 1 for v in variants[1:])
    names = {v[0] for v in variants[1:]}
    assert names == {c.name for c in components.COMPONENTS.values()
                     if "investigation" in c.suites}  # fmt: skip
    assert "red_team" in names and "acceptance" not in names
    with pytest.raises(ValueError, match="differs in 2"):
        runner.variants_for(investigation, ["red_team,a_gates"], matrix=False)


def test_a_stochastic_suite_reports_an_interval_that_covers_its_true_rate(cli: Any) -> None:
    """stochastic-overclaim fails exactly in the trials whose seed draws 'overclaims'
    (p = 0.4): the pass rate's true value is 0.6."""
    runs = 8
    code, data, err = _eval(cli, str(INV / "stochastic-overclaim.yaml"), "--runs", str(runs))
    assert code == 0, err
    overall = data["variants"]["baseline"][-1]
    expected = sum(1 for s in range(1, runs + 1) if uniform(s, "behaviour", "overclaims") >= 0.4)
    assert 0 < expected < runs  # the seeds really vary the model
    assert (overall["started"], overall["passed"]) == (runs, expected)
    assert (overall["low"], overall["high"]) == pytest.approx(wilson(expected, runs))
    assert overall["low"] <= 0.6 <= overall["high"]


def test_every_trial_started_is_counted_timeouts_and_dead_workers_included(
    tmp_path: Path,
) -> None:
    good = str(INV / "honest-complete.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("schema_version: 1\nid: broken\n")  # the worker cannot even load it
    specs = [
        TrialSpec(0, "t", "honest-complete", good, "anthropic", 1),
        TrialSpec(1, "t", "broken", str(broken), "anthropic", 1),
        TrialSpec(2, "t", "honest-complete", good, "anthropic", 2),
    ]
    results = run_trials(specs, jobs=2, timeout_s=120)
    assert [r.status for r in results] == ["pass", "crash", "pass"]
    assert "worker died" in results[1].problems[0]
    slow = run_trials(specs[:1], jobs=1, timeout_s=0.5)
    assert slow[0].status == "timeout" and not slow[0].passed and not slow[0].finished


def test_no_component_is_off_outside_an_eval_trial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_ABLATE", "red_team")  # no environment variable does it
    assert all(components.enabled(name) for name in components.COMPONENTS)
    home = tmp_path / "trial-home"
    home.mkdir()
    monkeypatch.setenv("HARNESS_HOME", str(home))
    (home / components.TRIAL_FILE).write_text("{not json")
    assert components.enabled("red_team")  # an unreadable trial file turns nothing off
    other = tmp_path / "trial-2"
    other.mkdir()
    monkeypatch.setenv("HARNESS_HOME", str(other))
    (other / components.TRIAL_FILE).write_text('{"ablate": ["red_team", "nonsense"]}')
    assert not components.enabled("red_team") and components.enabled("a_gates")
    with pytest.raises(KeyError):
        components.enabled("nonsense")
