"""The script matcher on its own: role detection, conversation state, fallbacks, the loader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness_cli.errors import ConfigError
from harness_cli.sandbox.model_script import (
    RequestView,
    Script,
    load_script,
    match_request,
)

READ_TOOL = {"name": "Read", "description": "read", "input_schema": {"type": "object"}}


def body(
    messages: list[dict[str, Any]],
    system: Any = None,
    tools: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"model": "m", "max_tokens": 100, "messages": messages}
    if system is not None:
        out["system"] = system
    if tools is not None:
        out["tools"] = tools
    return out


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def tool_use(tid: str, name: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": tid, "name": name, "input": {}}],
    }


def tool_result(tid: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": tid, "content": content, "is_error": is_error}
    return {"role": "user", "content": [block]}


def view(**kwargs: Any) -> RequestView:
    return RequestView.from_body(body(**kwargs))


# -- role detection ------------------------------------------------------------------------------
def test_role_from_system_string() -> None:
    assert (
        view(messages=[user("hi")], system="You are X. [harness-role: dev-agent]").role
        == "dev-agent"
    )


def test_role_from_system_blocks_and_system_messages() -> None:
    blocks = [{"type": "text", "text": "a"}, {"type": "text", "text": "[harness-role: reviewer]"}]
    assert view(messages=[user("hi")], system=blocks).role == "reviewer"
    mid = {"role": "system", "content": "[harness-role: planner]"}
    assert view(messages=[user("hi"), mid]).role == "planner"


def test_role_from_first_user_message_only() -> None:
    first = {
        "role": "user",
        "content": [
            {"type": "text", "text": "ctx"},
            {"type": "text", "text": "[harness-role: a] go"},
        ],
    }
    assert view(messages=[first]).role == "a"
    later = [user("plain"), {"role": "assistant", "content": "ok"}, user("[harness-role: b]")]
    assert view(messages=later).role == "default"


def test_system_marker_wins_over_user_marker() -> None:
    assert view(messages=[user("[harness-role: u]")], system="[harness-role: s]").role == "s"


# -- conversation state --------------------------------------------------------------------------
def test_turns_count_assistant_runs_not_messages() -> None:
    msgs = [
        user("go"),
        {"role": "system", "content": "reminder"},
        {"role": "assistant", "content": [{"type": "text", "text": "part 1"}]},
        {"role": "system", "content": "between"},
        tool_use("t1", "Read"),
        tool_result("t1", "x"),
        {"role": "assistant", "content": "second"},
        user("more"),
    ]
    assert view(messages=msgs).turn == 2
    assert view(messages=[user("go")]).turn == 0


def test_tool_results_of_latest_user_turn_with_names() -> None:
    msgs = [
        user("go"),
        tool_use("t1", "Write"),
        tool_result("t1", [{"type": "text", "text": "File created"}]),
        tool_use("t2", "Edit"),
        tool_result("t2", "old_string not found", is_error=True),
    ]
    results = view(messages=msgs).tool_results
    assert [(r.tool_name, r.text, r.is_error) for r in results] == [
        ("Edit", "old_string not found", True)
    ]
    assert view(messages=[*msgs, {"role": "assistant", "content": "done"}]).tool_results == ()


def test_cwd_from_working_directory_line() -> None:
    system = "# Environment\n - Primary working directory: /tmp/w1\n - Is a git repository: false"
    assert view(messages=[user("x")], system=system).cwd == "/tmp/w1"
    assert view(messages=[user("Working directory: /srv/repo\nplease")]).cwd == "/srv/repo"
    assert view(messages=[user("x")]).cwd is None


# -- matching ------------------------------------------------------------------------------------
SCRIPT = {
    "vars": {"file": "a.txt", "cwd": "/fallback"},
    "roles": {
        "default": [
            {"name": "title", "when": {"tools": "absent"}, "reply": {"text": '{"title": "T"}'}}
        ],
        "dev": [
            {
                "name": "failed",
                "when": {"last_tool_result_is_error": True},
                "reply": {"text": "stop"},
            },
            {
                "name": "write",
                "when": {"turn": 0, "tools": "present"},
                "reply": {
                    "text": "writing {file} in {cwd} as {role}, {unknown} kept",
                    "tool_calls": [
                        {"name": "Write", "input": {"file_path": "{cwd}/{file}", "content": "{x}"}}
                    ],
                },
            },
            {
                "name": "after write",
                "when": {"last_tool": "Write", "last_tool_result_is_error": False},
                "reply": {"text": "wrote"},
            },
            {
                "name": "grep hit",
                "when": {"last_tool_result_contains": "MATCH"},
                "reply": {"text": "found"},
            },
            {
                "name": "late",
                "when": {"turn_at_least": 3, "user_contains": "hurry"},
                "reply": {"text": "late", "stop_reason": "max_tokens"},
            },
        ],
    },
}


def test_first_matching_rule_renders_placeholders() -> None:
    script = load_script(SCRIPT)
    req = view(
        messages=[user("go")],
        system="[harness-role: dev]\nWorking directory: /w",
        tools=[READ_TOOL],
    )
    m = match_request(script, req)
    assert m.unmatched is None and m.rule == "write" and m.role == "dev"
    assert m.text == "writing a.txt in /w as dev, {unknown} kept"
    assert m.tool_calls == [("Write", {"file_path": "/w/a.txt", "content": "{x}"})]


def test_script_var_cwd_used_when_request_states_none() -> None:
    m = match_request(
        load_script(SCRIPT), view(messages=[user("[harness-role: dev]")], tools=[READ_TOOL])
    )
    assert m.tool_calls[0][1]["file_path"] == "/fallback/a.txt"


def test_loader_variables_override_script_vars() -> None:
    script = load_script(SCRIPT, {"file": "b.txt"})
    m = match_request(
        script,
        view(
            messages=[user("[harness-role: dev]")],
            system="Working directory: /w",
            tools=[READ_TOOL],
        ),
    )
    assert m.tool_calls[0][1]["file_path"] == "/w/b.txt"


def test_captures_read_placeholders_from_the_users_text() -> None:
    script = load_script(
        {
            "captures": {"iteration": r"iteration (\d+) of", "absent": r"nowhere (\d+)"},
            "roles": {"inv": [{"reply": {"text": "round {iteration}, {absent}"}}]},
        }
    )
    m = match_request(script, view(messages=[user("[harness-role: inv] iteration 7 of 20")]))
    assert m.text == "round 7, {absent}"  # a capture that does not match is left as written
    with pytest.raises(ConfigError, match="capture 'bad'"):
        load_script({"captures": {"bad": "("}})


def test_tool_result_conditions_pick_rules() -> None:
    script = load_script(SCRIPT)
    base = [user("[harness-role: dev] go"), tool_use("t1", "Write")]
    ok = view(messages=[*base, tool_result("t1", "created")], tools=[READ_TOOL])
    assert match_request(script, ok).rule == "after write"
    bad = view(messages=[*base, tool_result("t1", "denied", is_error=True)], tools=[READ_TOOL])
    assert match_request(script, bad).rule == "failed"
    grep = [user("[harness-role: dev] go"), tool_use("t1", "Grep"), tool_result("t1", "x MATCH y")]
    assert match_request(script, view(messages=grep, tools=[READ_TOOL])).rule == "grep hit"


def test_turn_at_least_and_stop_reason() -> None:
    msgs: list[dict[str, Any]] = [user("[harness-role: dev] hurry")]
    for i in range(3):
        msgs += [{"role": "assistant", "content": f"a{i}"}, user("next")]
    m = match_request(load_script(SCRIPT), view(messages=msgs, tools=[READ_TOOL]))
    assert (m.rule, m.stop_reason) == ("late", "max_tokens")


def test_side_call_falls_to_default_and_does_not_shift_the_scenario() -> None:
    script = load_script(SCRIPT)
    prompt = user("[harness-role: dev] go")
    first = match_request(script, view(messages=[prompt], tools=[READ_TOOL]))
    side = match_request(
        script, view(messages=[user("<session>\n[harness-role: dev] go\n</session>")], tools=[])
    )
    again = match_request(script, view(messages=[prompt], tools=[READ_TOOL]))
    after = match_request(
        script,
        view(
            messages=[prompt, tool_use("t1", "Write"), tool_result("t1", "ok")], tools=[READ_TOOL]
        ),
    )
    assert first.rule == again.rule == "write"
    assert (
        side.rule == "default: title" and side.text == '{"title": "T"}' and side.role == "default"
    )
    assert after.rule == "after write"


def test_unmatched_names_role_and_state() -> None:
    script = load_script(SCRIPT)
    m = match_request(script, view(messages=[user("[harness-role: ghost] hi")], tools=[READ_TOOL]))
    assert m.unmatched is not None and "'ghost'" in m.unmatched and "no such role" in m.unmatched
    msgs = [user("[harness-role: dev] go"), tool_use("t1", "Bash"), tool_result("t1", "nothing")]
    m = match_request(script, view(messages=msgs, tools=[READ_TOOL]))
    assert m.unmatched is not None and "turn 1" in m.unmatched and "Bash(ok)" in m.unmatched
    assert match_request(None, view(messages=[user("x")])).unmatched == "no script is loaded"


# -- loader --------------------------------------------------------------------------------------
def test_shipped_smoke_script_loads_by_name() -> None:
    script = load_script("smoke")
    assert isinstance(script, Script)
    assert {"default", "dev-agent", "sdk-smoke"} <= set(script.roles)


def test_yaml_file_and_errors(tmp_path: Path) -> None:
    good = tmp_path / "s.yaml"
    good.write_text("roles:\n  default:\n    - reply: {text: hi}\n")
    assert load_script(good).roles["default"][0].reply.text == "hi"

    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text("roles: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_script(bad_yaml)
    with pytest.raises(ConfigError, match="cannot be read"):
        load_script(tmp_path / "missing.yaml")

    typo = tmp_path / "typo.yaml"
    typo.write_text("roles:\n  default:\n    - when: {turns: 1}\n      reply: {text: hi}\n")
    with pytest.raises(ConfigError, match=r"roles\.default\.0\.when\.turns"):
        load_script(typo)
    with pytest.raises(ConfigError, match="needs text, tool_calls or both"):
        load_script({"roles": {"default": [{"reply": {}}]}})
