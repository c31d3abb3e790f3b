"""Real HTTP servers on loopback that answer as GitHub's and GitLab's REST APIs do for commit statuses and
pull (merge) request comments, and check each request's shape and authentication as their documentation
states: method, path, headers, and the JSON body's keys, types and values. A request that does not
match is answered as the forge would (401, 404, 422) and recorded in ``problems``.

GitHub: https://docs.github.com/en/rest/commits/statuses#create-a-commit-status,
/rest/commits/commits#list-pull-requests-associated-with-a-commit, /rest/issues/comments#create-an-issue-comment.
GitLab: https://docs.gitlab.com/api/commits/#set-the-pipeline-status-of-a-commit,
/api/commits/#list-merge-requests-associated-with-a-commit, /api/notes/#create-new-merge-request-note.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHA = r"[0-9a-f]{40}"


@dataclass
class Call:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Forge:
    """One forge: ``kind`` "github" or "gitlab", the token it accepts, the requests of a commit."""

    kind: str
    token: str
    project: str  # GitHub: owner/repo; GitLab: the project's id
    requests_of_commit: list[dict[str, Any]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)  # accepted
    problems: list[str] = field(default_factory=list)  # refused, and why

    def __post_init__(self) -> None:
        forge = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, answer = forge.answer(self.command, self.path, dict(self.headers), raw)
                payload = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = _handle  # noqa: N815 - http.server's names
            do_POST = _handle  # noqa: N815
            do_PUT = _handle  # noqa: N815
            do_PATCH = _handle  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        root = f"http://127.0.0.1:{self.server.server_address[1]}"
        return root if self.kind == "github" else f"{root}/api/v4"

    def close(self) -> None:
        # Bounded: a test that failed while a request was held open must still end, not hang the suite.
        stopping = threading.Thread(target=self.server.shutdown, daemon=True)
        stopping.start()
        stopping.join(10)
        self.server.server_close()

    def refuse(self, status: int, why: str) -> tuple[int, Any]:
        self.problems.append(why)
        return status, {"message": why}

    def answer(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        headers = {name.lower(): value for name, value in headers.items()}
        if self.kind == "github":
            return self._github(method, path, headers, raw)
        return self._gitlab(method, path, headers, raw)

    def _body(self, method: str, headers: dict[str, str], raw: bytes) -> tuple[Any, str | None]:
        if method == "GET":
            return None, None if not raw else "a GET with a body"
        if headers.get("content-type", "").split(";")[0] != "application/json":
            return None, f"Content-Type {headers.get('content-type')!r} is not application/json"
        try:
            return json.loads(raw), None
        except ValueError:
            return None, "the body is not JSON"

    # ------------------------------------------------------------------------------------------ GitHub

    def _github(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        if headers.get("authorization") != f"Bearer {self.token}":
            return self.refuse(401, "Bad credentials")
        if headers.get("accept") != "application/vnd.github+json":
            return self.refuse(415, f"Accept {headers.get('accept')!r}")
        if headers.get("x-github-api-version") != "2022-11-28":
            return self.refuse(400, f"X-GitHub-Api-Version {headers.get('x-github-api-version')!r}")
        if "user-agent" not in headers:
            return self.refuse(403, "GitHub requires a User-Agent")
        body, problem = self._body(method, headers, raw)
        if problem:
            return self.refuse(400, problem)
        repo = f"/repos/{self.project}"
        if method == "POST" and re.fullmatch(rf"{repo}/statuses/{SHA}", path):
            allowed = {"state", "target_url", "description", "context"}
            if not isinstance(body, dict) or set(body) - allowed or "state" not in body:
                return self.refuse(422, f"status body {body!r}")
            if body["state"] not in ("error", "failure", "pending", "success"):
                return self.refuse(422, f"state {body['state']!r}")
            if not all(isinstance(body.get(key, ""), str) for key in allowed):
                return self.refuse(422, "a status field is not a string")
            if len(body.get("description", "")) > 140:
                return self.refuse(422, "description is longer than 140 characters")
            self.calls.append(Call(method, path, headers, body))
            return 201, {"id": len(self.calls), **body}
        if method == "GET" and re.fullmatch(rf"{repo}/commits/{SHA}/pulls", path):
            self.calls.append(Call(method, path, headers, None))
            return 200, self.requests_of_commit
        if method == "POST" and (match := re.fullmatch(rf"{repo}/issues/(\d+)/comments", path)):
            if not isinstance(body, dict) or set(body) != {"body"} or not isinstance(body["body"], str):
                return self.refuse(422, f"comment body {body!r}")
            if int(match.group(1)) not in {pull["number"] for pull in self.requests_of_commit}:
                return self.refuse(404, f"no issue {match.group(1)}")
            self.calls.append(Call(method, path, headers, body))
            return 201, {"id": len(self.calls), "body": body["body"]}
        return self.refuse(404, f"Not Found: {method} {path}")

    # ------------------------------------------------------------------------------------------ GitLab

    def _gitlab(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, Any]:
        if headers.get("private-token") != self.token:
            return self.refuse(401, "401 Unauthorized")
        body, problem = self._body(method, headers, raw)
        if problem:
            return self.refuse(400, problem)
        project = f"/api/v4/projects/{self.project}"
        if method == "POST" and re.fullmatch(rf"{project}/statuses/{SHA}", path):
            allowed = {
                "state",
                "ref",
                "name",
                "context",
                "target_url",
                "description",
                "coverage",
                "pipeline_id",
            }
            if not isinstance(body, dict) or set(body) - allowed or "state" not in body:
                return self.refuse(400, f"status body {body!r}")
            if body["state"] not in ("pending", "running", "success", "failed", "canceled", "skipped"):
                return self.refuse(400, f"state {body['state']!r}")
            self.calls.append(Call(method, path, headers, body))
            return 201, {"id": len(self.calls), "status": body["state"], "name": body.get("name")}
        if method == "GET" and re.fullmatch(rf"{project}/repository/commits/{SHA}/merge_requests", path):
            self.calls.append(Call(method, path, headers, None))
            return 200, self.requests_of_commit
        if method == "POST" and (match := re.fullmatch(rf"{project}/merge_requests/(\d+)/notes", path)):
            if (
                not isinstance(body, dict)
                or set(body) - {"body", "internal", "created_at"}
                or "body" not in body
            ):
                return self.refuse(400, f"note body {body!r}")
            if int(match.group(1)) not in {request["iid"] for request in self.requests_of_commit}:
                return self.refuse(404, "404 Not found")
            self.calls.append(Call(method, path, headers, body))
            return 201, {"id": len(self.calls), "body": body["body"]}
        return self.refuse(404, f"404 Not Found: {method} {path}")
