"""The first week of a new operator (#34 "Done when"), scripted end to end on the emulators.

init → fill in the env file → the schedule (crontab block and systemd units, written as files
under a temp HOME/XDG_CONFIG_HOME, never into this machine's crontab) → doctor green. From there
on the operator never uses a shell: every step is either what the schedule runs (the crontab's
own command lines, run the way harness-cron runs them: its VAR= lines plus the env file) or a
Slack message of the operator's. On the way: a pause and a resume from the self-DM, a customer
ticket in #support, the investigation, an approval in the case thread, the MR, a red CI, a model
outage (the Anthropic emulator answers 529 for a while), a case.json that goes corrupt and is
repaired following the DM, a reviewer note that gets its answer, the merge, and finalize.

Real parts throughout: the Slack, GitLab (real git, real CI running the sample repo's pytest)
and Anthropic emulators, the harness's own tool loop (runtime ``anthropic``) driven by the
demo's scripted model, real git for the workspace and the worktrees.

Each assertion that holds only once a #34 item is fixed says which one (``item N``), so a
failure names the defect it meets.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from harness_cli.cli import run
from harness_cli.intake.admin_parser import AdminUsage, parse_admin
from harness_cli.ops import schedule
from harness_cli.sandbox.httpbase import Fault
from harness_cli.sandbox.runner import Sandbox
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH, SAMPLE_TICKET

pytestmark = pytest.mark.slow

OPERATOR = "U0OPERATOR"
SELF_DM = "D0SELF"
SUPPORT = "C0SUPPORT"
CUSTOMER = "U0CUSTOMER"
CASE = "AAA-101"
OVERLOADED = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

# How a DM tells the operator what to do without a shell: an admin command, a reply in a
# thread, or that nothing needs doing (it goes on by itself, or is back to usual).
SLACK_ACTION = re.compile(
    r"admin:\s*\S|\breply\b|\bin this thread\b|nothing (?:to do|needs)|no action|by itself"
    r"|as usual",
    re.I,
)
# A shell command offered as the way out (`harness investigate X`, `git -C … checkout`).
SHELL_COMMAND = re.compile(r"`(?:harness|git|systemctl|crontab)\s[^`]*`")


@dataclass
class Week:
    root: Path
    box: Sandbox
    cron_env: dict[str, str] = field(default_factory=dict)
    """What every scheduled run is started with: the crontab's VAR= lines and the env file."""
    jobs: dict[str, list[str]] = field(default_factory=dict)
    """The crontab's command lines by subcommand (the argv after harness-cron)."""
    log: list[str] = field(default_factory=list)
    defects: list[str] = field(default_factory=list)
    """What a #34 item still gets wrong: collected, so one run names every one of them (the
    test fails at its end); what the rest of the week cannot go on without is asserted."""

    def expect(self, ok: object, item: str, what: str) -> bool:
        if not ok:
            self.defects.append(f"item {item}: {what}")
        return bool(ok)

    # -- the operator's shell, before doctor is green ----------------------------------------
    def shell(self, *argv: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = run(list(argv))
        self.log.append(f"$ harness {' '.join(argv)}  → {code}\n{out.getvalue()}")
        return code, out.getvalue()

    # -- what the schedule runs --------------------------------------------------------------
    def tick(self, job: str, now: str | None = None) -> tuple[int, str]:
        """One run of the crontab line ``job`` (e.g. ``poll-slack``, ``finalize``), with the
        environment harness-cron gives it; ``now`` (HARNESS_NOW) for the lines that wait for
        hours to pass."""
        argv = self.jobs[job]
        env = {**self.cron_env, **({"HARNESS_NOW": now} if now else {})}
        with _environ(env):
            code, out = self.shell(*argv)
        return code, out

    # -- the operator in Slack ---------------------------------------------------------------
    def say(self, text: str, thread_ts: str | None = None) -> str:
        return str(self.box.slack.post_as(SELF_DM, OPERATOR, text, thread_ts=thread_ts)["ts"])

    def dms(self) -> list[dict[str, Any]]:
        """The harness's posts in the operator's self-DM (their metadata says so)."""
        return [
            m
            for m in self.box.slack.messages(SELF_DM, metadata=True)
            if (m.get("metadata") or {}).get("event_type")
        ]

    def answer_to(self, ts: str) -> str:
        """The harness's replies in the thread of the operator's message ``ts``."""
        return "\n".join(m["text"] for m in self.dms() if m.get("thread_ts") == ts)

    def case_thread(self) -> str:
        from harness_cli.state import files

        with _environ(self.cron_env):
            threads = files.oncall_thread_map().read().for_case(CASE)
        found = [t.thread_ts for t in threads if t.role == "case_thread"]
        assert found, "no case thread in the self-DM"
        return found[0]

    # -- the world ---------------------------------------------------------------------------
    @property
    def case_file(self) -> Path:
        """The record the harness reads (``control/``; the case folder has a mirror)."""
        return Path(self.cron_env["HARNESS_WORKSPACE"]) / "control" / CASE / "case.json"

    def case(self) -> dict[str, Any]:
        return dict(json.loads(self.case_file.read_text(encoding="utf-8")))

    def status(self) -> str:
        try:
            return str(self.case().get("status", ""))
        except (OSError, ValueError):
            return "(unreadable)"

    def mr(self) -> dict[str, Any]:
        mrs = [
            m
            for m in self.box.gitlab.snapshot()["merge_requests"]
            if m["project"] == SAMPLE_PROJECT_PATH
        ]
        assert mrs, "no MR was opened"
        return dict(mrs[-1])

    def pipelines(self) -> list[str]:
        self.box.gitlab.wait_for_pipelines(timeout=120)
        return [p["status"] for p in self.box.gitlab.snapshot()["pipelines"]]

    def why(self) -> str:
        """What to show when an assertion fails: the case, the DMs, the last runs."""
        dms = "\n".join(f"  - {m['text'][:300]!r}" for m in self.dms())
        defects = "".join(f"\n  {d}" for d in self.defects)
        return (
            f"case: {self.status()}\ndefects so far:{defects or ' none'}\nDMs:\n{dms}\n"
            "last runs:\n" + "\n".join(self.log[-4:])
        )


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, old in saved.items():
            if old is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = old


def _env_file(path: Path) -> dict[str, str]:
    """KEY=value lines, as harness-cron's ``set -a; . file`` and systemd's EnvironmentFile=."""
    found = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            found[key.strip()] = value.strip().strip('"')
    return found


def _remote_case_files(bare: Path) -> list[tuple[str, str]]:
    """Every version of the case's case.json ever pushed to the workspace remote."""
    found = []
    for rel in (f"control/{CASE}/case.json", f"case-workspaces/{CASE}/case.json"):
        shas = subprocess.run(
            ["git", "-C", str(bare), "log", "--all", "--format=%H", "--", rel],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        found += [
            (f"{sha[:12]}:{rel}", subprocess.run(
                ["git", "-C", str(bare), "show", f"{sha}:{rel}"],
                capture_output=True, text=True, check=False,
            ).stdout)
            for sha in shas
        ]  # fmt: skip
    return found


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pytest.fixture
def week(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Week]:
    # The operator's machine: a HOME and an XDG config folder of its own, no token in the
    # shell (they live in the env file), started from a folder with no agent-config/ in it.
    home = tmp_path / "userhome"
    (home / ".config").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.chdir(home)
    harness_home = tmp_path / "harness"
    monkeypatch.setenv("HARNESS_HOME", str(harness_home))
    monkeypatch.setenv("HARNESS_CONFIG", str(harness_home / "agent-config"))
    monkeypatch.setenv("HARNESS_WORKSPACE", str(harness_home / "workspace"))
    monkeypatch.setenv("HARNESS_WORKTREES", str(tmp_path / "worktrees"))
    monkeypatch.delenv("HARNESS_DISPATCH", raising=False)
    with Sandbox(tmp_path / "sb") as box:
        yield Week(tmp_path, box)


def test_first_week_from_a_green_doctor_to_a_merged_mr_without_a_shell(week: Week) -> None:
    box, root = week.box, week.root

    # == day 0: the setup, in a shell =========================================================
    bare = root / "workspace.git"
    subprocess.run(["git", "init", "--bare", "-q", str(bare)], check=True)
    code, out = week.shell(
        "init", "--remote", str(bare), "--slack-user", OPERATOR, "--self-dm", SELF_DM,
        "--project", "pricing", "--channel", SUPPORT, "--repo", SAMPLE_PROJECT_PATH,
        "--jira-prefix", "AAA",
    )  # fmt: skip
    assert code == 0, out
    env_file = Path(os.environ["HARNESS_HOME"]) / "env"
    assert env_file.is_file() and "SLACK_USER_TOKEN=" in env_file.read_text(), out
    # the operator fills in the env file init wrote: the tokens and where the services are,
    # the runtime (no claude CLI on this machine), and — for a test that cannot wait minutes —
    # the dispatch in the scheduled run's own process
    values = {**box.env(), "HARNESS_RUNTIME": "anthropic", "HARNESS_DISPATCH": "inline"}
    env_file.write_text("".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    env_file.chmod(0o600)
    config = Path(os.environ["HARNESS_CONFIG"]) / "harness.yaml"
    # a model outage is waited out within 1 s of retries per call, and the waiting case is
    # tried again by every poll-slack (item 6's settings; the defaults are minutes)
    config.write_text(
        config.read_text(encoding="utf-8")
        + "\nmodel_outage:\n  retry_seconds: 1\n  first_backoff_seconds: 0.2\n"
        "  max_backoff_seconds: 0.5\n  resume_every_seconds: 0\n",
        encoding="utf-8",
    )

    # the schedule: the crontab block as init prints it (this machine's crontab untouched) …
    code, out = week.shell("init", "--install-cron")
    assert code == 0, out  # (a harness without item 6 refuses the model_outage: key here)
    block = schedule.block_of(out)
    assert block, out
    week.cron_env = {
        **schedule.assignments(block),
        **_env_file(env_file),
    }
    for entry in schedule.entries(block):
        assert entry.argv[0].endswith("harness-cron"), entry
        week.jobs[entry.argv[1]] = entry.argv[1:]
    assert {"poll-slack", "mr-monitor", "consolidate", "finalize"} <= set(week.jobs), block
    assert week.jobs["finalize"] == ["finalize", "--due"]
    # … and the systemd units, written under XDG_CONFIG_HOME: they must run every periodic
    # subcommand the crontab runs (item 7: on main only poll-slack has a timer)
    code, out = week.shell("init", "--install-systemd", "--yes")
    assert code == 0, out
    units = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"
    by_timer = set()  # what each timer starts: the ExecStart of the service of its name
    for timer in units.glob("*.timer"):
        service = timer.with_suffix(".service")
        text = service.read_text(encoding="utf-8") if service.is_file() else ""
        found = re.search(r'^ExecStart=.*?harness(?:-cron)?"?\s+(\S+)', text, re.M)
        if found:
            by_timer.add(found.group(1))
    week.expect(
        set(week.jobs) <= by_timer,
        "7",
        f"the systemd timers run {sorted(by_timer)}, the crontab {sorted(week.jobs)}",
    )

    # doctor: green, reading the tokens from the env file alone (the shell has none)
    assert "SLACK_USER_TOKEN" not in os.environ
    code, out = week.shell("doctor")
    assert code == 0, out
    assert not re.search(r"^fail\b", out, re.M), out
    # units on disk that systemd was never told to start run nothing: doctor says so, with the
    # command that enables them (item 7; there is no user systemd to enable them in this test)
    row = re.search(r"^(ok|warn)\s+schedule: (.*?)(?=^\S)", out, re.M | re.S)
    week.expect(
        row and (row.group(1) == "ok" or "systemctl --user enable" in " ".join(row[2].split())),
        "7",
        "doctor does not say that the timers are not enabled, nor how to enable them: "
        + (repr(row.group(0)) if row else "no schedule row"),
    )

    # the installed crontab line runs as cron would run it: harness-cron, a bare environment
    wrapper = next(e for e in schedule.entries(block) if e.argv[1] == "poll-slack").argv
    bare_env = {"HOME": os.environ["HOME"], "PATH": "/usr/bin:/bin",
                **schedule.assignments(block)}  # fmt: skip
    if "PYTHONPATH" in os.environ:  # a test run against another checkout's code
        bare_env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    proc = subprocess.run(wrapper, env=bare_env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    cron_log = Path(os.environ["HARNESS_HOME"]) / "logs" / "cron" / "poll-slack.log"
    assert "exit 0" in cron_log.read_text(), cron_log.read_text()

    # == from here on: the schedule and Slack only ============================================
    # -- a pause from the self-DM; a ticket arrives while it lasts ---------------------------
    pause = week.say("admin: oncall pause")
    week.tick("poll-slack")
    assert "paused" in week.answer_to(pause), week.why()

    box.slack.post_as(SUPPORT, CUSTOMER, f"{SAMPLE_TICKET} ({CASE})")
    week.tick("poll-slack")
    assert week.status() == "new", week.why()  # opened, its investigation held
    # whatever the operator hears of the new ticket while paused says that it is held
    for text in (m["text"] for m in week.dms() if CASE in m["text"]):
        week.expect(
            re.search(r"\bheld\b|paused", text, re.I),
            "15",
            f"a DM of the new ticket during the pause does not say it is held: {text!r}",
        )

    # #support answers 500 for this cycle: the operator's own channel is read all the same
    resume = week.say("admin: oncall resume")
    box.slack.add_fault(
        Fault("status", match="conversations.history", status=500, where={"channel": SUPPORT},
              times=-1)
    )  # fmt: skip
    week.tick("poll-slack")
    with box.slack.lock:
        box.slack.faults.clear()
    week.expect(
        "resumed" in week.answer_to(resume), "11", "a 500 on #support left the resume unread"
    )
    if "resumed" not in week.answer_to(resume):
        week.tick("poll-slack")
    assert "resumed" in week.answer_to(resume), week.why()
    # the held investigation ran when the pause ended (or on the next cycle)
    if week.status() in ("new", "investigating"):
        week.tick("poll-slack")
    assert week.status() == "awaiting_approval", week.why()

    # -- the approval, in the case thread of the self-DM -------------------------------------
    thread = week.case_thread()
    draft = "\n".join(m["text"] for m in week.dms() if m.get("thread_ts") == thread)
    week.expect(re.search(r"\bgo\b", draft), "12", f"the draft names no approval word: {draft!r}")
    week.say("go", thread_ts=thread)
    week.tick("poll-slack")
    if week.status() == "approved":  # the dev-agent run is the next cycle's
        week.tick("poll-slack")
    # the dev agent's plan comes first; the operator lets it implement as its DM says
    if week.status() != "mr_open":
        plan = [m["text"] for m in week.dms() if "admin: task" in m["text"]]
        assert plan, "after the approval, no MR and no word on how to go on\n" + week.why()
        command = re.search(r"`(admin: task [^`]+)`", plan[-1])
        assert command, plan[-1]
        answer = week.say(command.group(1))
        week.tick("poll-slack")
        assert week.status() == "mr_open", week.answer_to(answer) + "\n" + week.why()
    mr = week.mr()
    assert mr["source_branch"] == f"harness/{CASE}"

    # -- red CI, met by a model outage --------------------------------------------------------
    assert week.pipelines()[-1] == "failed", week.pipelines()
    box.anthropic.add_fault(
        Fault("status", match="/v1/messages", status=529, body=OVERLOADED, times=-1)
    )
    dms_before = len(week.dms())
    week.tick("mr-monitor")  # fix_ci meets the outage
    week.tick("poll-slack")  # still down: the waiting case is tried again, and waits again
    assert week.status() != "failed", "item 6: the outage failed the case\n" + week.why()
    new_dms = week.dms()[dms_before:]
    told = [m["text"] for m in new_dms]
    about = re.compile(r"model API|overloaded", re.I)
    # one DM for the outage; the case's own status message (in its thread) may say that it
    # waits, as one message edited in place by every try, never one more message per try
    outage = [m for m in new_dms if about.search(m["text"]) and not m.get("thread_ts")]
    per_case = [m for m in new_dms if about.search(m["text"]) and m.get("thread_ts")]
    week.expect(len(outage) == 1, "6", f"{len(outage)} DMs for one outage: {told}")
    week.expect(
        len(per_case) <= 1, "6", f"{len(per_case)} status messages of one waiting case: {told}"
    )
    for text in told:
        week.expect(
            "overloaded_error" not in text and "{'type'" not in text,
            "6",
            f"a raw SDK error reached the operator: {text!r}",
        )
    with box.anthropic.lock:
        box.anthropic.faults.clear()
    week.tick("poll-slack")  # the API is back: the waiting fix_ci runs again
    # said once at most: the outage DM, edited in place; no new DM about the model API
    seen = {m["ts"] for m in new_dms}
    later = [m["text"] for m in week.dms()[dms_before:] if m["ts"] not in seen]
    week.expect(
        not any(about.search(t) for t in later), "6", f"the end of the outage, told anew: {later}"
    )
    if outage:
        [edited] = [m["text"] for m in week.dms() if m["ts"] == outage[0]["ts"]]
        week.expect("back" in edited, "6", f"the outage DM does not say it is over: {edited!r}")
    if not week.expect(len(week.pipelines()) > 1, "6", "nothing ran fix_ci again after the outage"):
        # what only a shell could do (the test fails on item 6; the rest of the week still runs)
        with _environ(week.cron_env):
            week.shell("dev-agent", CASE, "--mode", "fix_ci")
    # the fix edits the test the checks run: the MR stays a draft until the operator says so
    accept = [m["text"] for m in week.dms() if "admin: accept-checks" in m["text"]]
    if accept:
        command = re.search(r"`(admin: accept-checks [^`]+)`", accept[-1])
        assert command, accept[-1]
        answer = week.say(command.group(1))
        week.tick("poll-slack")
        week.expect(week.answer_to(answer), "2", "admin: accept-checks got no answer")
    assert week.pipelines()[-1] == "success", week.why()
    assert week.status() == "mr_open", week.why()

    # -- a case.json that goes corrupt --------------------------------------------------------
    good = week.case_file.read_text(encoding="utf-8")
    week.case_file.write_text(good[: len(good) // 2], encoding="utf-8")  # a torn write
    # the operator asks in the case thread meanwhile: the question must not vanish (item 4)
    question = week.say("Is the README rule really the intended one?", thread_ts=thread)
    week.tick("poll-slack")
    week.tick("mr-monitor")
    week.tick("poll-slack")
    for sha, text in _remote_case_files(bare):
        week.expect(_parses(text), "3", f"a corrupt case.json was pushed ({sha})")
    broken = [m["text"] for m in week.dms() if "case.json" in m["text"]]
    week.expect(broken, "4", "the operator was not told that the case file is unreadable")
    fix = re.search(r"`(admin: repair [^`]+)`", broken[-1]) if broken else None
    assert fix, f"item 3: no DM names a fix for case.json that works from Slack: {broken}"
    asked = week.say(fix.group(1))
    week.tick("poll-slack")
    assert _parses(week.case_file.read_text(encoding="utf-8")), week.answer_to(asked)
    week.expect(
        "restored from commit" in week.answer_to(asked),
        "3",
        f"the repair does not say what it restored: {week.answer_to(asked)!r}",
    )
    assert week.status() == "mr_open", week.why()
    week.tick("poll-slack")
    answered = [
        m for m in week.dms()
        if m.get("thread_ts") == thread and float(m["ts"]) > float(question)
    ]  # fmt: skip
    week.expect(answered, "4", "the question asked while case.json was unreadable is unanswered")

    # -- a reviewer note, answered ------------------------------------------------------------
    box.gitlab.control(
        "add_note",
        {
            "project": SAMPLE_PROJECT_PATH,
            "iid": mr["iid"],
            "author": "alice",
            "discussion": True,
            "body": "Could the docstring say that the threshold itself counts?",
        },
    )
    week.tick("mr-monitor")
    week.pipelines()
    bodies = [n["body"] for n in week.mr()["notes"] if not n.get("system")]
    assert any(b.startswith("Done, updated") for b in bodies), bodies

    # -- merged by a human; the case closes; finalize when it is due -------------------------
    box.gitlab.control(
        "merge", {"project": SAMPLE_PROJECT_PATH, "iid": mr["iid"], "author": "alice",
                  "force": True},
    )  # fmt: skip
    week.tick("mr-monitor")
    assert week.status() == "closed", week.why()
    later = "2099-01-01T00:00:00+00:00"  # long past finalize's idle hours
    code, out = week.tick("consolidate", now=later)
    assert code == 0, out
    code, out = week.tick("finalize", now=later)
    assert code == 0, out
    # the case left no gap report behind (the investigation and the work met no gap), so
    # there is nothing to roll into an MR against the harness: finalize says so
    assert CASE in out or "no case with gap reports is due" in out, out
    assert week.status() == "closed", week.why()

    # == every DM named a way on that works from Slack =======================================
    # (a DM is read with its thread: the case thread's head is the ticket, its draft the way on)
    dms = week.dms()
    for message in dms:
        if message.get("thread_ts") and message["thread_ts"] != message["ts"]:
            continue  # a reply: read with its thread's head
        thread_text = "\n".join(
            m["text"] for m in dms if m.get("thread_ts") == message["ts"] and m is not message
        )
        week.expect(
            SLACK_ACTION.search(message["text"] + "\n" + thread_text),
            "2",
            f"a DM that names no way on from Slack: {message['text']!r}",
        )
    for message in dms:
        text = message["text"]
        week.expect(text.count("Cost:") <= 1, "13", f"a DM with the cost line twice: {text!r}")
        week.expect(
            not SHELL_COMMAND.search(text) or "admin:" in text,
            "2",
            f"a DM whose way on is a shell command: {text!r}",
        )
    # every `admin: …` command a DM names is one the harness takes: it parses, and the case
    # it names exists
    for message in dms:
        for command in re.findall(r"`(admin:[^`]+)`", message["text"]):
            try:
                parsed = parse_admin(command)
            except AdminUsage as exc:
                week.expect(False, "2", f"a DM names a command that does not parse: {exc}")
                continue
            cases = [a for a in parsed.args if re.fullmatch(r"[A-Z]+-\d+", a)]
            week.expect(all(c == CASE for c in cases), "2", f"a DM names another case: {command!r}")
    assert not week.defects, "\n".join(week.defects)
