"""``harness demo``: one whole ticket on the sandbox, offline, driving the real subcommands.

Slack message → poll-slack → investigate → review → operator approval → dev-agent → mr-monitor
(red CI → fix_ci → green; reviewer note → address_review) → merge → finalize. Each step runs the
real subcommand in-process with the ``inline`` dispatcher; the steps that need a failed one
wait. Nothing here pretends to be a workflow.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness_cli import resources
from harness_cli.agents import sandbox
from harness_cli.cli import run
from harness_cli.delivery.identity import machine_identity
from harness_cli.eval.trial_home import spent
from harness_cli.sandbox.anthropic_forward import Upstream
from harness_cli.sandbox.runner import GITHUB_SANDBOX_TOKEN, MCP_CONFIG, Sandbox, environment
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH, SAMPLE_TICKET
from harness_cli.sandbox.wire_commands import commands, not_run
from harness_cli.services.claude_cli import find_claude
from harness_cli.state import files
from harness_cli.workspace.jira_issue import attached

TICKET_KEY = "AAA-101"
CUSTOMER = "U0CUSTOMER"
SUPPORT = "C0SUPPORT"
SELF_DM = "D0SELF"


@dataclass
class StepResult:
    name: str
    status: str  # done | failed | waiting
    detail: str = ""
    seconds: float = 0.0


@dataclass
class DemoReport:
    root: Path
    steps: list[StepResult] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float = 0.0
    emulator_seconds: float = 0.0
    unsandboxed: str = ""
    """Why the agents' commands ran without their sandbox on this machine ("" = they did not)."""

    @property
    def ok(self) -> bool:
        return all(s.status in ("done", "waiting") for s in self.steps)


@dataclass(frozen=True)
class Step:
    name: str
    command: str
    argv: Callable[[DemoContext], list[str]]
    needs: tuple[str, ...] = ()
    already: tuple[str, ...] = ()
    """Case statuses meaning an earlier step's inline dispatch already ran this workflow (the
    inline dispatcher chains: poll-slack runs investigate itself)."""
    before: Callable[[DemoContext], str] | None = None
    """What the outside world does before this step (CI finishing, a reviewer, a merge)."""
    expect: Callable[[DemoContext], str] | None = None
    """What must be true once the step exited 0 ("" when it is): an exit code alone is not
    proof, e.g. a poll-slack that read no configured channel also exits 0."""


@dataclass
class DemoContext:
    root: Path
    sandbox: Sandbox
    ticket_ts: str = ""
    forge: str = "gitlab"
    """Where the team's repository lives (``harness demo --forge github``)."""
    review_comments: list[int] = field(default_factory=list)

    @property
    def case_id(self) -> str:
        return TICKET_KEY

    @property
    def github(self) -> Any:
        assert self.sandbox.github is not None, "the GitHub emulator was not started"
        return self.sandbox.github

    def mr_iid(self) -> int | None:
        if self.forge == "github":
            pulls = [p for p in self.github.snapshot()["pulls"] if p["repo"] == SAMPLE_PROJECT_PATH]
            return int(pulls[-1]["number"]) if pulls else None
        mrs = self.sandbox.gitlab.snapshot()["merge_requests"]
        return int(mrs[-1]["iid"]) if mrs else None

    def pipelines(self) -> list[str]:
        """Each pipeline's (GitHub: workflow run's) status, oldest first, in GitLab's words."""
        if self.forge == "github":
            runs = self.github.snapshot()["runs"]
            return [_run_status(r) for r in runs if r["repo"] == SAMPLE_PROJECT_PATH]
        return [p["status"] for p in self.sandbox.gitlab.snapshot()["pipelines"]]

    def case_opened(self) -> str:
        if not _case_status(self):
            return (
                f"exited 0 but no case {self.case_id} was opened (is {SUPPORT} in projects.yaml?)"
            )
        if not _jira_issue(self):  # the ticket names AAA-101: its issue is the case's context
            return f"the case is open but Jira issue {TICKET_KEY} was not attached to it"
        return ""

    def investigated(self) -> str:
        status = _case_status(self)
        return "" if status not in ("", "new", "investigating") else f"the case is {status!r}"

    def mr_opened(self) -> str:
        return "" if self.mr_iid() is not None else "exited 0 but no MR was opened"

    def ci_green(self) -> str:
        statuses = self.pipelines()
        if "success" in statuses:
            return ""
        return f"the MR's CI never went green after fix_ci ({', '.join(statuses) or 'none'})"

    def closed(self) -> str:
        status = _case_status(self)
        return "" if status == "closed" else f"the MR merged but the case is {status!r}"

    def settle(self) -> str:
        """Let the running pipelines finish, as time would."""
        if self.forge == "github":
            self.github.wait_for_runs(timeout=120)
        else:
            self.sandbox.gitlab.wait_for_pipelines(timeout=120)
        statuses = self.pipelines()
        return f"CI: {', '.join(statuses) or 'no pipeline'}"

    def operator_question(self) -> str:
        """The operator replies in the case thread of their self-DM (followup answers there)."""

        thread = next(
            (
                t
                for t in files.oncall_thread_map().read().for_case(self.case_id)
                if t.role == "case_thread"
            ),
            None,
        )
        if thread is None:
            return "no case thread"
        self.sandbox.slack.post_as(
            SELF_DM,
            "U0OPERATOR",
            "Is the README rule really the intended one?",
            thread_ts=thread.thread_ts,
        )
        return "the operator asked a question in the case thread"

    def reviewer_note(self) -> str:
        iid = self.mr_iid()
        if iid is None:
            return "; no MR to review"
        if self.forge == "github":  # a review comment on a line: a thread
            made = self.github.control(
                "add_review_comment",
                {"repo": SAMPLE_PROJECT_PATH, "number": iid, "author": "alice",
                 "path": "pricing/discount.py", "line": 1,
                 "body": "Could the docstring say that the threshold itself counts?"},
            )  # fmt: skip
            self.review_comments.append(int(made["comment_id"]))
            return "; alice commented on the PR"
        self.sandbox.gitlab.control(
            "add_note",
            {
                "project": SAMPLE_PROJECT_PATH,
                "iid": iid,
                "author": "alice",
                "discussion": True,
                "body": "Could the docstring say that the threshold itself counts?",
            },
        )
        return "; alice commented on the MR"

    def human_merge(self) -> str:
        iid = self.mr_iid()
        if iid is None:
            return "; no MR to merge"
        # alice is satisfied with the reply: she resolves her thread as she merges
        if self.forge == "github":
            for comment in self.review_comments:
                self.github.control("resolve_thread", {"comment_id": comment, "author": "alice"})
            merged = self.github.control(
                "merge", {"repo": SAMPLE_PROJECT_PATH, "number": iid, "author": "alice"}
            )
            if not merged.get("ok"):
                return f"; alice could not merge the PR: {merged.get('error')}"
            return "; alice resolved her thread and merged the PR"
        self.sandbox.gitlab.control(
            "merge", {"project": SAMPLE_PROJECT_PATH, "iid": iid, "author": "alice", "force": True}
        )
        return "; alice resolved her thread and merged the MR"


STEPS: tuple[Step, ...] = (
    Step("init", "init", lambda c: ["init", "--remote", str(c.root / "remotes" / "workspace.git")]),
    Step(
        "poll-slack: ticket → case",
        "poll-slack",
        lambda c: ["poll-slack"],
        needs=("init",),
        expect=lambda c: c.case_opened(),
    ),
    Step(
        "investigate",
        "investigate",
        lambda c: ["investigate", c.case_id],
        needs=("init",),
        already=("awaiting_approval", "escalated", "approved"),
        expect=lambda c: c.investigated(),
    ),
    Step("review", "review", lambda c: ["review", c.case_id], needs=("investigate",)),
    Step(
        "followup: the operator asks in the case thread",
        "poll-slack",
        lambda c: ["poll-slack"],
        needs=("investigate",),
        before=lambda c: c.operator_question(),
    ),
    Step(
        "operator approval",
        "admin",
        lambda c: ["admin", f"task {c.case_id} --auto"],
        needs=("review",),
    ),
    Step(
        "dev-agent (task)",
        "dev-agent",
        lambda c: ["dev-agent", c.case_id, "--mode", "task", "--auto"],
        needs=("operator approval",),
        already=("mr_open",),
        expect=lambda c: c.mr_opened(),
    ),
    Step(
        "mr-monitor (red CI → fix_ci)",
        "mr-monitor",
        lambda c: ["mr-monitor"],
        needs=("dev-agent (task)",),
        before=lambda c: c.settle(),
    ),
    Step(
        "mr-monitor (review → address_review)",
        "mr-monitor",
        lambda c: ["mr-monitor"],
        needs=("mr-monitor (red CI → fix_ci)",),
        before=lambda c: c.settle() + c.reviewer_note(),
        expect=lambda c: c.ci_green(),
    ),
    Step(
        "mr-monitor (merged → close)",
        "mr-monitor",
        lambda c: ["mr-monitor"],
        needs=("mr-monitor (review → address_review)",),
        before=lambda c: c.settle() + c.human_merge(),
        expect=lambda c: c.closed(),
    ),
    Step(
        "finalize",
        "finalize",
        lambda c: ["finalize", c.case_id],
        needs=("mr-monitor (merged → close)",),
    ),
)


def _seed_config(root: Path, runtime: str) -> tuple[Path, str]:
    """The packaged example config (it names the sandbox's channel, users and project) as an
    operator would have it: the three files and the projects' SOPs, no prompts and no
    STYLE.md/INVESTIGATION.md — those come from the package, as on a real install.

    On a machine where the agents' sandbox cannot run (no bubblewrap, or no socat for the
    claude CLI), the demo does what harness.yaml lets an operator do: it opts out, loudly —
    the returned warning is printed with the result. A real install stays fail-closed."""

    target = root / "agent-config"
    unboxed = ""
    if not target.exists():
        target.mkdir(parents=True)
        for name in ("harness.yaml", "projects.yaml", "mcp.json"):
            shutil.copy2(resources.example_config() / name, target / name)
        found = sandbox.problem(runtime)
        if found is not None:
            unboxed = (
                f"{found}: this demo's agent commands run UNSANDBOXED (sandbox.required: false "
                "in its harness.yaml); install bubblewrap and socat for the real thing"
            )
        _adapt_to_machine(target / "harness.yaml", unboxed=bool(unboxed))
    sops = root / "sops"  # harness.yaml's sops_dir is ../sops
    if not sops.exists():
        for project in (p for p in resources.example_sops().iterdir() if p.is_dir()):
            shutil.copytree(project, sops / project.name)
    return target, unboxed


WORLD_TRUST: dict[str, Any] = {
    "trusted": ["logs", "metrics", "docs"],
    "effects": {"db/query": "read-only", "db/list_tables": "read-only",
                "db/describe_table": "read-only"},
}  # fmt: skip
"""What the demo's operator believes about the world's servers: logs, metrics and docs are
their own (their annotations trusted); of the database only the tools named here are reads —
its ``explain_query`` claims readOnlyHint and writes, so it stays undeclared, a write. The
tracker is untrusted and undeclared: the investigation is not offered it."""


def _wire_world(config: Path, world_mcp: Path) -> None:
    """The sandbox world's servers as the demo's agent-config/mcp.json, with the trust above
    in its harness.yaml: the investigation's sources, as an operator would wire real ones."""
    import yaml

    shutil.copy2(world_mcp, config / "mcp.json")
    path = config / "harness.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    data["mcp"] = WORLD_TRUST
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


DEMO_AUTHOR = "Demo Operator <operator@sandbox.example>"
"""The demo's commit author on a machine with no git identity (a real install refuses to
commit without one; the demo's sandbox team has this member)."""


def _cap(config: Path, max_usd: float) -> None:
    """``--max-usd``: the harness's own budgets (cost.budgets) no higher than the cap."""
    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    budgets = data.setdefault("cost", {}).setdefault("budgets", {})
    for key in ("day_usd", "case_usd", "workflow_usd"):
        budgets[key] = min(float(budgets.get(key) or max_usd), max_usd)
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _adapt_to_machine(config: Path, *, unboxed: bool) -> None:
    """What this machine lacks, the demo's own harness.yaml says: no sandbox → opted out
    (loudly, by the caller); no git identity → the sandbox team's author."""

    needs_author = machine_identity() is None
    if not unboxed and not needs_author:
        return
    import yaml

    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    if unboxed:
        data.setdefault("sandbox", {})["required"] = False
    if needs_author:
        data.setdefault("delivery", {})["commit_author"] = DEMO_AUTHOR
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def demo_runtime(requested: str | None = None) -> str:
    """The real claude CLI when it is installed (``make claude-cli``), else the harness's own
    tool loop over the Messages API: the same scripted model drives both."""

    if requested:
        return requested
    return "claude-code" if find_claude() is not None else "anthropic"


def run_demo(
    keep: Path | None = None,
    on_step: Callable[[StepResult], None] | None = None,
    runtime: str | None = None,
    on_start: Callable[[str], None] | None = None,
    world: bool = True,
    forge: str = "gitlab",
    live: Upstream | None = None,
    max_usd: float | None = None,
) -> DemoReport:
    """``on_start`` hears each step's name as it begins (the terminal's spinner shows it);
    ``on_step`` gets each step's result as it ends; ``world`` starts the sandbox's MCP servers
    (bench_world.py compares the demo without them); ``live``: the real API plays every role
    (``harness demo --live``), the sandbox's emulator hands it each request; ``max_usd``: the
    demo's day budget (its home is new: the day is the demo), so the harness stops it there."""
    root = keep or Path(tempfile.mkdtemp(prefix="harness-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    report = DemoReport(root)
    on_github = forge == "github"
    with Sandbox(root / "sandbox", with_world=world, github_enabled=on_github) as box:
        ctx = DemoContext(root, box, forge=forge)
        (root / "remotes").mkdir(exist_ok=True)
        import subprocess

        subprocess.run(
            ["git", "init", "--bare", "-q", str(root / "remotes" / "workspace.git")], check=True
        )
        chosen = demo_runtime(runtime)
        config, report.unsandboxed = _seed_config(root, chosen)
        if live is not None:
            box.anthropic.play_live(live)
        if max_usd is not None:
            _cap(config / "harness.yaml", max_usd)
        if box.world is not None:
            _wire_world(config, box.root / MCP_CONFIG)
            box.world.wait_ready()  # its HTTP servers listen before the investigation asks
        forge_env = _use_github(root, box, config) if on_github else {}
        env = {
            **box.env(),
            "HARNESS_HOME": str(root / "home"),
            "HARNESS_WORKSPACE": str(root / "workspace"),
            "HARNESS_CONFIG": str(config),
            "HARNESS_DISPATCH": "inline",
            "HARNESS_WORKTREES": str(root / "worktrees"),
            "HARNESS_RUNTIME": chosen,
            **forge_env,
        }
        ticket = f"{SAMPLE_TICKET} ({TICKET_KEY})"
        (root / "ticket.txt").write_text(ticket + "\n", encoding="utf-8")
        with environment(env):
            ctx.ticket_ts = str(box.slack.post_as(SUPPORT, CUSTOMER, ticket)["ts"])
            for step in STEPS:
                if on_start:
                    on_start(step.name)
                result = _run_step(step, ctx, report)
                report.steps.append(result)
                if on_step:
                    on_step(result)
        report.summary = {**_summary(ctx, env), "runtime": env["HARNESS_RUNTIME"]}
        # What the harness metered (a live demo's real spend; the scripted one's play money).
        report.summary["usd"] = round(spent(root / "home")[0], 6)
        emulators = [box.slack, box.gitlab, box.anthropic, box.pagerduty, box.jira]
        report.emulator_seconds = box.gitlab.ci_seconds() + sum(
            e.busy_seconds() for e in [*emulators, *([box.github] if box.github else [])]
        )
        box.write_state(root / "sandbox-state.json")
    report.wall_seconds = time.monotonic() - started
    if keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return report


def _run_step(step: Step, ctx: DemoContext, report: DemoReport) -> StepResult:
    done = {s.name for s in report.steps if s.status == "done"}
    missing = [n for n in step.needs if n not in done]
    if missing:
        return StepResult(step.name, "waiting", f"needs {', '.join(missing)}")
    argv = step.argv(ctx)
    world = step.before(ctx) if step.before is not None else ""
    if step.already and _case_status(ctx) in step.already:
        return StepResult(
            step.name, "done", f"dispatched inline by the step before (case is {_case_status(ctx)})"
        )
    started = time.monotonic()
    asked_before = len(ctx.sandbox.anthropic.recorded("/v1/messages"))
    # Each subcommand's own output goes to demo.log; the demo shows one line per step.
    with (
        open(ctx.root / "demo.log", "a", encoding="utf-8") as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        log.write(f"\n$ harness {' '.join(argv)}\n")
        log.flush()
        code = run(argv)
    seconds = time.monotonic() - started
    shown = "harness " + " ".join(a if " " not in a else repr(a) for a in argv)
    if code != 0:
        return StepResult(step.name, "failed", f"{shown} exited {code} (see demo.log)", seconds)
    problem = step.expect(ctx) if step.expect is not None else ""
    # A command the model asked for that was refused or never ran is not a step that passed,
    # whatever the model said next (read from the tool results on the wire).
    bodies = [r.json_body() for r in ctx.sandbox.anthropic.recorded("/v1/messages")]
    unrun = not_run(commands(bodies[asked_before:]))
    if unrun and not problem:
        first = unrun[0]
        problem = (f"— {len(unrun)} command(s) the model ran did not run: `{first.command[:60]}` "
                   f"{first.fate} ({first.said[:100] or 'no result'})")  # fmt: skip
    if problem:
        return StepResult(step.name, "failed", f"{shown} {problem}", seconds)
    return StepResult(step.name, "done", shown + (f" [{world}]" if world else ""), seconds)


def _case_status(ctx: DemoContext) -> str:
    import json

    path = Path(os.environ["HARNESS_WORKSPACE"]) / "case-workspaces" / ctx.case_id / "case.json"
    try:
        return str(json.loads(path.read_text()).get("status", ""))
    except (OSError, ValueError):
        return ""


def _jira_issue(ctx: DemoContext) -> str:
    """The Jira issue the intake attached to the case (#30): what the investigation reads
    after the ticket."""

    return attached(Path(os.environ["HARNESS_WORKSPACE"]) / "case-workspaces" / ctx.case_id)


def _first_line(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").split("\n", 1)[0]
    except OSError:
        return "-"


def _sources(ctx: DemoContext) -> dict[str, int] | None:
    """The world's servers the run asked, with how many calls each (None: no world)."""
    world = ctx.sandbox.world
    if world is None:
        return None
    counts: dict[str, int] = {}
    for call in world.calls():
        counts[call["server"]] = counts.get(call["server"], 0) + 1
    return counts


def _summary(ctx: DemoContext, env: dict[str, str]) -> dict[str, Any]:
    import json

    state = ctx.sandbox.state()
    case_file = Path(env["HARNESS_WORKSPACE"]) / "case-workspaces" / ctx.case_id / "case.json"
    case: dict[str, Any] = json.loads(case_file.read_text()) if case_file.exists() else {}
    self_dm: dict[str, Any] = next(
        (c for c in state["slack"]["channels"] if c["id"] == SELF_DM), {}
    )
    if ctx.forge == "github":
        iid = ctx.mr_iid()
        url = ctx.github.url
        mr = f"{url}/{SAMPLE_PROJECT_PATH}/pull/{iid}" if iid is not None else "-"
    else:
        mrs = [m for m in state["gitlab"]["merge_requests"] if m["project"] == SAMPLE_PROJECT_PATH]
        mr = mrs[-1].get("web_url", f"!{mrs[-1]['iid']}") if mrs else "-"
    return {
        "case": case.get("id", "-"),
        "status": case.get("status", "-"),
        "exit": case.get("exit") or "-",
        "forge": ctx.forge,
        "mr": mr,
        "pipelines": ctx.pipelines(),
        "replies": len(self_dm.get("messages", [])),
        "jira": _first_line(case_file.parent / "jira-issue.md"),
        "model_requests": state["anthropic"].get("messages", state["anthropic"]["requests"]),
        "sources": _sources(ctx),
        "tokens": state["anthropic"]["usage"],
    }


def _run_status(run: dict[str, Any]) -> str:
    if run["status"] != "completed":
        return "running"
    return {"success": "success", "failure": "failed"}.get(str(run["conclusion"]), "failed")


def _use_github(root: Path, box: Sandbox, config: Path) -> dict[str, str]:
    """The team's projects on ``forge: github``, and git authenticated to the emulator the way
    an operator sets it up: in their own git config (the harness puts no token on a command
    line). The demo's git config includes the operator's, so their identity still holds."""
    import yaml

    path = config / "projects.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    for project in data["projects"].values():
        project["forge"] = "github"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    gitconfig = root / "gitconfig"
    own = os.environ.get("GIT_CONFIG_GLOBAL") or str(Path.home() / ".gitconfig")
    assert box.github is not None
    gitconfig.write_text(
        f"[include]\n\tpath = {own}\n"
        f'[http "{box.github.url}/"]\n'
        f"\textraHeader = Authorization: Bearer {GITHUB_SANDBOX_TOKEN}\n",
        encoding="utf-8",
    )
    return {"GIT_CONFIG_GLOBAL": str(gitconfig)}
