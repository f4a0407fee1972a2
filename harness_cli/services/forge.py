"""The forge port: what delivery, mr-monitor and finalize need from GitLab or GitHub, as plain data.

One Protocol, :class:`Forge`, spoken in change-request terms (GitLab's merge request and
GitHub's pull request are both a :class:`MergeRequest`; ``iid`` is the MR's IID or the PR's
number). Implementations:

- :class:`harness_cli.services.gitlab.LiveGitLab` (python-gitlab), unchanged in behaviour;
- :class:`harness_cli.services.github.LiveGitHub` (PyGithub; docs/GITHUB.md says why).

Which forge a repository lives on is configuration: ``forge: gitlab | github`` per project in
projects.yaml (default gitlab), and ``improvement.self_repo_forge`` for the harness's own
repository (finalize's improvement change). :class:`ForgeRouter` is the one client the
commands hand to core code: every call names its repository, and the router sends it to that
repository's forge, building each live client only when first used (so a GitLab-only team
needs no GitHub token, and the reverse).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from harness_cli.config import Config

ForgeName = Literal["gitlab", "github"]
FORGES: tuple[ForgeName, ...] = ("gitlab", "github")
DEFAULT_FORGE: ForgeName = "gitlab"
"""A project without ``forge:`` is on GitLab: every config written before GitHub was a forge."""


@dataclass
class MergeRequest:
    project: str
    iid: int
    state: str
    """``opened``, ``closed`` or ``merged`` (GitHub's open/closed+merged are mapped to these)."""
    source_branch: str
    target_branch: str
    title: str
    description: str
    web_url: str
    sha: str = ""
    draft: bool = False
    updated_at: str = ""
    detailed_merge_status: str = ""
    """GitLab's vocabulary (``mergeable``, ``conflict``, ``need_rebase``, ``checking``…); the
    GitHub client maps ``mergeable``/``mergeable_state`` onto it."""
    head_pipeline: dict[str, Any] | None = None
    """``{id, status, sha, ref, web_url}``; statuses in GitLab's words (``running``,
    ``failed``, ``success``…). On GitHub: the Actions runs of the head SHA, folded."""
    has_conflicts: bool = False
    """The forge's own word that the source does not merge cleanly into the target."""
    author: str = ""
    """Username of who opened the MR."""
    adopted: bool = False
    """True when create() found an open MR for the branch (the 409 / 422) and returned it."""

    @property
    def key(self) -> str:
        return f"{self.project}!{self.iid}"


@dataclass
class Note:
    id: int
    author: str
    body: str
    system: bool
    created_at: str
    resolvable: bool = False
    resolved: bool = False


@dataclass
class Discussion:
    id: str
    notes: list[Note] = field(default_factory=list)

    @property
    def resolved(self) -> bool:
        resolvable = [n for n in self.notes if n.resolvable]
        return bool(resolvable) and all(n.resolved for n in resolvable)


class Forge(Protocol):
    calls: int

    def whoami(self) -> str: ...

    def project(self, path: str) -> dict[str, Any]:
        """At least ``http_url_to_repo`` (what a mirror fetches from and pushes to) and
        ``default_branch``."""
        ...

    def create_mr(
        self,
        project: str,
        *,
        source_branch: str,
        target_branch: str,
        title: str,
        description: str,
        draft: bool = False,
    ) -> MergeRequest: ...

    def get_mr(self, project: str, iid: int) -> MergeRequest: ...

    def update_mr(self, project: str, iid: int, **fields: Any) -> MergeRequest:
        """``title`` (a ``Draft:`` prefix makes it a draft, its absence ready), ``description``."""
        ...

    def list_mrs(
        self,
        project: str,
        *,
        updated_after: str | None = None,
        state: str = "all",
        target_branch: str | None = None,
        recheck: bool = False,
    ) -> list[MergeRequest]: ...

    def pipelines(self, project: str, *, updated_after: str) -> list[dict[str, Any]]: ...

    def branch_head(self, project: str, branch: str) -> str: ...

    def discussions(self, project: str, iid: int) -> list[Discussion]: ...

    def reply(self, project: str, iid: int, discussion_id: str, body: str) -> None: ...

    def note(self, project: str, iid: int, body: str) -> None: ...

    def resolve(self, project: str, iid: int, discussion_id: str) -> None: ...

    def pipeline_jobs(self, project: str, pipeline_id: int) -> list[dict[str, Any]]: ...

    def job_trace(self, project: str, job_id: int) -> str: ...


def forge_map(cfg: Config) -> dict[str, ForgeName]:
    """Repository path → its forge, from projects.yaml and the harness's own repo setting."""
    found: dict[str, ForgeName] = {}
    for project in cfg.projects.projects.values():
        for repo in project.repos:
            found[repo] = project.forge
    improvement = cfg.harness.improvement
    found[improvement.self_repo] = improvement.self_repo_forge
    return found


def home_forge(cfg: Config) -> ForgeName:
    """The forge the harness's account is asked ``whoami`` on when no repository is named:
    GitHub when every team's repositories are there (the harness's own repo aside: it may sit
    on the other forge), else GitLab. One login serves mr-monitor's "is this note ours"; a
    team spread over both forges gives the bot the same login on both."""
    used = {p.forge for p in cfg.projects.projects.values() if p.repos}
    used = used or {cfg.harness.improvement.self_repo_forge}
    return "github" if used == {"github"} else DEFAULT_FORGE


class ForgeRouter:
    """A :class:`Forge` over several: each call goes to its repository's forge."""

    def __init__(
        self,
        makers: dict[ForgeName, Callable[[], Forge]],
        forge_of: dict[str, ForgeName],
        *,
        home: ForgeName = DEFAULT_FORGE,
    ) -> None:
        self._makers = makers
        self._forge_of = forge_of
        self._home = home
        self._clients: dict[ForgeName, Forge] = {}
        self._logins: dict[ForgeName, str] = {}
        self._tuning: dict[str, Any] = {}

    # -- routing --------------------------------------------------------------------------------
    def name_for(self, project: str) -> ForgeName:
        # A repository no longer in projects.yaml (a monitored MR of a removed project) is on
        # the home forge: on a GitHub-only setup GitLab has no credentials, and its 404 is
        # what lets mr-monitor drop the dead entry after its cycles.
        return self._forge_of.get(project, self._home)

    def client(self, name: ForgeName) -> Forge:
        if name not in self._clients:
            made = self._makers[name]()
            for attr, value in self._tuning.items():
                if hasattr(made, attr):
                    setattr(made, attr, value)
            self._clients[name] = made
        return self._clients[name]

    def for_project(self, project: str) -> Forge:
        return self.client(self.name_for(project))

    def tune(self, **values: Any) -> None:
        """``deadline``/``max_retries`` for every client, built now or later (mr-monitor)."""
        self._tuning.update(values)
        for made in self._clients.values():
            for attr, value in values.items():
                if hasattr(made, attr):
                    setattr(made, attr, value)

    @property
    def calls(self) -> int:
        return sum(c.calls for c in self._clients.values())

    # -- the port -------------------------------------------------------------------------------
    def whoami(self) -> str:
        """The harness's account on its home forge: one name for "ours" (mr-monitor's and the
        review run's), whatever forge a repository is on (see :meth:`discussions`)."""
        if self._home not in self._logins:
            self._logins[self._home] = self.client(self._home).whoami()
        return self._logins[self._home]

    def _login(self, name: ForgeName) -> str:
        if name not in self._logins:
            self._logins[name] = self.client(name).whoami()
        return self._logins[name]

    def project(self, path: str) -> dict[str, Any]:
        return self.for_project(path).project(path)

    def create_mr(self, project: str, **fields: Any) -> MergeRequest:
        return self.for_project(project).create_mr(project, **fields)

    def get_mr(self, project: str, iid: int) -> MergeRequest:
        return self.for_project(project).get_mr(project, iid)

    def update_mr(self, project: str, iid: int, **fields: Any) -> MergeRequest:
        return self.for_project(project).update_mr(project, iid, **fields)

    def list_mrs(self, project: str, **params: Any) -> list[MergeRequest]:
        return self.for_project(project).list_mrs(project, **params)

    def pipelines(self, project: str, *, updated_after: str) -> list[dict[str, Any]]:
        return self.for_project(project).pipelines(project, updated_after=updated_after)

    def branch_head(self, project: str, branch: str) -> str:
        return self.for_project(project).branch_head(project, branch)

    def discussions(self, project: str, iid: int) -> list[Discussion]:
        """On the other forge than home (the reference's own repo on GitHub, the teams' on
        GitLab), the harness's account has another login there: its notes are reported under
        the home login, so "our note is the newest" and "not a reviewer" hold on both."""
        name = self.name_for(project)
        found = self.client(name).discussions(project, iid)
        if name == self._home:
            return found
        there, home = self._login(name), self.whoami()
        if there != home:
            for discussion in found:
                for note in discussion.notes:
                    if note.author == there:
                        note.author = home
        return found

    def reply(self, project: str, iid: int, discussion_id: str, body: str) -> None:
        self.for_project(project).reply(project, iid, discussion_id, body)

    def note(self, project: str, iid: int, body: str) -> None:
        self.for_project(project).note(project, iid, body)

    def raw_reply(self, project: str, iid: int, discussion_id: str, body: str) -> None:
        self.for_project(project).raw_reply(project, iid, discussion_id, body)  # type: ignore[attr-defined]

    def raw_note(self, project: str, iid: int, body: str) -> None:
        self.for_project(project).raw_note(project, iid, body)  # type: ignore[attr-defined]

    def resolve(self, project: str, iid: int, discussion_id: str) -> None:
        self.for_project(project).resolve(project, iid, discussion_id)

    def pipeline_jobs(self, project: str, pipeline_id: int) -> list[dict[str, Any]]:
        return self.for_project(project).pipeline_jobs(project, pipeline_id)

    def job_trace(self, project: str, job_id: int) -> str:
        return self.for_project(project).job_trace(project, job_id)
