"""The misbehaving-model library (evals/investigation/*.yaml) × both runtimes, through
`harness investigate` and `harness review` on the emulators (eval/investigation_driver.py).

Figures (goals from #15):
  * share of runs that end in the right exit, with the right guard notes and the rest of the
    case's expectation (goal 100 %);
  * share of honest runs blocked or forced — an honest scripted model that the harness forced
    (CONFIDENCE_FORCE, G_BLOCKER_FORCE) or ended blocked when that was not its right exit
    (goal 0 %);
  * the wall time the harness adds per iteration beside the model's own time (goal ≤ 5 %):
    inside the loop (prompt, gates, the lock check, the records) and over the whole command
    (also the pre-commitment, publish, case.json and the workspace's three commits — fixed
    per command, spread over the few iterations of a scripted run). The emulator answers in
    milliseconds, far faster than a model, so a second pass paces it: every model request
    waits ``BENCH_MODEL_LATENCY`` seconds (default 1.0) before it is answered, and the ratio is
    taken against that, and against the reference's own pace (13 min for 12 iterations).

``BENCH_RUNTIMES=anthropic`` (or ``claude-code``) limits the runtimes; ``BENCH_CASES=a,b``
the cases. The claude CLI share needs `make claude-cli`.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from harness_cli.eval.cases import LibraryCase, Observed, load_library  # noqa: E402
from harness_cli.eval.grader import check  # noqa: E402
from harness_cli.eval.investigation_driver import run_case  # noqa: E402
from harness_cli.sandbox.anthropic_api import AnthropicEmulator  # noqa: E402
from harness_cli.sandbox.httpbase import Fault  # noqa: E402
from harness_cli.services.claude_cli import find_claude  # noqa: E402

LATENCY = float(os.environ.get("BENCH_MODEL_LATENCY", "1.0"))
PACED = ("honest-complete", "reference-schema", "honest-new-questions")
FORCES = {"CONFIDENCE_FORCE", "G_BLOCKER_FORCE"}
REFERENCE_PACE_S = 13 * 60 / 12
"""The reference's own example, ``exit=complete confidence=89% iterations=12 elapsed=13min``:
65 s per iteration."""


def runtimes() -> list[str]:
    chosen = os.environ.get("BENCH_RUNTIMES", "anthropic,claude-code").split(",")
    if "claude-code" in chosen and find_claude() is None:
        print("  (claude CLI not found: `make claude-cli`; running the anthropic runtime only)")
        chosen = [r for r in chosen if r != "claude-code"]
    return [r for r in chosen if r]


def cases() -> list[LibraryCase]:
    wanted = {c for c in os.environ.get("BENCH_CASES", "").split(",") if c}
    return [c for c in load_library() if not wanted or c.id in wanted]


def wrongly_held(case: LibraryCase, seen: Observed) -> bool:
    """An honest model forced, or blocked when blocked is not its right exit."""
    if not case.honest:
        return False
    return bool(seen.codes & FORCES) or (seen.exit == "blocked" and case.expect.exit != "blocked")


def per_iteration(seen: Observed) -> tuple[float, float, float]:
    """(harness in the loop, harness over the command, model) seconds per iteration."""
    n = max(1, seen.iterations)
    whole = max(0.0, seen.wall_seconds - seen.model_seconds)
    return seen.loop_harness_seconds / n, whole / n, seen.model_seconds / n


def library_pass(emu: AnthropicEmulator) -> None:
    rows: list[tuple[LibraryCase, str, Observed, list[str]]] = []
    warm = next(c for c in load_library() if c.id == "honest-complete")
    for runtime in runtimes():
        run_case(warm, runtime, anthropic=emu)  # imports and caches warm, not measured
        for case in cases():
            if runtime not in case.setup.runtimes:
                continue
            started = time.monotonic()
            seen = run_case(case, runtime, anthropic=emu)
            problems = check(case, seen)
            rows.append((case, runtime, seen, problems))
            mark = "ok  " if not problems else "FAIL"
            print(
                f"  {mark} {runtime:<11} {case.id:<26} exit={seen.exit or '-':<9} "
                f"it={seen.iterations:<2} {time.monotonic() - started:5.1f}s"
                + (f"  — {'; '.join(problems)[:160]}" if problems else ""),
                flush=True,
            )
    print()
    for runtime in sorted({r for _, r, _, _ in rows}):
        mine = [row for row in rows if row[1] == runtime]
        right = sum(1 for *_, problems in mine if not problems)
        honest = [row for row in mine if row[0].honest]
        held = sum(1 for case, _, seen, _ in honest if wrongly_held(case, seen))
        print(
            f"  {runtime:<11} right exit (whole expectation): {right}/{len(mine)} = "
            f"{right / len(mine):6.1%}   honest runs blocked or forced: {held}/{len(honest)} = "
            f"{held / max(1, len(honest)):5.1%}"
        )
    right = sum(1 for *_, problems in rows if not problems)
    honest = [row for row in rows if row[0].honest]
    held = sum(1 for case, _, seen, _ in honest if wrongly_held(case, seen))
    print(
        f"  all runs    right exit: {right}/{len(rows)} = {right / max(1, len(rows)):.1%} (goal "
        f"100 %)   honest blocked or forced: {held}/{len(honest)} = "
        f"{held / max(1, len(honest)):.1%} (goal 0 %)"
    )
    loop, whole, model = (
        sum(per_iteration(seen)[i] for _, _, seen, _ in rows) / max(1, len(rows)) for i in range(3)
    )
    print(
        f"  unpaced emulator (answers in ms): harness {loop * 1000:.0f} ms/iteration in the loop, "
        f"{whole * 1000:.0f} ms/iteration over the command, model side {model * 1000:.0f} ms"
    )


def paced_pass(emu: AnthropicEmulator) -> None:
    print()
    print(f"  paced: every model request answered after {LATENCY:g} s")
    library = {c.id: c for c in load_library()}
    for runtime in runtimes():
        figures = []
        for cid in PACED:
            emu.reset()
            seen = run_case(library[cid], runtime, anthropic=_Paced(emu))
            if check(library[cid], seen):
                print(f"    {runtime} {cid}: did not end as expected; figures skipped")
                continue
            figures.append(per_iteration(seen))
        if not figures:
            continue
        loop, whole, model = (sum(f[i] for f in figures) / len(figures) for i in range(3))
        print(
            f"    {runtime:<11} per iteration: model {model:6.2f} s · harness in the loop "
            f"{loop * 1000:5.0f} ms = {loop / model:5.1%} · harness over the command "
            f"{whole * 1000:5.0f} ms = {whole / model:5.1%} of the paced model, "
            f"{whole / REFERENCE_PACE_S:5.2%} of the reference's pace   (goal ≤ 5 %)"
        )


class _Paced:
    """The shared emulator, with a latency fault on every model request (reset re-adds it)."""

    def __init__(self, emu: AnthropicEmulator) -> None:
        self.emu = emu
        self.url = emu.url

    def reset(self) -> None:
        self.emu.reset()
        self.emu.add_fault(Fault("delay", match="/v1/messages", seconds=LATENCY, times=-1))

    def __getattr__(self, name: str) -> object:
        return getattr(self.emu, name)


def main() -> None:
    print("investigation rigor: the misbehaving-model library through investigate + review")
    emu = AnthropicEmulator()
    emu.start()
    try:
        library_pass(emu)
        paced_pass(emu)
    finally:
        emu.stop()


if __name__ == "__main__":
    main()
