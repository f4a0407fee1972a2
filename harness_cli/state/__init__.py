"""``$HARNESS_HOME``: the per-machine operational maps, every write atomic and under a lock."""
