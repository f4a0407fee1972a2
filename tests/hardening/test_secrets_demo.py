"""L4: the whole demo — ticket, investigation, approval, MR, red CI fixed, review answered,
merge, finalize — run with distinctive fake credentials, then every byte it left on disk (git
objects decompressed), every request the harness sent to the four emulators (the auth header
that carries each credential aside) and everything printed is searched for them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.hardening.leaks import scan_requests, scan_text, scan_tree

TOKENS = {
    "SLACK_USER_TOKEN": "xoxp-8888888888-LEAKCANARY-demo-user",
    "SLACK_APP_TOKEN": "xapp-1-A0LEAKCANARY-8888-demo-app",
    "GITLAB_TOKEN": "glpat-LEAKCANARYdemo8888",
    "ANTHROPIC_API_KEY": "sk-ant-LEAKCANARY-demo-8888",
}


@pytest.mark.slow
def test_the_whole_demo_leaves_no_secret_on_disk_on_the_wire_or_on_screen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from harness_cli.sandbox import demo, runner
    from harness_cli.sandbox.pagerduty_api import SANDBOX_TOKEN as PAGERDUTY_TOKEN

    for name, value in TOKENS.items():
        monkeypatch.setitem(runner.SANDBOX_TOKENS, name, value)
    seen: dict[str, Any] = {}
    stop = runner.Sandbox.stop

    def keep_requests(box: runner.Sandbox) -> None:
        seen.update(slack=box.slack, gitlab=box.gitlab, model=box.anthropic, pd=box.pagerduty)
        stop(box)

    monkeypatch.setattr(runner.Sandbox, "stop", keep_requests)
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))  # anything written under ~ too
    monkeypatch.chdir(REPO)  # the demo seeds its config from ./agent-config and ./sops
    # The harness's own tool loop: a third of the claude CLI's time; `make demo`'s own test
    # runs the CLI (whose sessions under $HOME this scan would cover too).
    report = demo.run_demo(keep=tmp_path / "demo", runtime="anthropic")

    assert report.ok, [(s.name, s.status, s.detail) for s in report.steps]
    assert report.summary["status"] == "closed"  # the whole ticket ran ...
    assert len(seen["model"].requests) > 10 and len(seen["slack"].requests) > 10
    needles = [*TOKENS.values(), PAGERDUTY_TOKEN, "LEAKCANARY"]
    out = capfd.readouterr()
    leaks = scan_tree(tmp_path, needles)  # ... and left no secret behind
    leaks += scan_requests(seen, needles)
    leaks += scan_text("stdout/stderr", out.out + out.err, needles)
    assert not leaks, "\n".join(leaks[:40])
