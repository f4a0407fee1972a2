"""The skeleton every loop shares (reference, "One skeleton, four sizes": the investigation
≤ 20 iterations, task-analyze ≤ 8, implement's build × 3, push heal's L2 ≤ 3): the prompt
renderer (``prompts``), JSON-block extraction (``jsonblocks``), the completion report
(``report``), what a gate pass decided (``verdict``) and the guard notes it puts at the head of
the next prompt (``guard_notes``), the evidence a run's tool calls left (``evidence``), one
model call with its accounting (``runs``) and what its live events become (``run_status``).
It sits below the layers: investigation/, delivery/, memory/ and improvement/ import it; it
imports none of them."""
