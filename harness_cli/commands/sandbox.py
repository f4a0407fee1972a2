"""harness sandbox — start the local Slack, GitLab, GitHub, Anthropic, PagerDuty and Jira
emulators, seeded, and the scenario's production world (MCP servers: logs, metrics, tracker,
docs, db), and run until Ctrl-C, SIGTERM or ``--for SECONDS``. Prints and writes an env file to
``source`` and ``DIR/mcp.json`` for the world's servers; on the way out (any of the three)
writes every emulator's state to ``DIR/sandbox-state.json``. ``--help`` documents the control
API that drives them."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import typer

from harness_cli.commands import new_app
from harness_cli.output import OPTIONS
from harness_cli.sandbox.runner import MCP_CONFIG, Sandbox, Scenario
from harness_cli.sandbox.runner import scenario as find_scenario

app = new_app("Start the local emulators and the sandbox's production world (MCP servers).")

CONTROL_API = {
    "every emulator": "fault {kind: status|drop|delay|hang|lost, status, match, method, "
    "seconds, times, body, headers, where}, clear_faults, state",
    "Slack": "post_as {channel, user, text, thread_ts?}, add_user, add_channel, add_token, "
    "revoke_token {token}, delete_message, set_lag {channel, polls, seconds}, drop_sockets, "
    "messages {channel}, calls, acks",
    "GitLab": "create_project {path, files, ci_command}, set_pipeline_result {project, status}, "
    "add_note {project, iid, author, body, discussion?}, merge, close, reopen, commit, "
    "add_token {token, user}, revoke_token {token}, set_access {project, user, level}, "
    "rate_limit, wait_for_pipelines",
    "GitHub": "create_repo {repo, files|folder, ci_command?, protection?}, set_ci_result {repo, "
    "conclusion, run_id?}, add_review {repo, number, author, event, body, comments?}, "
    "add_review_comment {repo, number, body, path?, line?, reply_to?}, add_issue_comment, "
    "resolve_thread {comment_id}, merge, close, reopen, commit {repo, branch, files}, "
    "force_push {repo, branch?}, create_conflict {repo, number}, add_check_run, add_status, "
    "add_token {token, user, scopes?|permissions?}, expire_token, set_role, set_protection, "
    "set_secrets, rate_limit {remaining, reset_in, status}, mergeable_lag {reads}, "
    "wait_for_runs; its fault {kind} also takes primary_rate_limit|secondary_rate_limit",
    "Anthropic": "load_script {name|path|script, variables?}, usage, unmatched, calls, reset, "
    "clear_cache",
    "PagerDuty": "add_incident, resolve {id}, set_status {id, status}, webhook {id}, reset",
    "Jira": "seed {issues, users, projects}, add_issue, add_comment {key, body, properties}, "
    "add_link, add_user, set_status {key, status}, add_token {token, user}, "
    "revoke_token {token}, set_deployment {deployment}, set_lag {seconds}, reset "
    "(fault also takes method; kinds lost and hang too)",
    "MCP world (POST <control URL>/_control/<action>, or any server's port)": "fault {kind: "
    "expired|denied|slow|hang|malformed|large|die, server, tool, transport, times, seconds, "
    "bytes}, clear_faults {server}, calls {server}, state, die {server}, revive {server}, reset; "
    "stdio servers read the same faults from DIR/world/control/faults.json",
}
"""Each emulator's ``POST <its URL>/_control/<action>`` (JSON body), as ``--help`` shows them;
a test holds every name here to what the emulator accepts."""

_EPILOG = (
    "Control API: POST <emulator URL>/_control/<action> with a JSON body, e.g. "
    "curl -s -X POST $SLACK_API_URL/../_control/post_as -H 'Content-Type: application/json' "
    '-d \'{"channel": "C0SUPPORT", "user": "U0CUSTOMER", "text": "hi"}\'.\n\n'
    + "\n\n".join(f"{who}: {actions}." for who, actions in CONTROL_API.items())
    + "\n\nThe world's servers are listed in DIR/mcp.json (the mcpServers format of "
    "agent-config/mcp.json: docs and db over stdio, the others over streamable HTTP with a "
    "bearer token); docs/SANDBOX-WORLD.md describes its incident, tools and faults."
    "\n\nCtrl-C, SIGTERM and --for all stop it the same way: the final state is written to "
    "DIR/sandbox-state.json."
)


@app.command(epilog=_EPILOG)
def sandbox(
    scenario: str = typer.Option("default", "--scenario", help="What to seed."),
    directory: Path | None = typer.Option(
        None, "--dir", help="Where the emulators keep their data (default: a temp dir)."
    ),
    env_file: Path | None = typer.Option(
        None, "--env-file", help="Write the env file here (default: DIR/sandbox.env)."
    ),
    run_for: float | None = typer.Option(
        None, "--for", help="Stop after this many seconds instead of waiting for Ctrl-C."
    ),
    github: bool = typer.Option(
        True, "--github/--no-github", help="Also start the GitHub emulator (GITHUB_URL)."
    ),
    world: bool = typer.Option(
        True, "--world/--no-world", help="Also start the production world's MCP servers."
    ),
) -> None:
    """Start the emulators and print the environment that points harness at them."""
    import signal

    chosen = find_scenario(scenario)
    root = directory or Path(tempfile.mkdtemp(prefix="harness-sandbox-"))
    with Sandbox(root, chosen, github_enabled=github, with_world=world) as box:

        def stop(signum: int, _frame: object) -> None:
            raise KeyboardInterrupt  # the same way out as Ctrl-C: state written, exit 0

        # SIGINT too, explicitly: a process started with SIGINT ignored (a background job of a
        # non-interactive shell, some test runners' workers) inherits that, and Python then
        # never turns Ctrl-C into KeyboardInterrupt: the sandbox would run on. Installed before the
        # environment is printed: a caller may send it as soon as it reads that line.
        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            _announce(box, chosen, root, env_file)
            deadline = None if run_for is None else time.monotonic() + run_for
            while deadline is None or time.monotonic() < deadline:
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            box.write_state(root / "sandbox-state.json")


def _announce(box: Sandbox, chosen: Scenario, root: Path, env_file: Path | None) -> None:
    """The environment that points harness at the emulators: one JSON line with ``--json``."""
    env_path = box.write_env_file(env_file or root / "sandbox.env")
    mcp = {}
    if box.world is not None:
        box.world.wait_ready()  # an operator's first call should find the servers up
        mcp = {"mcp_config": str(root / MCP_CONFIG), "world_control": box.world.control_url}
    if OPTIONS.json:
        sys.stdout.write(
            json.dumps({"env_file": str(env_path), "dir": str(root), "env": box.env(), **mcp})
            + "\n"
        )
    else:
        github_line = f"  GitHub    {box.github.api_url}\n" if box.github else ""
        world_lines = (
            f"  MCP world {box.world.control_url}/_control/ (servers: {mcp['mcp_config']})\n"
            if box.world is not None
            else ""
        )
        sys.stdout.write(
            f"sandbox '{chosen.name}': {chosen.description}\n"
            f"  Slack     {box.slack.url}/api/\n"
            f"  GitLab    {box.gitlab.url}\n"
            f"{github_line}"
            f"  Anthropic {box.anthropic.url}\n"
            f"  PagerDuty {box.pagerduty.url}\n"
            f"  Jira      {box.jira.url}\n"
            f"{world_lines}"
            f"env file: source {env_path}\n"
            "Ctrl-C or SIGTERM stops it; the final state goes to sandbox-state.json beside "
            "it. `harness sandbox --help` lists the control API.\n"
        )
    sys.stdout.flush()
