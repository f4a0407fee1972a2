"""[hardening] What issue #17's guarantees cost, each against a baseline measured in the same run.

1. The one redaction point: microseconds per call on a log line, a bounded prompt and a 1 MB
   text; and an atomic case-file write through it against the same write ``verbatim``.
2. Bounded inputs: bytes sent to the model by one whole investigation (anthropic runtime,
   scripted model) of a 1 MB ticket, against the same investigation of a 1 KB ticket.
3. GitLab misbehaving: the wall time of one mr-monitor cycle over 5 MRs while every GitLab call
   answers 503, against the cycle budget (60 s; python-gitlab alone retried ~102 s per call).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def per_call(fn: Any, arg: Any, seconds: float = 0.5) -> float:
    """Microseconds per call of ``fn(arg)``, the median of five batches."""
    batches = []
    for _ in range(5):
        n, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds / 5:
            fn(arg)
            n += 1
        batches.append((time.perf_counter() - started) / n * 1e6)
    return sorted(batches)[2]


def bench_redaction(root: Path) -> None:
    from harness_cli.redaction import redact, redact_bytes
    from harness_cli.state.store import atomic_write_text

    os.environ["GITLAB_TOKEN"] = "glpat-benchbenchbench0000"
    line = json.dumps({"ts": "2026-12-01T10:00:00Z", "event": "dispatch", "case_id": "AAA-1"})
    prompt = ("The export fails for orders over 10 units; see the log. " * 300)[:16_000]
    mega = prompt * 64
    print("redaction (one point for everything that leaves):")
    for name, text in (("log line", line), ("16 KB prompt", prompt), ("1 MB text", mega)):
        print(f"  {name:<13} {per_call(redact, text):10.1f} µs per call")
    case = json.dumps({"id": "AAA-1", "history": [{"note": prompt[:200]}] * 20}, indent=2)
    path = root / "case.json"
    write = per_call(lambda t: atomic_write_text(path, t, verbatim=True), case)
    masking = per_call(redact_bytes, case.encode())
    print(
        f"  case.json ({len(case) // 1024} KB): redaction {masking:.0f} µs on top of the "
        f"{write:.0f} µs atomic write (fsync) = +{masking / write:.1%}"
    )


def harness(*argv: str) -> int:
    from harness_cli.cli import run

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return run(list(argv))


def fresh_home(root: Path, name: str) -> None:
    home = root / name
    shutil.copytree(REPO / "agent-config", home / "agent-config")
    shutil.copytree(REPO / "sops", home / "sops")  # harness.yaml: sops_dir ../sops
    os.environ.update(
        HARNESS_HOME=str(home / "home"),
        HARNESS_WORKSPACE=str(home / "ws"),
        HARNESS_CONFIG=str(home / "agent-config"),
        HARNESS_DISPATCH="record",
        HARNESS_WORKTREES=str(home / "worktrees"),
    )
    assert harness("init") == 0


def bench_bounded_inputs(root: Path) -> None:
    from harness_cli.sandbox.anthropic_api import AnthropicEmulator
    from harness_cli.sandbox.slack_api import SlackEmulator

    slack, model = SlackEmulator(), AnthropicEmulator("inv_honest")
    slack.start()
    model.start()
    os.environ.update(
        SLACK_API_URL=slack.url + "/api/",
        SLACK_USER_TOKEN="xoxp-0000000000-bench",
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="sk-ant-bench-0000",
        HARNESS_RUNTIME="anthropic",
    )
    figures = {}
    try:
        for label, size, key in (("1 KB", 1024, "AAA-71"), ("1 MB", 1024 * 1024, "AAA-72")):
            fresh_home(root, key)
            log = "".join(f"export row {i} failed\n" for i in range(size // 20 + 1))
            slack.post_as("C0SUPPORT", "U0CUSTOMER", f"{key} the export fails\n{log}"[:size])
            assert harness("poll-slack") == 0
            before = len(model.recorded("/v1/messages"))
            assert harness("investigate", key, "--no-post") == 0
            sent = [len(r.body) for r in model.recorded("/v1/messages")[before:]]
            figures[label] = sent
    finally:
        model.stop()
        slack.stop()
    small, big = sum(figures["1 KB"]), sum(figures["1 MB"])
    print("bounded inputs (bytes sent to the model by one investigation):")
    for label, sent in figures.items():
        total, top = sum(sent), max(sent)
        print(f"  {label} ticket: {len(sent)} requests, {total:,} B in all, largest {top:,} B")
    print(f"  1 MB ticket / 1 KB ticket: {big / small:.2f}x (unbounded on main: 5,405,986 B)")


def bench_gitlab_storm(root: Path) -> None:
    import gitlab

    from harness_cli.sandbox.gitlab_api import GitLabEmulator
    from harness_cli.sandbox.httpbase import Fault
    from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH, seed_sample_project

    fresh_home(root, "storm")
    emu = GitLabEmulator(root / "gitlab", ci_timeout=30)
    emu.start()
    os.environ.update(GITLAB_URL=emu.url, GITLAB_TOKEN="glpat-harness-bot")
    try:
        seed_sample_project(emu)
        assert harness("case", "new", "--project", "team-a", "--id", "AAA-73", "--title", "t") == 0
        project = gitlab.Gitlab(emu.url, private_token="glpat-harness-bot").projects.get(
            SAMPLE_PROJECT_PATH
        )
        emu.control("set_pipeline_result", {"project": SAMPLE_PROJECT_PATH, "status": "success"})
        for n in range(5):
            branch = f"harness/AAA-73-{n}"
            emu.control(
                "commit",
                {"project": SAMPLE_PROJECT_PATH, "branch": branch, "files": {"x": f"{n}\n"},
                 "message": "x"},
            )  # fmt: skip
            mr = project.mergerequests.create(
                {"source_branch": branch, "target_branch": "main", "title": f"w{n}"}
            )
            watch = f"{SAMPLE_PROJECT_PATH}!{mr.iid}"
            assert harness("mr-monitor", "--watch", watch, "--case", "AAA-73") == 0
        emu.add_fault(Fault(kind="status", match="/projects", status=503, times=-1))
        started = time.monotonic()
        code = harness("mr-monitor")
        wall = time.monotonic() - started
        answered = len([r for r in emu.recorded("/projects") if r.status == 503])
    finally:
        emu.stop()
    print("GitLab 503 storm (one mr-monitor cycle, 5 MRs, budget 60 s):")
    print(
        f"  cycle wall {wall:.1f} s = {wall / 60:.3f} of the budget; exit {code}; {answered} 503s"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
        bench_redaction(root)
        bench_bounded_inputs(root)
        bench_gitlab_storm(root)


if __name__ == "__main__":
    main()
