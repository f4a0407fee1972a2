"""L0: config models, their error messages, routing and Jira key extraction."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness_cli.config import (
    ProjectsConfig,
    extract_jira_key,
    load_config,
    resolve_project,
)
from harness_cli.errors import ConfigError


def test_shipped_example_config_loads(config_dir: Path) -> None:
    cfg = load_config(config_dir)
    assert cfg.harness.operator.self_dm_channel == "D0SELF"
    assert cfg.harness.allowlist == ["D0SELF"]
    assert "team-a" in cfg.projects.projects
    assert cfg.mcp.mcpServers == {}


def test_allowlist_defaults_to_the_self_dm_only(config_dir: Path) -> None:
    text = (config_dir / "harness.yaml").read_text().replace("outbound_allowlist: [D0SELF]", "")
    (config_dir / "harness.yaml").write_text(text)
    assert load_config(config_dir).harness.allowlist == ["D0SELF"]


def test_missing_field_names_file_line_field_and_fix(config_dir: Path) -> None:
    path = config_dir / "harness.yaml"
    path.write_text("operator:\n  slack_user_id: U1\n")
    with pytest.raises(ConfigError) as err:
        load_config(config_dir)
    line = err.value.line()
    assert f"{path}:2" in line or f"{path}:1" in line
    assert "operator.self_dm_channel" in line
    assert "add `self_dm_channel:`" in line
    assert "\n" not in line


def test_unknown_key_is_a_typo_with_its_line(config_dir: Path) -> None:
    path = config_dir / "harness.yaml"
    path.write_text(path.read_text() + "auto_monitr: false\n")
    with pytest.raises(ConfigError) as err:
        load_config(config_dir)
    n = len(path.read_text().splitlines())
    assert f"{path}:{n}" in err.value.line()
    assert "auto_monitr" in err.value.line()


def test_broken_yaml_reports_the_line(config_dir: Path) -> None:
    path = config_dir / "projects.yaml"
    path.write_text("default_project: a\nprojects:\n  a:\n    sop: [unclosed\n    kb: x\n")
    with pytest.raises(ConfigError) as err:
        load_config(config_dir)
    assert "broken YAML" in err.value.line()
    assert str(path) in err.value.line()


def test_missing_config_folder_says_how_to_fix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(tmp_path / "nope")
    assert "harness init" in err.value.line()


def _projects(**extra: object) -> ProjectsConfig:
    data = {
        "default_project": "team-a",
        "projects": {
            "team-a": {"sop": "a", "kb": "a", "slack_channels": ["C1"], "jira_prefixes": ["AAA"]},
            "team-b": {"sop": "b", "kb": "b", "slack_channels": ["C2"], "jira_prefixes": ["XX"]},
        },
    }
    data.update(extra)
    return ProjectsConfig.model_validate(data)


def test_resolve_project_precedence_jira_then_channel_then_default() -> None:
    p = _projects()
    # a Jira key wins over the channel it was posted in
    assert resolve_project(p, jira_key="XX-12", channel="C1") == "team-b"
    assert resolve_project(p, jira_key="AAA-1", channel="C2") == "team-a"
    # unknown prefix → the channel decides
    assert resolve_project(p, jira_key="ZZZ-1", channel="C2") == "team-b"
    # nothing known → default
    assert resolve_project(p, jira_key=None, channel="C9") == "team-a"
    assert resolve_project(p) == "team-a"


def test_default_project_must_exist() -> None:
    with pytest.raises(ValueError, match="default_project"):
        _projects(default_project="nope")


def test_a_channel_claimed_twice_is_ambiguous() -> None:
    data = {
        "default_project": "a",
        "projects": {
            "a": {"sop": "", "kb": "", "slack_channels": ["C1"]},
            "b": {"sop": "", "kb": "", "slack_channels": ["C1"]},
        },
    }
    with pytest.raises(ValueError, match="claimed by both"):
        ProjectsConfig.model_validate(data)


@pytest.mark.parametrize(
    ("text", "prefixes", "expected"),
    [
        ("Checkout broken, see AAA-123 please", ["AAA"], "AAA-123"),
        ("https://jira.example.com/browse/XX-9?focus=1", ["XX"], "XX-9"),
        ("UTF-8 decoding fails; sha SHA-256 mismatch", ["AAA"], None),
        ("UTF-8 then AAA-7", ["AAA"], "AAA-7"),
        ("lowercase aaa-1 is not a key", ["AAA"], None),
        ("AAA-0 is not a valid issue number", ["AAA"], None),
        ("no key at all", None, None),
        ("ZZ-4 any prefix when none configured", None, "ZZ-4"),
    ],
)
def test_extract_jira_key(text: str, prefixes: list[str] | None, expected: str | None) -> None:
    assert extract_jira_key(text, prefixes) == expected
