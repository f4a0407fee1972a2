"""The misbehaving-model library (evals/investigation/*.yaml) through `harness investigate` and
`harness review`, on both runtimes: each case ends in the right exit with the right guard notes,
and an honest scripted model is never forced or blocked. Every case runs on the harness's own
loop; a share of them on the claude CLI too (the bench runs all of them on both)."""

from __future__ import annotations

import pytest

from harness_cli.eval.cases import LibraryCase, load_library
from harness_cli.eval.grader import check
from harness_cli.eval.investigation_driver import run_case
from harness_cli.sandbox.anthropic_api import AnthropicEmulator
from harness_cli.services.claude_cli import find_claude

LIBRARY = {case.id: case for case in load_library()}
ON_CLAUDE_CODE = ("not-logged-in", "model-outage", "auth-refused", "stalled-under-review")
"""The claude CLI share in the default run: where the runtimes differ — how the CLI words a
call that never reached a working model (its result text, not an exception). The loop's rules
are the same Python on both runtimes; the bench (bench/bench_investigation.py) runs every case
on both, and the honest, reviewed and tampering paths have claude-code tests of their own."""


def _params() -> list[object]:
    params: list[object] = []
    for cid, case in LIBRARY.items():
        if "anthropic" in case.setup.runtimes:
            params.append(pytest.param(cid, "anthropic", id=f"{cid}-anthropic"))
        if cid in ON_CLAUDE_CODE and "claude-code" in case.setup.runtimes:
            marks = [
                pytest.mark.claude_cli,
                pytest.mark.slow,
                pytest.mark.skipif(find_claude() is None, reason="claude CLI not found"),
            ]
            params.append(pytest.param(cid, "claude-code", id=f"{cid}-claude-code", marks=marks))
    return params


def test_the_library_is_data_with_ids_and_expectations() -> None:
    assert len(LIBRARY) >= 20
    assert any(c.honest for c in LIBRARY.values()) and any(not c.honest for c in LIBRARY.values())
    for case in LIBRARY.values():
        assert case.description and case.expect.exit
        if case.honest:  # the harness may not force an honest model
            assert {"CONFIDENCE_FORCE", "G_BLOCKER_FORCE"} & set(case.expect.guard_notes) == set()


@pytest.mark.parametrize(("case_id", "runtime"), _params())
def test_each_library_case_ends_as_it_should(
    case_id: str, runtime: str, model_server: AnthropicEmulator
) -> None:
    case: LibraryCase = LIBRARY[case_id]
    seen = run_case(case, runtime, anthropic=model_server)
    problems = check(case, seen)
    assert not problems, f"{case_id} on {runtime}: " + "; ".join(problems)
