"""A trial's own home and config, as both drivers (``investigation_driver``,
``delivery_driver``) set them up: the config laid over with the case's keys, the home marked
as an eval trial's, and what its model calls cost read back from its cost log."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import yaml

from harness_cli import resources
from harness_cli.components import TRIAL_FILE
from harness_cli.eval.cases import LibraryCase


def mark_trial(home: Path, ablate: frozenset[str], seed: int | None) -> None:
    """An eval trial's home: the file ``components.enabled`` reads (written even with nothing
    ablated, so a trial's home says what it was)."""

    home.mkdir(parents=True, exist_ok=True)
    (home / TRIAL_FILE).write_text(json.dumps({"ablate": sorted(ablate), "seed": seed}))


def spent(home: Path) -> tuple[float, int]:
    """What a trial's model calls cost: its own cost log, summed."""
    usd, tokens = 0.0, 0
    for path in (home / "logs" / "cost").glob("*.jsonl"):
        for raw in path.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError):
                line = json.loads(raw)
                usd += float(line.get("usd", 0.0))
                tokens += sum(int(line.get(k, 0)) for k in ("in", "out", "cw", "cr"))
    return usd, tokens


def copy_config(root: Path, case: LibraryCase, config_root: Path | None) -> Path:
    """The trial's agent-config/ and sops/: the packaged example (or ``config_root``'s), with
    the case's thresholds and harness.yaml keys laid over it."""

    config = root / "agent-config"
    source = config_root / "agent-config" if config_root else resources.example_config()
    sops = config_root / "sops" if config_root else resources.example_sops()
    shutil.copytree(source, config)
    shutil.copytree(sops, root / "sops")
    if case.setup.thresholds or case.setup.config:
        settings = yaml.safe_load((config / "harness.yaml").read_text())
        settings.setdefault("investigation", {}).update(case.setup.thresholds)
        for key, value in case.setup.config.items():
            if isinstance(value, dict) and isinstance(settings.get(key), dict):
                settings[key] = _merged(settings[key], value)
            else:
                settings[key] = value
        (config / "harness.yaml").write_text(yaml.safe_dump(settings, sort_keys=False))
    return config


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merged(out[key], value) if both else value
    return out
