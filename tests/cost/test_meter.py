"""The cost meter: every model call of a real `harness investigate` + `harness review` (the
harness's own loop over the real anthropic SDK, the Anthropic emulator playing the model) is
recorded once — the log agrees with what the emulator served, call for call and token for
token — priced from harness.yaml's table, and summed by `harness cost`, case.json and
`case show`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness_cli.cost import meter
from harness_cli.cost.prices import CostSettings, Price, price_usd
from harness_cli.eval.cases import load_library
from harness_cli.eval.investigation_driver import CASE_ID, run_case
from harness_cli.sandbox.anthropic_api import AnthropicEmulator

LIBRARY = {c.id: c for c in load_library()}


@pytest.fixture(scope="module")
def model() -> Iterator[AnthropicEmulator]:
    emu = AnthropicEmulator()
    emu.start()
    yield emu
    emu.stop()


def _lines(home: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted((home / "logs" / "cost").glob("*.jsonl")):
        out += [json.loads(raw) for raw in path.read_text().splitlines()]
    return out


def test_every_call_is_recorded_once_and_priced(
    model: AnthropicEmulator, tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = run_case(LIBRARY["honest-complete"], "anthropic", anthropic=model, keep=tmp_path)
    assert seen.exit == "complete"
    root = next(tmp_path.glob("harness-lib-*"))
    lines = _lines(root / "harness-home")
    served = model.calls  # what the emulator answered, from the wire
    # one line per runtime run; a run's turns are its API requests
    assert sum(x["turns"] for x in lines) == len(served) > len(lines) > 0
    wire = model.usage_totals()
    assert sum(x["in"] for x in lines) == wire["input_tokens"]
    assert sum(x["out"] for x in lines) == wire["output_tokens"]
    assert sum(x["cw"] for x in lines) == wire["cache_creation_input_tokens"]
    assert sum(x["cr"] for x in lines) == wire["cache_read_input_tokens"]
    for x in lines:
        assert x["case"] == CASE_ID and x["project"] == "team-a" and x["run"]
        assert x["usd"] == pytest.approx(
            price_usd(x["model"], input_tokens=x["in"], output_tokens=x["out"],
                      cache_write_tokens=x["cw"], cache_read_tokens=x["cr"]),
            rel=1e-6,
        )  # fmt: skip
    by_workflow = {x["workflow"] for x in lines}
    assert by_workflow == {"investigate", "review"}
    investigate = [x for x in lines if x["workflow"] == "investigate"]
    # per iteration: the lock (0), the two investigator rounds and the review after round 2
    assert sorted({x["iteration"] for x in investigate}) == [0, 1, 2]
    assert {x["role"] for x in investigate if x["iteration"] == 2} == {
        "investigator", "adversarial-reviewer", "red-team"
    }  # fmt: skip

    case = json.loads((root / "workspace" / "case-workspaces" / CASE_ID / "case.json").read_text())[
        "cost"
    ]
    assert case["calls"] == len(lines)
    assert case["usd"] == pytest.approx(sum(x["usd"] for x in lines), abs=1e-5)
    assert case["by_workflow"]["investigate"]["calls"] == len(investigate)
    assert "Cost: this run" in "\n".join(seen.dm)  # the investigation's one post carries it
    assert "cost: $" in seen.case_show

    monkeypatch.setenv("HARNESS_HOME", str(root / "harness-home"))
    code, out, _ = cli("cost", "--json")
    data = json.loads(out)["data"]
    assert code == 0 and data["total"]["calls"] == len(lines)
    assert data["by_case"][CASE_ID]["usd"] == pytest.approx(case["usd"], abs=1e-5)
    assert set(data["by_workflow"]) == {"investigate", "review"}
    code, out, _ = cli("cost", "--project", "team-b", "--json")
    assert json.loads(out)["data"]["total"]["calls"] == 0
    code, text, _ = cli("cost", "--since", "1h")
    assert code == 0 and f"{len(lines)} call(s)" in text and "investigate" in text
    # per iteration: each iteration of the case sums its own calls; the review's sit under "-"
    iterations = data["by_iteration"]
    assert set(iterations) == {f"{CASE_ID} #0", f"{CASE_ID} #1", f"{CASE_ID} #2", "-"}
    for n in (0, 1, 2):
        mine = [x for x in lines if x.get("iteration") == n]
        assert iterations[f"{CASE_ID} #{n}"]["calls"] == len(mine)
        assert iterations[f"{CASE_ID} #{n}"]["usd"] == pytest.approx(
            sum(x["usd"] for x in mine), abs=1e-6
        )
    assert iterations["-"]["calls"] == len([x for x in lines if "iteration" not in x])
    code, text, _ = cli("cost", "--by", "iteration")
    assert code == 0 and f"{CASE_ID} #2" in text and "iteration" in text


def test_the_windows_and_filters_of_harness_cost(cli: Any) -> None:
    now = datetime.now(UTC)
    for days, project, usd in ((0, "team-a", 0.5), (0, "team-b", 0.25), (3, "team-a", 2.0)):
        with meter.scope(case=f"C-{project}", project=project, workflow="dev-agent", run="r"):
            meter.record(role="dev-agent", model="claude-sonnet-4-6", runtime="anthropic",
                         input_tokens=10, output_tokens=5, cache_write_tokens=0,
                         cache_read_tokens=0, usd=usd, reported=True, seconds=0.1,
                         at=now - timedelta(days=days))  # fmt: skip
    (meter.log_dir() / "1999-01-01.jsonl").write_text('{"ts": "torn\n')
    code, out, _ = cli("cost", "--json", "--since", "2d")
    data = json.loads(out)["data"]
    assert data["total"]["usd"] == pytest.approx(0.75) and data["total"]["calls"] == 2
    assert data["unreadable_lines"] == 0  # the 1999 file lies outside the window: not opened
    code, out, _ = cli("cost", "--json", "--project", "team-a")
    data = json.loads(out)["data"]
    assert data["total"]["usd"] == pytest.approx(2.5) and len(data["by_day"]) == 2
    assert data["unreadable_lines"] == 1
    code, _, err = cli("cost", "--since", "last tuesday")
    assert code == 2 and "--since" in err and "7d" in err
    code, _, err = cli("cost", "--by", "colour")
    assert code == 2 and "colour" in err


def test_an_index_of_an_older_layout_is_rebuilt(cli: Any) -> None:
    """A finished day's summed index from before the iteration column is not trusted."""
    at = datetime.now(UTC) - timedelta(days=2)
    with meter.scope(case="C-1", project="team-a", workflow="investigate", run="r", iteration=3):
        meter.record(role="investigator", model="claude-sonnet-4-6", runtime="anthropic",
                     input_tokens=10, output_tokens=5, cache_write_tokens=0,
                     cache_read_tokens=0, usd=0.5, reported=True, seconds=0.1, at=at)  # fmt: skip
    code, out, _ = cli("cost", "--json")
    assert json.loads(out)["data"]["by_iteration"] == {"C-1 #3": json.loads(out)["data"]["total"]}
    index = meter.log_dir() / ".index" / f"{at.date().isoformat()}.json"
    old = json.loads(index.read_text())
    old.pop("v")
    old["cells"] = [[k[:5], v] for k, v in old["cells"]]  # the five-column layout
    index.write_text(json.dumps(old))
    code, out, _ = cli("cost", "--json")
    data = json.loads(out)["data"]
    assert code == 0 and data["by_iteration"]["C-1 #3"]["usd"] == pytest.approx(0.5)


def test_the_first_call_of_a_day_sums_the_days_before_it(
    cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold `harness cost` parses only today's lines: each finished day was summed into
    ``.index/`` by the first call of the day after it (the meter's own write path)."""
    today = datetime.now(UTC).replace(hour=12)
    for days, calls in ((3, 4), (1, 2), (0, 1)):
        for _ in range(calls):
            with meter.scope(case="C-1", project="team-a", workflow="investigate", run="r"):
                meter.record(role="investigator", model="claude-sonnet-4-6", runtime="anthropic",
                             input_tokens=10, output_tokens=5, cache_write_tokens=0,
                             cache_read_tokens=0, usd=0.5, reported=True, seconds=0.1,
                             at=today - timedelta(days=days))  # fmt: skip
    indexed = sorted(p.stem for p in (meter.log_dir() / ".index").glob("*.json"))
    finished = [(today - timedelta(days=d)).date().isoformat() for d in (3, 1)]
    assert indexed == finished
    parsed: list[int] = []
    real_parse = meter._parse

    def counting(data: bytes) -> Any:
        parsed.append(data.count(b"\n"))
        return real_parse(data)

    monkeypatch.setattr(meter, "_parse", counting)
    code, out, _ = cli("cost", "--json")
    data = json.loads(out)["data"]
    assert code == 0 and data["total"]["calls"] == 7 and data["total"]["usd"] == pytest.approx(3.5)
    assert parsed == [1]  # today's one line; the finished days came from their index


def test_the_price_table_is_harness_yaml_s() -> None:
    cheap = CostSettings(prices={"x": Price(input=1, output=2, cache_write=3, cache_read=4)},
                         default_model="x")  # fmt: skip
    assert price_usd("anything", input_tokens=10**6, output_tokens=10**6,
                     cache_write_tokens=10**6, cache_read_tokens=10**6,
                     settings=cheap) == pytest.approx(10.0)  # fmt: skip
    million = {"input_tokens": 10**6, "output_tokens": 0}
    assert price_usd("claude-opus-4-6", **million) == pytest.approx(5.0)  # longest prefix
    assert price_usd("claude-opus-4-1", **million) == pytest.approx(15.0)
    assert price_usd("a-new-model", **million) == pytest.approx(3.0)  # default: sonnet
    with pytest.raises(ValueError, match="default_model"):
        CostSettings(prices={"x": cheap.prices["x"]}, default_model="y")
