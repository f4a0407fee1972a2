"""Token shapes in many lines at once: the harness's own (Slack, GitLab, Anthropic, PagerDuty,
private keys) and detect-secrets' format plugins — for the lines a push adds, the messages of
its commits, the text inside its binary files and an MR's title and description
(:mod:`harness_cli.delivery.secret_scan`).

Each pattern makes one pass over all the lines joined: ``scan_line`` on every line cost
0.3 ms a line, 3 s for a 10,000-line change (bench/bench_secret_scan.py); now detect-secrets
judges only the lines one of its patterns touched, with its own filters.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Iterable
from typing import Any

TOKEN_SHAPES = {
    "Slack token": re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[A-Za-z0-9-]{10,}"),
    "GitLab token": re.compile(r"gl(?:pat|dt|rt|ptt|oas|cbt|imt|ft|agent)-[A-Za-z0-9_\-]{16,}"),
    "Anthropic key": re.compile(r"sk-ant-[A-Za-z0-9_\-]{16,}"),
    "PagerDuty token": re.compile(r"\bu\+[A-Za-z0-9_\-]{18,}"),
    "private key": re.compile(r"-----BEGIN (?:[A-Z0-9]+ )?PRIVATE KEY-----"),
}
"""The shapes of the tokens the harness holds, as they leak (ours, so never missed)."""
PLUGINS = (
    "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
    "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector", "JwtTokenDetector",
    "MailchimpDetector", "NpmDetector", "OpenAIDetector", "PrivateKeyDetector",
    "PypiTokenDetector", "SendGridDetector", "SlackDetector", "SquareOAuthDetector",
    "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)  # fmt: skip
"""detect-secrets' plugins that match a format, not a guess: no entropy or keyword plugin,
whose false positives on ordinary code would block honest pushes."""


Hit = tuple[str, int, str]
"""(where, line number, what matched)."""


def scan_lines(lines: list[tuple[str, int, str]]) -> list[Hit]:
    """Token shapes in ``(where, line number, text)`` lines: ours, then detect-secrets' on the
    lines none of ours matched."""
    index = _Lines([text for _, _, text in lines])
    findings: list[Hit] = []
    shaped: set[int] = set()
    for kind, shape in TOKEN_SHAPES.items():
        for n in sorted(index.matching((shape,))):
            findings.append((lines[n][0], lines[n][1], kind))
            shaped.add(n)
    return findings + _detect_secrets(lines, index, shaped)


class _Lines:
    """Many lines searched at once: each pattern makes one pass over all of them joined."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.joined = "\n".join(texts)
        self.starts = list(itertools.accumulate((len(t) + 1 for t in texts[:-1]), initial=0))

    def _line(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def matching(self, patterns: Iterable[re.Pattern[str]]) -> set[int]:
        """The lines a pattern matches (a match across two lines counts for both)."""
        hit: set[int] = set()
        for pattern in patterns if self.texts else ():
            for match in pattern.finditer(self.joined):
                first, last = (
                    self._line(match.start()),
                    self._line(max(match.start(), match.end() - 1)),
                )
                hit.update(range(first, last + 1))
        return hit

    def holding(self, needles: Iterable[str]) -> set[int]:
        """The lines holding one of ``needles``."""
        hit: set[int] = set()
        for needle in needles:
            at = self.joined.find(needle)
            while at >= 0:
                line = self._line(at)
                hit.add(line)
                at = self.joined.find(
                    needle,
                    self.starts[line + 1] if line + 1 < len(self.starts) else len(self.joined),
                )
        return hit


def _detect_secrets(
    lines: list[tuple[str, int, str]], index: _Lines, skip: set[int]
) -> list[tuple[str, int, str]]:
    """detect-secrets' verdict on the lines (but ``skip``) its plugins' patterns touch: one
    pass of each pattern over all the lines first (``scan_line`` on every line cost 0.3 ms
    each, 3 s for a 10,000-line change), then ``scan_line`` — its own filters — on those."""
    if not lines:
        return []
    from detect_secrets.core.scan import scan_line  # ~0.3 s of imports: only when needed
    from detect_secrets.settings import transient_settings

    candidates: set[int] = set()
    for name, patterns in _plugin_patterns():
        anchors = PLUGIN_ANCHORS.get(name)
        if anchors is None:
            candidates |= index.matching(patterns)
            continue
        held = index.holding(anchors) - skip - candidates
        candidates.update(n for n in held if any(p.search(index.texts[n]) for p in patterns))
    found: list[tuple[str, int, str]] = []
    with transient_settings({"plugins_used": [{"name": name} for name in PLUGINS]}):
        for n in sorted(candidates - skip):
            path, number, text = lines[n]
            kinds = dict.fromkeys(str(s.type) for s in scan_line(text))
            found += [(path, number, kind) for kind in kinds]
    return found


PLUGIN_ANCHORS = {
    "ArtifactoryDetector": ("AKC", "AP"),
    "MailchimpDetector": ("-us",),
    "TelegramBotTokenDetector": (":",),
    "SlackDetector": ("xox", "hooks.slack.com"),
    "StripeDetector": ("k_live_",),
}
"""Text without which a plugin's patterns cannot match: its slow patterns (a leading
alternation or class, 50-90 ms each over 10,000 lines) run on the lines holding one only."""


@functools.cache
def _plugin_patterns() -> tuple[tuple[str, tuple[re.Pattern[str], ...]], ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    classes: dict[str, Any] = {c.__name__: c for c in plugins}
    # line anchors as the plugins mean them, one line at a time
    return tuple(
        (
            name,
            tuple(
                re.compile(p.pattern, p.flags | re.MULTILINE)
                for p in getattr(classes[name](), "denylist", ())
            ),
        )
        for name in PLUGINS
    )
