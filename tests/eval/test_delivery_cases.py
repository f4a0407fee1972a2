"""Delivery eval cases through `harness eval`: the sandbox's sample project on the GitLab
emulator with its real CI, the dev-agent's script behind the Anthropic emulator, the real
`investigate`, `admin task`, `dev-agent` and `mr-monitor` in a fresh home per trial. A model
that claims green without fixing anything passes the grader only while fail-closed acceptance
is on: ablated, its MR is marked ready — defective work accepted as done."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness_cli.eval.cases import EVALS_DIR

pytestmark = pytest.mark.slow
DELIVERY = EVALS_DIR / "delivery"


def test_fail_closed_acceptance_is_what_keeps_a_false_green_claim_a_draft(cli: Any) -> None:
    case = str(DELIVERY / "claims-green-untested.yaml")
    code, out, err = cli("eval", case, "--runs", "1", "--ablate", "acceptance", "--json")
    assert code == 0, err
    data = json.loads(out)["data"]
    assert data["trials_started"] == 2
    baseline = {r["case"]: r for r in data["variants"]["baseline"]}
    assert baseline["*"]["passed"] == 1, baseline
    (ablation,) = data["ablations"]
    assert ablation["cases"]["claims-green-untested"] == {"without": 0.0, "with": 1.0}
    without = {r["case"]: r for r in data["variants"]["acceptance"]}
    assert without["claims-green-untested"]["defective_accepted"] == 1  # ready, and wrong
    assert baseline["claims-green-untested"]["usd"] > 0
