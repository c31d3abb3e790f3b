"""Reporting a branch check to where its pull request lives, through the forges' documented REST APIs,
every request through the egress guard:

- GitHub: ``POST /repos/{owner}/{repo}/statuses/{sha}`` (state success | failure, context, description,
  target_url); the pull requests of the commit from ``GET /repos/{owner}/{repo}/commits/{sha}/pulls``;
  a comment with ``POST /repos/{owner}/{repo}/issues/{number}/comments``. Authorization: Bearer <token>,
  Accept: application/vnd.github+json, X-GitHub-Api-Version: 2022-11-28.
- GitLab: ``POST /projects/{id}/statuses/{sha}`` (state success | failed, name, description,
  target_url); the merge requests of the commit from ``GET /projects/{id}/repository/commits/{sha}/
  merge_requests``; a note with ``POST /projects/{id}/merge_requests/{iid}/notes``. PRIVATE-TOKEN: <token>.

What is sent is built by branch_checks.py from counts and ids only. A failure is a ReportFailed whose
message names the step and the HTTP status, never the token or the forge's answer.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from django.conf import settings

from policies_app.choices import ReviewApi
from policies_app.guards import egress
from policies_app.models import PolicyRepository

logger = logging.getLogger(__name__)

CONTEXT = "policy-platform"  # the status's context (GitHub) or name (GitLab)
MAX_DESCRIPTION = 140  # GitHub's bound on a status's description
MAX_ANSWER_BYTES = 512 * 1024


class ReportFailed(Exception):
    """The report did not reach the forge; the message is safe to record and show."""


@dataclass(frozen=True)
class Report:
    commit: str
    branch: str
    passed: bool
    description: str  # one line
    comment: str  # Markdown
    target_url: str


def refusal_to_report(repository: PolicyRepository) -> str | None:
    """Why pushes to this repository's other branches cannot be reported (None: they can)."""
    if repository.review_api not in (ReviewApi.GITHUB, ReviewApi.GITLAB):
        return "no review API is set"
    if not repository.review_api_url or not repository.review_project or not repository.review_token:
        return "the review API's address, project and token are all required"
    return None


def send_report(repository: PolicyRepository, report: Report, change_request: int | None) -> int | None:
    """Post the commit status, then the comment on the commit's open pull (merge) request when there is
    one. Returns the number (iid) of the request commented on. Raises ReportFailed."""
    forge = _GitHub(repository) if repository.review_api == ReviewApi.GITHUB else _GitLab(repository)
    forge.post_status(report)
    number = change_request or forge.change_request_of(report.commit, report.branch)
    if number is not None:
        forge.post_comment(number, report.comment)
    return number


class _Forge:
    def __init__(self, repository: PolicyRepository) -> None:
        self.root = repository.review_api_url.rstrip("/")
        self.project = repository.review_project.strip()
        self.token = repository.review_token

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def call(self, method: str, path: str, what: str, body: dict[str, Any] | None = None) -> Any:
        headers = {"User-Agent": "policy-platform", **self.headers()}
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        try:
            answer = egress.request(
                method,
                f"{self.root}{path}",
                headers=headers,
                body=data,
                timeout_s=settings.WEBHOOK_TIMEOUT_SECONDS,
                max_response_bytes=MAX_ANSWER_BYTES,
            )
        except egress.EgressRefused as refused:
            raise ReportFailed(f"{what}: {refused.message}") from None
        except egress.EgressFailed as failure:
            logger.info("branch check report, %s failed (%s): %r", what, failure.kind, failure.cause)
            raise ReportFailed(f"{what}: the API was {failure.kind.replace('_', ' ')}") from None
        if not 200 <= answer.status < 300:
            hint = " (is the token valid, with the right scopes?)" if answer.status in (401, 403) else ""
            raise ReportFailed(f"{what}: the API answered {answer.status}{hint}")
        try:
            return json.loads(answer.body or b"null")
        except ValueError:
            raise ReportFailed(f"{what}: the API's answer is not JSON") from None


class _GitHub(_Forge):
    def headers(self) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
        }

    def _repo(self) -> str:
        owner, _, name = self.project.partition("/")
        return f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"

    def post_status(self, report: Report) -> None:
        self.call(
            "POST",
            f"{self._repo()}/statuses/{report.commit}",
            "posting the commit status",
            {
                "state": "success" if report.passed else "failure",
                "target_url": report.target_url,
                "description": report.description[:MAX_DESCRIPTION],
                "context": CONTEXT,
            },
        )

    def change_request_of(self, commit: str, branch: str) -> int | None:
        pulls = self.call("GET", f"{self._repo()}/commits/{commit}/pulls", "finding the pull request")
        return _open_request(pulls, "number", lambda pull: (pull.get("head") or {}).get("ref"), branch)

    def post_comment(self, number: int, text: str) -> None:
        self.call("POST", f"{self._repo()}/issues/{number}/comments", "commenting", {"body": text})


class _GitLab(_Forge):
    def headers(self) -> dict[str, str]:
        return {"PRIVATE-TOKEN": self.token}

    def _project(self) -> str:
        return f"/projects/{quote(self.project, safe='')}"

    def post_status(self, report: Report) -> None:
        self.call(
            "POST",
            f"{self._project()}/statuses/{report.commit}",
            "posting the commit status",
            {
                "state": "success" if report.passed else "failed",
                "name": CONTEXT,
                "target_url": report.target_url,
                "description": report.description[:MAX_DESCRIPTION],
            },
        )

    def change_request_of(self, commit: str, branch: str) -> int | None:
        requests = self.call(
            "GET",
            f"{self._project()}/repository/commits/{commit}/merge_requests",
            "finding the merge request",
        )
        return _open_request(requests, "iid", lambda request: request.get("source_branch"), branch)

    def post_comment(self, number: int, text: str) -> None:
        self.call("POST", f"{self._project()}/merge_requests/{number}/notes", "commenting", {"body": text})


def _open_request(answer: Any, number_key: str, branch_of: Any, branch: str) -> int | None:
    """The open request whose source is ``branch`` (else the first open one) among the forge's answer."""
    if not isinstance(answer, list):
        return None
    opened = [item for item in answer if isinstance(item, dict) and item.get("state") in ("open", "opened")]
    chosen = next((item for item in opened if branch_of(item) == branch), opened[0] if opened else None)
    number = chosen.get(number_key) if chosen else None
    return number if isinstance(number, int) and number > 0 else None
