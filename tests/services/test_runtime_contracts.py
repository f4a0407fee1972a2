"""L0/L1 for the runtimes: tool contracts, the write-path policy, the guard, stream-json parsing,
prices and the factory. Real files in tmp_path, real subprocesses; no model involved."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness_cli.agents import guard, tools
from harness_cli.agents.anthropic_loop import _batches
from harness_cli.agents.claude_code import ClaudeCodeRuntime, _Stream
from harness_cli.agents.factory import build_runtime, runtime_name
from harness_cli.agents.prompt_layout import FRAMING
from harness_cli.errors import ConfigError
from harness_cli.services.runtime import RunRequest, RunResult, Usage, cost_usd


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "case"
    folder.mkdir()
    (folder / "notes.txt").write_text("one\ntwo\nthree\n")
    (folder / "message.json").write_text('{"text": "ticket"}')
    (folder / "message.json").chmod(0o444)
    (tmp_path / "outside").mkdir()
    return folder


@pytest.fixture
def ctx(root: Path) -> tools.ToolContext:
    """The tools as a dev-agent run gets them: its folder readable, Bash in the sandbox."""
    from harness_cli.agents import sandbox

    home = root.parent / "agent-home"
    home.mkdir(exist_ok=True)
    box = sandbox.view_for(root, [root], [], home)
    return tools.ToolContext(root, root, time.monotonic() + 60, (root.resolve(),), box, home)


def call(ctx: tools.ToolContext, name: str, **args: Any) -> str:
    return tools.call(tools.TOOLS[name], ctx, args)


# -- the contract table ------------------------------------------------------------------------


def test_the_contract_table_names_effect_retry_and_timeout() -> None:
    table = {n: (c.effect, c.retry_safe) for n, c in tools.TOOLS.items()}
    assert table == {
        "Read": ("read-only", True),
        "Glob": ("read-only", True),
        "Grep": ("read-only", True),
        "Write": ("writes-file", False),
        "Edit": ("writes-file", False),
        "Bash": ("external", False),
    }
    assert all(0 < c.timeout_s <= 600 for c in tools.TOOLS.values())
    assert all(c.path_arg for c in tools.TOOLS.values() if c.effect == "writes-file")


def test_schemas_have_the_cli_shapes() -> None:
    schemas = {c.name: c.schema()["input_schema"] for c in tools.TOOLS.values()}
    assert schemas["Read"]["required"] == ["file_path"]
    assert set(schemas["Read"]["properties"]) == {"file_path", "offset", "limit"}
    assert schemas["Write"]["required"] == ["file_path", "content"]
    assert set(schemas["Edit"]["properties"]) == {
        "file_path",
        "old_string",
        "new_string",
        "replace_all",
    }
    assert schemas["Bash"]["required"] == ["command"]
    assert schemas["Glob"]["required"] == ["pattern"] == schemas["Grep"]["required"]


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("Read", {}, "missing required parameter 'file_path'"),
        ("Read", {"file_path": 3}, "'file_path' must be a string"),
        ("Read", {"file_path": "x", "limit": True}, "'limit' must be a integer"),
        ("Write", {"file_path": "x", "content": "y", "mode": "w"}, "unknown parameter 'mode'"),
        ("Bash", ["ls"], "input must be an object"),
    ],
)
def test_bad_arguments_are_refused_before_running(
    ctx: tools.ToolContext, name: str, args: Any, message: str
) -> None:
    with pytest.raises(tools.ToolFailure, match=message):
        tools.call(tools.TOOLS[name], ctx, args)


def test_consecutive_reads_share_a_batch_and_everything_else_runs_alone() -> None:
    names = ["Read", "Grep", "Write", "Read", "Bash", "Nope", "Glob", "Read", "Edit"]
    calls = [{"id": str(i), "name": n, "input": {}} for i, n in enumerate(names)]
    batches = _batches(calls, tools.TOOLS)
    assert [[c["name"] for c in b] for b in batches] == [
        ["Read", "Grep"],
        ["Write"],
        ["Read"],
        ["Bash"],
        ["Nope"],
        ["Glob", "Read"],
        ["Edit"],
    ]


# -- the write-path policy ----------------------------------------------------------------------


def test_writes_inside_the_root_work_relative_or_absolute(ctx: tools.ToolContext) -> None:
    call(ctx, "Write", file_path="sub/dir/new.txt", content="a")
    call(ctx, "Write", file_path=str(ctx.workdir / "abs.txt"), content="b")
    assert (ctx.workdir / "sub/dir/new.txt").read_text() == "a"
    assert (ctx.workdir / "abs.txt").read_text() == "b"


@pytest.mark.parametrize("target", ["../outside/x.txt", "/tmp/harness-escape.txt", "sub/../../x"])
def test_writes_outside_the_root_are_refused(ctx: tools.ToolContext, target: str) -> None:
    with pytest.raises(tools.ToolFailure, match=r"refused: .* outside"):
        call(ctx, "Write", file_path=target, content="x")
    assert not Path(os.path.normpath(ctx.workdir / target)).exists()


def test_a_symlink_cannot_carry_a_write_outside(ctx: tools.ToolContext, root: Path) -> None:
    (root / "door").symlink_to(root.parent / "outside")
    (root / "link.txt").symlink_to(root.parent / "outside" / "target.txt")
    for target in ("door/x.txt", "link.txt"):
        with pytest.raises(tools.ToolFailure, match="outside"):
            call(ctx, "Write", file_path=target, content="x")
    with pytest.raises(tools.ToolFailure, match="outside"):
        call(ctx, "Edit", file_path="link.txt", old_string="a", new_string="b")
    assert list((root.parent / "outside").iterdir()) == []


def test_message_json_is_never_writable(ctx: tools.ToolContext, root: Path) -> None:
    with pytest.raises(tools.ToolFailure, match="read-only"):
        call(ctx, "Write", file_path="message.json", content="{}")
    with pytest.raises(tools.ToolFailure, match="read-only"):
        call(ctx, "Edit", file_path="./sub/../message.json", old_string="ticket", new_string="x")
    call(ctx, "Write", file_path="fixtures/message.json", content="{}")  # only the case's own
    assert (root / "message.json").read_text() == '{"text": "ticket"}'


# -- each tool ---------------------------------------------------------------------------------


def test_read_numbers_lines_and_honours_offset_and_limit(ctx: tools.ToolContext) -> None:
    assert call(ctx, "Read", file_path="notes.txt") == "1\tone\n2\ttwo\n3\tthree"
    assert call(ctx, "Read", file_path="notes.txt", offset=2, limit=1) == "2\ttwo"
    (ctx.workdir / "blob.bin").write_bytes(b"\x00\x01")
    for bad, why in (("blob.bin", "binary"), ("nope.txt", "does not exist"), (".", "regular")):
        with pytest.raises(tools.ToolFailure, match=why):
            call(ctx, "Read", file_path=bad)


def test_edit_needs_a_unique_match_unless_replace_all(ctx: tools.ToolContext) -> None:
    (ctx.workdir / "e.txt").write_text("x = 1\nx = 1\n")
    with pytest.raises(tools.ToolFailure, match="Found 2 matches"):
        call(ctx, "Edit", file_path="e.txt", old_string="x = 1", new_string="x = 2")
    with pytest.raises(tools.ToolFailure, match="not found"):
        call(ctx, "Edit", file_path="e.txt", old_string="y", new_string="z")
    call(ctx, "Edit", file_path="e.txt", old_string="x = 1", new_string="x = 2", replace_all=True)
    assert (ctx.workdir / "e.txt").read_text() == "x = 2\nx = 2\n"


def test_glob_and_grep_search_the_workdir_and_skip_git(ctx: tools.ToolContext) -> None:
    (ctx.workdir / "pkg").mkdir()
    (ctx.workdir / "pkg" / "mod.py").write_text("def bulk_discount():\n    return 0\n")
    (ctx.workdir / ".git").mkdir()
    (ctx.workdir / ".git" / "x.py").write_text("def bulk_discount(): ...\n")
    assert call(ctx, "Glob", pattern="**/*.py") == str(ctx.workdir / "pkg" / "mod.py")
    assert call(ctx, "Grep", pattern=r"def bulk_\w+") == str(ctx.workdir / "pkg" / "mod.py")
    hits = call(ctx, "Grep", pattern="return", glob="*.py", output_mode="content")
    assert hits == f"{ctx.workdir / 'pkg' / 'mod.py'}:2:    return 0"
    assert call(ctx, "Grep", pattern="nothing-here") == "No matches found"


def test_bash_reports_failures_and_hides_secrets(
    ctx: tools.ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITLAB_TOKEN", "glpat-secretsecret")
    monkeypatch.setenv("HARNESS_VISIBLE", "yes")
    out = call(ctx, "Bash", command="env")
    assert f"HOME={ctx.home}" in out  # a scratch HOME, and none of the harness's variables
    assert "HARNESS_VISIBLE" not in out and "glpat-secretsecret" not in out
    assert call(ctx, "Bash", command="pwd").strip() == str(ctx.workdir)
    with pytest.raises(tools.ToolFailure, match="Exit code 3"):
        call(ctx, "Bash", command="echo oops; exit 3")


def test_bash_timeout_kills_the_whole_process_group(ctx: tools.ToolContext) -> None:
    marker = ctx.workdir / "late.txt"
    started = time.monotonic()
    with pytest.raises(tools.ToolFailure, match="timed out"):
        call(ctx, "Bash", command=f"(sleep 1.5; touch {marker}) & sleep 30", timeout=300)
    assert time.monotonic() - started < 3
    time.sleep(1.7)
    assert not marker.exists()  # the background child died with its group


def test_only_retry_safe_tools_are_tried_again(ctx: tools.ToolContext) -> None:
    attempts: list[str] = []

    def flaky(_: tools.ToolContext, args: dict[str, Any]) -> str:
        attempts.append(args["file_path"])
        if len(attempts) % 2:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return "ok"

    reader = tools.ToolContract(
        "R", "read-only", True, 1, "", tools.TOOLS["Read"].properties, ("file_path",), flaky
    )
    assert tools.call(reader, ctx, {"file_path": "a"}) == "ok" and len(attempts) == 2
    writer = tools.ToolContract(
        "W",
        "writes-file",
        False,
        1,
        "",
        tools.TOOLS["Write"].properties,
        ("file_path",),
        flaky,
        path_arg="file_path",
    )
    with pytest.raises(tools.ToolFailure, match="temporarily unavailable"):
        tools.call(writer, ctx, {"file_path": "b", "content": ""})
    assert len(attempts) == 3


# -- the guard ---------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A protected repo-like tree with the allowed root inside it."""
    repo = tmp_path / "repo"
    for rel, text in {
        "src/app.py": "print('app')\n",
        "src/util.py": "X = 1\n",
        "docs/old/readme.md": "old\n",
        ".git/HEAD": "ref: refs/heads/main\n",
        "cases/c1/message.json": '{"text": "t"}',
        "cases/c1/notes.md": "n\n",
    }.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / "src/app.py").chmod(0o755)
    (repo / "cases/c1/message.json").chmod(0o444)
    (repo / "link").symlink_to("src/app.py")
    return repo


def test_guard_puts_back_everything_outside_the_allowed_root(tree: Path) -> None:
    case = tree / "cases/c1"
    snap = guard.snapshot([tree], case, case)
    app_mtime = (tree / "src/app.py").stat().st_mtime_ns
    (tree / "src/app.py").write_text("hacked\n")
    (tree / "src/app.py").chmod(0o644)
    (tree / "src/util.py").unlink()
    (tree / "stray.txt").write_text("x")
    (tree / "newdir/deep").mkdir(parents=True)
    (tree / "newdir/deep/f").write_text("x")
    for item in (tree / "docs").rglob("*"):
        if item.is_file():
            item.unlink()
    (tree / "docs/old").rmdir()
    (tree / "link").unlink()
    (tree / "link").symlink_to("src/util.py")
    (tree / ".git/HEAD").write_text("ref: refs/heads/agent\n")  # a worktree commit: kept
    (case / "notes.md").write_text("the agent's own work\n")  # allowed: kept
    (case / "message.json").unlink()
    (case / "message.json").write_text("forged")

    reverted = guard.revert_outside(case, snap)

    assert (tree / "src/app.py").read_text() == "print('app')\n"
    assert stat.S_IMODE((tree / "src/app.py").stat().st_mode) == 0o755
    assert (tree / "src/app.py").stat().st_mtime_ns == app_mtime
    assert (tree / "src/util.py").read_text() == "X = 1\n"
    assert (tree / "docs/old/readme.md").read_text() == "old\n"
    assert os.readlink(tree / "link") == "src/app.py"
    assert not (tree / "stray.txt").exists() and not (tree / "newdir").exists()
    assert (tree / ".git/HEAD").read_text() == "ref: refs/heads/agent\n"
    assert (case / "notes.md").read_text() == "the agent's own work\n"
    assert (case / "message.json").read_text() == '{"text": "t"}'
    assert stat.S_IMODE((case / "message.json").stat().st_mode) == 0o444
    assert set(reverted) == {
        str(tree / "src/app.py"),
        str(tree / "src/util.py"),
        str(tree / "docs/old/readme.md"),
        str(tree / "link"),
        str(tree / "stray.txt"),
        f"{tree / 'newdir'}/",
        str(case / "message.json"),
    }
    assert guard.revert_outside(case, guard.snapshot([tree], case, case)) == []


def test_guard_ignores_a_touch_and_reports_what_it_cannot_restore(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guard, "MAX_FILE_BYTES", 6)
    case = tree / "cases/c1"
    snap = guard.snapshot([tree], case, case)
    os.utime(tree / "src/util.py", ns=(1, 1))  # same bytes, new mtime: not a change
    (tree / "src/app.py").write_text("bigger than six bytes\n")
    reverted = guard.revert_outside(case, snap)
    assert reverted == [f"{tree / 'src/app.py'} (not restored: too large to snapshot)"]


def test_guarded_reverts_even_when_the_run_raises(tree: Path) -> None:
    case = tree / "cases/c1"
    req = RunRequest(role="t", prompt="p", workdir=case, allowed_root=case, protect=(tree,))

    def body() -> RunResult:
        (tree / "stray.txt").write_text("x")
        raise RuntimeError("runtime crashed")

    with pytest.raises(RuntimeError):
        guard.guarded(req, body)
    assert not (tree / "stray.txt").exists()


# -- the claude-code runtime without the CLI ---------------------------------------------------


def test_a_missing_claude_binary_says_how_to_install(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARNESS_CLAUDE_BIN", str(root / "no-such-claude"))
    with pytest.raises(ConfigError) as err:
        ClaudeCodeRuntime().run(RunRequest(role="r", prompt="p", workdir=root, allowed_root=root))
    assert "make claude-cli" in err.value.line() and "HARNESS_CLAUDE_BIN" in err.value.line()


def test_the_claude_command_line(root: Path) -> None:
    req = RunRequest(
        role="investigator",
        prompt="look",
        workdir=root,
        allowed_root=root,
        max_turns=7,
        disallowed_tools=("Bash", "WebFetch"),
        system="extra",
        cache_prefix=("SOP", "KB"),
        mcp_config=root / "mcp.json",
        session_id="abc",
    )
    args = ClaudeCodeRuntime(model="m1").command(Path("/bin/claude"), req)
    # the prompt comes on stdin, one stream-json user message: the role's framing (its rules)
    # with a breakpoint, this run's own facts, the prompt — the working directory and the
    # role stay out of the system prompt, the same for every role of the case (prompt_layout)
    assert args[:2] == ["/bin/claude", "-p"]
    assert args[args.index("--input-format") + 1] == "stream-json"
    line = json.loads(ClaudeCodeRuntime.user_message(req))
    assert line["type"] == "user" and line["message"]["role"] == "user"
    framing, facts, prompt = line["message"]["content"]
    assert framing == {"type": "text", "text": "extra", "cache_control": {"type": "ephemeral"}}
    assert prompt == {"type": "text", "text": "[harness-role: investigator] look"}
    assert facts["text"].startswith(f"Working directory: {root}\nWritable folder: {root} ")
    assert args[args.index("--output-format") + 1] == "stream-json" and "--verbose" in args
    # every run edits only inside its folder (acceptEdits) and reads only its roots: no
    # blanket Read allow, the shell and the Slack writes denied by the one policy
    assert args[args.index("--permission-mode") + 1] == "acceptEdits"
    assert "--allowedTools" not in args and "Read" not in args
    assert args[args.index("--setting-sources") + 1] == "user"
    assert "--strict-mcp-config" in args
    assert args[args.index("--max-turns") + 1] == "7"
    denied = args[args.index("--disallowedTools") + 1].split(",")
    assert denied[:2] == ["Bash", "WebFetch"]
    assert any(d.startswith("Read(//") and d.endswith(".ssh/**)") for d in denied)
    # a role without a shell: the harness's framing replaces the CLI's system prompt, and only
    # the built-in tools the harness's own loop would offer it are sent
    assert args[args.index("--system-prompt") + 1] == f"{FRAMING}\n\nSOP\n\nKB"
    assert "--append-system-prompt" not in args
    assert args[args.index("--tools") + 1] == "Read,Glob,Grep,Write,Edit"
    assert args[args.index("--mcp-config") + 1] == str(root / "mcp.json")
    assert args[args.index("--session-id") + 1] == "abc" and "--resume" not in args
    assert args[args.index("--model") + 1] == "m1"
    resumed_req = RunRequest(
        role="r",
        prompt="[harness-role: x] go",
        workdir=root,
        allowed_root=root,
        session_id="abc",
        resume=True,
    )
    resumed = ClaudeCodeRuntime().command(Path("c"), resumed_req)
    assert "--session-id" not in resumed
    # the facts were given in its first turn
    [only] = json.loads(ClaudeCodeRuntime.user_message(resumed_req))["message"]["content"]
    assert only == {"type": "text", "text": "[harness-role: x] go"}
    assert resumed[resumed.index("--resume") + 1] == "abc"
    os.environ.update(ANTHROPIC_API_KEY="sk-ant-contract", GITLAB_TOKEN="glpat-contract0000")
    try:
        env = ClaudeCodeRuntime(env={"X": "1"}).environment()
    finally:
        del os.environ["ANTHROPIC_API_KEY"], os.environ["GITLAB_TOKEN"]
    assert env["DISABLE_TELEMETRY"] == env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["X"] == "1" and (env.get("IS_SANDBOX") == "1") == (os.geteuid() == 0)
    # no token of the harness's, and the model key only through apiKeyHelper
    assert "ANTHROPIC_API_KEY" not in env and "GITLAB_TOKEN" not in env
    # paying per token: no per-prompt attribution block in front of the cached prefix; no
    # memory folder of the CLI's own; on the CLI's own login the attribution stays
    assert env["CLAUDE_CODE_ATTRIBUTION_HEADER"] == "0"
    assert env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    saved = {
        k: os.environ.pop(k)
        for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
        if k in os.environ
    }
    try:
        assert "CLAUDE_CODE_ATTRIBUTION_HEADER" not in ClaudeCodeRuntime().environment()
    finally:
        os.environ.update(saved)


STREAM = [
    {"type": "system", "subtype": "init", "session_id": "s-1", "model": "claude-x", "tools": []},
    {"type": "some_future_event", "payload": 1},
    {
        "type": "assistant",
        "message": {
            "id": "m1",
            "usage": {"input_tokens": 10},
            "content": [{"type": "text", "text": "Looking."}],
        },
    },
    {
        "type": "assistant",
        "message": {
            "id": "m1",
            "usage": {"input_tokens": 10},
            "content": [
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}}
            ],
        },
    },
    {
        "type": "user",
        "message": {
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [{"type": "text", "text": "1\tx"}],
                    "is_error": False,
                }
            ]
        },
    },
    {"type": "system", "subtype": "api_retry", "attempt": 1},
]


def _parse(final: dict[str, Any] | None, **finish: Any) -> RunResult:
    req = RunRequest(role="r", prompt="p", workdir=Path("."), allowed_root=Path("."))
    stream = _Stream(req, None)
    for obj in [*STREAM, *([final] if final else [])]:
        stream.feed_line(json.dumps(obj))
    stream.feed_line("not json at all")
    return stream.finish(finish.get("code", 0), finish.get("killed", False), finish.get("err", ""))


def test_stream_json_is_read_tolerantly() -> None:
    usage = {"input_tokens": 5, "output_tokens": 7, "cache_read_input_tokens": 100}
    final = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "All done.",
        "num_turns": 2,
        "total_cost_usd": 0.25,
        "usage": usage,
    }
    result = _parse(final)
    assert (result.stop, result.text, result.session_id) == ("end_turn", "All done.", "s-1")
    assert (result.turns, result.cost_usd) == (2, 0.25)
    assert result.usage == Usage(input=5, output=7, cache_read=100)
    (tool,) = result.tool_events
    assert (tool.name, tool.output, tool.is_error, tool.done) == ("Read", "1\tx", False, True)


@pytest.mark.parametrize(
    ("final", "finish", "stop", "error"),
    [
        ({"type": "result", "subtype": "error_max_turns", "is_error": True}, {}, "max_turns", None),
        (
            {
                "type": "result",
                "subtype": "error_during_execution",
                "is_error": True,
                "result": "API Error: 400",
            },
            {},
            "error",
            "error_during_execution: API Error: 400",
        ),
        (None, {"code": 1, "err": "boom sk-ant-abcdefghijkl"}, "error", "[REDACTED]"),
        (None, {"code": -9, "killed": True}, "timeout", "wall clock"),
    ],
)
def test_stream_endings_map_to_stops(
    final: dict[str, Any] | None, finish: dict[str, Any], stop: str, error: str | None
) -> None:
    result = _parse(final, **finish)
    assert result.stop == stop
    assert (result.error is None) if error is None else (error in str(result.error))
    if final is None:  # no totals from a result event: the per-message usage is summed
        assert result.usage.input == 10 and result.text == "Looking."


# -- shared data, prices, factory --------------------------------------------------------------


def test_the_role_marker_is_added_once(root: Path) -> None:
    plain = RunRequest(role="red-team", prompt="attack", workdir=root, allowed_root=root)
    assert plain.role_prompt() == "[harness-role: red-team] attack"
    marked = RunRequest(role="x", prompt="[harness-role: y] hi", workdir=root, allowed_root=root)
    assert marked.role_prompt() == "[harness-role: y] hi"


def test_prices_per_family_with_cache_factors() -> None:
    million = Usage(input=1_000_000)
    assert cost_usd("claude-sonnet-4-6", million) == pytest.approx(3.0)
    assert cost_usd("claude-opus-4-6", million) == pytest.approx(5.0)  # longest prefix wins
    assert cost_usd("claude-opus-4-1", million) == pytest.approx(15.0)
    assert cost_usd("some-new-model", million) == pytest.approx(3.0)
    cached = Usage(cache_creation=1_000_000, cache_read=1_000_000, output=1_000_000)
    assert cost_usd("claude-haiku-4-5", cached) == pytest.approx(1.25 + 0.1 + 5.0)


def test_the_factory_picks_by_name_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert build_runtime("anthropic").name == "anthropic"
    assert build_runtime("claude-code").name == "claude-code"
    assert runtime_name("anthropic") == "anthropic" and runtime_name("claude-code") == "claude-code"
    # unset: the claude CLI when there is one, else the harness's own loop
    monkeypatch.setenv("HARNESS_CLAUDE_BIN", "/bin/true")
    assert runtime_name(None) == "claude-code"
    monkeypatch.setenv("HARNESS_CLAUDE_BIN", "/nonexistent/claude")
    assert runtime_name(None) == "anthropic"
    monkeypatch.setenv("HARNESS_RUNTIME", "anthropic")
    assert runtime_name("claude-code") == "anthropic" and build_runtime().name == "anthropic"
    with pytest.raises(ConfigError, match="unknown runtime 'gpt'"):
        build_runtime("gpt")


def test_building_the_anthropic_runtime_does_not_import_the_sdk() -> None:
    code = (
        "import sys; from harness_cli.agents.factory import build_runtime; "
        "build_runtime('anthropic'); print('anthropic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_run_with_bash_gets_the_shell_only_inside_the_clis_sandbox(tmp_path: Path) -> None:
    """The dev-agent keeps acceptEdits (no bypassPermissions: that would read anywhere); its
    Bash is allowed and runs in the CLI's sandbox, set by the --settings file."""
    from harness_cli.agents.claude_code import ClaudeCodeRuntime
    from harness_cli.services.runtime import RunRequest

    req = RunRequest(role="dev-agent", prompt="p", workdir=tmp_path, allowed_root=tmp_path)
    settings = tmp_path / "settings.json"
    args = ClaudeCodeRuntime().command(tmp_path / "claude", req, settings=settings)
    assert args[args.index("--permission-mode") + 1] == "acceptEdits"
    assert args[args.index("--allowedTools") + 1] == "Bash"
    assert args[args.index("--settings") + 1] == str(settings)
    # a role with a shell keeps the CLI's own guidance, the harness's parts appended, and the
    # CLI's per-machine sections (cwd, git status) move out of its system prompt
    assert args[args.index("--tools") + 1] == "Read,Glob,Grep,Write,Edit,Bash"
    assert args[args.index("--append-system-prompt") + 1].startswith("You are an engineering")
    assert "--exclude-dynamic-system-prompt-sections" in args and "--system-prompt" not in args
    denied = args[args.index("--disallowedTools") + 1].split(",")
    assert "Bash" not in denied and f"Read({'//' + str(tmp_path).lstrip('/')}/key)" in denied
