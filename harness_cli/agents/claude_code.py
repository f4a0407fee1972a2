"""The claude CLI as the runtime: ``claude -p … --output-format stream-json``, parsed live.

The CLI runs its own tool loop; we give it the limits (turns, disallowed tools, a hard wall
clock enforced by killing its process group) and read its events as they come. Event types
and fields change between CLI versions (CLAUDE-CLI-FACTS.md), so unknown ones are skipped and
missing fields are tolerated; only ``result`` is authoritative for totals.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from harness_cli import bounded, redaction
from harness_cli.agents import (
    cgroups,
    guard,
    lifetime,
    limits,
    mcp_contracts,
    policy,
    prompt_layout,
    sandbox,
)
from harness_cli.agents.mcp_settings import McpSettings
from harness_cli.agents.sandbox_settings import LimitSettings, SandboxSettings
from harness_cli.errors import ConfigError
from harness_cli.logs import event, redact
from harness_cli.services.claude_cli import PINNED_VERSION, find_claude
from harness_cli.services.runtime import (
    OUTPUT_KEEP,
    RunRequest,
    RunResult,
    ToolEvent,
    Usage,
    cost_usd,
)

log = logging.getLogger("harness.agents.claude_code")

STDERR_KEEP = 4000
EVENT_MAX_BYTES = 16 << 20
"""One stream-json line is read at most this far (#28 R10): the CLI cuts its tools' output,
but nothing else bounds a line; a longer one is skipped, not held."""
ALWAYS_ENV = {
    "DISABLE_TELEMETRY": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "MCP_CONNECTION_NONBLOCKING": "false",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
}
"""Without the second the CLI makes a title side call and tries the public API host. The third:
in ``-p`` mode the CLI otherwise sends its first request before a slow MCP server has
connected, and the run never sees that server's tools (a loaded machine, a cold Python
server); blocking, the first request waits for the servers (up to MCP_TIMEOUT). The fourth
turns off the CLI's own memory, a folder outside every role whose path (in the system prompt)
changed with the working directory — a case's state lives in the case, not there."""
KEYED_ENV = {"CLAUDE_CODE_ATTRIBUTION_HEADER": "0"}
"""For a run paying per token with an API key: no attribution block, the first system block,
which holds a fingerprint of each prompt (``cc_version=….<hash>``) and so made every run's
prefix new. A run on the CLI's own login keeps it (a subscription's requests carry it)."""
PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
KEY_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
"""Never in the CLI's environment (its Bash and ``/proc/<pid>/environ`` would show them): the
key reaches it through ``apiKeyHelper``, a file only the CLI itself reads."""


class ClaudeCodeRuntime:
    name = "claude-code"

    def __init__(
        self,
        *,
        model: str | None = None,
        binary: Path | None = None,
        env: Mapping[str, str] | None = None,
        sandbox_settings: SandboxSettings | None = None,
        worktrees: Path | None = None,
        mcp_settings: McpSettings | None = None,
        mcp_result_bytes: int = 1_000_000,
    ) -> None:
        """``binary`` defaults to ``find_claude()``; ``env`` is added to the CLI's own small
        environment (``environment()``); ``sandbox_settings``: harness.yaml's ``sandbox:``;
        ``worktrees``: where the cases' worktrees live (outside every run)."""
        self.model = model
        self.binary = binary
        self.env = dict(env or {})
        self.sandbox = sandbox_settings or SandboxSettings()
        self.worktrees = worktrees or policy.default_worktrees()
        self.mcp = mcp_settings or McpSettings()
        self.mcp_result_bytes = mcp_result_bytes

    def run(self, req: RunRequest) -> RunResult:
        binary = self.binary or find_claude()
        if binary is None:
            raise ConfigError(
                "the claude CLI is not installed",
                hint=f"run `make claude-cli` (pins {PINNED_VERSION}) or set HARNESS_CLAUDE_BIN",
            )
        req = self.mcp_policy(req)
        boxed = policy.shell_allowed(req) and sandbox.required_box(
            self.name, self.sandbox, req.role
        )
        # A boxed run's folder paths are in its Bash tool's definition, part of the prompt:
        # the same private folder for every boxed run in this workdir keeps them the same.
        digest = hashlib.sha256(os.path.realpath(req.workdir).encode()).hexdigest()[:16]
        with sandbox.scratch(digest if boxed else None) as folder:
            settings = self._settings(req, folder, boxed)
            shell = policy.shell_allowed(req)
            return guard.guarded(req, lambda: self._run(binary, req, folder, settings, shell))

    def mcp_env(self) -> dict[str, str]:
        """harness.yaml's ``mcp:`` bounds, in the CLI's own words (2.1.x reads these): by default
        it does not wait for its MCP servers before the first turn, so a stdio server slower to
        start than the model to answer is "still connecting" when the model calls it. Here it
        waits up to ``start_timeout_s``, and each call is bounded by ``timeout_s`` — the limits
        the harness's own client applies."""
        return {
            "MCP_CONNECTION_NONBLOCKING": "false",
            "MCP_CONNECT_TIMEOUT_MS": str(int(self.mcp.start_timeout_s * 1000)),
            "MCP_TIMEOUT": str(int(self.mcp.start_timeout_s * 1000)),
            "MCP_TOOL_TIMEOUT": str(int(self.mcp.timeout_s * 1000)),
        }

    def mcp_policy(self, req: RunRequest) -> RunRequest:
        """The same MCP policy as the harness's own loop (``mcp_contracts``): a role without
        MCP gets no ``--mcp-config``; for the others the catalog is listed once and every tool
        the role's contracts refuse goes on the deny list (``--disallowedTools`` wins over the
        per-server allow)."""
        if req.mcp_config is None:
            return req
        if not mcp_contracts.role_gets_mcp(req.role):
            return dataclasses.replace(req, mcp_config=None)
        # The MCP client (httpx, the SDK) loads only for a run that has servers.
        from harness_cli.agents import mcp_client

        servers = mcp_client.load_servers(req.mcp_config)
        if not servers:
            return req
        withheld, failed = mcp_client.withheld_for(
            servers, self.mcp, req.role, self.mcp_result_bytes
        )
        event(log, "mcp_catalog", role=req.role, withheld=sorted(withheld), failed=failed)
        return dataclasses.replace(req, disallowed_tools=(*req.disallowed_tools, *withheld))

    def _settings(self, req: RunRequest, folder: Path, boxed: bool) -> Path:
        """The run's ``--settings`` file: the Bash sandbox (for a run with a shell) and the
        ``apiKeyHelper`` reading the key from a file in the run's private folder."""
        key = _api_key()
        helper = None
        if key:
            key_file = folder / "key"
            key_file.write_text(key, encoding="utf-8")
            key_file.chmod(0o600)
            helper = f"cat {key_file}"
        data: dict[str, Any] = {"apiKeyHelper": helper} if helper else {}
        if boxed:
            view = sandbox.view_for(
                req.workdir,
                [req.allowed_root],
                policy.readable_roots(req),
                folder / "home",
                extra_toolchain=self.sandbox.toolchain,
                worktrees=self.worktrees,
            )
            data = sandbox.claude_settings(view, req.network, helper)
        path = folder / "settings.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        return path

    def command(self, binary: Path, req: RunRequest, *, settings: Path | None = None) -> list[str]:
        # The prompt comes on stdin as one stream-json user message (``user_message``): its
        # blocks reach the model as they are, the breakpoint after the role's framing too.
        args = [str(binary), "-p", "--input-format", "stream-json", "--output-format"]
        args += ["stream-json", "--verbose", *self.permissions(req, settings)]
        args += ["--max-turns", str(req.max_turns)]
        # Only the built-in tools the harness's own loop would offer: the CLI's other two
        # dozen (agents, cron, tasks, web…) cost ~17k tokens of definitions on every call.
        args += ["--tools", ",".join(policy.offered_tools(req))]
        denied = [*policy.disallowed_tools(req), *self.deny_rules(req, settings)]
        if denied:
            args += ["--disallowedTools", ",".join(denied)]
        args += self.system_prompt(req)
        # Only the MCP servers the harness names: none from the user's or the repo's config.
        args += ["--strict-mcp-config"]
        if req.mcp_config is not None:
            args += ["--mcp-config", str(req.mcp_config)]
        if req.session_id and req.resume:
            args += ["--resume", req.session_id]
        elif req.session_id:
            args += ["--session-id", req.session_id]
        if self.model:
            args += ["--model", self.model]
        return args

    @staticmethod
    def user_message(req: RunRequest) -> bytes:
        """The run's one stdin line: the user turn's blocks (``prompt_layout.user_content``)."""
        message = {"role": "user", "content": prompt_layout.user_content(req)}
        return (json.dumps({"type": "user", "message": message}) + "\n").encode()

    @staticmethod
    def system_prompt(req: RunRequest) -> list[str]:
        """The harness's system parts (``prompt_layout``) as the CLI's whole system prompt
        (``--system-prompt``) — except for a role with a shell, which changes code and keeps
        the CLI's own guidance on its shell, edits and git, the harness's parts appended. Its
        per-machine sections (working directory, git status) then go to the first user turn
        instead, so the system prompt is the same for every worktree and every commit."""
        text = prompt_layout.system_text(req)
        if not policy.shell_allowed(req):
            return ["--system-prompt", text]
        return ["--exclude-dynamic-system-prompt-sections", "--append-system-prompt", text]

    @staticmethod
    def permissions(req: RunRequest, settings: Path | None = None) -> list[str]:
        """Every run gets ``acceptEdits``: the CLI edits only inside its working directory
        and refuses the rest, so a Write into a sibling case never lands (the post-run guard
        cannot revert it: another run may own that folder). It reads only its working
        directory and the ``--add-dir`` folders (the role's ``read_roots``, made read-only by
        deny rules); the folders outside every role are denied outright, a deny rule winning
        over anything the user's settings allow. The shell, where the role has one, runs in the
        CLI's sandbox (``settings``); no project or local settings from the worktree load."""
        allowed = [*(["Bash"] if policy.shell_allowed(req) else [])]
        allowed += [f"mcp__{name}" for name in policy.mcp_servers(req.mcp_config)]
        args = ["--permission-mode", "acceptEdits", "--setting-sources", "user"]
        if allowed:
            args += ["--allowedTools", ",".join(allowed)]
        own = policy.readable_roots(req)
        extra = [r for r in own if r != Path(os.path.realpath(req.workdir))]
        if extra:
            args += ["--add-dir", *map(str, extra)]
        if settings is not None:
            args += ["--settings", str(settings)]
        return args

    def deny_rules(self, req: RunRequest, settings: Path | None = None) -> list[str]:
        """Read-only ``read_roots``, the folders outside every role, the run's private folder
        (the key file): permission rules the CLI applies to its tools and its sandbox alike."""
        own = policy.readable_roots(req)
        extra = [r for r in own if r != Path(os.path.realpath(req.workdir))]
        writable = Path(os.path.realpath(req.allowed_root))
        deny = [
            f"{tool}({_rule_path(r)}/**)"
            for r in extra
            if not r.is_relative_to(writable)
            for tool in ("Edit", "Write")
        ]
        deny += [
            f"Read({_rule_path(f)}/**)"
            for f in policy.forbidden_roots(self.worktrees)
            if not any(r.is_relative_to(f) or f.is_relative_to(r) for r in own)
        ]
        if settings is not None:
            deny.append(f"Read({_rule_path(settings.parent)}/key)")
        return deny

    def environment(self) -> dict[str, str]:
        """The CLI's whole environment: no token of the harness's (they stay in this process),
        the model key neither (``apiKeyHelper``); its config and transcripts where the
        operator's are (``CLAUDE_CONFIG_DIR``), its HOME the run's scratch folder."""
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
        env.update(
            {
                k: v
                for k, v in os.environ.items()
                if k.startswith(("ANTHROPIC_", "CLAUDE_CODE_")) and k not in KEY_ENV
            }
        )
        env["CLAUDE_CONFIG_DIR"] = os.environ.get("CLAUDE_CONFIG_DIR") or str(
            Path.home() / ".claude"
        )
        env.update(
            {**self.env, **self.mcp_env(), **ALWAYS_ENV, **(KEYED_ENV if _api_key() else {})}
        )
        if os.geteuid() == 0:
            env["IS_SANDBOX"] = "1"  # bypassPermissions is refused to root without it
        # Its Bash inherits this: no variable holding a secret's value, whatever its name (R3).
        return redaction.without_secrets(env)

    def _run(
        self, binary: Path, req: RunRequest, folder: Path, settings: Path, shell: bool
    ) -> RunResult:
        # A run with a shell gets the box's limits for the CLI's whole tree: its Bash runs
        # inside it (#28 R11). One without runs no agent command: its MCP servers go unbounded.
        plain = LimitSettings(pids=None, memory_mb=None, cpu_seconds=None, file_size_mb=None)
        chosen = self.sandbox.limits if shell else plain
        with limits.applied(chosen, own_userns=False, cli=True) as bounds:
            argv = bounds.outer(bounds.inner(self.command(binary, req, settings=settings)))
            return self._start(argv, req, folder, bounds.popen)

    def _start(
        self, argv: list[str], req: RunRequest, folder: Path, popen: cgroups.Spawn
    ) -> RunResult:
        stream = _Stream(req, self.model)
        watchdog = lifetime.Watchdog()  # the CLI and its tools die with this process (#20 p3)
        env = {**self.environment(), "HOME": str(folder / "home"), "TMPDIR": "/tmp"}
        env.update(watchdog.env())
        try:
            proc = popen(
                lifetime.die_with_parent(argv),
                cwd=req.workdir,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: a kill takes its tools with it
            )
        except BaseException:
            watchdog.close()
            raise
        watchdog.guard(proc.pid)
        guard.record_process(proc.pid, lifetime.start_time(proc.pid))
        # Written from a thread: a prompt larger than the pipe's buffer must not hold this
        # one before ``_follow`` reads the CLI's output and starts its wall clock.
        threading.Thread(target=_send, args=(proc, self.user_message(req)), daemon=True).start()
        try:
            return self._follow(proc, stream, req)
        finally:
            watchdog.close()

    def _follow(self, proc: subprocess.Popen[bytes], stream: _Stream, req: RunRequest) -> RunResult:
        assert proc.stdout is not None and proc.stderr is not None
        stderr = bounded.Bounded(0, STDERR_KEEP * 4)  # its tail only, however much it says
        drain = threading.Thread(target=_drain, args=(proc.stderr, stderr), daemon=True)
        drain.start()
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(req.timeout_s, kill)
        timer.daemon = True
        timer.start()
        try:
            for raw in bounded.lines(proc.stdout, EVENT_MAX_BYTES):
                stream.feed_line(raw.decode("utf-8", "replace"))
            code = proc.wait()
        finally:
            timer.cancel()
            if proc.poll() is None:
                kill()
                proc.wait()
        drain.join(timeout=2)
        tail = stderr.text("")[-STDERR_KEEP:]
        return stream.finish(code, killed.is_set(), tail)


def _send(proc: subprocess.Popen[bytes], line: bytes) -> None:
    """The prompt, then end of input: the CLI answers it and exits (a CLI that died before
    reading it is reported by ``_follow`` from its exit and its stderr)."""
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, OSError):
        proc.stdin.write(line)
    with contextlib.suppress(BrokenPipeError, OSError):
        proc.stdin.close()


def _api_key() -> str | None:
    return next((os.environ[k] for k in KEY_ENV if os.environ.get(k)), None)


def _drain(pipe: IO[bytes], keep: bounded.Bounded) -> None:
    for chunk in iter(lambda: os.read(pipe.fileno(), bounded.CHUNK), b""):
        keep.feed(chunk)


class _Stream:
    """The state read from stream-json so far; ``finish`` turns it into a RunResult."""

    def __init__(self, req: RunRequest, model: str | None) -> None:
        self.req = req
        self.model = model
        self.started = time.monotonic()
        self.session_id = req.session_id
        self.texts: list[str] = []
        self.events: list[ToolEvent] = []
        self.pending: dict[str, ToolEvent] = {}
        self.messages: dict[str, Usage] = {}
        self.final: dict[str, Any] | None = None

    def feed_line(self, line: str) -> None:
        try:
            obj = json.loads(line)
        except ValueError:
            return  # not an event (a stray log line)
        if isinstance(obj, dict):
            self.feed(obj)

    def feed(self, obj: dict[str, Any]) -> None:
        kind, subtype = obj.get("type"), obj.get("subtype")
        if obj.get("session_id"):
            self.session_id = str(obj["session_id"])
        if kind == "system" and subtype == "init":
            self.model = self.model or obj.get("model")
            self.req.emit(
                "init",
                session_id=self.session_id,
                model=obj.get("model"),
                tools=obj.get("tools", []),
            )
        elif kind == "system" and subtype == "api_retry":
            self.req.emit("retry", **{k: v for k, v in obj.items() if k != "type"})
        elif kind == "assistant" and isinstance(obj.get("message"), dict):
            self._assistant(obj["message"])
        elif kind == "user" and isinstance(obj.get("message"), dict):
            self._results(obj["message"].get("content"))
        elif kind == "result":
            self.final = obj

    def _assistant(self, message: dict[str, Any]) -> None:
        msg_id = str(message.get("id") or f"m{len(self.messages)}")
        if msg_id not in self.messages:
            usage = Usage.from_api(message.get("usage") or {})
            self.messages[msg_id] = usage
            self.req.emit("usage", **vars(usage))
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                self.texts.append(str(block["text"]))
                self.req.emit("text", text=block["text"])
            elif block.get("type") == "tool_use":
                tool = ToolEvent(
                    str(block.get("id")), str(block.get("name")), dict(block.get("input") or {})
                )
                tool.started = time.monotonic() - self.started
                self.events.append(tool)
                self.pending[tool.id] = tool
                self.req.emit("tool_use", id=tool.id, name=tool.name, input=tool.input)

    def _results(self, content: Any) -> None:
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool = self.pending.pop(str(block.get("tool_use_id")), None)
            if tool is None:
                continue
            inner = block.get("content")
            if isinstance(inner, list):
                inner = "\n".join(str(b.get("text", "")) for b in inner if isinstance(b, dict))
            tool.output = str(inner or "")[:OUTPUT_KEEP]
            tool.is_error = bool(block.get("is_error"))
            tool.ended, tool.done = time.monotonic() - self.started, True
            self.req.emit(
                "tool_result", id=tool.id, is_error=tool.is_error, output=tool.output[:500]
            )

    def _usage(self, final: dict[str, Any]) -> tuple[Usage, Usage]:
        """What the run's calls used, and what the CLI's own figures leave out.

        The result's ``usage`` is the CLI's total; when a stream broke and the CLI answered
        the call again, that total comes back empty while ``modelUsage`` (and the messages)
        hold the answered call — so the largest of the three is taken. The broken attempt is
        in none of them, though the API processed its prompt (#31 item 8: 23,683 tokens
        logged against 30,727 served): an empty total beside a non-empty ``modelUsage`` (the
        CLI's fallback after a broken stream) counts one more call the size of the run's
        average call (the same request was sent again; with one call, exactly its size). A
        retry the CLI announces (``api_retry``) follows an error status the API does not bill
        and adds nothing."""
        reported = Usage.from_api(final.get("usage") or {})
        by_model = Usage()
        for figures in (final.get("modelUsage") or {}).values():
            if isinstance(figures, dict):
                by_model.add(Usage(int(figures.get("inputTokens") or 0),
                                   int(figures.get("outputTokens") or 0),
                                   int(figures.get("cacheCreationInputTokens") or 0),
                                   int(figures.get("cacheReadInputTokens") or 0)))  # fmt: skip
        streamed = Usage()
        for part in self.messages.values():
            streamed.add(part)
        usage = max((reported, by_model, streamed), key=lambda u: u.total)
        retried = 1 if not reported.total and by_model.total else 0
        lost = Usage()
        if retried and self.messages:
            per_call = Usage(usage.input // len(self.messages), usage.output // len(self.messages),
                             usage.cache_creation // len(self.messages),
                             usage.cache_read // len(self.messages))  # fmt: skip
            for _ in range(retried):
                lost.add(per_call)
        return Usage(usage.input, usage.output, usage.cache_creation, usage.cache_read), lost

    def finish(self, code: int, killed: bool, stderr: str) -> RunResult:
        final = self.final or {}
        usage, lost = self._usage(final)
        cost = final.get("total_cost_usd")
        reported = isinstance(cost, int | float)
        if not isinstance(cost, int | float):
            cost = cost_usd(self.model or "claude-sonnet", usage)
        elif lost.total:
            cost = float(cost) + cost_usd(self.model or "claude-sonnet", lost)
        usage.add(lost)
        result = RunResult(
            text=str(final.get("result") or (self.texts[-1] if self.texts else "")),
            stop="end_turn",
            session_id=self.session_id,
            tool_events=self.events,
            usage=usage,
            cost_usd=float(cost),
            turns=int(final.get("num_turns") or len(self.messages)),
            model=self.model,
            cost_reported=reported,
        )
        subtype = final.get("subtype")
        if killed:
            result.stop = "timeout"
            result.error = f"killed after the {self.req.timeout_s:g} s wall clock"
        elif subtype == "success" and not final.get("is_error"):
            result.stop = "end_turn"
        elif subtype == "error_max_turns":
            result.stop = "max_turns"
        elif final:
            result.stop = "error"
            detail = final.get("result") or ", ".join(map(str, final.get("errors") or []))
            result.error = redact(f"claude: {subtype}: {detail}"[:2000])
        else:
            result.stop = "error"
            result.error = redact(f"claude exited {code} without a result: {stderr[-1000:]}")
        return result


def _rule_path(path: Path) -> str:
    """A permission rule's absolute path: ``//`` then the path without its leading slash."""
    return "//" + str(path).lstrip("/")
