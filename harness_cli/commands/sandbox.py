"""harness sandbox — start the local Slack, GitLab and Anthropic emulators, seeded, and run
until Ctrl-C (or ``--for SECONDS``). Prints and writes an env file to ``source``."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import typer

from harness_cli.commands import new_app
from harness_cli.output import OPTIONS

app = new_app("Start the local Slack, GitLab and Anthropic emulators.")


@app.command()
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
) -> None:
    """Start the emulators and print the environment that points harness at them."""
    from harness_cli.sandbox.runner import Sandbox
    from harness_cli.sandbox.runner import scenario as find_scenario

    chosen = find_scenario(scenario)
    root = directory or Path(tempfile.mkdtemp(prefix="harness-sandbox-"))
    with Sandbox(root, chosen) as box:
        env_path = box.write_env_file(env_file or root / "sandbox.env")
        if OPTIONS.json:
            sys.stdout.write(
                json.dumps({"env_file": str(env_path), "dir": str(root), "env": box.env()}) + "\n"
            )
        else:
            sys.stdout.write(
                f"sandbox '{chosen.name}': {chosen.description}\n"
                f"  Slack     {box.slack.url}/api/\n"
                f"  GitLab    {box.gitlab.url}\n"
                f"  Anthropic {box.anthropic.url}\n"
                f"  PagerDuty {box.pagerduty.url}\n"
                f"env file: source {env_path}\n"
                "Ctrl-C stops it; the final state goes to sandbox-state.json beside it.\n"
            )
        sys.stdout.flush()
        try:
            deadline = None if run_for is None else time.monotonic() + run_for
            while deadline is None or time.monotonic() < deadline:
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        finally:
            box.write_state(root / "sandbox-state.json")
