"""An eval worker: runs trials one after the other, in-process, with one Anthropic emulator
of its own. Specs arrive as JSON lines on stdin; each result leaves as one JSON line on the
stdout it was started with (everything else the harness prints goes to stderr), so the parent
can time each trial out and count a worker that died as a crash."""

from __future__ import annotations

import json
import os
import sys

from harness_cli.eval.cases import LibraryCase
from harness_cli.eval.suites import load_case_file
from harness_cli.eval.trial import TrialSpec, run_trial
from harness_cli.sandbox.anthropic_api import AnthropicEmulator


def main() -> int:
    results = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # the harness's own output must never mix with the results
    sys.stdout = sys.stderr

    emulator = AnthropicEmulator()
    emulator.start()
    cases: dict[str, LibraryCase] = {}
    try:
        for raw in sys.stdin:
            spec = TrialSpec(**json.loads(raw))
            case = cases.get(spec.case_path)
            if case is None:
                case = cases[spec.case_path] = load_case_file(spec.case_path)
            result = run_trial(spec, case, anthropic=emulator)
            results.write(json.dumps(result.to_json()) + "\n")
    finally:
        emulator.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
