"""Where each part of a run's prompt goes, the same for both runtimes (#22).

The prompt cache reads a request in order — tools, system, messages — and reuses it only as
far as it is byte-identical up to a breakpoint. So what is the same for many calls comes
first and what changes with each call comes last:

1. ``FRAMING`` — how the harness runs every agent: no role, no path, no date in it.
2. ``RunRequest.cache_prefix`` — the project's SOPs and knowledge base (every call of a case).

   Parts 1-2 are the system prompt (``system_parts``): the same for every role of a case that
   is given the case's prefix, so a role's first call reads it from the cache a call of
   another role wrote. (A reviewer gets no SOP or KB — its isolation — and so a prefix of its
   own, shared by the reviewers.)
3. ``RunRequest.context`` then ``RunRequest.system`` — the role's own framing: what every
   call of one role in one case shares (the ticket, the locked slate, the report contract) and
   its standing rules (push heal's red lines). The user turn's first block, with a cache
   breakpoint of its own (``role_block``), so each round of the role reads it from the cache.
4. The run's own facts (its working directory, the folder it may write), then the role's
   prompt (role marker first, guard notes at its head, pinned context at its tail — both where
   the investigation's rules put them).

The role's framing sits after the system prompt (#22: "everything that varies per call —
role, iteration, guard notes, the ticket — after the cache breakpoint"): held in the system
prompt it made each role's first call in a case write tools and system again. The working
directory sits in the user turn because it changes with every worktree and case; a reviewer's
folder is the same path each time that role reviews that case (``investigation/staging.py``),
so a review of unchanged material is the same prompt, read whole from the cache. Both
runtimes send the user turn as these blocks: the harness's loop directly, the claude CLI as
one stream-json user message (``--input-format stream-json``), which it passes on block by
block, breakpoint included (it adds its own two on the system prompt and one on
the last message: four, the API's limit).

No role resumes its previous call's session (``RunRequest.resume``, the CLI's ``--resume``),
though both runtimes support it. The roles called more than once in a case — the
investigator's iterations, dev-agent-plan's rounds, push heal's plan then act — get a fresh
conversation each round on purpose: a round is rebuilt from the case's files (guard notes at
its head, the pinned report at its tail), not from the model's earlier reasoning; the CLI keeps
a transcript under ``CLAUDE_CONFIG_DIR``, outside the case and its git history; and push
heal's act session has another tool set than its plan, so its prefix is new either way. With
parts 1-3 read from the cache a fresh round pays for its tools and system at the cache's read
price already (``bench/bench_runtime_cost.py``: the share read from each role's second call
on); a resumed one would add every earlier turn to each later call.
"""

from __future__ import annotations

from typing import Any

from harness_cli.services.runtime import RunRequest

FRAMING = """\
You are an engineering agent run by the harness. Each task gives your role, your working \
directory and the one folder you may write (writes anywhere else are refused; message.json is \
read-only). Use the tools to look at real files before concluding; cite paths as path:line. \
When the task is done, answer with a short plain-text report and no tool call."""

RUN_FACTS = """\
Working directory: {workdir}
Writable folder: {allowed_root} (writes anywhere else are refused; message.json is read-only)"""


def system_parts(req: RunRequest) -> tuple[str, ...]:
    """The case's stable prefix, in cache order: the framing, then the SOPs and KB."""
    return tuple(p for p in (FRAMING, *req.cache_prefix) if p)


def system_text(req: RunRequest) -> str:
    """The system parts as one text (the claude CLI sends its system prompt as one block)."""
    return "\n\n".join(system_parts(req))


def role_block(req: RunRequest) -> str:
    """The role's own framing: its context, then its standing rules ('' when it has none)."""
    return "\n\n".join(p for p in (req.context, req.system) if p)


def run_facts(req: RunRequest) -> str:
    return RUN_FACTS.format(workdir=req.workdir, allowed_root=req.allowed_root)


def user_blocks(req: RunRequest) -> tuple[str, ...]:
    """The user turn's text blocks: the role's framing, this run's facts, the role's prompt
    (a resumed conversation was given the framing and the facts in its first turn)."""
    if req.resume and req.session_id:
        return (req.role_prompt(),)
    return tuple(b for b in (role_block(req), run_facts(req), req.role_prompt()) if b)


def user_content(req: RunRequest, *, cache: bool = True) -> list[dict[str, Any]]:
    """The user turn as content blocks, a cache breakpoint after the role's framing: every
    round of the role reads up to there from the cache, whatever its guard notes say."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": b} for b in user_blocks(req)]
    framing = role_block(req)
    if cache and framing and blocks[0]["text"] == framing:
        blocks[0]["cache_control"] = {"type": "ephemeral"}
    return blocks


def user_text(req: RunRequest) -> str:
    """The user turn as one text (what a transcript reader sees; the CLI gets the blocks)."""
    return "\n\n".join(user_blocks(req))
