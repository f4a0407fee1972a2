"""The runtime wrapper the factory puts around every runtime: the budget checked before each
run, the run's usage priced and recorded once after it. Every model call of every workflow
passes here (``agents.factory.configured_runtime`` is the one way a workflow builds a
runtime), so nothing is counted twice and nothing is missed. It is a runtime (the
``Runtime`` Protocol around another one), so it sits with the runtimes; what it applies — the
prices, the meter, the budgets — is ``cost/``'s."""

from __future__ import annotations

import time
from dataclasses import dataclass

from harness_cli.cost import budgets, meter
from harness_cli.cost.prices import CostSettings, price_usd
from harness_cli.services.runtime import RunRequest, RunResult, Runtime


@dataclass
class MeteredRuntime:
    inner: Runtime
    settings: CostSettings
    model: str
    """The model the inner runtime asks for (harness.yaml ``model`` unless it names its own)."""

    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.inner.name

    def run(self, req: RunRequest) -> RunResult:
        budgets.check(self.settings.budgets)
        began = time.monotonic()
        result = self.inner.run(req)
        self.account(req.role, result, time.monotonic() - began)
        return result

    def account(self, role: str, result: RunResult, seconds: float) -> None:
        """Price ``result`` (the CLI's reported cost when it gave one and the settings keep
        it) and record it; ``result.cost_usd`` is set to the recorded figure."""
        u = result.usage
        model = result.model or self.model
        reported = bool(getattr(result, "cost_reported", False)) and self.settings.use_reported_cost
        usd = (
            result.cost_usd
            if reported
            else price_usd(
                model,
                input_tokens=u.input,
                output_tokens=u.output,
                cache_write_tokens=u.cache_creation,
                cache_read_tokens=u.cache_read,
                settings=self.settings,
            )
        )
        result.cost_usd = usd
        meter.record(
            role=role,
            model=model,
            runtime=self.inner.name,
            input_tokens=u.input,
            output_tokens=u.output,
            cache_write_tokens=u.cache_creation,
            cache_read_tokens=u.cache_read,
            usd=usd,
            reported=reported,
            seconds=seconds,
            turns=result.turns,
        )
