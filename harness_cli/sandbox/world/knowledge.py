"""The written side of the sandbox's world: the docs/knowledge base (runbooks, postmortems,
release notes) and the Jira issues the tracker serves. Same incident as ``incident``."""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from harness_cli.sandbox.scenarios.sample_repo import SAMPLE_TICKET
from harness_cli.sandbox.world.incident import first_mismatch

__all__ = ["DOCS", "get_doc", "jira_seed", "search_docs"]

DOCS: dict[str, dict[str, str]] = {
    "RB-PRICING": {
        "title": "pricing-service runbook",
        "kind": "runbook",
        "updated": "2026-01-12",
        "body": (
            "Owner: team-a. pricing-service prices order lines for checkout-api.\n\n"
            "Bulk discount rule: 10 % off an order line of 10 units or more (BULK_THRESHOLD = 10, "
            "inclusive: exactly 10 units get the discount), rounded half-up to the cent. The "
            "storefront computes the same rule client-side for its quote.\n\n"
            "Signals: log field discount= on price_line lines; metrics "
            "pricing.bulk_discount.applied versus pricing.order_lines.bulk_eligible (they must "
            "be equal); checkout.price_mismatch (must be 0: the quote and the charge disagree).\n\n"
            "First check after any pricing complaint: the deploys table and deploy-bot's log for "
            "a pricing-service release in the window. Roll back with `deploy pricing-service "
            "<previous version>`."
        ),
    },
    "REL-PRICING-2.3.0": {
        "title": "pricing-service v2.3.0 release notes",
        "kind": "release-notes",
        "updated": "2026-03-02",
        "body": (
            "Released 2026-03-02 09:14 UTC by alex (commit 4f2a9c1).\n\n"
            "AAA-87 refactor: name the bulk threshold (BULK_THRESHOLD constant instead of the "
            "literal 10). No behaviour change intended.\n\nAAA-85 faster price cache warm-up."
        ),
    },
    "PM-2025-11-ROUNDING": {
        "title": "Postmortem: discounts off by a cent (AAA-64)",
        "kind": "postmortem",
        "updated": "2025-11-20",
        "body": (
            "Impact: 212 order lines charged one cent too much over four days.\n\n"
            "Root cause: bulk_discount rounded half-even instead of half-up.\n\n"
            "Lesson: every pricing rule gets a test at its boundary (the threshold itself, one "
            "below, one above), and checkout.price_mismatch pages when it leaves 0."
        ),
    },
    "RB-CHECKOUT-REDIS": {
        "title": "checkout-api: Redis timeouts",
        "kind": "runbook",
        "updated": "2025-12-02",
        "body": (
            "Symptom: 'redis timeout … pool exhausted' errors and a p95 latency spike on "
            "checkout-api. Cause so far: the nightly session sweep. It resolves by itself within "
            "30 minutes; orders are retried by the client and prices are unaffected."
        ),
    },
    "ARCH-CHECKOUT": {
        "title": "Checkout architecture",
        "kind": "architecture",
        "updated": "2025-10-01",
        "body": (
            "storefront → checkout-api → pricing-service (/price) → invoice. checkout-api "
            "charges what pricing-service returns and logs a 'price mismatch' warning when it "
            "differs from the storefront's quote."
        ),
    },
}


@cache
def _index() -> dict[str, set[str]]:
    return _terms(DOCS)


def _terms(docs: dict[str, dict[str, str]]) -> dict[str, set[str]]:
    return {
        doc_id: set(re.findall(r"\w+", f"{doc['title']} {doc['body']}".lower()))
        for doc_id, doc in docs.items()
    }


def search_docs(
    query: str, limit: int = 5, docs: dict[str, dict[str, str]] | None = None
) -> dict[str, Any]:
    """Docs ranked by how many of the query's words they contain (ties: newest first);
    ``docs``: a seeded incident's own (``seeded``) instead of the default's."""
    words = set(re.findall(r"\w+", query.lower()))
    if not words:
        raise ValueError("give at least one word to search for")
    index = _index() if docs is None else _terms(docs)
    docs = DOCS if docs is None else docs
    scored = [(len(words & terms), doc_id) for doc_id, terms in index.items()]
    ranked = sorted(
        ((score, doc_id) for score, doc_id in scored if score),
        key=lambda pair: (-pair[0], docs[pair[1]]["updated"]),
    )
    hits = []
    for score, doc_id in ranked[: max(1, min(limit, 20))]:
        doc = docs[doc_id]
        hits.append(
            {
                "id": doc_id,
                "title": doc["title"],
                "kind": doc["kind"],
                "updated": doc["updated"],
                "score": score,
                "snippet": doc["body"][:200],
            }
        )
    return {"query": query, "total": len(ranked), "results": hits}


def get_doc(doc_id: str, docs: dict[str, dict[str, str]] | None = None) -> dict[str, Any]:
    docs = DOCS if docs is None else docs
    if doc_id not in docs:
        raise ValueError(f"no document {doc_id!r}: search_docs lists the ids")
    return {"id": doc_id, **docs[doc_id]}


def jira_seed() -> dict[str, Any]:
    """The Jira emulator's issues for this scenario (``seed`` control action)."""
    first = first_mismatch()
    return {
        "users": [
            {"name": "sam", "display_name": "Sam Support", "email": "sam@acme.example"},
            {"name": "alex", "display_name": "Alex Dev", "email": "alex@acme.example"},
            {"name": "dana", "display_name": "Dana Lead", "email": "dana@acme.example"},
        ],
        "projects": [
            {"key": "AAA", "name": "Acme pricing", "lead": "dana"},
            {"key": "BBB", "name": "Acme checkout", "lead": "dana"},
        ],
        "issues": [
            {
                "key": "AAA-64",
                "summary": "Discounts off by a cent",
                "description": "Rounded half-even. Postmortem PM-2025-11-ROUNDING.",
                "status": "Done",
                "reporter": "sam",
                "assignee": "dana",
                "labels": ["pricing", "incident"],
                "created": "2025-11-14T08:30:00Z",
                "updated": "2025-11-20T16:00:00Z",
            },
            {
                "key": "AAA-87",
                "summary": "Refactor: name the bulk threshold",
                "description": "Replace the literal 10 in bulk_discount with BULK_THRESHOLD.",
                "status": "Done",
                "issuetype": "Task",
                "reporter": "alex",
                "assignee": "alex",
                "labels": ["pricing", "refactor"],
                "created": "2026-02-20T10:00:00Z",
                "updated": "2026-03-02T09:20:00Z",
                "comments": [
                    {
                        "author": "alex",
                        "body": "Shipped in v2.3.0 (commit 4f2a9c1). No behaviour change.",
                        "created": "2026-03-02T09:20:00Z",
                    }
                ],
            },
            {
                "key": "AAA-101",
                "summary": "Bulk discount not applied at exactly 10 units",
                "description": f"{SAMPLE_TICKET}\n\nCustomer {first.customer}, order {first.id} "
                f"({first.quantity} × {first.unit_price}, charged {first.total}, quoted "
                f"{first.quoted_total}).",
                "priority": "High",
                "reporter": "sam",
                "labels": ["pricing", "customer-report"],
                "created": "2026-03-03T10:02:00Z",
                "updated": "2026-03-03T11:15:00Z",
                "comments": [
                    {
                        "author": "sam",
                        "body": "Two more customers report the same since Monday; orders of 11 "
                        "units and more are fine.",
                        "created": "2026-03-03T11:15:00Z",
                    }
                ],
                "links": [{"type": "Relates", "direction": "outward", "key": "AAA-64"}],
            },
            {
                "key": "AAA-102",
                "summary": "Checkout slow for a few minutes (Redis timeouts)",
                "description": "p95 went above 2 s on 2026-03-03 around 14:00 UTC.",
                "status": "In Progress",
                "reporter": "sam",
                "assignee": "dana",
                "labels": ["checkout"],
                "created": "2026-03-03T14:25:00Z",
                "updated": "2026-03-03T15:00:00Z",
            },
        ],
    }
