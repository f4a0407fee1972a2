"""[github] What the GitHub emulator costs the sandbox, and what conditional requests save.

1. ``Sandbox`` start-up with the GitHub emulator (and the sample repo seeded on it) vs without,
   alternated, median of each: the demo does not start it; ``harness sandbox`` does.
2. Import cost, cold, in a fresh interpreter (``-X importtime``, cumulative): the emulator's
   modules, and PyGithub (the client the forge port will use; never on ``--help``'s path).
3. One polling cycle over 100 open pull requests of which 5 changed since the last cycle,
   through PyGithub: every PR fetched plainly vs with ``If-None-Match`` (the ETags of the
   previous cycle). Counted = what ``X-RateLimit-Used`` moved; a 304 is not counted.

Run: ``.venv/bin/python bench/bench_github_emulator.py``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from github import Auth, Github

from harness_cli.sandbox.github_api import GitHubEmulator
from harness_cli.sandbox.runner import Sandbox

RUNS = 3
PULLS = 100
CHANGED = 5


def start_cost() -> tuple[float, float]:
    timings: dict[bool, list[float]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(RUNS):
            for with_github in (False, True):
                started = time.perf_counter()
                box = Sandbox(Path(tmp) / f"{n}-{with_github}", github_enabled=with_github)
                box.start()
                timings[with_github].append(time.perf_counter() - started)
                box.stop()
    return statistics.median(timings[False]), statistics.median(timings[True])


def import_cost(module: str) -> float:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    line = [row for row in out.splitlines() if row.rstrip().endswith(f"| {module}")][-1]
    return int(line.split("|")[1]) / 1e6


def polling_cycle() -> tuple[int, int]:
    with tempfile.TemporaryDirectory() as tmp:
        emu = GitHubEmulator(Path(tmp))
        emu.start()
        try:
            emu.control(
                "create_repo", {"repo": "acme/many", "files": {"a": "a\n"}, "protection": False}
            )
            gh = Github(
                base_url=emu.api_url,
                auth=Auth.Token("ghp_bench"),
                retry=None,
                seconds_between_requests=None,
                seconds_between_writes=None,
            )
            repo = gh.get_repo("acme/many")
            for n in range(PULLS):
                emu.control(
                    "commit", {"repo": "acme/many", "branch": f"b{n}", "files": {f"f{n}": "x\n"}}
                )
                repo.create_pull(base="main", head=f"b{n}", title=f"PR {n}")
            etags: dict[int, str] = {}
            for n in range(1, PULLS + 1):  # the previous cycle, which saw every PR
                headers, _ = gh.requester.requestJsonAndCheck("GET", f"{repo.url}/pulls/{n}")
                etags[n] = headers["etag"]
            for n in range(1, CHANGED + 1):
                emu.control("add_issue_comment", {"repo": "acme/many", "number": n, "body": "new"})

            def used() -> int:
                return gh.get_rate_limit().resources.core.used

            before = used()
            for n in range(1, PULLS + 1):
                gh.requester.requestJsonAndCheck("GET", f"{repo.url}/pulls/{n}")
            plain = used() - before
            before = used()
            for n in range(1, PULLS + 1):
                status, _, _ = gh.requester.requestJson(
                    "GET", f"{repo.url}/pulls/{n}", headers={"If-None-Match": etags[n]}
                )
                assert status in (200, 304)
            conditional = used() - before
            return plain, conditional
        finally:
            emu.stop()


def main() -> None:
    without, with_github = start_cost()
    print(
        f"sandbox start: {without * 1000:.0f} ms without GitHub, "
        f"{with_github * 1000:.0f} ms with it (+{(with_github - without) * 1000:.0f} ms, "
        f"x{with_github / without:.2f})"
    )
    emulator = import_cost("harness_cli.sandbox.github_api")
    client = import_cost("github")
    print(
        f"cold import: harness_cli.sandbox.github_api {emulator * 1000:.0f} ms, "
        f"github (PyGithub) {client * 1000:.0f} ms"
    )
    plain, conditional = polling_cycle()
    print(
        f"one cycle over {PULLS} PRs, {CHANGED} changed: {plain} counted calls plain, "
        f"{conditional} with If-None-Match (ratio {conditional / plain:.2f})"
    )


if __name__ == "__main__":
    main()
