"""GitHub REST handlers for the caller, repositories, branches, git refs, commits, compare and
contents. Pull requests are in :mod:`github_routes_pulls`, checks and Actions in
:mod:`github_routes_actions`."""

from __future__ import annotations

import base64
from typing import Any

from harness_cli.sandbox import github_git, gitlab_git
from harness_cli.sandbox import github_render as render
from harness_cli.sandbox.github_http import Ctx, Route, error, paginate, route
from harness_cli.sandbox.github_model import Repo, node_id, not_found
from harness_cli.sandbox.httpbase import Response

__all__ = ["ROUTES"]


def current_user(ctx: Ctx) -> Response:
    return Response.json(render.private_user(ctx.user, ctx.urls))


def get_user(ctx: Ctx) -> Response:
    for account in ctx.state.accounts.values():
        if account.login == ctx.params["login"]:
            return Response.json(render.user(account, ctx.urls))
    raise not_found()


def get_repo(ctx: Ctx) -> Response:
    return Response.json(render.repo(ctx.repo(), ctx.urls, viewer=ctx.user))


# -- branches ------------------------------------------------------------------------------
def _branch(ctx: Ctx, repo: Repo, head: gitlab_git.BranchHead, *, full: bool) -> dict[str, Any]:
    api = f"{ctx.urls.repo(repo)}/branches/{head.name}"
    rule = repo.protections.get(head.name)
    data: dict[str, Any] = {
        "name": head.name,
        "commit": {"sha": head.sha, "url": f"{ctx.urls.repo(repo)}/commits/{head.sha}"},
        "protected": rule is not None,
        "protection_url": f"{api}/protection",
    }
    if full:
        data["commit"] = render.commit(repo, head, ctx.urls)
        data["_links"] = {"self": api, "html": f"{ctx.urls.html(repo)}/tree/{head.name}"}
        data["protection"] = {
            "enabled": rule is not None,
            "required_status_checks": {
                "enforcement_level": "non_admins" if rule else "off",
                "contexts": list(rule.required_checks) if rule else [],
                "checks": [
                    {"context": c, "app_id": None} for c in (rule.required_checks if rule else [])
                ],
            },
        }
    return data


def list_branches(ctx: Ctx) -> Response:
    repo = ctx.repo()
    heads = sorted(gitlab_git.branches(repo.bare), key=lambda h: h.name)
    if (ctx.arg("protected") or "").lower() == "true":
        heads = [h for h in heads if h.name in repo.protections]
    return paginate(ctx, heads, lambda h: _branch(ctx, repo, h, full=False))


def get_branch(ctx: Ctx) -> Response:
    repo = ctx.repo()
    for head in gitlab_git.branches(repo.bare):
        if head.name == ctx.params["branch"]:
            return Response.json(_branch(ctx, repo, head, full=True))
    raise error(404, "Branch not found")


def get_protection(ctx: Ctx) -> Response:
    repo = ctx.repo("admin")
    rule = repo.protections.get(ctx.params["branch"])
    if rule is None:
        raise error(404, "Branch not protected")
    api = f"{ctx.urls.repo(repo)}/branches/{ctx.params['branch']}/protection"
    data: dict[str, Any] = {
        "url": api,
        "required_status_checks": {
            "strict": False,
            "contexts": list(rule.required_checks),
            "checks": [{"context": c, "app_id": None} for c in rule.required_checks],
        },
        "allow_force_pushes": {"enabled": rule.allow_force_pushes},
        "allow_deletions": {"enabled": rule.allow_deletions},
        "required_conversation_resolution": {"enabled": rule.require_conversation_resolution},
        "enforce_admins": {"enabled": False, "url": f"{api}/enforce_admins"},
    }
    if rule.require_pull_request:
        data["required_pull_request_reviews"] = {
            "required_approving_review_count": rule.required_approvals,
            "dismiss_stale_reviews": False,
            "require_code_owner_reviews": False,
        }
    return Response.json(data)


# -- git refs ------------------------------------------------------------------------------
def _ref(ctx: Ctx, repo: Repo, name: str, sha: str) -> dict[str, Any]:
    return {
        "ref": name,
        "node_id": node_id("REF", "ref", f"{repo.id}:{name}"),
        "url": f"{ctx.urls.repo(repo)}/git/{name}",
        "object": {"sha": sha, "type": "commit", "url": f"{ctx.urls.repo(repo)}/git/commits/{sha}"},
    }


def _refs(repo: Repo) -> dict[str, str]:
    out = gitlab_git.git(repo.bare, "for-each-ref", "--format=%(refname) %(objectname)").stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if line)


def get_ref(ctx: Ctx) -> Response:
    repo = ctx.repo()
    name = "refs/" + ctx.params["ref"]
    sha = _refs(repo).get(name)
    if sha is None:
        raise not_found()
    return Response.json(_ref(ctx, repo, name, sha))


def matching_refs(ctx: Ctx) -> Response:
    repo = ctx.repo()
    prefix = "refs/" + ctx.params["ref"]
    found = sorted((n, s) for n, s in _refs(repo).items() if n.startswith(prefix))
    return paginate(ctx, found, lambda pair: _ref(ctx, repo, pair[0], pair[1]))


def create_ref(ctx: Ctx) -> Response:
    repo = ctx.repo("write")
    body = ctx.body()
    name, sha = str(body.get("ref") or ""), str(body.get("sha") or "")
    if not name.startswith("refs/") or name.count("/") < 2:
        raise error(422, "Reference name must start with 'refs/' and have at least two slashes.")
    if name in _refs(repo):
        raise error(422, "Reference already exists")
    if gitlab_git.rev_parse(repo.bare, sha) is None:
        raise error(422, "Object does not exist")
    gitlab_git.git(repo.bare, "update-ref", name, sha, gitlab_git.ZERO_SHA)
    ctx.state.sync(repo, ctx.user)
    return Response.json(_ref(ctx, repo, name, sha), status=201)


def update_ref(ctx: Ctx) -> Response:
    repo = ctx.repo("write")
    name = "refs/" + ctx.params["ref"]
    old = _refs(repo).get(name)
    body = ctx.body()
    sha = str(body.get("sha") or "")
    if old is None:
        raise error(422, "Reference does not exist")
    if gitlab_git.rev_parse(repo.bare, sha) is None:
        raise error(422, "Object does not exist")
    fast_forward = (
        gitlab_git.git(
            repo.bare, "merge-base", "--is-ancestor", old, sha, ok_codes=(0, 1)
        ).returncode
        == 0
    )
    if not fast_forward and not body.get("force"):
        raise error(422, "Update is not a fast forward")
    rule = repo.protections.get(name.removeprefix("refs/heads/"))
    if rule is not None and (rule.require_pull_request or not fast_forward):
        raise error(422, f"Protected branch update failed for {name}.")
    gitlab_git.git(repo.bare, "update-ref", name, sha, old)
    ctx.state.sync(repo, ctx.user)
    return Response.json(_ref(ctx, repo, name, sha))


def delete_ref(ctx: Ctx) -> Response:
    repo = ctx.repo("write")
    name = "refs/" + ctx.params["ref"]
    if name not in _refs(repo):
        raise error(422, "Reference does not exist")
    if name.removeprefix("refs/heads/") in repo.protections:
        raise error(422, f"Protected branch update failed for {name}.")
    gitlab_git.git(repo.bare, "update-ref", "-d", name)
    ctx.state.sync(repo, ctx.user)
    return Response(status=204)


# -- commits, compare, contents ------------------------------------------------------------
def list_commits(ctx: Ctx) -> Response:
    repo = ctx.repo()
    start = ctx.arg("sha") or repo.default_branch
    args = ["rev-list", "--max-count=1000", start]
    since = ctx.since()
    if since is not None:
        args.append(f"--since={int(since)}")
    path = ctx.arg("path")
    if path:
        args += ["--", path]
    shas = gitlab_git.git(repo.bare, *args, ok_codes=(0, 128)).stdout.split()
    if not shas and gitlab_git.rev_parse(repo.bare, start) is None:
        raise error(404, f"No commit found for SHA: {start}")

    def one(sha: str) -> dict[str, Any]:
        info = gitlab_git.commit_info(repo.bare, sha)
        assert info is not None
        return render.commit(repo, info, ctx.urls)

    return paginate(ctx, shas, one)


def get_commit(ctx: Ctx) -> Response:
    repo = ctx.repo()
    info = gitlab_git.commit_info(repo.bare, ctx.params["ref"])
    if info is None:
        raise error(422, f"No commit found for SHA: {ctx.params['ref']}")
    data = render.commit(repo, info, ctx.urls)
    parent = info.parent_ids[0] if info.parent_ids else None
    if parent:
        files = github_git.compare(repo.bare, parent, info.sha)["files"]
        data["files"] = [f.json(ctx.urls.repo(repo), ctx.urls.html(repo), info.sha) for f in files]
        data["stats"] = {
            "additions": sum(f.additions for f in files),
            "deletions": sum(f.deletions for f in files),
            "total": sum(f.additions + f.deletions for f in files),
        }
    return Response.json(data)


def compare(ctx: Ctx) -> Response:
    repo = ctx.repo()
    base, sep, head = ctx.params["basehead"].partition("...")
    if not sep:
        raise not_found()
    base_sha, head_sha = (gitlab_git.rev_parse(repo.bare, r) for r in (base, head))
    if base_sha is None or head_sha is None:
        raise not_found()
    found = github_git.compare(repo.bare, base_sha, head_sha)
    infos = [gitlab_git.commit_info(repo.bare, sha) for sha in found["ahead"]]
    merge_base = gitlab_git.commit_info(repo.bare, found["merge_base"] or base_sha)
    assert merge_base is not None
    return Response.json(
        {
            "url": f"{ctx.urls.repo(repo)}/compare/{base}...{head}",
            "html_url": f"{ctx.urls.html(repo)}/compare/{base}...{head}",
            "permalink_url": f"{ctx.urls.html(repo)}/compare/{base_sha}...{head_sha}",
            "diff_url": f"{ctx.urls.html(repo)}/compare/{base}...{head}.diff",
            "patch_url": f"{ctx.urls.html(repo)}/compare/{base}...{head}.patch",
            "status": found["status"],
            "ahead_by": len(found["ahead"]),
            "behind_by": found["behind"],
            "total_commits": len(found["ahead"]),
            "base_commit": render.commit(repo, merge_base, ctx.urls),
            "merge_base_commit": render.commit(repo, merge_base, ctx.urls),
            "commits": [render.commit(repo, i, ctx.urls) for i in infos if i is not None],
            "files": [
                f.json(ctx.urls.repo(repo), ctx.urls.html(repo), head_sha) for f in found["files"]
            ],
        }
    )


def contents(ctx: Ctx) -> Response:
    repo = ctx.repo()
    path = ctx.params.get("path", "")
    ref = ctx.arg("ref") or repo.default_branch
    found = github_git.read_path(repo.bare, ref, path)
    if found is None:
        raise not_found()
    api = f"{ctx.urls.repo(repo)}/contents"

    def entry(name: str, kind: str, sha: str, size: int) -> dict[str, Any]:
        html = f"{ctx.urls.html(repo)}/{'blob' if kind == 'file' else 'tree'}/{ref}/{name}"
        return {
            "type": kind,
            "name": name.rsplit("/", 1)[-1],
            "path": name,
            "sha": sha,
            "size": size,
            "url": f"{api}/{name}?ref={ref}",
            "html_url": html,
            "git_url": f"{ctx.urls.repo(repo)}/git/{'blobs' if kind == 'file' else 'trees'}/{sha}",
            "download_url": None,
            "_links": {"self": f"{api}/{name}?ref={ref}", "git": None, "html": html},
        }

    if found[0] == "file":
        data: bytes = found[1]
        sha = gitlab_git.git(repo.bare, "rev-parse", f"{ref}:{path}").stdout.strip()
        item = entry(path, "file", sha, len(data))
        item.update(encoding="base64", content=base64.encodebytes(data).decode())
        return Response.json(item)
    prefix = f"{path.strip('/')}/" if path.strip("/") else ""
    rows = [
        entry(prefix + name, "dir" if typ == "tree" else "file", obj, 0)
        for _mode, typ, obj, name in found[1]
    ]
    return Response.json(rows)


R = "/repos/:owner/:repo"
ROUTES: list[Route] = [
    route("GET", "/user", current_user, ""),
    route("GET", "/users/:login", get_user, ""),
    route("GET", R, get_repo, "metadata:read"),
    route("GET", f"{R}/branches", list_branches, "metadata:read"),
    route("GET", f"{R}/branches/:branch+/protection", get_protection, "administration:read"),
    route("GET", f"{R}/branches/:branch+", get_branch, "metadata:read"),
    route("GET", f"{R}/git/ref/:ref+", get_ref, "contents:read"),
    route("GET", f"{R}/git/refs/:ref+", get_ref, "contents:read"),
    route("GET", f"{R}/git/matching-refs/:ref+", matching_refs, "contents:read"),
    route("POST", f"{R}/git/refs", create_ref, "contents:write"),
    route("PATCH", f"{R}/git/refs/:ref+", update_ref, "contents:write"),
    route("DELETE", f"{R}/git/refs/:ref+", delete_ref, "contents:write"),
    route("GET", f"{R}/commits", list_commits, "contents:read"),
    route("GET", f"{R}/commits/:ref", get_commit, "contents:read"),
    route("GET", f"{R}/compare/:basehead+", compare, "contents:read"),
    route("GET", f"{R}/contents", contents, "contents:read"),
    route("GET", f"{R}/contents/", contents, "contents:read"),
    route("GET", f"{R}/contents/:path+", contents, "contents:read"),
]
