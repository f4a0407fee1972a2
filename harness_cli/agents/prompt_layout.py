"""Where each part of a run's prompt goes, the same for both runtimes (#22).

The prompt cache reads a request in order — tools, system, messages — and reuses it only as
far as it is byte-identical up to a breakpoint. So what is the same for many calls comes
first and what changes with each call comes last:

1. ``FRAMING`` — how the harness runs every agent: no role, no path, no date in it.
2. ``RunRequest.cache_prefix`` — the project's SOPs and knowledge base (every call of a case).
3. ``RunRequest.context`` — what every call of one role in one case shares (the ticket, the
   locked slate, the report contract).
4. ``RunRequest.system`` — a role's standing rules (push heal's red lines).
5. The user turn, two text blocks: the run's own facts (its working directory, the folder it
   may write), then the role's prompt (role marker first, guard notes at its head, pinned
   context at its tail — both where the investigation's rules put them).

Parts 1-4 are the system prompt (``system_parts``); part 5 is ``user_blocks``. The working
directory sits in the user turn because it changes with every worktree, case and reviewer
folder, and a system prompt holding it would be a new prefix each time.

No role resumes its previous call's session (``RunRequest.resume``, the CLI's ``--resume``),
though both runtimes support it. The roles called more than once in a case — the
investigator's iterations, dev-agent-plan's rounds, push heal's plan then act — get a fresh
conversation each round on purpose: a round is rebuilt from the case's files (guard notes at
its head, the pinned report at its tail), not from the model's earlier reasoning; the CLI keeps
a transcript under ``CLAUDE_CONFIG_DIR``, outside the case and its git history; and push
heal's act session has another tool set than its plan, so its prefix is new either way. With
parts 1-4 read from the cache a fresh round pays for its tools and system at the cache's read
price already (``bench/bench_runtime_cost.py``: the share read from each role's second call
on); a resumed one would add every earlier turn to each later call.
"""

from __future__ import annotations

from harness_cli.agents.runtime import RunRequest

FRAMING = """\
You are an engineering agent run by the harness. Each task gives your role, your working \
directory and the one folder you may write (writes anywhere else are refused; message.json is \
read-only). Use the tools to look at real files before concluding; cite paths as path:line. \
When the task is done, answer with a short plain-text report and no tool call."""

RUN_FACTS = """\
Working directory: {workdir}
Writable folder: {allowed_root} (writes anywhere else are refused; message.json is read-only)"""


def system_parts(req: RunRequest) -> tuple[str, ...]:
    """The stable parts, in cache order: framing, shared prefix, role context, role rules."""
    return tuple(p for p in (FRAMING, *req.cache_prefix, req.context, req.system) if p)


def system_text(req: RunRequest) -> str:
    """The system parts as one text (the claude CLI sends its system prompt as one block)."""
    return "\n\n".join(system_parts(req))


def run_facts(req: RunRequest) -> str:
    return RUN_FACTS.format(workdir=req.workdir, allowed_root=req.allowed_root)


def user_blocks(req: RunRequest) -> tuple[str, ...]:
    """The user turn's text blocks: this run's facts, then the role's prompt (a resumed
    conversation was given the facts in its first turn)."""
    if req.resume and req.session_id:
        return (req.role_prompt(),)
    return (run_facts(req), req.role_prompt())


def user_text(req: RunRequest) -> str:
    """The user turn as one text (the claude CLI takes its prompt as one argument)."""
    return "\n\n".join(user_blocks(req))
