"""``python -m harness_cli.sandbox.world``: the world's processes.

- ``stdio NAME --dir DIR``: one server over stdio (what an MCP client spawns from mcp.json).
- ``http --dir DIR [--servers a,b] [--ports name=port,…]``: the HTTP host; prints one JSON line
  (the control URL and each server's URL) once every port listens, and exits when its stdin
  closes (the sandbox that started it is gone) or on SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import threading
import warnings
from pathlib import Path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness_cli.sandbox.world")
    sub = parser.add_subparsers(dest="mode", required=True)
    stdio = sub.add_parser("stdio")
    stdio.add_argument("name")
    stdio.add_argument("--dir", required=True, type=Path)
    http = sub.add_parser("http")
    http.add_argument("--dir", required=True, type=Path)
    http.add_argument("--servers", default="logs,metrics,tracker,docs,db")
    http.add_argument("--ports", default="", help="name=port,… (default: any free port)")
    args = parser.parse_args(argv)
    # pydantic-settings warns about the SDK's own settings model at import: not ours to fix
    warnings.filterwarnings("ignore", message="Field 'lifespan' has an incomplete definition")
    if args.mode == "stdio":
        from harness_cli.sandbox.world.servers import build

        build(args.name, args.dir, "stdio").run("stdio")
        return 0
    ports = dict(
        (name, int(port))
        for name, _, port in (p.partition("=") for p in args.ports.split(",") if p)
    )
    return _host(args.dir, [s for s in args.servers.split(",") if s], ports)


def _host(root: Path, names: list[str], ports: dict[str, int]) -> int:
    from harness_cli.sandbox.world.host import Host

    host = Host(root, names, ports)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    found: dict[str, object] = {}

    def serve() -> None:  # off the main thread: uvicorn then leaves the signals to us
        asyncio.set_event_loop(loop)

        async def start() -> None:
            try:
                found.update(await host.run())
            except Exception as exc:  # noqa: BLE001 - reported to the parent, then exit
                found["error"] = repr(exc)
            ready.set()

        task = loop.create_task(start())
        loop.run_forever()
        task.cancel()

    threading.Thread(target=serve, name="world-host", daemon=True).start()
    ready.wait(60)
    sys.stdout.write(json.dumps(found) + "\n")
    sys.stdout.flush()
    if "error" in found or not found:
        return 1
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    with contextlib.suppress(OSError, KeyboardInterrupt):
        sys.stdin.read()  # returns at EOF: the parent closed the pipe or died
    os._exit(0)  # the servers hold no state worth a graceful stop


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
