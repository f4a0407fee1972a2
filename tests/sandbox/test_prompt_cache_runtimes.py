"""#22: the prompt prefix stays the same from call to call, so the prompt cache serves it — on
the real claude CLI and on the harness's own loop, against the emulator's honest cache (a
prefix is read only when it is byte-identical up to a breakpoint).

For each role: a second call in another folder (another case, another staged reviewer folder,
another commit of the same worktree) reads everything before its messages — tools and system
— from the cache. And one whole investigation costs the claude CLI at most twice what it
costs the harness's own loop (on main: ~13x)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness_cli.agents import sandbox
from harness_cli.agents.factory import build_runtime
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.sandbox.anthropic_usage import count_input_tokens, min_cacheable_tokens
from harness_cli.services.claude_cli import find_claude
from harness_cli.services.runtime import RunRequest, Usage, cost_usd

CLI = [
    pytest.mark.claude_cli,
    pytest.mark.slow,
    pytest.mark.skipif(find_claude() is None, reason="claude CLI not found: run `make claude-cli`"),
]
RUNTIMES = [pytest.param("claude-code", marks=CLI), "anthropic"]
SOP = "\n".join(
    f"SOP step {i}: check the logs, the metrics and the recent deploys." for i in range(60)
)
ANSWER: dict[str, Any] = {"roles": {"default": [{"reply": {"text": "done"}}]}}
FORBIDDEN = ("Bash", "Write", "Edit")
"""The reviewers' policy (``runs.reviewer_disallowed``): they read and answer."""


@pytest.fixture(scope="module")
def server() -> Iterator[AnthropicEmulator]:
    emulator = AnthropicEmulator()
    emulator.start()
    yield emulator
    emulator.stop()


@pytest.fixture
def emu(
    server: AnthropicEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AnthropicEmulator:
    server.reset()
    server.load_script(ANSWER)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-prefix")
    (tmp_path / "home").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return server


def _folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "message.json").write_text('{"text": "a ticket"}\n')
    return path


def _bodies(emu: AnthropicEmulator) -> list[dict[str, Any]]:
    return [r.json_body() for r in emu.recorded("/v1/messages")]


def _prefix_tokens(body: dict[str, Any]) -> int:
    """Tokens before the first message: the tools and the system prompt."""
    return count_input_tokens({**body, "messages": []})


def _assert_second_reads_its_whole_prefix(emu: AnthropicEmulator) -> None:
    first, second = _bodies(emu)[:2]
    assert first.get("tools") == second.get("tools")
    assert first.get("system") == second.get("system"), "the system prompt changed"
    read, prefix = emu.calls[1].usage["cache_read_input_tokens"], _prefix_tokens(second)
    if prefix < min_cacheable_tokens(str(second["model"])):
        assert read == 0  # too short to be cached at all (the API's minimum): nothing to win
    else:
        assert read >= prefix, (read, prefix)


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize(
    ("role", "denied", "prefix"),
    [("investigator", (), (SOP,)), ("red-team", FORBIDDEN, ())],
    ids=["case-role", "reviewer"],
)
def test_a_roles_next_call_in_another_folder_reads_its_whole_prefix_from_the_cache(
    runtime: str,
    role: str,
    denied: tuple[str, ...],
    prefix: tuple[str, ...],
    emu: AnthropicEmulator,
    tmp_path: Path,
) -> None:
    """Two cases of one project for a case role; two fresh staged folders for a reviewer."""
    for n, prompt in enumerate(("first question", "another question")):
        where = _folder(tmp_path / f"folder-{n}" / f"harness-{role}-{n}x7q")
        result = build_runtime(runtime).run(
            RunRequest(
                role=role,
                prompt=f"[harness-role: {role}] {prompt}",
                workdir=where,
                allowed_root=where,
                disallowed_tools=denied,
                cache_prefix=prefix,
            )
        )
        assert result.stop == "end_turn", result.error
    _assert_second_reads_its_whole_prefix(emu)


ROLE_CONTEXT = "\n".join(f"Ticket line {i}: 10 units at 5.00 charged 50.00." for i in range(60))


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_another_roles_first_call_in_the_case_reads_the_shared_prefix(
    runtime: str, emu: AnthropicEmulator, tmp_path: Path
) -> None:
    """precommit, then the investigator, in one case: each with its own framing (context,
    rules), the same SOP/KB. The investigator's first call reads the tools and the system
    prompt precommit wrote — its framing comes after them — and its next round its framing."""
    case = _folder(tmp_path / "workspace" / "cases" / "AAA-101")
    calls = [("precommit", "", "the slate"), ("investigator", ROLE_CONTEXT, "iteration 1")]
    calls.append(("investigator", ROLE_CONTEXT, "iteration 2, with guard notes"))
    for role, context, prompt in calls:
        result = build_runtime(runtime).run(
            RunRequest(
                role=role,
                prompt=f"[harness-role: {role}] {prompt}",
                workdir=case,
                allowed_root=case,
                disallowed_tools=("Bash",),
                cache_prefix=(SOP,),
                context=context,
                system=f"The {role}'s standing rules.",
            )
        )
        assert result.stop == "end_turn", result.error
    bodies = _bodies(emu)
    assert bodies[0].get("tools") == bodies[1].get("tools")
    assert bodies[0].get("system") == bodies[1].get("system"), "the system prompt changed"
    assert ROLE_CONTEXT not in json.dumps(bodies[1].get("system"))
    read, prefix = emu.calls[1].usage["cache_read_input_tokens"], _prefix_tokens(bodies[1])
    assert prefix >= min_cacheable_tokens(str(bodies[1]["model"]))
    assert read >= prefix, (read, prefix)
    # the next round of the role: its framing too, whatever its prompt says
    framing = len(ROLE_CONTEXT) // 4
    assert emu.calls[2].usage["cache_read_input_tokens"] >= prefix + framing


@pytest.mark.skipif(
    find_claude() is None or sandbox.problem("claude-code") is not None,
    reason="needs the claude CLI and its sandbox (bubblewrap, socat)",
)
@pytest.mark.claude_cli
@pytest.mark.slow
def test_runs_with_a_shell_in_one_worktree_share_their_prefix_across_commits(
    emu: AnthropicEmulator, tmp_path: Path
) -> None:
    """The dev-agent's task run, then its fix_ci run after a commit: the CLI's Bash tool lists
    its sandbox's folders, and its system prompt the git status — neither may move."""
    tree = _folder(tmp_path / "worktrees" / "case-AAA-101")
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    for n, mode in enumerate(("task", "fix_ci")):
        (tree / f"change-{n}.txt").write_text(f"{mode}\n")
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", f"{mode} commit"], check=True)
        result = build_runtime("claude-code").run(
            RunRequest(
                role="dev-agent",
                prompt=f"[harness-role: dev-agent] mode {mode}",
                workdir=tree,
                allowed_root=tree,
            )
        )
        assert result.stop == "end_turn", result.error
    assert "Bash" in {t["name"] for t in _bodies(emu)[0]["tools"]}
    _assert_second_reads_its_whole_prefix(emu)


def _cost(emu: AnthropicEmulator) -> tuple[float, float]:
    """($ of the run priced from the wire, share read from the cache from request two on)."""
    models = [str(b.get("model")) for b in _bodies(emu)]
    usd = sum(cost_usd(m, Usage.from_api(c.usage)) for m, c in zip(models, emu.calls, strict=True))
    later = Usage()
    for call in emu.calls[1:]:
        later.add(Usage.from_api(call.usage))
    return usd, later.cache_read / max(1, later.input + later.cache_creation + later.cache_read)


@pytest.mark.claude_cli
@pytest.mark.slow
@pytest.mark.skipif(find_claude() is None, reason="claude CLI not found: run `make claude-cli`")
def test_an_investigation_costs_the_claude_cli_at_most_twice_the_api_runtime(
    server: AnthropicEmulator,
) -> None:
    """`harness investigate` + `harness review` of the honest case, same scripted model."""
    from harness_cli.eval.cases import load_library
    from harness_cli.eval.grader import check
    from harness_cli.eval.investigation_driver import run_case

    [case] = [c for c in load_library() if c.id == "honest-complete"]
    spent = {}
    for runtime in ("claude-code", "anthropic"):
        seen = run_case(case, runtime, anthropic=server)
        assert not check(case, seen), check(case, seen)
        spent[runtime] = _cost(server)
    (cli, cli_read), (api, _) = spent["claude-code"], spent["anthropic"]
    assert cli <= 2 * api, f"claude-code ${cli:.4f} against anthropic ${api:.4f}"
    assert cli_read >= 0.6, f"only {cli_read:.0%} of the input read from the cache"
