#!/bin/sh
# Claude PreToolUse hook (matcher Write|Edit|MultiEdit|NotebookEdit): asks the preflight gate
# whether the file may be written now. Exit 2 = blocked: the claude CLI refuses the tool call and
# shows our stderr (the holder and the element) to the model. Any other failure of the check is
# exit 0: the guard never blocks an agent because of its own errors (reference 004).
"${HARNESS_BIN:-harness}" session gate --hook
status=$?
[ "$status" -eq 2 ] && exit 2
exit 0
