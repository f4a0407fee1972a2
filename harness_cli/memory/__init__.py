"""Layer 3's memory: what carries a case's conversation across runs and machines.

- ``followup`` — the long-lived chat agent (case_followup), and the gap analyzer it calls every
  N replies (``gap_analyzer``);
- ``consolidate`` — memory consolidation of transcripts into TASK.md, its trigger
  (``trigger``) and its three protections;
- ``sessions*`` — Claude sessions that resume on either machine (the git-backed session store).

Files in a case folder (all written by the harness, never by an agent):
``followup_transcript_NNN.md`` (``transcripts``), ``gap_report_NNN.md`` (``gap_analyzer``),
``memory.json`` (``state``), ``consolidation/`` (the TASK.md each consolidation replaced, and
refused proposals).
"""
