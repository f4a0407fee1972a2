"""The numbers behind the self-improvement layer (reference, "The self-improvement layer"), in
one place.

Wired into ``harness.yaml`` as ``improvement:`` (``HarnessConfig.improvement``); until then, and
for any config that leaves the section out, the defaults below apply. The idle timer of
``finalize`` is *not* here: it is ``thresholds.finalize_idle_hours`` (one name, one place).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

DEFAULT_CATEGORIES = (
    "skipped_source",
    "wrong_tool",
    "pipeline_bug",
    "missing_test",
    "mr_format",
    "sop_gap",
    "prompt_gap",
    "kb_gap",
)
"""The gap categories the reference names: "skipped data sources, wrong tool choices, pipeline
bugs, missing tests and badly formatted MR descriptions" — and what its improvement MR touches:
"code files, prompt templates or SOP sections" (the project's KB lives beside its SOP), so a
gap in a prompt, an SOP or a knowledge base is a first-class target, never a false positive."""


class ImprovementThresholds(BaseModel):
    """Loop 1 (gap → PR against the harness) and Loop 2 (failure mode → SOP suggestion)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # -- Loop 1: finalize_case and patch_suggester ---------------------------------------------
    self_repo: str = "acme/harness"
    """GitLab path of the harness's own repository: "That MR targets the harness codebase and
    not the ticket's original repo". It is "configured like any project repo": a worktree
    from a mirror, the style SOP, fail-closed acceptance, mr-monitor watching its CI."""
    self_repo_forge: Literal["gitlab", "github"] = "gitlab"
    """Where ``self_repo`` lives: the reference keeps the harness's source "in a private GitHub
    repo" while the teams' repos are on GitLab, so it has its own setting (services/forge.py)."""
    self_repo_checks: list[str] = Field(default_factory=lambda: ["make test"])
    """The improvement MR's own acceptance run, executed by the harness in the worktree before
    the MR may leave draft (the agent cannot declare its own success)."""
    eval_suites: list[str] = Field(default_factory=lambda: ["investigation"])
    """The eval suites finalize runs on the prompts and SOPs before and after the improvement,
    whose figures (rendered from the run) go into the MR description; empty: none."""
    eval_runs: int = Field(1, ge=1)
    """Trials per case and variant of that eval."""
    self_repo_paths: list[str] = Field(
        default_factory=lambda: ["harness_cli/", "agent-config/prompts/", "sops/", "tests/"]
    )
    """Where an improvement may go: "touching code files, prompt templates or SOP sections"
    (and the tests that pin them). A change to any other path is refused; nothing is pushed."""
    gap_min_confidence: float = Field(0.6, ge=0, le=1)
    """Confidence filter: "Category and confidence filters thin out the gaps before
    finalize_case receives them." A gap report below this (0-1; ``80`` and ``"80%"`` read as
    0.8), or with no confidence at all, is dropped as a likely false positive."""
    gap_categories_in_scope: list[str] = Field(default_factory=lambda: list(DEFAULT_CATEGORIES))
    """Category filter: gap reports of any other category (``other``, ``model_limitation``, a
    missing category …) are dropped; they are not something a harness patch can fix."""
    patch_build_loops: int = Field(3, ge=1)
    """patch_suggester rounds: edit → commit → acceptance, again with the failures while the
    checks fail (the implement phase "loops its build step three times")."""
    patch_max_turns: int = Field(40, ge=1)
    """Tool-use turns one patch_suggester run may take."""
    patch_timeout_seconds: float = Field(1200.0, gt=0)
    """Wall clock of one patch_suggester run; it is killed on overrun."""

    # -- Loop 2: knowledge-updater -------------------------------------------------------------
    kb_window: int = Field(10, ge=1)
    """"Every week a cron job named knowledge-updater tallies the last ten cases" of a project
    (its newest ended cases, by creation)."""
    kb_suggest_at: int = Field(3, ge=1)
    """"3 of 10 yields a suggestion": a failure mode seen in this many cases of the window
    drafts a concrete SOP suggestion for humans to review. Nothing is auto-applied."""
    kb_alert_at: int = Field(6, ge=1)
    """"… and 6 of 10 yields an alert": one DM to the operator when a mode reaches this many
    cases (again only after it fell below and crossed once more)."""

    # -- gap-patterns --------------------------------------------------------------------------
    gap_patterns_distance_threshold: float = Field(0.7, gt=0, le=2)
    """Agglomerative clustering (average linkage, cosine distance over TF-IDF): clusters
    closer than this are merged. Lower splits recurring failure modes finer."""
    gap_patterns_min_cluster_size: int = Field(2, ge=1)
    """A cluster of fewer reports is not a recurring failure mode (counted, not ranked)."""
    gap_patterns_handoff_top: int = Field(3, ge=0)
    """"the following finalize pass turns the biggest clusters into MRs": this many of the
    largest clusters spanning two or more cases are handed to the next finalize."""
    gap_patterns_examples: int = Field(3, ge=1)
    """Example excerpts per cluster in the report (the reports nearest its centre)."""
    gap_patterns_exact_max: int = Field(2000, ge=2)
    """Up to this many reports the linkage is exact over all pairwise distances (memory grows
    with the square). Above it, reports are first grouped into micro-clusters (LSA + k-means)
    and the linkage runs over their centres."""
    gap_patterns_micro_clusters: int = Field(400, ge=2)
    """Micro-clusters for large corpora (see ``gap_patterns_exact_max``)."""
    gap_patterns_svd_components: int = Field(100, ge=2)
    """LSA dimensions for large corpora."""
    gap_patterns_max_features: int = Field(20000, ge=10)
    """TF-IDF vocabulary cap."""

    @model_validator(mode="after")
    def _ordered(self) -> ImprovementThresholds:
        if self.kb_alert_at < self.kb_suggest_at:
            raise ValueError(
                f"kb_alert_at ({self.kb_alert_at}) must not be below kb_suggest_at "
                f"({self.kb_suggest_at}): an alert is a stronger suggestion"
            )
        if self.kb_suggest_at > self.kb_window:
            raise ValueError(
                f"kb_suggest_at ({self.kb_suggest_at}) cannot exceed kb_window ({self.kb_window})"
            )
        return self


def thresholds_from(harness_config: Any) -> ImprovementThresholds:
    """``harness.yaml``'s ``improvement:`` section (defaults when it is absent)."""
    configured = getattr(harness_config, "improvement", None)
    if isinstance(configured, ImprovementThresholds):
        return configured
    return ImprovementThresholds()
