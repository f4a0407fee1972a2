"""``harness eval --live`` (#31 item 6): the corpus's honest cases with the real model in every
role, through the same path a case's ``models: {ROLE: live}`` takes. "The real API" here is an
Anthropic emulator the test starts on its own port (ANTHROPIC_BASE_URL), playing the honest
investigator's script: the trials' own emulators hand it every request, the harness meters
what it says it served. Checked: the estimate printed before any trial, the cap (refused
before; a stop mid-run with a partial report), the refusal without a key, the report's cost,
latency and calibration, on both runtimes."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.eval import calibration, live
from harness_cli.eval.calibration import brier, ece
from harness_cli.eval.cases import DEFAULT_DIR
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.model_script import SCRIPTS_DIR
from harness_cli.sandbox.runner import SANDBOX_TOKENS
from harness_cli.services.claude_cli import find_claude

CASE = str(DEFAULT_DIR / "honest-complete.yaml")
FULL_ONLY = pytest.mark.skipif(
    not os.environ.get("HARNESS_BENCH_FULL"),
    reason="a minute or more of trials on 2 cores (CI time): HARNESS_BENCH_FULL=1 runs it",
)
ROLES = {"precommit", "investigator", "adversarial-reviewer", "red-team"}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicEmulator]:
    """The stand-in for the real API, and the environment pointing at it."""
    emu = AnthropicEmulator()
    emu.start()
    emu.load_script(SCRIPTS_DIR / "inv_honest.yaml")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", emu.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SANDBOX_TOKENS["ANTHROPIC_API_KEY"])
    yield emu
    emu.stop()


def _data(out: str) -> dict[str, Any]:
    return dict(json.loads(out)["data"])


@pytest.mark.slow
def test_a_live_eval_is_a_model_eval_with_its_estimate_cost_and_latency(
    cli: Any, api: AnthropicEmulator, tmp_path: Path
) -> None:
    code, out, err = cli("eval", "--live", CASE, "--runs", "2", "--jobs", "2", "--json",
                         "--out", str(tmp_path / "report"))  # fmt: skip
    assert code == 0, err
    data = _data(out)
    assert data["kind"] == "model" and data["trials_started"] == 2  # --runs trials, not one
    said = data["live"]
    per_trial = said["estimate"]["per_kind"]["investigation"]["usd_per_trial"]
    assert said["estimate"]["trials"] == 2 and said["estimate"]["usd"] == pytest.approx(
        2 * per_trial, abs=1e-3
    )
    assert "estimate: ~$" in err.splitlines()[0]  # said before the first trial started
    base = data["variants"]["baseline"][-1]
    assert base["passed"] == 2, data["not_passed"]
    # What the report says was spent is what the trials metered from "the API"'s usage.
    assert said["spent_usd"] == pytest.approx(base["usd"], abs=1e-6) and base["usd"] > 0
    assert said["latency_s"]["p50"] > 0 and said["latency_s"]["p95"] >= said["latency_s"]["p50"]
    assert said["calibration"]["n"] == 2 and said["calibration"]["brier"] is not None
    # Every role was played by the endpoint of the environment, none by a trial's script.
    assert {c.role for c in api.calls} >= ROLES
    assert all(c.rule != "unmatched" for c in api.calls)
    written = json.loads((tmp_path / "report" / "live.json").read_text())
    assert written == said and "latency p50" in (tmp_path / "report" / "live.md").read_text()


def test_the_estimate_over_the_cap_is_refused_before_any_trial(
    cli: Any, api: AnthropicEmulator, tmp_path: Path
) -> None:
    out_dir = tmp_path / "report"
    code, _, err = cli("eval", "--live", CASE, "--runs", "3", "--max-usd", "0.5",
                       "--out", str(out_dir))  # fmt: skip
    assert code == 4 and "estimate ~$" in err and "over --max-usd 0.5" in err, err
    assert not api.calls and not out_dir.exists()


@pytest.mark.slow
def test_the_metered_spend_reaching_the_cap_stops_the_run_with_a_partial_report(
    cli: Any, api: AnthropicEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The estimate is set low so the cap is met by the metered spend during the run: the
    first trial spends ~$0.04, the second starts with what is left as its own budget and is
    stopped by the harness, the third and fourth never start."""
    monkeypatch.setitem(live.TOKENS_PER_TRIAL, "investigation", live.TokensPerTrial(1, 1, 1, 1))
    code, out, err = cli("eval", "--live", CASE, "--runs", "4", "--jobs", "1", "--max-usd",
                         "0.05", "--json")  # fmt: skip
    data = _data(out)
    cap = data["live"]["cap"]
    assert code == 4 and cap["reached"] and cap["trials_not_started"] >= 1, (cap, err)
    assert data["trials_started"] + cap["trials_not_started"] == 4
    assert any("stopped at the cap" in m for m in json.loads(out)["messages"])
    # A trial that started under what was left of the cap ended by the harness's budget
    # (exit=budget) instead of spending on: the total stays within one model call of it.
    assert cap["spent_usd"] < 0.05 + 0.02, cap
    assert "policy_stop" in data["variants"]["baseline"][-1]["statuses"], data


def test_without_a_key_live_is_refused_in_one_line_and_nothing_is_written(
    cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out_dir = tmp_path / "report"
    code, out, err = cli("eval", "--live", "--out", str(out_dir))
    assert code == 2 and out == "" and not out_dir.exists()
    assert err.count("\n") == 1 and "ANTHROPIC_API_KEY" in err and "export" in err, err


def test_dry_run_prints_the_plan_and_the_estimate_and_runs_nothing(
    cli: Any, api: AnthropicEmulator
) -> None:
    code, out, err = cli("eval", "--live", "--dry-run", "--max-usd", "1", "--json")
    assert code == 0, err
    data = _data(out)
    assert data["dry_run"] and data["trials"] == 3 * len(data["cases"])
    assert "honest-complete" in data["cases"] and "inflated-confidence" in data["left_out"]
    assert data["estimate"]["usd"] > 1 and data["over_max_usd"]
    assert not api.calls


def test_live_refuses_ablations(cli: Any, api: AnthropicEmulator) -> None:
    code, _, err = cli("eval", "--live", "--ablate", "red_team", CASE)
    assert code == 2 and "no --ablate" in err and not api.calls


def test_max_usd_without_live_is_refused(cli: Any) -> None:
    code, _, err = cli("eval", CASE, "--max-usd", "3")
    assert code == 2 and "add --live" in err


@pytest.mark.slow
@pytest.mark.claude_cli
@FULL_ONLY
@pytest.mark.skipif(find_claude() is None, reason="the claude CLI is not installed here")
def test_live_on_the_claude_cli_reaches_the_environment_s_endpoint(
    cli: Any, api: AnthropicEmulator
) -> None:
    """claude-code: the real CLI talks to the trial's emulator, which hands every request on."""
    code, out, err = cli("eval", "--live", CASE, "--runs", "1", "--runtime", "claude-code",
                         "--json")  # fmt: skip
    assert code == 0, err
    data = _data(out)
    assert data["kind"] == "model" and data["variants"]["baseline"][-1]["passed"] == 1, data
    assert data["live"]["spent_usd"] > 0
    assert {c.role for c in api.calls} >= ROLES


def test_brier_and_ece_by_hand() -> None:
    # Says 90 % four times, right three times: Brier (3 × 0.01 + 0.81) / 4; one bin, |0.9-0.75|.
    pairs = [(0.9, True), (0.9, True), (0.9, True), (0.9, False)]
    assert brier(pairs) == pytest.approx(0.21) and ece(pairs) == pytest.approx(0.15)
    # Perfectly calibrated and sharp: both 0; nothing to judge: None, not a flattering 0.
    assert brier([(1.0, True), (0.0, False)]) == 0 and ece([(1.0, True), (0.0, False)]) == 0
    assert brier([]) is None and ece([]) is None
    # Two bins weigh by their share: (0.95 → 1/2 right) and (0.15 → 0/2 right).
    two = [(0.95, True), (0.95, False), (0.15, False), (0.15, False)]
    assert ece(two) == pytest.approx(0.5 * 0.45 + 0.5 * 0.15)


def test_percentile_is_nearest_rank() -> None:
    assert calibration.percentile([3.0, 1.0, 2.0, 10.0], 0.5) == 2.0
    assert calibration.percentile([3.0, 1.0, 2.0, 10.0], 0.95) == 10.0
    assert calibration.percentile([], 0.5) is None


# -- harness demo --live ------------------------------------------------------------------------


def test_demo_live_without_a_key_is_refused_in_one_line(
    cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    keep = tmp_path / "demo"
    code, out, err = cli("demo", "--live", "--keep", str(keep))
    assert code == 2 and out == "" and not keep.exists()
    assert err.count("\n") == 1 and "harness demo --live needs ANTHROPIC_API_KEY" in err


def test_demo_live_over_the_cap_is_refused_before_the_sandbox_starts(
    cli: Any, api: AnthropicEmulator, tmp_path: Path
) -> None:
    keep = tmp_path / "demo"
    code, _, err = cli("demo", "--live", "--max-usd", "0.5", "--keep", str(keep))
    assert code == 4 and "over --max-usd 0.5" in err and not keep.exists() and not api.calls


def test_demo_live_dry_run_prints_the_estimate_and_the_steps(cli: Any) -> None:
    code, out, err = cli("demo", "--live", "--dry-run", "--json")
    assert code == 0, err
    data = _data(out)
    assert data["dry_run"] and data["estimate"]["usd"] > 0 and "investigate" in data["steps"]


def test_demo_max_usd_without_live_is_refused(cli: Any) -> None:
    code, _, err = cli("demo", "--max-usd", "3")
    assert code == 2 and "add --live" in err


@pytest.mark.slow
@FULL_ONLY
def test_demo_live_plays_every_step_on_the_environment_s_endpoint(
    cli: Any, api: AnthropicEmulator
) -> None:
    api.load_script(SCRIPTS_DIR / "demo.yaml")
    code, out, err = cli("demo", "--live", "--runtime", "anthropic", "--max-usd", "10", "--json")
    data = _data(out)
    assert code == 0, (err, data["steps"])
    assert {"investigator", "dev-agent"} <= {c.role for c in api.calls}
    assert data["live"]["spent_usd"] > 0


@pytest.mark.slow
@FULL_ONLY
def test_a_live_run_on_an_mr_s_overlay_is_the_report_its_gate_asks_for(
    cli: Any, api: AnthropicEmulator, tmp_path: Path
) -> None:
    """#31 items 6 and 7 together: the gate's hint (`harness eval --live --overlay . --baseline
    …`) run on an MR that changes an SOP gives the report that lets the scripted gate hold."""
    import shutil
    import subprocess

    from harness_cli import resources
    from harness_cli.eval import gate

    repo = tmp_path / "repo"
    shutil.copytree(resources.example_sops(), repo / "sops")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    path = repo / gate.BASELINE_FILE
    gate.write(path, gate.Baseline([CASE], 1, 1, 1, 0.21, 1.0, gate.manifest(repo)), inside=repo)
    sop = repo / "sops" / "INVESTIGATION.md"
    sop.write_text(sop.read_text() + "\nState the cause before the evidence.\n")
    subprocess.run([*git, "commit", "-qam", "sop"], check=True)
    scripted = ("eval", "--overlay", str(repo), "--baseline", str(path), "--json")
    code, out, _ = cli(*scripted)
    assert code == 1 and "scripted evals cannot judge it" in out
    assert "harness eval --live --overlay ." in out  # the hint names the live run
    code, out, err = cli("eval", "--live", "--overlay", str(repo), "--baseline", str(path),
                         "--json")  # fmt: skip
    assert code == 0, err
    (repo / gate.LIVE_REPORT).write_text(out)
    code, out, _ = cli(*scripted)
    assert code == 0 and "the live run attached" in out and "held" in out, out


@pytest.mark.slow
def test_a_live_trial_killed_at_its_wall_clock_still_counts_what_it_spent(
    cli: Any, api: AnthropicEmulator
) -> None:
    """The API hangs once the investigator is asked: the trial is killed at --timeout and
    counted as a timeout, with the spend its home had logged (the precommit lock's call) —
    a cap that missed a killed trial's spend would overrun."""
    import threading
    import time

    from harness_cli.sandbox.httpbase import Fault

    def hang_when_investigating() -> None:
        until = time.monotonic() + 60
        while time.monotonic() < until:
            if any(c.role == "investigator" for c in api.calls):
                api.add_fault(Fault(kind="hang", match="/v1/messages", times=-1))
                return
            time.sleep(0.05)

    watcher = threading.Thread(target=hang_when_investigating, daemon=True)
    watcher.start()
    _, out, err = cli("eval", "--live", CASE, "--runs", "1", "--timeout", "30", "--json")
    watcher.join()
    assert out, err
    data = _data(out)
    (trial,) = data["not_passed"]
    assert trial["status"] == "timeout", trial
    assert trial["usd"] > 0 and data["live"]["spent_usd"] == pytest.approx(trial["usd"])


@pytest.mark.slow
@FULL_ONLY
def test_a_delivery_case_runs_live_and_is_graded_on_its_outcome(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ci-fix live: the sandbox's GitLab, its CI and the MR, every role on "the API" (playing
    the case's own script, so a pass is expected)."""
    from harness_cli.eval.cases import EVALS_DIR
    from harness_cli.eval.suites import load_case_file

    path = EVALS_DIR / "delivery" / "ci-fix.yaml"
    case = load_case_file(path)
    emu = AnthropicEmulator()
    emu.start()
    try:
        emu.load_script(case.model_source(), case.variables or None)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", emu.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", SANDBOX_TOKENS["ANTHROPIC_API_KEY"])
        code, out, err = cli("eval", "--live", str(path), "--runs", "1", "--json")
    finally:
        emu.stop()
    data = _data(out)
    assert code == 0 and data["variants"]["baseline"][-1]["passed"] == 1, (err, data)
    assert {"dev-agent", "investigator"} <= {c.role for c in emu.calls}
    assert data["live"]["estimate"]["per_kind"]["delivery"]["trials"] == 1
