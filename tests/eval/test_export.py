"""`harness eval export CASE`: a finished case becomes an eval case (its ticket, the recorded
answers per iteration and role, its outcome as the expectation) that replays to the same end
through `harness eval` — so a change to prompts, SOPs or gates can be replayed against it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

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


@pytest.mark.parametrize("source", ["honest-review-drop"])
def test_a_closed_case_exported_replays_to_the_same_end(
    source: str,
    model: AnthropicEmulator,
    tmp_path: Path,
    cli: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = run_case(LIBRARY[source], "anthropic", anthropic=model, keep=tmp_path)
    root = next(tmp_path.glob("harness-lib-*"))
    for key, sub in (("HARNESS_HOME", "harness-home"), ("HARNESS_WORKSPACE", "workspace"),
                     ("HARNESS_CONFIG", "agent-config")):  # fmt: skip
        monkeypatch.setenv(key, str(root / sub))
    out = tmp_path / "replay.yaml"
    code, text, err = cli("eval", "export", CASE_ID, "--out", str(out))
    assert code == 0, err
    exported = yaml.safe_load(out.read_text())
    out = out.with_name(f"{exported['id']}.yaml")
    (tmp_path / "replay.yaml").rename(out)
    assert exported["expect"]["exit"] == seen.exit
    assert exported["expect"]["iterations"] == seen.iterations
    assert exported["expect"]["confidences"] == seen.confidences
    assert "Bulk discount is not applied" in exported["setup"]["ticket"]
    assert len(exported["roles"]["investigator"]) == seen.iterations
    code, text, err = cli("eval", str(out), "--runs", "1", "--json")
    assert code == 0, err
    data = json.loads(text)["data"]
    result = data["variants"]["baseline"][-1]
    assert (result["started"], result["passed"]) == (1, 1), data["variants"]["baseline"][0]


def test_a_case_without_an_investigation_cannot_be_exported(cli: Any, harness_ready: Path) -> None:
    assert cli("case", "new", "--project", "team-a", "--id", "AAA-9", "--title", "t")[0] == 0
    code, _, err = cli("eval", "export", "AAA-9")
    assert code == 2 and "no finished investigation" in err and "harness investigate AAA-9" in err
