"""The harness's own MCP client (#33 item 1), measured against the sandbox world's servers.

1. Six read-only MCP calls of 1 s each (the world's ``slow`` fault) asked in ONE model turn
   through the anthropic runtime and the Anthropic emulator: their span when the contract
   says read-only (run side by side) vs the same calls declared writes (one at a time, the
   baseline). Goal: ratio <= 0.25.
2. The per-call overhead of the client (``McpHub.call``: the portal hop, the bounded transport,
   the contract) over a bare SDK ``ClientSession.call_tool`` on the same HTTP server, median of
   ``CALLS`` calls each. Goal: <= 20 ms.

Run: ``.venv/bin/python bench/bench_mcp_client.py``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.agents.anthropic_loop import AnthropicRuntime  # noqa: E402
from harness_cli.agents.mcp_client import McpHub  # noqa: E402
from harness_cli.agents.mcp_servers import http_headers  # noqa: E402
from harness_cli.agents.mcp_settings import McpSettings  # noqa: E402
from harness_cli.config import McpConfig  # noqa: E402
from harness_cli.sandbox.anthropic_api import AnthropicEmulator  # noqa: E402
from harness_cli.sandbox.world.runner import World  # noqa: E402
from harness_cli.services.runtime import RunRequest  # noqa: E402

CALLS = 40
GOAL_RATIO = 0.25
GOAL_OVERHEAD_MS = 20.0


def six_reads(world: World, emu: AnthropicEmulator, tmp: Path, settings: McpSettings) -> float:
    """The span of the six calls' tool phase, in seconds."""
    world.clear_faults()
    world.fault("slow", "metrics", tool="query_metrics", seconds=1.0, times=6)
    emu.reset()
    emu.load_script("mcp_world")
    case = tmp / "case"
    case.mkdir(exist_ok=True)
    req = RunRequest(
        role="dev-agent-plan",  # a role that may be offered writes (the baseline's contract)
        prompt="[harness-role: mcp-parallel] go",
        workdir=case,
        allowed_root=case,
        mcp_config=world.write_mcp_config(tmp / "mcp.json"),
        max_turns=4,
        timeout_s=120,
    )
    result = AnthropicRuntime(mcp_settings=settings).run(req)
    events = result.tool_events
    if result.text != "Six series read." or len(events) != 6 or any(e.is_error for e in events):
        raise SystemExit(f"the scenario did not play: {result.text!r} {result.error}")
    return max(e.ended for e in events) - min(e.started for e in events)


def bare_sdk(world: World, server: str, n: int) -> tuple[list[float], list[float]]:
    """``n`` calls of logs/list_services through a plain SDK session (one connection): the
    same ``tools/call`` request the hub sends (``send_request``, the baseline), and the SDK's
    ``call_tool``, which also checks structured content against the tool's output schema."""
    import anyio
    import httpx
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamable_http_client

    entry = McpConfig.model_validate(world.mcp_config(stdio=())).mcpServers[server]
    times: list[float] = []
    checked: list[float] = []
    request = types.ClientRequest(
        types.CallToolRequest(params=types.CallToolRequestParams(name="list_services"))
    )

    async def main() -> None:
        # The same HTTP client settings as the hub's, without its capped transport.
        client = httpx.AsyncClient(
            headers={**http_headers(entry), "Accept-Encoding": "identity"},
            timeout=httpx.Timeout(30.0, read=None),
            follow_redirects=True,
        )
        async with (
            client,
            streamable_http_client(entry.url or "", http_client=client) as (r, w, _),
            ClientSession(r, w) as session,
        ):
            await session.initialize()
            await session.call_tool("list_services", {})  # warm
            for _ in range(n):
                t = time.perf_counter()
                await session.send_request(request, types.CallToolResult)
                times.append(time.perf_counter() - t)
                t = time.perf_counter()
                await session.call_tool("list_services", {})
                checked.append(time.perf_counter() - t)

    anyio.run(main)
    return times, checked


def hub_calls(world: World, server: str, n: int) -> list[float]:
    servers = McpConfig.model_validate(world.mcp_config(stdio=())).mcpServers
    hub = McpHub({server: servers[server]}, McpSettings(trusted=[server])).start()
    try:
        hub.call(server, "list_services", {})  # warm
        times = []
        for _ in range(n):
            t = time.perf_counter()
            text, is_error = hub.call(server, "list_services", {})
            times.append(time.perf_counter() - t)
            assert not is_error, text
        return times
    finally:
        hub.stop()


def main() -> int:
    emu = AnthropicEmulator("mcp_world")
    emu.start()
    os.environ["ANTHROPIC_BASE_URL"] = emu.url
    os.environ["ANTHROPIC_API_KEY"] = "sk-ant-bench"
    try:
        with tempfile.TemporaryDirectory() as raw, World(Path(raw) / "world") as world:
            tmp = Path(raw)
            os.environ["HOME"] = str(tmp)
            world.wait_ready()
            read_only = McpSettings(trusted=["metrics"])
            writes = McpSettings(effects={"metrics/*": "writes"}, write_roles=["dev-agent-plan"])
            concurrent = statistics.median(six_reads(world, emu, tmp, read_only) for _ in range(3))
            serial = statistics.median(six_reads(world, emu, tmp, writes) for _ in range(2))
            ratio = concurrent / serial
            print("six 1 s read-only MCP calls in one turn (anthropic runtime, world HTTP server)")
            print(f"  concurrent (read-only contract): {concurrent:6.2f} s")
            print(f"  one at a time (writes contract): {serial:6.2f} s   (baseline)")
            verdict = "OK" if ratio <= GOAL_RATIO else "MISSED"
            print(f"  ratio: {ratio:.3f}   goal <= {GOAL_RATIO}   {verdict}")

            world.clear_faults()
            raw_times, checked = bare_sdk(world, "logs", CALLS)
            bare = statistics.median(raw_times) * 1000
            ours = statistics.median(hub_calls(world, "logs", CALLS)) * 1000
            overhead = ours - bare
            print(f"per-call latency, median of {CALLS} (logs/list_services over HTTP)")
            print(f"  bare SDK send_request(tools/call): {bare:7.2f} ms   (baseline)")
            schema = statistics.median(checked) * 1000
            print(f"  bare SDK call_tool (+ schema check): {schema:5.2f} ms")
            print(f"  harness McpHub.call:               {ours:7.2f} ms   ratio {ours / bare:.2f}")
            print(f"  overhead: {overhead:.2f} ms   goal <= {GOAL_OVERHEAD_MS:g} ms   "
                  f"{'OK' if overhead <= GOAL_OVERHEAD_MS else 'MISSED'}")  # fmt: skip
            return 0 if ratio <= GOAL_RATIO and overhead <= GOAL_OVERHEAD_MS else 1
    finally:
        emu.stop()


if __name__ == "__main__":
    raise SystemExit(main())
