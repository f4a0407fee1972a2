"""Push with three-layer recovery (reference, "Recovering from single operations"):
``recovery`` chains them — L1 ``rebase`` (and the real push whose exit code is the only
success), L2 ``heal`` (a constrained agent session, its prompt in ``heal_prompt``), L3
``escalation`` (one DM to the operator with the whole L2 trail)."""
