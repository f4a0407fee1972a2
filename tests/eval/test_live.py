"""A live eval case (``script: live``): no embedded emulator plays the model, the endpoint and
key of the environment `harness eval` runs in do. Here that endpoint is an Anthropic emulator
the test starts on its own port, standing in for the real API, so the test shows the trial's
calls went there and nowhere else; without a key the run is refused before any trial starts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness_cli.eval.cases import DEFAULT_DIR, LibraryCase
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.model_script import SCRIPTS_DIR
from harness_cli.sandbox.runner import SANDBOX_TOKENS


@pytest.fixture
def live_case(tmp_path: Path) -> Path:
    data = yaml.safe_load((DEFAULT_DIR / "honest-complete.yaml").read_text())
    data.update(id="live-honest", script="live")
    path = tmp_path / "live-honest.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def api() -> Iterator[AnthropicEmulator]:
    emu = AnthropicEmulator()
    emu.start()
    emu.load_script(SCRIPTS_DIR / "inv_honest.yaml")
    yield emu
    emu.stop()


def test_a_live_case_talks_to_the_environment_s_endpoint(
    cli: Any, live_case: Path, api: AnthropicEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SANDBOX_TOKENS["ANTHROPIC_API_KEY"])
    code, out, err = cli("eval", str(live_case), "--runs", "1", "--json")
    assert code == 0, err
    data = json.loads(out)["data"]
    assert data["trials_started"] == 1 and data["variants"]["baseline"][-1]["passed"] == 1, data
    roles = {c.role for c in api.calls}
    assert {"precommit", "investigator"} <= roles  # every call of the trial reached "the API"


def test_a_live_case_without_a_key_is_refused_before_any_trial(
    cli: Any, live_case: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, out, err = cli("eval", str(live_case), "--runs", "3")
    assert code == 2 and "live-honest plays a role live (script: live)" in err
    assert "ANTHROPIC_API_KEY" in err
    assert "trials" not in out


def test_a_live_case_cannot_carry_script_parts() -> None:
    data = yaml.safe_load((DEFAULT_DIR / "honest-complete.yaml").read_text())
    data.update(script="live", behaviours={"overclaims": 0.4})
    with pytest.raises(ValueError, match="drop behaviours"):
        LibraryCase.model_validate(data)


@pytest.fixture
def live_investigator(tmp_path: Path) -> Path:
    data = yaml.safe_load((DEFAULT_DIR / "honest-complete.yaml").read_text())
    data.update(id="live-investigator", models={"investigator": "live"})
    path = tmp_path / "live-investigator.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_role_played_live_reaches_the_api_and_the_others_stay_scripted(
    cli: Any, live_investigator: Path, api: AnthropicEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``models: {investigator: live}``: the investigator's requests (and only they) reach the
    environment's endpoint; the precommit lock and the reviewers are answered by the trial's
    own scripted emulator."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SANDBOX_TOKENS["ANTHROPIC_API_KEY"])
    code, out, err = cli("eval", str(live_investigator), "--runs", "1", "--json")
    assert code == 0, err
    data = json.loads(out)["data"]
    assert data["trials_started"] == 1 and data["variants"]["baseline"][-1]["passed"] == 1, data
    assert api.calls and {c.role for c in api.calls} == {"investigator"}
    assert all(r.headers.get("x-api-key") == SANDBOX_TOKENS["ANTHROPIC_API_KEY"]
               for r in api.recorded("/v1/messages"))  # fmt: skip


def test_a_live_role_without_a_key_is_refused_before_any_trial(
    cli: Any, live_investigator: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code, out, err = cli("eval", str(live_investigator), "--runs", "3")
    assert code == 2 and "models: investigator: live" in err and "ANTHROPIC_API_KEY" in err
    assert "trials" not in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"models": {"investigatr": "live"}}, "'investigatr' is not an agent role"),
        ({"models": {"investigator": "remote"}}, "scripted"),
        ({"script": "live", "models": {"investigator": "live"}}, "drop models"),
        (
            {"models": {"investigator": "live"}, "roles": {"investigator": [{"reply": {}}]}},
            "role investigator is live",
        ),
    ],
)
def test_the_model_per_role_is_validated(change: dict[str, Any], message: str) -> None:
    data = yaml.safe_load((DEFAULT_DIR / "honest-complete.yaml").read_text())
    data.update(change)
    with pytest.raises(ValueError, match=message):
        LibraryCase.model_validate(data)


def test_scripted_and_live_roles_parse() -> None:
    data = yaml.safe_load((DEFAULT_DIR / "honest-complete.yaml").read_text())
    data["models"] = {"investigator": "live", "red-team": "scripted"}
    case = LibraryCase.model_validate(data)
    assert case.live_roles == {"investigator"} and case.needs_api_key and not case.live
