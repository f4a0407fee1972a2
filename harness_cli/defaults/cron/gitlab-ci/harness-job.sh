#!/bin/sh
# One harness workflow run as a GitLab CI job (HARNESS_DISPATCH=gitlab-ci): the dispatcher
# created this pipeline with the variables HARNESS_PAYLOAD (the dispatch payload, JSON) and
# HARNESS_WORKFLOW. This clones the workspace remote into a fresh HARNESS_HOME, writes the
# payload, and runs `harness <workflow> --payload FILE`; the workflow opens its work session
# (with CI_PIPELINE_ID recorded), takes its reservations on the workspace remote and pushes
# what it changed there. The job's exit code is the workflow's (CONTRACT §1): 4 = refused by
# the preflight gate, 3 = the same workflow already running on the case.
set -eu
: "${HARNESS_PAYLOAD:?the pipeline variable HARNESS_PAYLOAD is missing: start this job through HARNESS_DISPATCH=gitlab-ci}"
: "${HARNESS_WORKFLOW:?the pipeline variable HARNESS_WORKFLOW is missing}"
: "${HARNESS_WORKSPACE_REMOTE:?set the CI/CD variable HARNESS_WORKSPACE_REMOTE to the workspace remote URL}"
dir="${CI_PROJECT_DIR:-$PWD}"
export HARNESS_HOME="${HARNESS_HOME:-$dir/.harness-home}"
export HARNESS_WORKSPACE="${HARNESS_WORKSPACE:-$dir/.harness-workspace}"
export HARNESS_CONFIG="${HARNESS_CONFIG:-$dir/agent-config}"
export HARNESS_WORKTREES="${HARNESS_WORKTREES:-$dir/.harness-worktrees}"
harness="${HARNESS_BIN:-harness}"
"$harness" init --remote "$HARNESS_WORKSPACE_REMOTE" >/dev/null
mkdir -p "$HARNESS_HOME/payloads"
payload="$HARNESS_HOME/payloads/ci-${CI_PIPELINE_ID:-0}-$HARNESS_WORKFLOW.json"
printf '%s' "$HARNESS_PAYLOAD" > "$payload"
exec "$harness" "$HARNESS_WORKFLOW" --payload "$payload"
