"""How an eval run is told: rows for the terminal, a markdown report, and the plot (pass rate
± interval per ablated component). Every figure comes from the trials' results — never from
model text."""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path
from typing import Any

from harness_cli.eval.runner import BASELINE, EvalRun, Row

log = logging.getLogger("harness.eval")
COLUMNS = ["case", "variant", "pass", "rate [95% CI]", "defective accepted", "$/finished",
           "tokens/finished", "s/finished", "not finished"]  # fmt: skip


def cells(r: Row) -> list[str]:
    pf = r.per_finished
    unfinished = {k: v for k, v in r.statuses.items() if k in ("timeout", "crash", "grader_error")}
    if r.case != "*" and r.deterministic:
        # One run of a deterministic case is its whole result: no interval to draw.
        verdict = "pass" if r.passed == r.started else "FAIL"
    else:
        verdict = f"{r.rate:.0%} [{r.low:.0%}, {r.high:.0%}]"
    return [
        r.case if r.case != "*" else "ALL (case as unit)",
        r.variant,
        f"{r.passed}/{r.started}",
        verdict,
        str(r.defective_accepted),
        f"${pf['usd']:.4f}",
        f"{pf['tokens']:,.0f}",
        f"{pf['seconds']:.1f}",
        ", ".join(f"{k} {v}" for k, v in sorted(unfinished.items())) or "-",
    ]


def rows(run: EvalRun) -> list[list[str]]:
    out = []
    for variant in sorted(run.variants, key=lambda v: (v != BASELINE, v)):
        out += [cells(r) for r in run.variants[variant]]
    return out


def delta_lines(run: EvalRun) -> list[str]:
    lines = []
    for a in sorted(run.ablations, key=lambda a: (-a.delta.delta, a.component)):
        d = a.delta
        lines.append(
            f"{a.component}: " + (
                f"without {d.control:.0%}, with {d.treatment:.0%}, delta {d.delta:+.0%} "
                f"[{d.low:+.0%}, {d.high:+.0%}]" if a.flips else "no case")
            + f" over {d.n} paired case run(s){_inferred(a.inferred)}; "
            f"outcome changes without it: {', '.join(a.flips) or 'none'}"
            + (f"; grade only (same outcome): {', '.join(a.signature_only)}"
               if a.signature_only else "")
        )  # fmt: skip
    return lines


def _named(cases: list[str]) -> str:
    return ", ".join(cases) if cases else "—"


def _inferred(n: int) -> str:
    return f" ({n} inferred: its gates never fired)" if n else ""


REVIEWS = {"G5": "red team", "D": "adversarial verdict D1-D15", "A7": "context pin"}


def gate_lines(run: EvalRun) -> list[str]:
    """Per gate of the reference's 19 (G5 and D are the two reviews, A7 the pin): the
    component that turns it off alone and the cases whose outcome changes without it — or
    "no case", never a number a missing case would make look measured."""
    from harness_cli.investigation.gates.table import TABLE

    alone = {a.holds[0]: a for a in run.ablations if len(a.holds) == 1}
    out = ["| gate | turned off by | cases whose outcome changes without it | grade only |",
           "| --- | --- | --- | --- |"]  # fmt: skip
    for spec in (g for g in TABLE if g.counted):
        a = alone.get(spec.code)
        label = f"{spec.code} ({REVIEWS[spec.code]})" if spec.code in REVIEWS else spec.code
        if a is None:
            out.append(f"| {label} | — | not ablated in this run | — |")
            continue
        moved = _named(a.flips) if a.flips else "no case"
        out.append(f"| {label} | `{a.component}` | {moved} | {_named(a.signature_only)} |")
    return out


def markdown(run: EvalRun, plot: Path | None = None) -> str:
    base = run.overall()
    machinery = run.kind == "machinery"
    deterministic = sum(1 for r in run.variants[BASELINE][:-1] if r.deterministic)
    kind = (
        f"**Machinery eval** (scripted models: the harness's own mechanics, not a model's "
        f"quality): each of the {deterministic} deterministic case(s) runs once per variant "
        f"and is pass or fail; a stochastic case (declared `stochastic: true`) runs "
        f"{run.runs} trial(s), each a fresh draw. Intervals take the case as the unit."
        if machinery else
        f"**Model eval** (a real model plays at least one role): {run.runs} trial(s) per "
        "stochastic or live case, intervals over the cases, cost and latency per finished case."
    )  # fmt: skip
    parts = [
        "# harness eval — one-component ablations, judged by outcome",
        "",
        kind,
        "",
        f"Suites {', '.join(run.suites)}; runtime {run.runtime}; {run.started} trials started, "
        "all counted (timeouts, policy stops, crashes and grader errors included); wall time "
        f"{run.wall_seconds:.0f} s."
        + (
            f" {run.inferred} pair(s) of a gate's ablation were inferred, not run: the "
            "baseline trial was deterministic and none of the component's gates fired in it "
            "(no violation, no cap that bound), so the run without them is the same run step "
            "for step (`--exhaustive` runs them)."
            if run.inferred
            else ""
        ),
        "",
        f"Baseline: {base.case_score:g}/{base.cases} cases pass, {base.rate:.1%} "
        f"[{base.low:.1%}, {base.high:.1%}] (Wilson 95 %, the case as the unit), "
        f"{base.defective_accepted} defective accepted as done (a case marked defective in its "
        "YAML that ended accepted).",
        "",
        "Each row: the full harness with one component turned off (control) against the full "
        "harness (treatment), same cases, seeds, model scripts and budgets. A case counts "
        "against the component only when the harness's **decision** changes without it — "
        "accepted or not, the exit, the confidence and text that reached the operator, the MR "
        "and its threads. A grade that changes while the outcome stays the same (a missing "
        "gate code, an intermediate number, an iteration count) is listed apart as "
        "*grade only* and not counted. Delta = with − without, 95 % interval by Newcombe's "
        "paired method over (case, seed) pairs.",
        "",
        "| component | without | with | delta [95 % CI] | pairs (inferred) | outcome changes "
        "without it | grade only (same outcome) | defective accepted without |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for a in sorted(run.ablations, key=lambda a: (-a.delta.delta, a.component)):
        d = a.delta
        figure = (f"{d.delta:+.0%} [{d.low:+.0%}, {d.high:+.0%}]" if a.flips else
                  "no case")  # fmt: skip
        parts.append(
            f"| {a.component} | {d.control:.0%} | {d.treatment:.0%} | {figure} | {d.n} "
            f"({a.inferred}) | "
            f"{_named(a.flips)} | {_named(a.signature_only)} | {a.defective_accepted} |"
        )
    if plot is not None:
        parts += ["", f"![pass rate with − without each component, judged by outcome]({plot.name})"]
    if any(a.holds for a in run.ablations):
        parts += ["", "## The 19 gates, each turned off alone", "",
                  "G5 and D are the two reviews (red team, adversarial reviewer: turning one "
                  "off removes its call), A7 the context pin; a family's switch (`g_gates`, "
                  "`n_gates`, `a_gates`, `spot_checks`) turns its gates off together.", "",
                  *gate_lines(run)]  # fmt: skip
    parts += ["", "## Cases whose outcome changes", ""]
    for a in sorted(run.ablations, key=lambda a: a.component):
        moved = [f"{c} ({w:.0%} → {o:.0%})" for c, (w, o) in a.cases.items() if c in a.flips]
        parts.append(f"- {a.component}: " + (", ".join(moved) or "no case changes outcome"))
    parts += ["", "## Per case", "", "| " + " | ".join(COLUMNS) + " |",
              "|" + " --- |" * len(COLUMNS)]  # fmt: skip
    parts += ["| " + " | ".join(c) + " |" for c in rows(run)]
    return "\n".join(parts) + "\n"


def write(run: EvalRun, out: Path) -> str:
    """``report.md``, the plot (PNG and SVG) and ``eval.json`` into ``out``; says what it
    wrote."""
    import json

    out.mkdir(parents=True, exist_ok=True)
    picture = plot(run, out / "ablation.png")
    if picture is not None:
        plot(run, out / "ablation.svg")
    (out / "report.md").write_text(markdown(run, picture), encoding="utf-8")
    (out / "eval.json").write_text(json.dumps(run.to_json(), indent=2), encoding="utf-8")
    return f"wrote {out / 'report.md'}" + (
        f" and {picture}" if picture else " (no plot: pip install 'harness-cli[eval]')"
    )


def title_text(run: EvalRun) -> str:
    return f"harness eval: {', '.join(run.suites)} — {run.runs} trial(s) per case"


def fit_title(fig: Any, title: Any) -> None:
    """Shrink the title until it fits the figure's width (a long list of suites or folder
    paths must not run off the picture), then wrap it as a last resort."""
    renderer = fig.canvas.get_renderer()
    width = fig.bbox.width * 0.98
    size = title.get_fontsize()
    while title.get_window_extent(renderer).width > width and size > 7:
        size -= 0.5
        title.set_fontsize(size)
    if title.get_window_extent(renderer).width > width:
        words = title.get_text()
        chars = max(20, int(len(words) * width / title.get_window_extent(renderer).width))
        title.set_text("\n".join(textwrap.wrap(words, chars)))
        fig.tight_layout()


def plot(run: EvalRun, path: Path) -> Path | None:
    """Per ablated component the outcome-judged delta with its interval (the baseline's pass
    rate when nothing was ablated); PNG, or SVG by the suffix; None when matplotlib is not
    installed (``pip install 'harness-cli[eval]'``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib is not installed: no plot (pip install 'harness-cli[eval]')")
        return None
    if run.ablations:
        # Judged by outcome, like the table: the delta (with − without) and its paired
        # interval; a component no case moves is labelled so, not drawn as a measured zero.
        ablations = sorted(run.ablations, key=lambda a: a.component)
        names = [f"without {a.component}" + ("" if a.flips else " (no case)") for a in ablations]
        values = [a.delta.delta if a.flips else float("nan") for a in ablations]
        low = [max(0.0, a.delta.delta - a.delta.low) if a.flips else 0.0 for a in ablations]
        high = [max(0.0, a.delta.high - a.delta.delta) if a.flips else 0.0 for a in ablations]
        reference, xlim = 0.0, (-1.0, 1.0)
        xlabel = "pass rate with − without, judged by outcome (95 % paired interval)"
    else:
        base = run.overall()
        names, values = [BASELINE], [base.rate]
        # Clamped: Wilson's bound at 0/n or n/n can land a rounding error past the rate.
        low, high = [max(0.0, base.rate - base.low)], [max(0.0, base.high - base.rate)]
        reference, xlim = base.rate, (0.0, 1.0)
        xlabel = "pass rate (95 % Wilson interval)"
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(names) + 1.5))
    ys = list(range(len(names)))[::-1]
    ax.errorbar(values, ys, xerr=[low, high], fmt="o", capsize=4)
    ax.axvline(reference, linestyle=":", linewidth=1)
    ax.set_yticks(ys, names)
    ax.set_xlim(*xlim)
    ax.set_xlabel(xlabel)
    title = ax.set_title(title_text(run), wrap=True, fontsize="medium")
    fig.tight_layout()
    fit_title(fig, title)
    fig.savefig(path)
    plt.close(fig)
    return path
