"""What the Jira client library costs (docs/JIRA.md's figures for the chosen one).

1. Importing ``atlassian`` in a fresh interpreter that already imported ``requests`` (as any
   harness command that talks to GitLab has), median of 5, against the bare ``requests`` import.
2. One ``issue()`` read through the library vs the same GET with urllib, against the Jira
   emulator, alternated, median of 50 each: the library's overhead per call.

Run: ``.venv/bin/python bench/bench_jira_client.py``.
"""

from __future__ import annotations

import base64
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.sandbox.jira_api import SANDBOX_TOKEN, SANDBOX_USER, JiraEmulator  # noqa: E402

IMPORTS = 5
CALLS = 50


def import_seconds(code: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - started


def main() -> None:
    bare = statistics.median(import_seconds("import requests") for _ in range(IMPORTS))
    lib = statistics.median(
        import_seconds("import requests; from atlassian import Jira") for _ in range(IMPORTS)
    )
    print(
        f"python + requests: {bare * 1000:.0f} ms; + atlassian: {lib * 1000:.0f} ms "
        f"(+{(lib - bare) * 1000:.0f} ms, median of {IMPORTS})"
    )
    from atlassian import Jira

    emu = JiraEmulator()
    emu.start()
    try:
        emu.control("add_issue", {"key": "AAA-1", "summary": "bench"})
        jira = Jira(emu.url, username=SANDBOX_USER, password=SANDBOX_TOKEN, cloud=True)
        auth = base64.b64encode(f"{SANDBOX_USER}:{SANDBOX_TOKEN}".encode()).decode()
        request = urllib.request.Request(
            f"{emu.url}/rest/api/2/issue/AAA-1", headers={"Authorization": f"Basic {auth}"}
        )
        timings: dict[str, list[float]] = {"library": [], "urllib": []}
        for _ in range(CALLS):
            started = time.perf_counter()
            jira.issue("AAA-1")
            timings["library"].append(time.perf_counter() - started)
            started = time.perf_counter()
            with urllib.request.urlopen(request, timeout=10) as resp:
                resp.read()
            timings["urllib"].append(time.perf_counter() - started)
    finally:
        emu.stop()
    via_lib, via_urllib = (statistics.median(timings[k]) for k in ("library", "urllib"))
    print(
        f"issue(): library {via_lib * 1000:.1f} ms, urllib {via_urllib * 1000:.1f} ms "
        f"(overhead {(via_lib - via_urllib) * 1000:+.1f} ms per call, median of {CALLS})"
    )


if __name__ == "__main__":
    main()
