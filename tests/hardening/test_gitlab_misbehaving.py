"""L4: `harness mr-monitor` against a GitLab that misbehaves like the real one does: answers
that are not what the API documents (an MR list as an object, an HTML 502 page from the proxy),
5xx storms, and 404s that may be a blip. A clear error, never a crash log; a cycle inside its
budget; an MR dropped only after repeated 404s across cycles, and the operator told once."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gitlab
import pytest
import yaml

from harness_cli.sandbox.gitlab_api import GitLabEmulator
from harness_cli.sandbox.httpbase import Fault
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH, seed_sample_project

PATH = SAMPLE_PROJECT_PATH
CASE = "AAA-41"
BUDGET = 4.0
HTML_502 = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n" + "<!-- padding -->\r\n" * 20
)


class Monitor:
    def __init__(self, cli: Any, emu: GitLabEmulator, slack: Any, tmp: Path) -> None:
        self.cli, self.emu, self.slack, self.tmp = cli, emu, slack, tmp
        self.gl = gitlab.Gitlab(emu.url, private_token="glpat-harness-bot")

    def open_mr(self, n: int) -> int:
        branch = f"harness/{CASE}-{n}"
        self.emu.control("set_pipeline_result", {"project": PATH, "status": "success"})
        self.emu.control(
            "commit",
            {"project": PATH, "branch": branch, "files": {f"n{n}.txt": "x\n"}, "message": "x"},
        )
        mr = self.gl.projects.get(PATH).mergerequests.create(
            {"source_branch": branch, "target_branch": "main", "title": f"Work {n}"}
        )
        code, out, err = self.cli("mr-monitor", "--watch", f"{PATH}!{mr.iid}", "--case", CASE)
        assert code == 0, out + err
        return int(mr.iid)

    def cycle(self) -> tuple[int, dict[str, Any], str, float]:
        started = time.monotonic()
        code, out, err = self.cli("mr-monitor", "--json")
        elapsed = time.monotonic() - started
        reply = json.loads(out) if out.strip() else {}
        assert "data" in reply, f"exit {code}: {out}{err}"  # a result, not a failure to run
        return code, reply["data"], err, elapsed

    def monitored(self) -> set[str]:
        path = self.tmp / "harness-home" / "monitored-mrs.json"
        return set(json.loads(path.read_text())["mrs"]) if path.exists() else set()

    def crash_logs(self) -> list[Path]:
        logs = self.tmp / "harness-home" / "logs"
        return sorted(logs.glob("crash-*.log")) if logs.exists() else []

    def dms(self) -> list[str]:
        return [str(m["text"]) for m in self.slack.messages("D0SELF")]


@pytest.fixture
def gl_emu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[GitLabEmulator]:
    emu = GitLabEmulator(tmp_path / "gitlab", ci_timeout=30, watch_interval=0.1)
    emu.start()
    try:
        seed_sample_project(emu)
        monkeypatch.setenv("GITLAB_URL", emu.url)
        monkeypatch.setenv("GITLAB_TOKEN", "glpat-harness-bot")
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def mon(cli, gl_emu: GitLabEmulator, slack_emu, harness_ready: Path, tmp_path: Path) -> Monitor:  # type: ignore[no-untyped-def]
    path = harness_ready / "harness.yaml"
    data = yaml.safe_load(path.read_text())
    data.setdefault("monitor", {}).update(cycle_budget_seconds=BUDGET, max_errors_per_cycle=10)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    code, _, err = cli("case", "new", "--project", "team-a", "--id", CASE, "--title", "t")
    assert code == 0, err
    return Monitor(cli, gl_emu, slack_emu, tmp_path)


def test_an_mr_list_answered_as_an_object_is_a_clear_error_not_a_crash(mon: Monitor) -> None:
    mon.open_mr(1)
    assert mon.cycle()[0] == 0
    mon.emu.add_fault(
        Fault(
            kind="status",
            match="/merge_requests",
            where={"state": "all"},
            status=200,
            body={"message": "this is not a list"},
            times=1,
        )
    )
    code, data, err, _ = mon.cycle()
    assert code == 1, err
    assert not mon.crash_logs(), err
    [error] = data["errors"]
    assert "GitLab" in error and "list" in error
    assert mon.cycle()[0] == 0  # the next cycle, with GitLab answering properly again


@pytest.mark.parametrize(
    "status,body", [(502, HTML_502), (503, {"message": "503 Service Unavailable"})]
)
def test_a_5xx_storm_stays_inside_the_cycle_budget(mon: Monitor, status: int, body: Any) -> None:
    for n in range(3):
        mon.open_mr(n)
    mon.emu.add_fault(Fault(kind="status", match="/projects", status=status, body=body, times=-1))
    code, data, err, elapsed = mon.cycle()
    assert elapsed < BUDGET + 2.0, f"one cycle took {elapsed:.1f} s against {BUDGET} s"
    assert code == 1 and not mon.crash_logs(), err
    assert data["errors"] or data["ended_early"]
    shown = " ".join(data["errors"]) + data["ended_early"]
    assert str(status) in shown
    assert "<html" not in shown.lower() and "<title" not in shown.lower()  # said, not dumped
    assert all(len(e) < 400 for e in data["errors"])
    assert mon.monitored() == {f"{PATH}!{i}" for i in (1, 2, 3)}  # nothing dropped for a 5xx


def test_an_mr_is_dropped_only_after_404s_in_three_cycles_and_the_operator_is_told(
    mon: Monitor,
) -> None:
    iid = mon.open_mr(1)
    key = f"{PATH}!{iid}"
    gone = Fault(kind="status", match=f"/merge_requests/{iid}", status=404, times=-1)
    mon.emu.add_fault(gone)
    mon.cycle()  # one 404: a blip as far as anyone knows
    assert key in mon.monitored()
    mon.emu.faults.clear()  # GitLab is back
    mon.cycle()
    # a reviewer's note makes the MR worth reading again, and then it is gone for good
    mon.emu.control("add_note", {"project": PATH, "iid": iid, "author": "alice", "body": "hm"})
    mon.emu.add_fault(gone)
    for _ in range(2):
        mon.cycle()
        assert key in mon.monitored()  # the count started again after the good cycle
    assert not [d for d in mon.dms() if "stopped watching" in d]
    _, data, _, _ = mon.cycle()
    assert key not in mon.monitored() and data["dropped"] == [key]
    [told] = [d for d in mon.dms() if "stopped watching" in d]
    assert key in told and "404" in told
    mon.cycle()
    assert len([d for d in mon.dms() if "stopped watching" in d]) == 1


def test_a_project_that_404s_is_dropped_only_after_three_cycles(mon: Monitor) -> None:
    iids = [mon.open_mr(n) for n in range(2)]
    keys = {f"{PATH}!{i}" for i in iids}
    encoded = PATH.replace("/", "%2F")
    mon.emu.add_fault(Fault(kind="status", match=f"/projects/{encoded}", status=404, times=-1))
    for _ in range(2):
        mon.cycle()
        assert mon.monitored() == keys
    _, data, _, _ = mon.cycle()
    assert mon.monitored() == set() and set(data["dropped"]) == keys
    assert not mon.crash_logs()
