"""GitHub Actions workflow files as the emulator reads them: the triggers (push,
pull_request, workflow_dispatch with inputs), the jobs in order with their ``needs``, each
step's ``run:`` script or ``uses:`` action, ``if:`` on success()/failure()/always(), and the
``${{ … }}`` expressions a run substitutes (inputs, github.*, secrets.*, vars.*, env.*).

``run:`` steps run for real (``bash --noprofile --norc -eo pipefail``, GitHub's default shell
on Linux); ``uses:`` actions are not fetched: the checkout is the runner's own and every
other action is a logged no-op.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = [
    "JobSpec",
    "StepSpec",
    "WorkflowError",
    "WorkflowSpec",
    "default_workflow",
    "parse_workflow",
    "substitute",
]

WORKFLOWS_DIR = ".github/workflows/"
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class WorkflowError(ValueError):
    """The workflow file is not one GitHub would run (GitHub shows it as a failed run)."""


@dataclass
class StepSpec:
    name: str
    run: str | None
    uses: str | None
    condition: str
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class JobSpec:
    key: str
    name: str
    needs: list[str]
    steps: list[StepSpec]
    timeout_minutes: float | None = None
    env: dict[str, str] = field(default_factory=dict)


@dataclass
class WorkflowSpec:
    name: str
    on: dict[str, Any]
    jobs: list[JobSpec]
    env: dict[str, str] = field(default_factory=dict)

    def triggered_by(self, event: str, branch: str) -> bool:
        """Whether ``event`` on ``branch`` (the pushed branch; a pull request's base) runs it."""
        if event not in self.on:
            return False
        config = self.on[event] or {}
        if not isinstance(config, dict):
            return True
        wanted = config.get("branches")
        ignored = config.get("branches-ignore") or []
        if wanted is not None and not any(_glob(branch, p) for p in _strings(wanted)):
            return False
        return not any(_glob(branch, p) for p in _strings(ignored))

    def inputs(self, given: dict[str, Any]) -> dict[str, str]:
        """workflow_dispatch inputs with their defaults; GitHub answers 422 for an input the
        workflow does not declare or a required one missing."""
        config = self.on.get("workflow_dispatch") or {}
        declared: dict[str, Any] = (config.get("inputs") if isinstance(config, dict) else {}) or {}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise WorkflowError(f"Unexpected inputs provided: {unknown}")
        values: dict[str, str] = {}
        for name, spec in declared.items():
            spec = spec or {}
            if name in given:
                value = given[name]
                values[name] = str(value).lower() if isinstance(value, bool) else str(value)
            elif "default" in spec:
                default = spec["default"]
                values[name] = str(default).lower() if isinstance(default, bool) else str(default)
            elif spec.get("required"):
                raise WorkflowError(f"Required input '{name}' not provided")
            else:
                values[name] = ""
        return values


def _strings(value: Any) -> list[str]:
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def _glob(branch: str, pattern: str) -> bool:
    # GitHub's filter globs: ** crosses slashes, * does not.
    regex = re.escape(pattern).replace(r"\*\*", "\0").replace(r"\*", "[^/]*").replace("\0", ".*")
    return re.fullmatch(regex, branch) is not None or fnmatch.fnmatchcase(branch, pattern)


def _env(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}


def parse_workflow(text: str, path: str) -> WorkflowSpec:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise WorkflowError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), dict):
        raise WorkflowError(f"{path}: a workflow needs a `jobs` mapping")
    raw_on = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` key as True
    if isinstance(raw_on, str):
        on: dict[str, Any] = {raw_on: None}
    elif isinstance(raw_on, list):
        on = {str(event): None for event in raw_on}
    elif isinstance(raw_on, dict):
        on = {str(k): v for k, v in raw_on.items()}
    else:
        raise WorkflowError(f"{path}: a workflow needs `on`")
    jobs = []
    for key, job in data["jobs"].items():
        if not isinstance(job, dict) or not isinstance(job.get("steps"), list):
            raise WorkflowError(f"{path}: job {key} needs `steps`")
        steps = []
        for n, step in enumerate(job["steps"], start=1):
            if not isinstance(step, dict) or not ("run" in step or "uses" in step):
                raise WorkflowError(f"{path}: step {n} of {key} needs `run` or `uses`")
            run = str(step["run"]) if "run" in step else None
            uses = str(step["uses"]) if "uses" in step else None
            label = step.get("name") or (f"Run {run.splitlines()[0]}" if run else f"Run {uses}")
            condition = str(step.get("if", "success()"))
            steps.append(StepSpec(str(label), run, uses, condition, _env(step.get("env"))))
        needs = job.get("needs") or []
        timeout = job.get("timeout-minutes")
        jobs.append(
            JobSpec(
                key=str(key),
                name=str(job.get("name") or key),
                needs=_strings(needs) if needs else [],
                steps=steps,
                timeout_minutes=float(timeout) if timeout is not None else None,
                env=_env(job.get("env")),
            )
        )
    return WorkflowSpec(str(data.get("name") or path), on, jobs, _env(data.get("env")))


def substitute(text: str, context: dict[str, str]) -> str:
    """``${{ expr }}`` → the context's value for ``expr`` (``''`` when unknown, as GitHub
    renders a missing property); ``github.event.inputs.X`` is ``inputs.X``."""

    def value(match: re.Match[str]) -> str:
        expr = match.group(1).strip()
        expr = expr.replace("github.event.inputs.", "inputs.")
        return context.get(expr, "")

    return _EXPR.sub(value, text)


def default_workflow(ci_command: str | list[str], default_branch: str) -> str:
    """The CI workflow a seeded repository carries: its tests on every pull request, on each
    push to the default branch and on demand."""
    command = ci_command if isinstance(ci_command, str) else shlex.join(ci_command)
    spec = {
        "name": "CI",
        "on": {
            "pull_request": None,
            "push": {"branches": [default_branch]},
            "workflow_dispatch": None,
        },
        "jobs": {
            "test": {
                "runs-on": "ubuntu-latest",
                "steps": [{"uses": "actions/checkout@v4"}, {"run": command}],
            }
        },
    }
    return yaml.safe_dump(spec, sort_keys=False)
