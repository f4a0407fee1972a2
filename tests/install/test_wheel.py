"""The install story end to end: build the wheel, install it in a fresh virtualenv, and from an
empty directory (no checkout anywhere in sight) run init, doctor against the sandbox (healthy,
then once per broken id or token), a ticket to an investigated case, and the demo."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness_cli.sandbox.runner import SANDBOX_TOKENS, Sandbox
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH, SAMPLE_TICKET
from tests.install.wheel_env import Installed, build_and_install, clean_env

pytestmark = pytest.mark.slow


@pytest.fixture
def installed(tmp_path: Path) -> Installed:
    return build_and_install(tmp_path / "pip", borrow_dependencies=True)


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Sandbox]:
    with Sandbox(tmp_path / "sandbox") as sandbox:
        yield sandbox


def test_the_installed_wheel_runs_from_an_empty_directory(
    installed: Installed, box: Sandbox, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    home = tmp_path / "home"
    login = tmp_path / "login"
    login.mkdir()
    # an operator's git identity: without one doctor fails (no commit could be made, #34)
    (login / ".gitconfig").write_text("[user]\n\tname = Ops Person\n\temail = ops@team.example\n")
    env = clean_env(HARNESS_HOME=str(home), HOME=str(login))
    urls = {k: v for k, v in box.env().items() if k not in SANDBOX_TOKENS}

    def harness(*args: str, **extra: str) -> tuple[int, str, str]:
        proc = subprocess.run(
            [str(installed.harness), *args],
            cwd=empty,
            env={**env, **urls, **extra},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        return proc.returncode, proc.stdout, proc.stderr

    code, _, err = harness(
        "init",
        *("--slack-user", "U0OPERATOR", "--self-dm", "D0SELF", "--channel", "C0SUPPORT"),
        *("--jira-prefix", "AAA", "--repo", SAMPLE_PROJECT_PATH),
    )
    assert code == 0, err
    env_file = home / "env"
    filled = env_file.read_text() + "".join(f"{k}={v}\n" for k, v in SANDBOX_TOKENS.items())
    env_file.write_text(filled)

    def doctor() -> tuple[int, dict[str, dict[str, str]]]:
        code, out, err = harness("doctor", "--json")
        assert out, err
        return code, {c["name"]: c for c in json.loads(out)["data"]}

    code, checks = doctor()
    assert code == 0, {n: c for n, c in checks.items() if c["status"] != "ok"}
    assert "packaged" in checks["templates"]["detail"]

    config = home / "agent-config"

    def edit(name: str, old: str, new: str) -> Callable[[], None]:
        path = config / name
        before = path.read_text()
        path.write_text(before.replace(old, new))
        return lambda: path.write_text(before)

    def drop(token: str) -> Callable[[], None]:
        env_file.write_text(filled.replace(f"{token}={SANDBOX_TOKENS[token]}\n", ""))
        return lambda: env_file.write_text(filled)

    def slack_user(user: str) -> Callable[[], None]:
        box.slack.add_token(SANDBOX_TOKENS["SLACK_USER_TOKEN"], user)
        return lambda: box.slack.add_token(SANDBOX_TOKENS["SLACK_USER_TOKEN"], "U0OPERATOR")

    def access(level: int) -> Callable[[], None]:
        def set_level(value: int) -> None:
            body = {"project": SAMPLE_PROJECT_PATH, "user": "harness-bot", "level": value}
            box.gitlab.control("set_access", body)

        set_level(level)
        return lambda: set_level(30)

    # one of each kind (an id, a channel, a permission, a token); tests/ops/test_doctor.py runs
    # every broken id and token in-process
    broken: list[tuple[str, Callable[[], Callable[[], None]]]] = [
        ("Slack user", lambda: slack_user("U0CUSTOMER")),
        ("channel C0NOPE", lambda: edit("projects.yaml", "C0SUPPORT", "C0NOPE")),
        (f"repo {SAMPLE_PROJECT_PATH}", lambda: access(20)),
        ("GITLAB_TOKEN", lambda: drop("GITLAB_TOKEN")),
    ]
    for name, breaking in broken:
        restore = breaking()
        try:
            code, checks = doctor()
        finally:
            restore()
        failed = sorted(n for n, c in checks.items() if c["status"] == "fail")
        assert (code, failed) == (1, [name]), name
        assert checks[name]["fix"]

    # a ticket to an investigated case, with the tokens only in the env file (sourced here as
    # harness-cron would) and no claude CLI: the anthropic runtime, said once
    tokens = dict(SANDBOX_TOKENS)
    box.slack.post_as("C0SUPPORT", "U0CUSTOMER", f"{SAMPLE_TICKET} (AAA-101)")
    code, _, err = harness("poll-slack", HARNESS_DISPATCH="inline", **tokens)
    assert code == 0, err
    assert sum("claude CLI not found" in line for line in err.splitlines()) == 1, err
    case = json.loads((home / "workspace/case-workspaces/AAA-101/case.json").read_text())
    assert case["status"] == "awaiting_approval"
    assert (home / "workspace/case-workspaces/AAA-101/ANALYSIS.md").exists()

    # and the demo, offline, on its own sandbox
    code, out, err = harness("demo", "--json", HARNESS_HOME=str(tmp_path / "demo-home"))
    assert code == 0, err
    steps = json.loads(out)["data"]["steps"]
    assert all(s["status"] == "done" for s in steps), steps
    assert not any(empty.iterdir()), "nothing may be written into the current directory"
