"""Sources from the wire (#33 item 3), end to end on both runtimes: `harness investigate` with
the sandbox world's servers in agent-config/mcp.json. The same report — its one HARD item
citing the logs server — keeps its number when the investigator queried the logs in this run,
and is capped at 60 by EQ1 when it never did (``inv_sources.yaml``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from harness_cli.sandbox.world.runner import STDIO_BY_DEFAULT, World
from tests.investigation.conftest import BOTH, Investigation

pytestmark = pytest.mark.filterwarnings("ignore:Field 'lifespan' has an incomplete definition")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with World(tmp_path_factory.mktemp("world")) as running:
        running.wait_ready()
        yield running


def wire(inv: Investigation, world: World) -> None:
    """The world as the investigation's sources; its logs and metrics trusted."""
    world.write_mcp_config(inv.config / "mcp.json", stdio=STDIO_BY_DEFAULT)
    path = inv.config / "harness.yaml"
    data = yaml.safe_load(path.read_text())
    data["mcp"] = {"trusted": ["logs", "metrics"]}
    data.setdefault("investigation", {})["max_iterations"] = 1
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.parametrize("runtime", BOTH)
def test_hard_evidence_is_checked_against_the_calls_this_run_made(
    inv: Investigation, world: World, runtime: str
) -> None:
    world.act("reset")
    wire(inv, world)
    inv.script("inv_sources")

    # Queried, then cited: the citation stands.
    inv.open_case("AAA-201")
    inv.cli("investigate", "AAA-201", "--json", "--no-post")
    first = inv.iteration(1, "AAA-201")
    codes = [v["code"] for v in first["verdict"]["violations"]]
    assert "EQ1" not in codes, first["verdict"]
    assert first["verdict"]["confidence"] == 88
    [call] = [c for c in first["calls"] if c["role"] == "investigator"]
    assert [(t["name"], t["ok"]) for t in call["tools"]] == [("mcp__logs__search_logs", True)]
    assert [c["tool"] for c in world.calls("logs")] == ["search_logs"]
    exit_line = inv.case_json("AAA-201")["exit"]
    assert "sources: logs (" in exit_line and "metrics" in exit_line, exit_line
    analysis = (inv.case_dir("AAA-201") / "ANALYSIS.md").read_text()
    assert "Sources queried: logs (" in analysis

    # Cited without a call: the same item counts as INFERRED, confidence capped at 60.
    world.act("reset")
    inv.open_case("AAA-202")
    inv.cli("investigate", "AAA-202", "--json", "--no-post")
    second = inv.iteration(1, "AAA-202")
    [eq1] = [v for v in second["verdict"]["violations"] if v["code"] == "EQ1"]
    assert "logs never answered this run" in eq1["message"]
    assert second["verdict"]["confidence"] == 60
    assert world.calls("logs") == []
    assert "sources: none (" in inv.case_json("AAA-202")["exit"]


def test_the_catalog_config_is_read(inv: Investigation, world: World) -> None:
    """A typo in harness.yaml's mcp: is one clear line, not a silently ignored setting."""
    wire(inv, world)
    path: Path = inv.config / "harness.yaml"
    path.write_text(path.read_text().replace("trusted:", "trustd:"))
    code, _, err = inv.cli("investigate", "AAA-201", "--json", "--no-post")
    assert code == 2 and "trustd" in err, err
