"""[mr-monitor] GitLab API calls per cycle, measured against the sandbox's GitLab emulator through
python-gitlab (the real client), with HARNESS_DISPATCH=record.

100 monitored MRs in one project; after the cursor has settled, 0, 5 and 50 of them get a
reviewer note and one cycle runs. Goal: <= 16 calls with 5 changed. For comparison, the naive
cycle that reads every MR (``rescan`` on all 100) is measured too (>= 200 expected).

Figures: ``calls`` is the wrapper's counter (one per API call the monitor makes, pages of a
listing included); ``http`` is what reached the emulator (python-gitlab's pagination and any
429 retries included).
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

PROJECT = "acme/many-mrs"
MRS = 100


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
        from harness_cli.sandbox.gitlab_api import GitLabEmulator

        emu = GitLabEmulator(root / "gitlab", ci_timeout=30)
        emu.start()
        try:
            run(emu, root)
        finally:
            emu.stop()


def run(emu: object, root: Path) -> None:
    import gitlab

    from harness_cli.sandbox.gitlab_api import GitLabEmulator
    from harness_cli.state import files
    from harness_cli.state.models import MonitoredMr

    assert isinstance(emu, GitLabEmulator)
    emu.control(
        "create_project", {"path": PROJECT, "files": {"README.md": "# x\n"}, "ci_command": ["true"]}
    )
    project = gitlab.Gitlab(emu.url, private_token="glpat-bench").projects.get(PROJECT)
    started = time.monotonic()
    for n in range(MRS):
        emu.control("set_pipeline_result", {"project": PROJECT, "status": "success"})
        emu.control(
            "commit",
            {
                "project": PROJECT,
                "branch": f"b{n}",
                "files": {f"f{n}.txt": f"{n}\n"},
                "message": f"change {n}",
            },
        )
        project.mergerequests.create(
            {"source_branch": f"b{n}", "target_branch": "main", "title": f"MR {n}"}
        )
    print(f"setup: {MRS} MRs with green pipelines in {time.monotonic() - started:.1f}s")
    with files.monitored_mrs().update() as state:
        for n in range(1, MRS + 1):
            state.mrs[f"{PROJECT}!{n}"] = MonitoredMr(
                project=PROJECT, iid=n, case_id=f"BENCH-{n}", case_dir=str(root / "case")
            )

    def cycle(label: str) -> tuple[int, int]:
        calls, http, seconds = one_cycle(emu)
        print(f"  {label:<38} calls={calls:>4}  http={http:>4}  {seconds * 1000:6.0f} ms")
        return calls, http

    print(f"{MRS} monitored MRs in one project:")
    cycle("first sight (every MR is new)")
    for n in range(3):
        cycle(f"warm-up {n + 1} (cursor settling)")
    results = {}
    changed_so_far = 0
    for k in (0, 5, 50):
        for iid in range(changed_so_far + 1, changed_so_far + k + 1):
            emu.control(
                "add_note",
                {
                    "project": PROJECT,
                    "iid": iid,
                    "author": "alice",
                    "body": f"reviewer note on !{iid}",
                },
            )
        changed_so_far += k
        results[k] = cycle(f"{k} changed since the last cycle")
    with files.monitored_mrs().update() as state:
        for entry in state.mrs.values():
            entry.rescan_requested = True
    naive = cycle("naive: every MR read (rescan all)")
    print()
    goal = results[5][0] <= 16
    print(
        f"5 changed: {results[5][0]} calls (goal <= 16: {'met' if goal else 'MISSED'}); "
        f"naive polling: {naive[0]} calls"
    )


def one_cycle(emu: object) -> tuple[int, int, float]:
    from harness_cli import wiring
    from harness_cli.config import load_config
    from harness_cli.delivery.monitor.act import MonitorCtx
    from harness_cli.delivery.monitor.cycle import run_cycle
    from harness_cli.delivery.monitor.thresholds import thresholds_from
    from harness_cli.dispatch.backends import choose_backend
    from harness_cli.sandbox.gitlab_api import GitLabEmulator
    from harness_cli.services.gitlab import GitLabSettings, LiveGitLab

    assert isinstance(emu, GitLabEmulator)
    cfg = load_config()
    # A fresh client per cycle, as each cron run builds its own.
    ctx = MonitorCtx(
        cfg=cfg,
        gitlab=LiveGitLab(GitLabSettings(url=emu.url, token="glpat-bench")),
        out=wiring.outbound(cfg, wiring.lazy_slack()),
        backend=choose_backend("record"),
        thresholds=thresholds_from(cfg.harness),
    )
    before = len(emu.requests)
    started = time.monotonic()
    report = run_cycle(ctx)
    elapsed = time.monotonic() - started
    if report.errors or report.ended_early:
        raise SystemExit(f"cycle failed: {report.errors} {report.ended_early}")
    return report.calls, len(emu.requests) - before, elapsed


if __name__ == "__main__":
    main()
