"""What an investigator may read is enforced by the runtime, not the prompt (#21 p1): its case
folder and the project's evidence paths, nothing else — not the operator's SSH key, not the
env file with the tokens, not another case, not a worktree. Both runtimes, `harness
investigate` on the scripted model; what is checked is what reached the model."""

from __future__ import annotations

import pytest
import yaml

from harness_cli.sandbox.model_script import RequestView
from tests.investigation.conftest import BOTH, Investigation

SSH_KEY = "FAKE-SSH-KEY-read-scope-5d21"
ENV_SECRET = "ENVFILE-SECRET-read-scope-a8f0"
OTHER = "OTHER-CASE-read-scope-33b7"
WORKTREE = "WORKTREE-read-scope-c4e9"
EVIDENCE = "EVIDENCE-OK-read-scope-1e66"
TRANSCRIPT = "TRANSCRIPT-read-scope-7b10"


@pytest.mark.parametrize("runtime", BOTH)
def test_the_investigator_reads_its_case_and_evidence_and_nothing_else(
    inv: Investigation,
) -> None:
    home = inv.root / "user-home"  # $HOME of the harness (the fixture's)
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{SSH_KEY}\n")
    env_file = inv.root / "harness-home" / "env"
    env_file.write_text(f"export SLACK_USER_TOKEN=xoxp-{ENV_SECRET}\n")
    other = inv.open_case("BBB-202", text=f"another customer's ticket {OTHER}")
    worktree = inv.root / "worktrees" / "case-BBB-202-1"
    worktree.mkdir(parents=True)
    (worktree / "app.txt").write_text(f"{WORKTREE}\n")
    # the claude CLI's config folder keeps every run's transcript: other cases' words
    claude = home / ".claude"
    transcript = claude / "projects" / "-case-BBB-202" / "session.jsonl"
    transcript.parent.mkdir(parents=True, exist_ok=True)
    transcript.write_text(f'{{"message": "{TRANSCRIPT}"}}\n')
    evidence = inv.root / "evidence"
    evidence.mkdir()
    (evidence / "pricing.log").write_text(f"{EVIDENCE}: 10 units at 5.00 charged 50.00\n")
    projects = inv.config / "projects.yaml"
    data = yaml.safe_load(projects.read_text())
    data["projects"]["team-a"]["evidence_paths"] = [str(evidence)]
    projects.write_text(yaml.safe_dump(data, sort_keys=False))
    inv.open_case()
    inv.script(
        "inv_snoop",
        evidence=str(evidence),
        ssh_key=str(home / ".ssh" / "id_rsa"),
        env_file=str(env_file),
        other_case=str(other),
        worktree_file=str(worktree / "app.txt"),
        transcript=str(transcript),
    )
    inv.thresholds(max_iterations=1)

    inv.investigate()

    log = "\n".join(r.body.decode("utf-8", "replace") for r in inv.emu.recorded("/v1/messages"))
    for secret in (SSH_KEY, ENV_SECRET, OTHER, WORKTREE, TRANSCRIPT):
        assert secret not in log, secret
    assert EVIDENCE in log  # the configured evidence is readable: the boundary is not "nothing"
    [after] = [b for b in inv.requests("investigator") if RequestView.from_body(b).turn == 2]
    results = [c for c in after["messages"][-1]["content"] if c.get("type") == "tool_result"]
    assert len(results) == 5 and all(r.get("is_error") for r in results), results
    inv.assert_no_bash()
