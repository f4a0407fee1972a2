"""The claude hook scripts as real subprocesses: JSON event on stdin, the documented
``hookSpecificOutput.additionalContext`` on stdout, and never the blocking exit code 2."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from harness_cli.memory.resume.start import fetch_loop, session_start
from tests.memory_sessions.conftest import CWD, FAST, REPO, SESSION, Machine, injected

HOOKS = REPO / "cron" / "hooks"
OTHER = "5f0e2c4a-9b7d-4e1f-8a63-1c2d3e4f5a6b"


def run(
    machine: Machine, argv: list[str], event: dict[str, Any] | str | None, **extra: str
) -> subprocess.CompletedProcess[str]:
    stdin = event if isinstance(event, str) or event is None else json.dumps(event)
    return subprocess.run(
        argv,
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **machine.vars(), **extra},
        timeout=60,
        check=False,
    )


def prompt_event(machine: Machine, session: str = SESSION) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(machine.transcript(session)),
        "cwd": CWD,
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": "carry on",
        "prompt_id": "3960a9fe-e22b-4b16-88cb-bfc4e7a4edac",  # newer CLIs add keys: ignored
    }


def start_event(machine: Machine, session: str) -> dict[str, Any]:
    return {
        "session_id": session,
        "transcript_path": str(machine.transcript(session)),
        "cwd": CWD,
        "hook_event_name": "SessionStart",
        "source": "startup",
    }


def context_of(stdout: str, event: str) -> str:
    out = json.loads(stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == event
    text = out["hookSpecificOutput"]["additionalContext"]
    assert isinstance(text, str)
    return text


def test_user_prompt_submit_script_injects_the_other_machines_delta(
    laptop: Machine, vm: Machine
) -> None:
    laptop.say("L1 check the cron logs", "L2 the 02:00 run failed")
    laptop.sync()
    vm.say("V1 picking it up on the vm")
    proc = run(vm, [str(HOOKS / "user-prompt-submit.sh")], prompt_event(vm))
    assert proc.returncode == 0, proc.stderr
    text = context_of(proc.stdout, "UserPromptSubmit")
    assert text.startswith("Session sync: the other machine (laptop) added 2 messages")
    assert injected(text) == ["L1 check the cron logs", "L2 the 02:00 run failed"]

    # The laptop's next prompt gets the vm's line through the same script, and nothing twice.
    # (Clocks pinned past the 30 s throttle the in-process sync above started.)
    laptop.say("L3 thanks")
    script = [str(HOOKS / "user-prompt-submit.sh")]
    proc = run(laptop, script, prompt_event(laptop), HARNESS_NOW="2099-01-01T00:00:00Z")
    assert injected(context_of(proc.stdout, "UserPromptSubmit")) == ["V1 picking it up on the vm"]
    again = run(laptop, script, prompt_event(laptop), HARNESS_NOW="2099-01-01T00:01:00Z")
    assert again.returncode == 0 and again.stdout == ""


def test_session_start_script_returns_the_uuid_recorded_for_the_cwd_after_a_fetch(
    laptop: Machine, vm: Machine
) -> None:
    vm.say("V0", session=OTHER, cwd="/srv/elsewhere")
    vm.sync(session=OTHER, cwd="/srv/elsewhere")  # the vm's clone exists, with another session
    laptop.say("L1 the session to resume", "L2 noted")
    laptop.sync()

    stale = session_start(vm.hook(OTHER), vm.env, FAST, fetch=False)
    assert stale.session_id is None  # the vm's copy predates the laptop's push

    proc = run(vm, [str(HOOKS / "session-start.sh")], start_event(vm, OTHER))
    assert proc.returncode == 0, proc.stderr
    text = context_of(proc.stdout, "SessionStart")
    assert f"the session recorded for {CWD} is {SESSION}" in text
    assert "last active on laptop" in text and f"claude --resume {SESSION}" in text
    # Its transcript now sits where `claude --resume` looks on this machine …
    assert vm.transcript().read_bytes() == laptop.transcript().read_bytes()
    # … so the first prompt after the resume does not inject it again.
    vm.say("V1 resumed")
    proc = run(
        vm,
        [str(HOOKS / "user-prompt-submit.sh")],
        prompt_event(vm),
        HARNESS_NOW="2099-01-01T00:00:00Z",
    )
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout
    laptop.say("L3 back")
    assert injected(laptop.sync().context) == ["V1 resumed"]

    uuid_only = run(
        vm, ["harness", "session-sync", "start", "--cwd", CWD, "--uuid-only", "--no-fetch"], None
    )
    assert uuid_only.returncode == 0 and uuid_only.stdout == f"{SESSION}\n"


def test_session_start_in_the_session_itself_says_it_is_shared(laptop: Machine) -> None:
    laptop.say("L1")
    laptop.sync()
    proc = run(laptop, [str(HOOKS / "session-start.sh")], start_event(laptop, SESSION))
    text = context_of(proc.stdout, "SessionStart")
    assert f"this session ({SESSION}) is shared" in text and "this machine" in text


def test_a_directory_without_a_recorded_session_prints_nothing(laptop: Machine) -> None:
    laptop.say("L1")
    laptop.sync()
    event = {**start_event(laptop, OTHER), "cwd": "/srv/unrelated"}
    proc = run(laptop, [str(HOOKS / "session-start.sh")], event)
    assert proc.returncode == 0 and proc.stdout == ""


@pytest.mark.parametrize(
    "stdin", ["not json", '{"cwd": "/x"}', '{"session_id": "../x", "cwd": "/"}']
)
def test_a_bad_hook_event_is_a_non_blocking_error(laptop: Machine, stdin: str) -> None:
    for script in ("user-prompt-submit.sh", "session-start.sh"):
        proc = run(laptop, [str(HOOKS / script)], stdin)
        assert proc.returncode == 1, (script, proc.returncode)  # 2 would erase the prompt
        assert proc.stdout == ""
        assert proc.stderr.startswith("harness session-sync: ")


def test_without_a_remote_the_hooks_stay_silent(laptop: Machine) -> None:
    laptop.say("L1")
    proc = run(
        laptop,
        [str(HOOKS / "user-prompt-submit.sh")],
        prompt_event(laptop),
        HARNESS_SESSIONS_REMOTE="",
    )
    assert proc.returncode == 0 and proc.stdout == ""


def test_concurrent_hook_processes_on_one_machine(laptop: Machine, vm: Machine) -> None:
    """Three prompt hooks at once (pinned clocks 60 s apart so none is throttled): the flock
    serializes them, the index survives, the vm's lines are injected exactly once."""
    vm.say("V1", "V2", "V3")
    vm.sync()
    laptop.say("L1")
    procs = [
        subprocess.Popen(
            [str(HOOKS / "user-prompt-submit.sh")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **laptop.vars(), "HARNESS_NOW": f"2026-11-29T10:0{i}:00Z"},
        )
        for i in range(3)
    ]
    outs = [p.communicate(json.dumps(prompt_event(laptop)), timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    texts = [injected(context_of(out, "UserPromptSubmit")) for out, _ in outs if out]
    assert texts == [["V1", "V2", "V3"]]
    assert not (laptop.env.repo / ".git" / "index.lock").exists()
    assert injected(vm.sync().context) == ["L1"]


def test_fetch_loop_and_status_commands(laptop: Machine, vm: Machine) -> None:
    laptop.say("L1")
    laptop.sync()
    proc = run(vm, ["harness", "session-sync", "fetch", "--loop", "0.01", "--cycles", "2"], None)
    assert proc.returncode == 0, proc.stderr
    proc = run(vm, ["harness", "--json", "session-sync", "status"], None)
    data = json.loads(proc.stdout)["data"]
    assert data["machine"] == "vm"
    [row] = data["sessions"]
    assert (row["session_id"], row["cwd"], row["machine"], row["lines"]) == (
        SESSION,
        CWD,
        "laptop",
        1,
    )

    naps: list[float] = []
    laptop.say("L2")
    laptop.sync()
    assert fetch_loop(vm.env, FAST, interval=5, cycles=3, sleep=naps.append) == 1
    assert naps == [5, 5]


CLAUDE = REPO / ".tools" / "claude" / "node_modules" / ".bin" / "claude"


def claude_env(machine: Machine, url: str) -> dict[str, str]:
    return {
        **os.environ,
        **machine.vars(),
        "IS_SANDBOX": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-test",
    }


def run_claude(env: dict[str, str], work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [str(CLAUDE), *args, "--max-turns", "1", "--permission-mode", "bypassPermissions"]
    return subprocess.run(
        argv,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


@pytest.mark.claude_cli
@pytest.mark.slow
@pytest.mark.skipif(not CLAUDE.exists(), reason="claude CLI not found: run `make claude-cli`")
def test_the_real_claude_cli_resumes_the_session_and_gets_the_delta(
    laptop: Machine, vm: Machine, tmp_path: Path
) -> None:
    """The whole cross-machine resume with the real CLI against the emulator, the hooks
    registered from the shipped settings snippet: the laptop's real transcript is pushed, the
    vm looks the UUID up and restores it, resumes it, and its next prompt gets the delta."""
    from harness_cli.sandbox.anthropic_api import AnthropicEmulator

    work = tmp_path / "work"
    work.mkdir()
    cwd = str(work)
    settings = json.loads((HOOKS / "claude-settings.json").read_text())
    for event in settings["hooks"].values():
        for group in event:
            for hook in group["hooks"]:
                hook["command"] = hook["command"].replace('"$HOME"/harness', str(REPO))
    (tmp_path / "settings.json").write_text(json.dumps(settings))
    emu = AnthropicEmulator("smoke")
    emu.start()
    try:
        made = run_claude(
            claude_env(laptop, emu.url),
            work,
            "--session-id",
            SESSION,
            "-p",
            "hello from the laptop",
        )
        assert laptop.transcript(cwd=cwd).exists(), made.stderr[-2000:]
        laptop.sync(cwd=cwd)
        found = run(vm, ["harness", "session-sync", "start", "--cwd", cwd, "--uuid-only"], None)
        assert found.stdout == f"{SESSION}\n", found.stderr
        assert vm.transcript(cwd=cwd).read_bytes() == laptop.transcript(cwd=cwd).read_bytes()
        laptop.say("L3 pinned the clock in the test", cwd=cwd)
        laptop.sync(cwd=cwd)

        before = len(emu.recorded("/v1/messages"))
        proc = run_claude(
            claude_env(vm, emu.url),
            work,
            "--resume",
            SESSION,
            "-p",
            "and now on the vm",
            "--settings",
            str(tmp_path / "settings.json"),
        )
        bodies = [json.dumps(r.json_body()) for r in emu.recorded("/v1/messages")[before:]]
    finally:
        emu.stop()
    assert bodies, proc.stdout[-1000:] + proc.stderr[-2000:]
    first = bodies[0]
    assert "hello from the laptop" in first  # the resumed history
    assert f"this session ({SESSION}) is shared" in first  # SessionStart
    assert "the other machine (laptop) added 1 message" in first  # UserPromptSubmit
    assert "L3 pinned the clock in the test" in first
