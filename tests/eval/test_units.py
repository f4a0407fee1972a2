"""Machinery evals take the case as the unit, and ablations are judged by outcome (#31
items 1 and 2): a deterministic case runs once per variant whatever --runs says, so more runs
cannot narrow an interval with no new information; a stochastic case (declared in its YAML)
gets its trials; a flip counts only when the harness's decision changes; "defective accepted"
is a case marked defective that ends accepted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_cli.errors import ConfigError
from harness_cli.eval.cases import EVALS_DIR
from harness_cli.eval.runner import ablation, summarise
from harness_cli.eval.stats import wilson
from harness_cli.eval.suites import load_case_file
from harness_cli.eval.trial import TrialResult

INV = EVALS_DIR / "investigation"


def _eval(cli: Any, *args: str) -> dict[str, Any]:
    code, out, err = cli("eval", *args, "--json")
    assert code == 0, err
    return dict(json.loads(out)["data"])


def test_more_runs_of_deterministic_cases_add_no_trial_and_no_precision(cli: Any) -> None:
    cases = [str(INV / "honest-complete.yaml"), str(INV / "auth-refused.yaml")]
    few, many = _eval(cli, *cases, "--runs", "2"), _eval(cli, *cases, "--runs", "6")
    for data in (few, many):
        assert data["trials_started"] == 2  # one per case: its copies are the same run
        assert data["kind"] == "machinery"
    a, b = few["variants"]["baseline"][-1], many["variants"]["baseline"][-1]
    assert (a["cases"], a["low"], a["high"]) == (b["cases"], b["low"], b["high"])
    assert (a["low"], a["high"]) == pytest.approx(wilson(2, 2))


def test_a_stochastic_case_declared_in_its_yaml_gets_its_trials(cli: Any, tmp_path: Path) -> None:
    data = _eval(cli, str(INV / "stochastic-overclaim.yaml"), str(INV / "auth-refused.yaml"),
                 "--runs", "4")  # fmt: skip
    assert data["trials_started"] == 5  # 4 draws of the stochastic case, 1 of the other
    overall = data["variants"]["baseline"][-1]
    assert overall["cases"] == 2 and overall["unit"] == "case"
    # an undeclared stochastic case is refused with one line saying what to add
    raw = yaml.safe_load((INV / "stochastic-overclaim.yaml").read_text())
    raw.pop("stochastic")
    bad = tmp_path / "stochastic-overclaim.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="add stochastic: true"):
        load_case_file(bad)


def _trial(case: str, variant: str, passed: bool, outcome: dict[str, Any], **kw: Any) -> Any:
    return TrialResult(0, "s", case, 1, variant, "pass" if passed else "fail",
                       outcome=outcome, **kw)  # fmt: skip


def test_a_missing_gate_code_alone_is_no_flip_a_changed_exit_is() -> None:
    done = {"accepted": True, "exit": "complete", "operator": "x"}
    blocked = {"accepted": False, "exit": "blocked", "operator": "y"}
    on = [_trial("trace", "baseline", True, done), _trial("decides", "baseline", True, blocked)]
    off = [
        _trial("trace", "g", False, done),  # the grader missed its code: same decision
        _trial("decides", "g", False, done, accepted=True, defective=True),
    ]
    a = ablation("g", on, off)
    assert a.flips == ["decides"] and a.signature_only == ["trace"]
    assert (a.delta.n, a.delta.only_treatment, a.delta.only_control) == (2, 1, 0)
    assert a.cases == {"decides": (0.0, 1.0), "trace": (1.0, 1.0)}
    assert a.defective_accepted == 1


def test_defective_accepted_means_a_case_marked_defective_that_ended_accepted() -> None:
    honest_but_graded_wrong = _trial("h", "baseline", False, {}, accepted=True)
    marked = _trial("d", "baseline", True, {}, accepted=True, defective=True)
    refused = _trial("d2", "baseline", True, {}, accepted=False, defective=True)
    run = summarise([honest_but_graded_wrong, marked, refused], runtime="anthropic", runs=1,
                    suite_names=["s"], wall=0.0)  # fmt: skip
    assert run.overall().defective_accepted == 1
    assert [t.defective_accepted for t in run.trials] == [False, True, False]


def test_what_reached_the_operator_is_compared_without_ids_costs_or_timings() -> None:
    from harness_cli.eval.trial import reached_operator

    def dm(req: str, tokens: str, elapsed: str) -> list[str]:
        return [f"`exit=failed       confidence=0%  iterations=1   elapsed={elapsed}`\n"
                f"401 {{'request_id': '{req}'}}\nWhy: {tokens} tokens of the budget\n"
                f"Cost: this run $0.01"]  # fmt: skip

    a = reached_operator(dm("req_14a15723804d4cab", "12,345", "0min"))
    assert a == reached_operator(dm("req_25e639a871594f1d", "9,876", "3min"))
    assert a != reached_operator(dm("req_14a15723804d4cab", "12,345", "0min")[0]
                                 .replace("failed", "blocked").splitlines())  # fmt: skip
