"""The operator's desk on the sandbox: cases, the real ``harness`` CLI in-process, GitLab and
Slack as the team sees them, and the dev-agent run from the payloads mr-monitor recorded.

Shared by tests/delivery/test_delivery_truth.py and bench/bench_delivery_truth.py. Nothing
here plays a part of the harness: the dev-agent, mr-monitor and the push recovery run for real
on the emulators; the model is ``sandbox/scripts/delivery_adversarial.yaml``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness_cli.sandbox.runner import Sandbox
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH

PROJECT = SAMPLE_PROJECT_PATH
SELF_DM = "D0SELF"


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


@dataclass
class Desk:
    box: Sandbox
    cli: Callable[..., tuple[int, str, str]]
    home: Path
    """$HARNESS_HOME"""
    ran: list[str] = field(default_factory=list)
    """Payload files already run."""
    forge: str = "gitlab"
    """Where the team's repository lives (the ``forge`` parameter)."""
    comments: dict[str, int] = field(default_factory=dict)

    @property
    def hub(self) -> Any:
        assert self.box.github is not None
        return self.box.github

    # -- cases ----------------------------------------------------------------------------------
    def approved_case(self, case_id: str, *, thread: bool = True) -> Path:
        """A case whose investigation is done and approved (investigations have their own
        tests), with its thread in the operator's self-DM as poll-slack opens it."""
        from harness_cli.config import load_config
        from harness_cli.state import files
        from harness_cli.state.models import ThreadEntry
        from harness_cli.workspace.registry import case_dir, update_case

        code, _, err = self.cli("case", "new", "--project", "team-a", "--title", case_id, "--id",
                                case_id)  # fmt: skip
        assert code == 0, err
        folder = case_dir(case_id)
        (folder / "ANALYSIS.md").write_text("bulk_discount compares with > instead of >=\n")
        (folder / "TASK.md").write_text("Change the comparison to >=.\n")
        with update_case(case_id, load_config().harness.thresholds, "test") as case:
            for status in ("investigating", "awaiting_approval", "approved"):
                case.move(status)
        if thread:
            parent = self.box.slack.post_as(SELF_DM, "U0OPERATOR", f"case *{case_id}*")["ts"]
            with files.task_thread_map().update() as threads:
                threads.threads[f"{SELF_DM}/{parent}"] = ThreadEntry(
                    channel=SELF_DM, thread_ts=parent, case_id=case_id,
                    case_dir=str(folder.resolve()), role="case_thread",
                )  # fmt: skip
        return folder

    def status(self, case_id: str) -> str:
        from harness_cli.workspace.registry import load_case

        return load_case(case_id).status

    # -- the harness ----------------------------------------------------------------------------
    def harness(self, *args: str, expect: int | None = 0) -> dict[str, Any]:
        code, out, err = self.cli(*args, "--json")
        if expect is not None:
            assert code == expect, f"harness {' '.join(args)} exited {code}: {err}{out}"
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        data: dict[str, Any] = json.loads(lines[-1]) if lines else {"exit": code, "err": err}
        data.setdefault("exit", code)
        return data

    def task(self, case_id: str, *, expect: int | None = 0) -> dict[str, Any]:
        return self.harness("dev-agent", case_id, "--mode", "task", "--auto", expect=expect)

    def wait_ci(self, timeout: float = 120) -> None:
        if self.forge == "github":
            self.hub.wait_for_runs(timeout=timeout)
        else:
            self.box.gitlab.wait_for_pipelines(timeout=timeout)

    def cycle(self) -> dict[str, Any]:
        self.wait_ci()
        data: dict[str, Any] = self.harness("mr-monitor", expect=None)["data"]
        return data

    def payloads(self, mode: str | None = None) -> list[tuple[Path, dict[str, Any]]]:
        folder = self.home / "payloads"
        found = [(p, json.loads(p.read_text())) for p in sorted(folder.glob("*-dev-agent-*.json"))]
        return [(p, d) for p, d in found if mode is None or d["args"].get("mode") == mode]

    def run_dispatched(self, *, expect: int | None = 0) -> list[dict[str, Any]]:
        """Run every dev-agent payload mr-monitor recorded since the last call, as the
        dispatcher would (``harness dev-agent --payload FILE``)."""
        results = []
        for path, _ in self.payloads():
            if str(path) in self.ran:
                continue
            self.ran.append(str(path))
            results.append(self.harness("dev-agent", "--payload", str(path), expect=expect))
        return results

    # -- the outside world ----------------------------------------------------------------------
    def force_ci(self, status: str, times: int = 1, project: str = PROJECT) -> None:
        for _ in range(times):
            if self.forge == "github":
                conclusion = {"failed": "failure"}.get(status, status)
                self.hub.control("set_ci_result", {"repo": project, "conclusion": conclusion})
            else:
                self.box.gitlab.control(
                    "set_pipeline_result", {"project": project, "status": status}
                )

    def commit(self, branch: str, files: dict[str, str], message: str) -> None:
        """A teammate's push straight to ``branch``."""
        if self.forge == "github":
            args = {"repo": PROJECT, "branch": branch, "files": files, "message": message}
            self.hub.control("commit", args)
        else:
            args = {"project": PROJECT, "branch": branch, "files": files, "message": message}
            self.box.gitlab.control("commit", args)

    def note(
        self, iid: int, body: str, *, author: str = "alice", reply_to: str | None = None
    ) -> str:
        """A reviewer's comment on the MR (GitHub: a review thread on a line); its discussion
        id, what the harness answers."""
        if self.forge == "github":
            args_: dict[str, Any] = {"repo": PROJECT, "number": iid, "body": body,
                                     "author": author, "path": "pricing/discount.py",
                                     "line": 1}  # fmt: skip
            if reply_to:
                args_["reply_to"] = int(reply_to)
            made = self.hub.control("add_review_comment", args_)
            return reply_to or str(made["comment_id"])
        args: dict[str, Any] = {"project": PROJECT, "iid": iid, "author": author, "body": body}
        if reply_to:
            args["reply_to"] = reply_to
        return str(self.box.gitlab.control("add_note", args)["discussion_id"])

    def mr(self, iid: int = 1) -> dict[str, Any]:
        """The MR as GitLab's snapshot shows it; on GitHub the PR in the same words (``Draft:``
        before a draft's title, its comments as notes, its mergeability read through the
        harness's own client, as mr-monitor reads it)."""
        if self.forge == "github":
            return self._pull(iid)
        found: dict[str, Any] = next(
            m for m in self.box.gitlab.snapshot()["merge_requests"] if m["iid"] == iid
        )
        return found

    def mrs(self) -> list[dict[str, Any]]:
        """Every MR (GitHub: PR) of the project, as the forge's state lists them."""
        if self.forge == "github":
            return [p for p in self.hub.snapshot()["pulls"] if p["repo"] == PROJECT]
        return [m for m in self.box.gitlab.snapshot()["merge_requests"]]

    def discussions(self, iid: int = 1) -> list[Any]:
        from harness_cli import wiring

        return wiring.gitlab().discussions(PROJECT, iid)

    def bare(self, project: str = PROJECT) -> Path:
        if self.forge == "github":
            repos = self.hub.snapshot()["repos"]
            return Path(next(r["bare_repo"] for r in repos if r["full_name"] == project))
        projects = self.box.gitlab.snapshot()["projects"]
        return Path(next(p["bare_repo"] for p in projects if p["path"] == project))

    def _pull(self, iid: int) -> dict[str, Any]:
        from harness_cli import wiring

        pr = next(p for p in self.hub.snapshot()["pulls"] if p["number"] == iid)
        notes = [{**c, "system": False} for c in pr["issue_comments"]]
        for thread in pr["threads"]:
            notes += [{**c, "system": False} for c in thread["comments"]]
        read = wiring.gitlab().get_mr(PROJECT, iid)
        for _ in range(5):  # GitHub computes mergeability after a push: read again, as a human
            if read.detailed_merge_status != "checking":
                break
            read = wiring.gitlab().get_mr(PROJECT, iid)
        return {
            "iid": iid,
            "title": ("Draft: " if pr["draft"] else "") + pr["title"],
            "description": pr["body"] or "",
            "sha": pr["head_sha"],
            "state": pr["state"],
            "notes": notes,
            "detailed_merge_status": read.detailed_merge_status,
        }

    def harness_posts(self, since: int = 0) -> list[dict[str, Any]]:
        """What the harness posted to the self-DM (its posts carry the harness's metadata)."""
        from harness_cli.outbox.outbound import is_own_post

        posts = [m for m in self.box.slack.messages(SELF_DM, metadata=True) if is_own_post(m)]
        return posts[since:]
