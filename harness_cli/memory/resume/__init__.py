"""Claude sessions that resume on either machine (reference, "Resuming a session on either
machine"): ``sync`` is the UserPromptSubmit hook's prompt sync, ``start`` the session-start fetch,
``model`` the files and settings, ``render`` the delta injected into the prompt."""
