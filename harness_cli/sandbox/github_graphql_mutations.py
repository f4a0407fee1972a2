"""GraphQL mutations of the GitHub emulator: ``markPullRequestReadyForReview``,
``convertPullRequestToDraft`` (REST cannot flip ``draft``), ``resolveReviewThread``,
``unresolveReviewThread`` (REST has no thread resolution), ``addPullRequestReviewThreadReply``.
The types they return are :mod:`github_graphql`'s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_cli.sandbox import github_reviews
from harness_cli.sandbox.github_model import PullRequest, Thread, decode_node, now
from harness_cli.sandbox.graphql import GraphQLError, Obj
from harness_cli.sandbox.routing import ApiError

if TYPE_CHECKING:
    from harness_cli.sandbox.github_graphql import Fn, Schema

__all__ = ["mutation"]


def _const(value: Any) -> Fn:
    return lambda _args: value


def _pull_input(schema: Schema, args: dict[str, Any], key: str) -> PullRequest:
    schema.need("pull_requests", "write")
    found = schema.node({"id": (args.get("input") or {}).get(key)})
    if found.typename != "PullRequest":
        raise GraphQLError("Could not resolve to a PullRequest", "NOT_FOUND")
    pr_id = found.fields["databaseId"]({})
    return next(p for p in schema.state.pulls if p.id == pr_id)


def _thread_input(schema: Schema, args: dict[str, Any]) -> Thread:
    schema.need("pull_requests", "write")
    decoded = decode_node(
        str(
            (args.get("input") or {}).get("threadId")
            or (args.get("input") or {}).get("pullRequestReviewThreadId")
            or ""
        )
    )
    if not decoded or decoded[0] != "thread" or int(decoded[1]) not in schema.state.threads:
        raise GraphQLError("Could not resolve to a node with the global id", "NOT_FOUND")
    return schema.state.threads[int(decoded[1])]


def mutation(schema: Schema) -> Obj:
    def payload(args: dict[str, Any], **fields: Any) -> Obj:
        client = (args.get("input") or {}).get("clientMutationId")
        return Obj(
            "Payload",
            {"clientMutationId": _const(client), **{k: _const(v) for k, v in fields.items()}},
        )

    def set_draft(draft: bool) -> Fn:
        def mutate(args: dict[str, Any]) -> Obj:
            pr = _pull_input(schema, args, "pullRequestId")
            pr.draft, pr.updated_at = draft, now()
            return payload(args, pullRequest=schema.pull(pr))

        return mutate

    def resolve(resolved: bool) -> Fn:
        def mutate(args: dict[str, Any]) -> Obj:
            thread = _thread_input(schema, args)
            github_reviews.resolve_thread(thread, schema.viewer, resolved)
            return payload(args, thread=schema.thread(thread))

        return mutate

    def reply(args: dict[str, Any]) -> Obj:
        thread = _thread_input(schema, args)
        pr = next(p for p in schema.state.pulls if p.id == thread.pr_id)
        try:
            comment = github_reviews.add_review_comment(
                schema.state,
                schema.repo_of(pr),
                pr,
                schema.viewer,
                body=str((args.get("input") or {}).get("body") or ""),
                in_reply_to=thread.comment_ids[0],
            )
        except ApiError as err:
            raise GraphQLError(str(err.body.get("errors") or err.body), "UNPROCESSABLE") from None
        return payload(args, comment=schema.review_comment(comment))

    return Obj(
        "Mutation",
        {
            "markPullRequestReadyForReview": set_draft(False),
            "convertPullRequestToDraft": set_draft(True),
            "resolveReviewThread": resolve(True),
            "unresolveReviewThread": resolve(False),
            "addPullRequestReviewThreadReply": reply,
        },
    )
