"""The services half of ``harness doctor``: not only "the token is accepted" but "the token is
the operator's, the channels and repos in the config exist for it, it may push and open MRs,
and the configured model answers". Each check runs with what a scheduled run would see (the
env file over this environment). A check that depends on a failed one is left out."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from harness_cli.config import Config
from harness_cli.errors import ServiceError
from harness_cli.logs import redact
from harness_cli.ops.doctor.check import Check
from harness_cli.ops.doctor.install import Environment
from harness_cli.services.github import GitHubSettings, LiveGitHub
from harness_cli.services.jira import JiraSettings, LiveJira

DEVELOPER = 30
"""GitLab's access level that may push a branch and open a merge request."""
LEVELS = {0: "no access", 10: "Guest", 20: "Reporter", 30: "Developer", 40: "Maintainer"}


def _failed(name: str, exc: Exception, fix: str) -> Check:
    return Check(name, "fail", redact(f"{type(exc).__name__}: {exc}")[:300], fix)


# -- Slack ---------------------------------------------------------------------------------


def slack(cfg: Config | None, env: Environment) -> list[Check]:
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    token = env.get("SLACK_USER_TOKEN")
    if not token:
        return []
    client = WebClient(
        token=token, timeout=5, base_url=env.get("SLACK_API_URL", "https://slack.com/api/")
    )
    try:
        me = client.auth_test()
    except Exception as exc:  # noqa: BLE001 - any failure of the probe is the finding itself
        fix = "auth.test refused: check SLACK_USER_TOKEN (a user token, xoxp-…) and SLACK_API_URL"
        return [_failed("reach Slack", exc, fix)]
    out = [Check("reach Slack", "ok", f"as {me.get('user')} ({me.get('user_id')})")]
    if cfg is None:
        return out
    op = cfg.harness.operator
    harness = cfg.dir / "harness.yaml"
    if me.get("bot_id"):
        out.append(
            Check(
                "Slack user",
                "fail",
                f"SLACK_USER_TOKEN is a bot token ({me.get('bot_id')})",
                "the harness reads and posts as the operator: use their user token (xoxp-…)",
            )
        )
    elif me.get("user_id") != op.slack_user_id:
        out.append(
            Check(
                "Slack user",
                "fail",
                f"SLACK_USER_TOKEN is {me.get('user')} ({me.get('user_id')}), not the "
                f"operator {op.slack_user_id} of {harness}",
                f"use the operator's own user token, or fix operator.slack_user_id in {harness}",
            )
        )
    else:
        out.append(Check("Slack user", "ok", f"the token is the operator {op.slack_user_id}"))
    if out[-1].status == "fail":  # the channels would only fail again for the same reason
        return out

    def info(channel: str) -> dict[str, Any] | str:
        try:
            return dict(client.conversations_info(channel=channel)["channel"])
        except SlackApiError as exc:
            return str(exc.response.get("error") or exc)
        except Exception as exc:  # noqa: BLE001 - reported as the finding
            return redact(f"{type(exc).__name__}: {exc}")[:200]

    dm = info(op.self_dm_channel)
    name = f"self-DM {op.self_dm_channel}"
    if isinstance(dm, str):
        out.append(
            Check(
                name,
                "fail",
                f"conversations.info: {dm}",
                f"operator.self_dm_channel in {harness} must be the operator's DM with "
                "themselves (its id starts with D)",
            )
        )
    elif not dm.get("is_im") or dm.get("user") != op.slack_user_id:
        out.append(
            Check(
                name,
                "fail",
                f"{op.self_dm_channel} is not the operator's self-DM "
                f"(is_im={dm.get('is_im')}, user={dm.get('user')})",
                f"fix operator.self_dm_channel in {harness}",
            )
        )
    else:
        out.append(Check(name, "ok", "the operator's self-DM"))
    projects = cfg.dir / "projects.yaml"
    for project, spec in cfg.projects.projects.items():
        for channel in spec.slack_channels:
            out.append(_support_channel(client, info(channel), channel, project, projects))
    return out


def _support_channel(client: Any, found: dict[str, Any] | str, channel: str, project: str,
                     projects: object) -> Check:  # fmt: skip
    name = f"channel {channel}"
    fix = f"fix {project}'s slack_channels in {projects}, or have the operator join it"
    if isinstance(found, str):
        return Check(name, "fail", f"conversations.info: {found}", fix)
    if found.get("is_archived"):
        return Check(name, "fail", f"#{found.get('name')} is archived", fix)
    try:
        client.conversations_history(channel=channel, limit=1)
    except Exception as exc:  # noqa: BLE001 - reported as the finding
        error = getattr(getattr(exc, "response", None), "get", lambda _k: None)("error")
        return Check(name, "fail", f"not readable: {error or exc}", fix)
    return Check(name, "ok", f"#{found.get('name')} ({project}) is readable")


# -- GitLab --------------------------------------------------------------------------------


def gitlab(cfg: Config | None, env: Environment) -> list[Check]:
    import gitlab as gl_module

    token = env.get("GITLAB_TOKEN")
    if not token:
        return []
    url = env.get("GITLAB_URL", "https://gitlab.com")
    gl = gl_module.Gitlab(url, private_token=token, timeout=5)
    try:
        gl.auth()  # GET /user: proves the token is accepted, not only that the host answers
    except Exception as exc:  # noqa: BLE001 - the finding
        fix = "GET /user refused: check GITLAB_TOKEN (scope api) and GITLAB_URL"
        return [_failed("reach GitLab", exc, fix)]
    who = getattr(gl.user, "username", "?")
    out = [Check("reach GitLab", "ok", f"as {who}")]
    if cfg is None:
        return out
    projects = cfg.dir / "projects.yaml"
    for project, spec in cfg.projects.projects.items():
        for repo in spec.repos if spec.forge == "gitlab" else []:
            out.append(_repo(gl, repo, who, f"fix {project}'s repos in {projects}"))
    return out


# -- GitHub ------------------------------------------------------------------------------------

GITHUB_SCOPES = {
    "repo": "contents, pull requests, checks and statuses",
    "workflow": "actions (a push touching .github/workflows, workflow runs)",
}
"""A classic token's scopes the harness needs, and what each covers."""
GITHUB_PROBES = (
    ("pull requests", "/repos/{repo}/pulls", {"per_page": 1}),
    ("checks", "/repos/{repo}/commits/{branch}/check-runs", {"per_page": 1}),
    ("actions", "/repos/{repo}/actions/runs", {"per_page": 1}),
)
"""What a fine-grained token (which has no scopes to read) is tried on, per repository."""


def github(cfg: Config | None, env: Environment) -> list[Check]:
    """The token is accepted, has the scopes (classic) or the permissions (fine-grained, by
    trying each) the harness uses, and reaches each GitHub repository with write access."""

    token = env.get("GITHUB_TOKEN")
    if not token:
        return []
    url = env.get("GITHUB_URL", "https://api.github.com")
    client = LiveGitHub(GitHubSettings(url=url.rstrip("/"), token=token), timeout=5, max_retries=0)
    try:
        who, scopes = client.scopes()
    except Exception as exc:  # noqa: BLE001 - the finding
        fix = "GET /user refused: check GITHUB_TOKEN and GITHUB_URL (https://HOST/api/v3 on GHE)"
        return [_failed("reach GitHub", exc, fix)]
    out = [Check("reach GitHub", "ok", f"as {who}")]
    if scopes is not None:
        missing = [s for s in GITHUB_SCOPES if s not in scopes]
        if missing:
            what = "; ".join(f"{s} ({GITHUB_SCOPES[s]})" for s in missing)
            fix = f"issue a token with the scopes {', '.join(GITHUB_SCOPES)}"
            out.append(Check("GitHub token scopes", "fail", f"missing {what}", fix))
        else:
            out.append(Check("GitHub token scopes", "ok", ", ".join(scopes)))
    if cfg is None:
        return out
    projects = cfg.dir / "projects.yaml"
    repos = [
        (repo, f"fix {name}'s repos in {projects}")
        for name, spec in cfg.projects.projects.items()
        if spec.forge == "github"
        for repo in spec.repos
    ]
    own = cfg.harness.improvement
    if own.self_repo_forge == "github":
        repos.append((own.self_repo, f"fix improvement.self_repo in {cfg.dir / 'harness.yaml'}"))
    for repo, fix in repos:
        out.append(_github_repo(client, repo, who, fix, fine_grained=scopes is None))
    return out


def _github_repo(client: Any, repo: str, who: str, fix: str, *, fine_grained: bool) -> Check:
    name = f"repo {repo}"
    try:
        found = client.project(repo)
    except ServiceError as exc:
        if exc.status == 404:
            return Check(name, "fail", f"not found, or invisible to {who}", fix)
        return Check(name, "fail", redact(exc.message)[:300], fix)
    if found.get("archived"):
        return Check(name, "fail", f"{repo} is archived: nothing can be pushed", fix)
    if not (found.get("permissions") or {}).get("push", True):
        return Check(name, "fail", f"{who} cannot push to {repo}: no branch, no PR",
                     f"give {who} the write role on {repo}")  # fmt: skip
    if fine_grained:
        branch = str(found.get("default_branch") or "main")
        for what, path, params in GITHUB_PROBES:
            try:
                client.probe(path.format(repo=repo, branch=branch), params=params)
            except ServiceError as exc:
                return Check(name, "fail", f"the token may not read {what} of {repo} "
                             f"({redact(exc.message)[:160]})",
                             f"give the token {what} (read and write) on {repo}")  # fmt: skip
    return Check(name, "ok", f"{who} may push and open PRs")


def _repo(gl: Any, repo: str, who: str, fix: str) -> Check:
    import gitlab as gl_module

    name = f"repo {repo}"
    try:
        found = gl.projects.get(repo)
    except gl_module.exceptions.GitlabGetError as exc:
        if exc.response_code == 404:
            return Check(name, "fail", f"not found, or invisible to {who}", fix)
        return _failed(name, exc, fix)
    except Exception as exc:  # noqa: BLE001 - the finding
        return _failed(name, exc, fix)
    perms = getattr(found, "permissions", None) or {}
    levels = [
        int((perms.get(kind) or {}).get("access_level") or 0)
        for kind in ("project_access", "group_access")
    ]
    level = max(levels)
    label = LEVELS.get(level, str(level))
    if getattr(found, "archived", False):
        return Check(name, "fail", f"{repo} is archived: nothing can be pushed", fix)
    if level < DEVELOPER:
        return Check(
            name,
            "fail",
            f"{who} is {label} ({level}) on {repo}: it cannot push a branch or open an MR",
            f"make {who} a Developer (30) or more of {repo}",
        )
    return Check(name, "ok", f"{who} is {label}: may push and open MRs")


# -- the model -----------------------------------------------------------------------------


def model(cfg: Config | None, env: Environment) -> list[Check]:
    """``GET /v1/models/{model}``: the key is accepted and the configured model exists for it.
    urllib, not the SDK: importing anthropic costs seconds."""
    key = env.get("ANTHROPIC_API_KEY")
    if not key:
        return []
    wanted = cfg.harness.model if cfg else ""
    base = env.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com").rstrip("/")
    url = f"{base}/v1/models/{wanted}" if wanted else f"{base}/v1/models"
    req = urllib.request.Request(url, headers={"x-api-key": key, "anthropic-version": "2023-06-01"})
    fix = "the models call refused: check ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL"
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            body = json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 404 and wanted:
            harness = cfg.dir / "harness.yaml" if cfg else "harness.yaml"
            return [
                Check(
                    "reach Anthropic",
                    "fail",
                    f"the key works but model {wanted!r} does not exist for it",
                    f"set `model:` in {harness} to one that GET /v1/models lists",
                )
            ]
        return [Check("reach Anthropic", "fail", f"HTTP {exc.code} from {url}", fix)]
    except Exception as exc:  # noqa: BLE001 - the finding
        return [_failed("reach Anthropic", exc, fix)]
    if wanted:
        return [Check("reach Anthropic", "ok", f"model {body.get('id', wanted)} answers")]
    return [Check("reach Anthropic", "ok", f"{len(body.get('data', []))} model(s) listed")]


# -- Jira (#30) ----------------------------------------------------------------------------


def jira(cfg: Config | None, env: Environment) -> list[Check]:
    """``JIRA_URL`` set: the credentials are accepted (GET myself), and each ``jira_prefixes``
    entry of projects.yaml is a project this account sees (a typo there leaves every ticket of
    that project without its issue)."""

    url = env.get("JIRA_URL")
    if not url:
        return []
    token = env.get("JIRA_TOKEN")
    if not token:
        fix = "add JIRA_TOKEN (and JIRA_USER, your email, on Jira Cloud) to the env file"
        return [Check("reach Jira", "fail", "JIRA_URL is set but JIRA_TOKEN is not", fix)]
    client = LiveJira(JiraSettings(url=url.rstrip("/"), user=env.get("JIRA_USER"), token=token))
    try:
        me = client.myself()
    except ServiceError as exc:
        fix = (
            "GET myself refused: check JIRA_USER (Cloud: the account's email) and JIRA_TOKEN "
            "(Cloud: an API token; Data Center: a personal access token, JIRA_USER unset)"
        )
        return [Check("reach Jira", "fail", redact(exc.message)[:300], fix)]
    who = me.get("displayName") or me.get("name") or me.get("emailAddress") or "?"
    out = [Check("reach Jira", "ok", f"as {who} ({url})")]
    if cfg is None:
        return out
    where = cfg.dir / "projects.yaml"
    for project, spec in cfg.projects.projects.items():
        for prefix in spec.jira_prefixes:
            name = f"Jira prefix {prefix}"
            try:
                found = client.project(prefix)
            except ServiceError as exc:
                detail = (
                    f"{project}'s prefix {prefix} is not a Jira project {who} can see"
                    if exc.status == 404
                    else redact(exc.message)[:300]
                )
                out.append(
                    Check(name, "fail", detail, f"fix jira_prefixes of {project} in {where}")
                )
                continue
            out.append(Check(name, "ok", f"{project}: {found.get('name', prefix)}"))
    return out
