"""The price table and the cost settings of harness.yaml (``cost:``).

USD per million tokens, per model-name prefix (the longest prefix wins; an unknown model is
priced as ``default_model``). Cache writes and reads have their own prices (API-FACTS §3: a
5-minute write is 1.25× input, a read 0.1×). When the claude CLI reports its own
``total_cost_usd`` the meter keeps that figure (``use_reported_cost``) and still records the
tokens.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Price(BaseModel):
    """USD per million tokens of one model family."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    """Writing the prompt cache (5-minute TTL)."""
    cache_read: float = Field(ge=0)


def _family(input_: float, output: float) -> Price:
    return Price(input=input_, output=output, cache_write=input_ * 1.25, cache_read=input_ * 0.1)


DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-4-5": _family(5.0, 25.0),
    "claude-opus-4-6": _family(5.0, 25.0),
    "claude-opus-4": _family(15.0, 75.0),
    "claude-sonnet": _family(3.0, 15.0),
    "claude-haiku-4-5": _family(1.0, 5.0),
    "claude-3-5-haiku": _family(0.8, 4.0),
    "claude-3-haiku": _family(0.25, 1.25),
}


class Budgets(BaseModel):
    """Spending limits; ``null`` (or absent) is no limit. Crossing one ends the run at its next
    safe point (before the next model call) with ``exit=budget``, exit code 4, what was spent
    and one DM; ``admin: budget <case> <amount>`` raises a case's limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case_usd: float | None = Field(10.0, gt=0)
    """All the runs on one case together (case.json's running total plus the current run)."""
    case_tokens: int | None = Field(None, gt=0)
    workflow_usd: float | None = Field(5.0, gt=0)
    """One workflow run (one `harness investigate`, one `dev-agent`…)."""
    workflow_tokens: int | None = Field(None, gt=0)
    day_usd: float | None = Field(50.0, gt=0)
    """Everything this machine spent on the current UTC day (``HARNESS_NOW`` honoured)."""
    day_tokens: int | None = Field(None, gt=0)


class CostSettings(BaseModel):
    """harness.yaml ``cost:``: what a call costs and how much may be spent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prices: dict[str, Price] = Field(default_factory=lambda: dict(DEFAULT_PRICES))
    """Model-name prefix → price per million tokens; the longest matching prefix wins."""
    default_model: str = "claude-sonnet"
    """The entry of ``prices`` an unknown model is priced with."""
    use_reported_cost: bool = True
    """Keep the claude CLI's own ``total_cost_usd`` when it reports one."""
    budgets: Budgets = Field(default_factory=Budgets)

    @model_validator(mode="after")
    def _default_known(self) -> CostSettings:
        if self.default_model not in self.prices:
            raise ValueError(f"default_model {self.default_model!r} is not a key of prices")
        return self


DEFAULT_SETTINGS = CostSettings()


def price_for(model: str, settings: CostSettings = DEFAULT_SETTINGS) -> Price:
    """The price of ``model``: its longest prefix in the table, else ``default_model``'s."""
    matches = [p for p in settings.prices if model.startswith(p)]
    return settings.prices[max(matches, key=len) if matches else settings.default_model]


def price_usd(
    model: str,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
    settings: CostSettings = DEFAULT_SETTINGS,
) -> float:
    p = price_for(model, settings)
    return (
        input_tokens * p.input
        + output_tokens * p.output
        + cache_write_tokens * p.cache_write
        + cache_read_tokens * p.cache_read
    ) / 1_000_000
