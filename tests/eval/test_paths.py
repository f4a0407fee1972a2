"""`harness eval` with relative paths (#31 item 9): a case file, a suite folder, --config-root
and --out given relative to where the command runs; the `eval export` run hint is absolute;
the plot comes as PNG and SVG with a title that fits the picture."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from harness_cli import resources
from harness_cli.eval.cases import EVALS_DIR

CASE = "auth-refused"  # no model call: the cheapest real trial


def test_relative_case_suite_config_and_out_paths_all_run(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "mine").mkdir()
    shutil.copy(EVALS_DIR / "investigation" / f"{CASE}.yaml", tmp_path / "mine")
    shutil.copytree(resources.example_config(), tmp_path / "cfg" / "agent-config")
    shutil.copytree(resources.example_sops(), tmp_path / "cfg" / "sops")
    monkeypatch.chdir(tmp_path)
    for target in (f"mine/{CASE}.yaml", "mine"):
        code, out, err = cli("eval", target, "--config-root", "cfg", "--out", "rep", "--json")
        assert code == 0, err
        data = json.loads(out)["data"]
        overall = data["variants"]["baseline"][-1]
        assert (overall["passed"], overall["started"]) == (1, 1), data.get("not_passed")
        assert (tmp_path / "rep" / "report.md").is_file()


def test_the_export_run_hint_is_absolute_when_out_is_relative(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness_cli.commands import eval as eval_command

    monkeypatch.setattr(eval_command, "export_case", lambda case: {"id": "x", "case": case})
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("eval", "export", "C-1", "--out", "x.yaml")
    assert code == 0, err
    assert f"run it: harness eval {tmp_path / 'x.yaml'}" in out + err


def test_the_plot_is_png_and_svg_and_its_title_fits(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the plot needs the eval extra (matplotlib)")
    import matplotlib.pyplot as plt

    from harness_cli.eval import report
    from harness_cli.eval.runner import summarise
    from harness_cli.eval.trial import TrialResult

    long = [f"/a/very/long/folder/of/eval/cases/number-{i}" for i in range(4)]
    trials = [TrialResult(i, "s", f"c{i}", 1, v, "pass") for i, v in
              enumerate(["baseline", "red_team", "baseline", "red_team"])]  # fmt: skip
    run = summarise(trials, runtime="anthropic", runs=1, suite_names=long, wall=1.0)
    line = report.write(run, tmp_path)
    assert (tmp_path / "ablation.png").stat().st_size > 0, line
    assert (tmp_path / "ablation.svg").read_text().startswith("<?xml"), line
    seen: list[tuple[float, float, float]] = []
    real_savefig = plt.Figure.savefig

    def measuring(fig: Any, *args: Any, **kwargs: Any) -> None:
        title = fig.axes[0].title
        box = title.get_window_extent(fig.canvas.get_renderer())
        seen.append((box.x0, box.x1, fig.bbox.width))
        real_savefig(fig, *args, **kwargs)

    pytest.MonkeyPatch().setattr(plt.Figure, "savefig", measuring)
    report.plot(run, tmp_path / "again.png")
    ((x0, x1, width),) = seen
    assert x0 >= 0 and x1 <= width, f"the title runs from {x0:.0f} to {x1:.0f} px of {width:.0f}"
