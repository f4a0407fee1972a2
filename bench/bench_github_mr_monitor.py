"""[mr-monitor on GitHub] API calls per cycle, measured against the sandbox's GitHub emulator
through PyGithub (the real client) and the forge port's LiveGitHub, HARNESS_DISPATCH=record.

100 monitored PRs in one repository; after the cursor has settled, 0, 5 and 50 of them get a
reviewer comment and one cycle runs. Goal: <= 16 calls with 5 changed, as on GitLab. Each
cycle is a fresh client (a cron run), so conditional requests work only through the ETags
kept in ``$HARNESS_HOME/github-etags.json``; the baseline in the same run is the same cycle
with that file removed first (no ``If-None-Match``), and the naive cycle reads every PR.

Figures: ``calls`` is what GitHub counts against the rate limit (a 304 is free); ``http`` is
every request that reached the emulator, 304s included.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PROJECT = "acme/many-prs"
PRS = 100
TOKEN = "ghp_benchBenchBench000000000000000000000"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(REPO / "agent-config", root / "agent-config")
        os.environ.update(
            HARNESS_HOME=str(root / "home"),
            HARNESS_WORKSPACE=str(root / "ws"),
            HARNESS_CONFIG=str(root / "agent-config"),
            HARNESS_DISPATCH="record",
            GIT_CONFIG_NOSYSTEM="1",
        )
        from harness_cli.sandbox.github_api import GitHubEmulator

        emu = GitHubEmulator(root / "github", ci_timeout=30)
        emu.start()
        try:
            run(emu, root)
        finally:
            emu.stop()


def run(emu: object, root: Path) -> None:
    import github

    from harness_cli.sandbox.github_api import GitHubEmulator
    from harness_cli.state import files
    from harness_cli.state.models import MonitoredMr

    assert isinstance(emu, GitHubEmulator)
    emu.control("add_token", {"token": TOKEN})
    emu.control("create_repo", {"repo": PROJECT, "files": {"README.md": "# x\n"}})
    projects = root / "agent-config" / "projects.yaml"
    projects.write_text(projects.read_text().replace("repos: []", "repos: []\n    forge: github"))
    repo = github.Github(base_url=emu.api_url, auth=github.Auth.Token(TOKEN)).get_repo(PROJECT)
    started = time.monotonic()
    for n in range(PRS):
        change = {"repo": PROJECT, "branch": f"b{n}", "files": {f"f{n}.txt": f"{n}\n"}}
        emu.control("commit", {**change, "message": f"change {n}"})
        repo.create_pull(base="main", head=f"b{n}", title=f"PR {n}")
    print(f"setup: {PRS} PRs in {time.monotonic() - started:.1f}s")
    with files.monitored_mrs().update() as state:
        for n in range(1, PRS + 1):
            state.mrs[f"{PROJECT}!{n}"] = MonitoredMr(
                project=PROJECT, iid=n, case_id=f"BENCH-{n}", case_dir=str(root / "case")
            )
    etags = Path(os.environ["HARNESS_HOME"]) / "github-etags.json"

    def cycle(label: str, *, cold: bool = False, setup: bool = False) -> tuple[int, int]:
        if cold:
            etags.unlink(missing_ok=True)
        calls, http, seconds = one_cycle(emu, until_done=setup)
        print(f"  {label:<46} calls={calls:>4}  http={http:>4}  {seconds * 1000:6.0f} ms")
        return calls, http

    print(f"{PRS} monitored PRs in one repository:")
    cycle("first sight (every PR is new)", setup=True)
    for n in range(3):
        cycle(f"warm-up {n + 1} (cursor settling)", setup=True)
    results, baseline = {}, {}
    changed = 0
    for k in (0, 5, 50):
        for number in range(changed + 1, changed + k + 1):
            comment(emu, number, f"note on #{number}")
        changed += k
        time.sleep(1.1)  # cron cycles are minutes apart: the comments' second is over
        # 50 PRs read on this shared machine may outlast one cycle's budget: those cycles run
        # until done, their figures added up (as the next cron runs would)
        baseline[k] = cycle(f"{k} changed, no If-None-Match (baseline)", cold=True, setup=k > 5)
        for number in range(changed - k + 1, changed + 1):  # the same change again, unseen
            comment(emu, number, f"again on #{number}")
        time.sleep(1.1)
        results[k] = cycle(f"{k} changed, with If-None-Match", setup=k > 5)
    with files.monitored_mrs().update() as state:
        for entry in state.mrs.values():
            entry.rescan_requested = True
    naive = cycle("naive: every PR read (rescan all)", setup=True)
    print()
    goal = results[5][0] <= 16
    ratio = results[5][0] / baseline[5][0] if baseline[5][0] else 0.0
    print(
        f"5 changed: {results[5][0]} calls with If-None-Match (goal <= 16: "
        f"{'met' if goal else 'MISSED'}), {baseline[5][0]} without: ratio {ratio:.2f}; "
        f"idle: {results[0][0]} vs {baseline[0][0]}; naive polling: {naive[0]} calls"
    )


def comment(emu: object, number: int, body: str) -> None:
    args = {"repo": PROJECT, "number": number, "author": "alice", "body": body}
    emu.control("add_issue_comment", args)  # type: ignore[attr-defined]


def one_cycle(emu: object, *, until_done: bool = False) -> tuple[int, int, float]:
    """One cycle (``until_done``: cycles until one was not cut short by the cycle budget, for
    the set-up cycles that read every PR on this loaded machine; their figures add up)."""
    from harness_cli import wiring
    from harness_cli.config import load_config
    from harness_cli.delivery.monitor.act import CycleReport, MonitorCtx
    from harness_cli.delivery.monitor.cycle import run_cycle
    from harness_cli.delivery.monitor.thresholds import thresholds_from
    from harness_cli.dispatch.backends import choose_backend
    from harness_cli.sandbox.github_api import GitHubEmulator
    from harness_cli.services.github import GitHubSettings, LiveGitHub

    assert isinstance(emu, GitHubEmulator)
    cfg = load_config()
    ctx = MonitorCtx(  # a fresh client per cycle, as each cron run builds its own
        cfg=cfg,
        gitlab=LiveGitHub(GitHubSettings(url=emu.api_url, token=TOKEN)),
        out=wiring.outbound(cfg, wiring.lazy_slack()),
        backend=choose_backend("record"),
        thresholds=thresholds_from(cfg.harness),
    )
    before = len(emu.requests)
    started = time.monotonic()
    report = run_cycle(ctx)
    calls = report.calls
    while until_done and report.ended_early and not report.errors:
        ctx.gitlab = LiveGitHub(GitHubSettings(url=emu.api_url, token=TOKEN))
        ctx.started, ctx.report = time.monotonic(), CycleReport()
        report = run_cycle(ctx)
        calls += report.calls
    elapsed = time.monotonic() - started
    if report.errors or report.ended_early:
        raise SystemExit(f"cycle failed: {report.errors} {report.ended_early}")
    return calls, len(emu.requests) - before, elapsed


if __name__ == "__main__":
    main()
