"""harness listen — the Socket Mode listener (the only long-running subcommand, optional:
poll-slack is the safety net and the two share the dedup file)."""

from __future__ import annotations

import signal
import threading

import typer

from harness_cli.commands import new_app
from harness_cli.commands.poll_slack import tally_result
from harness_cli.intake.listener import listen as serve
from harness_cli.output import emit
from harness_cli.state.locks import hold
from harness_cli.wiring import intake_context

app = new_app("Socket Mode listener (long-running, optional).")


@app.command()
def listen(
    run_for: float | None = typer.Option(None, "--for", help="Stop after SECONDS (tests)."),
) -> None:
    """Listen until SIGTERM or Ctrl-C; one instance per machine."""

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if run_for is not None:
        threading.Timer(run_for, stop.set).start()
    with hold("listen", timeout=0, what="listen"):
        ctx = intake_context()
        serve(ctx, stop=stop)
    emit(tally_result("listen", ctx.tally))
