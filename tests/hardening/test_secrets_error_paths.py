"""L4: no secret leaves through an error path. Distinctive fake credentials (in the environment
and, for one, only in ``$HARNESS_HOME/env``), a customer who pastes a token into a ticket, a
model that quotes a key in its report, and services whose error bodies echo the credentials;
then every byte on disk (git objects decompressed), every request the harness sent to an
emulator and everything it printed is searched for them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.gitlab_api import GitLabEmulator
from harness_cli.sandbox.httpbase import Fault
from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_PROJECT_PATH, seed_sample_project
from harness_cli.state import models
from tests.conftest import REPO
from tests.hardening.leaks import scan_requests, scan_text, scan_tree

CANARY = "LEAKCANARY"
TOKENS = {
    "SLACK_USER_TOKEN": "xoxp-7777777777-LEAKCANARY-slack-user",
    "GITLAB_TOKEN": "glpat-LEAKCANARYgitlab7777",
    "ANTHROPIC_API_KEY": "sk-ant-LEAKCANARY-anthropic-7777",
}
ENV_FILE_SECRET = "jira-LEAKCANARY-only-in-the-env-file"
"""``JIRA_API_TOKEN`` in ``$HARNESS_HOME/env`` (no pattern knows its shape)."""
CUSTOMER_TOKEN = "glpat-CUSTOMERLEAKCANARY00"
MODEL_LEAK = "sk-ant-api03-LEAKCANARYfromthemodel"
NEEDLES = [*TOKENS.values(), ENV_FILE_SECRET, CUSTOMER_TOKEN, MODEL_LEAK, CANARY]
SCRIPT = Path(__file__).with_name("data") / "leaky_investigator.yaml"


@pytest.fixture
def gitlab_emu(tmp_path: Path) -> Iterator[GitLabEmulator]:
    emu = GitLabEmulator(tmp_path / "gitlab-emulator", ci_timeout=30)
    emu.start()
    try:
        seed_sample_project(emu)
        yield emu
    finally:
        emu.stop()


@pytest.fixture
def model() -> Iterator[AnthropicEmulator]:
    emu = AnthropicEmulator()
    emu.start()
    try:
        yield emu
    finally:
        emu.stop()


def test_no_secret_leaves_through_tickets_model_output_or_service_errors(
    cli,  # type: ignore[no-untyped-def]
    slack_emu,
    gitlab_emu: GitLabEmulator,
    model: AnthropicEmulator,
    harness_ready: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import shutil

    shutil.copytree(REPO / "sops", tmp_path / "sops")
    for name, value in TOKENS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GITLAB_URL", gitlab_emu.url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", model.url)
    monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    home = tmp_path / "harness-home"
    env_file = home / "env"
    env_file.write_text(f'JIRA_URL=https://jira.example.com\nJIRA_API_TOKEN="{ENV_FILE_SECRET}"\n')
    printed: list[str] = []

    def run(*args: str) -> int:
        code, out, err = cli(*args)
        printed.append(f"$ harness {' '.join(args)}\n{out}{err}")
        return code

    # 1. a customer pastes their own token and the Jira one into a ticket
    slack_emu.post_as(
        "C0SUPPORT",
        "U0CUSTOMER",
        f"AAA-31 the export fails with my token {CUSTOMER_TOKEN} (jira: {ENV_FILE_SECRET})",
    )
    assert run("poll-slack") == 0
    # 2. a model that quotes a key in its report and its draft for the customer
    model.load_script(SCRIPT, {"leak": MODEL_LEAK})
    assert run("investigate", "AAA-31") == 0
    # 3. Slack's error echoes the token it was given
    slack_emu.add_fault(
        Fault(
            kind="status",
            match="conversations.history",
            status=200,
            body={"ok": False, "error": f"invalid_auth for {TOKENS['SLACK_USER_TOKEN']}"},
            times=-1,
        )
    )
    assert run("poll-slack") != 0
    slack_emu.faults.clear()
    # 4. the model API's 401 echoes the key
    ticket = tmp_path / "ticket.txt"
    ticket.write_text(f"AAA-32 same again, token {CUSTOMER_TOKEN}\n")
    assert (
        run(
            "case",
            "new",
            "--project",
            "team-a",
            "--id",
            "AAA-32",
            "--title",
            "t",
            "--text",
            str(ticket),
        )
        == 0
    )
    model.add_fault(
        Fault(
            kind="status",
            match="/v1/messages",
            status=401,
            body={
                "type": "error",
                "error": {
                    "type": "authentication_error",
                    "message": f"invalid x-api-key {TOKENS['ANTHROPIC_API_KEY']}",
                },
            },
            times=-1,
        )
    )
    run("investigate", "AAA-32")
    model.faults.clear()
    # 5. GitLab's 500 echoes the private token, for mr-monitor and for --watch
    mrs = models.MonitoredMrs(
        mrs={
            f"{SAMPLE_PROJECT_PATH}!1": models.MonitoredMr(
                project=SAMPLE_PROJECT_PATH, iid=1, case_id="AAA-31", case_dir="/x"
            )
        },
        cursors={SAMPLE_PROJECT_PATH: "2026-01-01T00:00:00.000Z"},
        bot_username="harness-bot",
    )
    (home / "monitored-mrs.json").write_text(mrs.model_dump_json())
    gitlab_emu.add_fault(
        Fault(
            kind="status",
            match="/merge_requests",
            status=500,
            body={"message": f"upstream rejected PRIVATE-TOKEN {TOKENS['GITLAB_TOKEN']}"},
            times=-1,
        )
    )
    run("mr-monitor", "--json")
    run("mr-monitor", "--watch", f"{SAMPLE_PROJECT_PATH}!1", "--case", "AAA-32")

    # the harness did speak (so the scan below is not vacuous) ...
    dms = [m["text"] for m in slack_emu.messages("D0SELF")]
    assert any("AAA-31" in t for t in dms) and any("Draft response" in t for t in dms)
    case = tmp_path / "workspace" / "case-workspaces" / "AAA-31"
    assert "export fails" in json.loads((case / "message.json").read_text())["text"]
    assert model.recorded("/v1/messages")
    # ... and no secret left with it
    leaks = scan_tree(tmp_path, NEEDLES, allowed=[env_file, ticket])  # what we were given
    leaks += scan_requests({"slack": slack_emu, "gitlab": gitlab_emu, "model": model}, NEEDLES)
    leaks += scan_text("printed", "\n".join(printed), NEEDLES)
    assert not leaks, "\n".join(leaks)
