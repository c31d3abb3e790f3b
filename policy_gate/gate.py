"""Pipeline gate: ask the platform whether a deployment may go ahead, and wait for the answer.

    policy-gate deploy --environment 7 --plan plan.json --wait
    policy-gate deploy --environment "Payments EU/prod" --plan plan.json --wait
    policy-gate destroy --environment 7 --plan plan.json --wait
    policy-gate complete --deployment 42 --status succeeded --state terraform.tfstate

``policy-gate`` is installed by ``pip install`` of the project; ``python gate.py`` runs a copy of this
one file the same way, from any directory.

The commit, pull request and CI run are read from the CI's variables (GitHub Actions, GitLab CI,
Bitbucket Pipelines, Azure Pipelines, CircleCI, Jenkins) unless --commit, --pull-request-url or
--ci-run-url say otherwise; the deployment's page is printed once it is requested.

Exit codes (what a pipeline step branches on):
    0  released: the deployment may be applied (status approved or succeeded); `complete` accepted
    1  never used by the gate: Python itself exits 1 when the gate cannot even start
    2  error: the gate could not get a verdict (bad arguments or file, HTTP or network error, the
       evaluation failed closed)
    3  pending approval (only without --wait)
    4  stopped: denied by a policy, rejected by an approver, cancelled, expired, superseded (or failed);
       for `complete`: the release expired before the pipeline completed it (the platform's release
       expiry, 24 hours unless the project sets another), so nothing was recorded and the environment
       may already have moved on: trigger a new deployment
    5  timed out waiting; the deployment was cancelled unless --keep-on-timeout

Why this module is long: it is the whole client, one file a pipeline copies (the CI variables of six
systems included).

Standard library only, on purpose: a pipeline copies this one file to its runner and runs it with any
Python 3.11, without installing Django or the platform. A test keeps it that way.

Why this module is long: it is the one file a pipeline copies; its HTTP client, its cheap polling
(slim status and If-None-Match) and its command line cannot be split into modules without losing that.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

EXIT_RELEASED = 0
EXIT_ERROR = 2
EXIT_PENDING = 3
EXIT_STOPPED = 4
EXIT_TIMED_OUT = 5

RELEASED = frozenset({"approved", "succeeded"})
STOPPED = frozenset({"denied", "rejected", "cancelled", "failed", "expired", "superseded"})
# Statuses in which the platform is still deciding; any other status is final for the gate.
UNDECIDED = frozenset({"queued", "evaluating", "pending_approval"})
# Before a verdict exists a deployment is only queued or evaluating: not worth an exit 3 even without --wait.
NOT_YET_EVALUATED = frozenset({"queued", "evaluating"})

# A poll that fails this many times in a row ends the wait; a single blip of the network does not.
MAX_CONSECUTIVE_POLL_FAILURES = 5
# A worker explains an evaluation just after the decision is stored: worth waiting for a moment before
# printing the reasons, never worth holding a pipeline for.
EXPLANATION_WAIT_S = 5.0
EXPLANATION_POLL_S = 0.5


def say(text: str) -> None:
    """Print at once: a pipeline log must show why the gate waits while it waits, not when it ends."""
    try:
        print(text, flush=True)
    except UnicodeEncodeError:  # a runner whose console is not UTF-8: ✓ and ✗ must not end the gate
        encoding = getattr(sys.stdout, "encoding", None) or "ascii"
        print(text.encode(encoding, "replace").decode(encoding), flush=True)


class GateError(Exception):
    """Something that ends the gate with exit code 2; the message is what the pipeline log shows.
    ``http_status`` and ``code``: the platform's answer, when it refused the request."""

    def __init__(self, message: str, http_status: int | None = None, code: str = "") -> None:
        super().__init__(message)
        self.http_status = http_status
        self.code = code


class Client:
    """The few calls the gate makes to the platform's REST API."""

    def __init__(self, base_url: str, token: str, request_timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.request_timeout = request_timeout

    def request(self, method: str, path: str, body: Any = None) -> Any:
        return self.exchange(method, path, body)[0]

    def poll(self, path: str, etag: str) -> tuple[Any, str]:
        """GET ``path`` unless it is unchanged since the answer tagged ``etag``: (None, etag) when the
        platform says 304 Not Modified, else (the answer, its tag). An unchanged answer costs the
        platform next to nothing."""
        return self.exchange("GET", path, None, etag)

    def exchange(self, method: str, path: str, body: Any = None, etag: str = "") -> tuple[Any, str]:
        url = f"{self.base_url}{path}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Token {self.token}")
        if etag:
            req.add_header("If-None-Match", etag)
        try:
            with urllib.request.urlopen(req, timeout=self.request_timeout) as response:
                raw = response.read()
                tag = response.headers.get("ETag") or ""
        except urllib.error.HTTPError as exc:
            if exc.code == 304 and etag:
                return None, exc.headers.get("ETag") or etag
            message, code = api_message(exc)
            raise GateError(f"{method} {url} failed: HTTP {exc.code}: {message}", exc.code, code) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GateError(f"{method} {url} failed: cannot reach the platform: {reason}") from None
        if not raw:
            return None, tag
        try:
            return json.loads(raw), tag
        except ValueError:
            raise GateError(f"{method} {url} answered something that is not JSON: {raw[:200]!r}") from None


def api_message(exc: urllib.error.HTTPError) -> tuple[str, str]:
    """The API's own explanation of an error, flattened to one line (DRF answers {"detail": ...} or field
    errors), and its code ("" when it gives none)."""
    try:
        raw = exc.read()
    except OSError:
        raw = b""
    try:
        body = json.loads(raw)
    except ValueError:
        text = raw.decode("utf-8", "replace").strip()
        return text[:500] or str(exc.reason), ""
    code = body.get("code") if isinstance(body, dict) else None
    return flatten_errors(body) or str(exc.reason), code if isinstance(code, str) else ""


def flatten_errors(body: Any, prefix: str = "") -> str:
    if isinstance(body, dict):
        if "detail" in body and not prefix:
            code = f" ({body['code']})" if body.get("code") else ""
            return f"{flatten_errors(body['detail'])}{code}"
        parts = []
        for key, value in body.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            parts.append(flatten_errors(value, name))
        return "; ".join(part for part in parts if part)
    if isinstance(body, list):
        text = " ".join(flatten_errors(item) for item in body)
        return f"{prefix}: {text}" if prefix else text
    return f"{prefix}: {body}" if prefix else str(body)


def read_json_file(path: str, what: str) -> Any:
    """Read a JSON document ("-" for standard input); a terraform plan must first be shown as JSON."""
    try:
        if path == "-":
            return json.load(sys.stdin)
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise GateError(f"cannot read the {what} file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise GateError(
            f"the {what} file {path} is not JSON text; for a plan, pass the output of `terraform show -json`"
        ) from None
    except ValueError as exc:
        raise GateError(f"the {what} file {path} is not valid JSON: {exc}") from None


# What the platform keeps of the plan's text (its PLAN_TEXT_MAX_CHARACTERS default): a longer text is cut
# here, with a line saying so, rather than refused, so that a large plan never blocks a deployment.
PLAN_TEXT_MAX_CHARACTERS = 2 * 1024 * 1024


def read_plan_text(path: str) -> str:
    """The plan as `terraform show` printed it ("-" for standard input), cut to what the platform keeps."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(PLAN_TEXT_MAX_CHARACTERS + 1)
    except OSError as exc:
        raise GateError(f"cannot read the plan text file {path}: {exc.strerror or exc}") from None
    if len(text) > PLAN_TEXT_MAX_CHARACTERS:
        marker = "\n… (cut by policy_gate: the plan text is longer than the platform keeps)\n"
        text = text[: PLAN_TEXT_MAX_CHARACTERS - len(marker)] + marker
    return text


def _github_actions(env: dict[str, str]) -> dict[str, str]:
    server, repository = env.get("GITHUB_SERVER_URL", "https://github.com"), env.get("GITHUB_REPOSITORY", "")
    links = {"commit_sha": env.get("GITHUB_SHA", "")}
    if repository and env.get("GITHUB_RUN_ID"):
        links["ci_run_url"] = f"{server}/{repository}/actions/runs/{env['GITHUB_RUN_ID']}"
    # A pull_request run checks out refs/pull/<number>/merge.
    ref = env.get("GITHUB_REF", "").split("/")
    if repository and len(ref) == 4 and ref[:2] == ["refs", "pull"] and ref[2].isdigit():
        links["pull_request_url"] = f"{server}/{repository}/pull/{ref[2]}"
    return links


def _gitlab_ci(env: dict[str, str]) -> dict[str, str]:
    links = {"commit_sha": env.get("CI_COMMIT_SHA", ""), "ci_run_url": env.get("CI_PIPELINE_URL", "")}
    if env.get("CI_PROJECT_URL") and env.get("CI_MERGE_REQUEST_IID"):
        links["pull_request_url"] = f"{env['CI_PROJECT_URL']}/-/merge_requests/{env['CI_MERGE_REQUEST_IID']}"
    return links


def _bitbucket(env: dict[str, str]) -> dict[str, str]:
    origin = env.get("BITBUCKET_GIT_HTTP_ORIGIN", "")
    links = {"commit_sha": env.get("BITBUCKET_COMMIT", "")}
    if origin and env.get("BITBUCKET_BUILD_NUMBER"):
        links["ci_run_url"] = f"{origin}/pipelines/results/{env['BITBUCKET_BUILD_NUMBER']}"
    if origin and env.get("BITBUCKET_PR_ID"):
        links["pull_request_url"] = f"{origin}/pull-requests/{env['BITBUCKET_PR_ID']}"
    return links


def _azure_pipelines(env: dict[str, str]) -> dict[str, str]:
    links = {"commit_sha": env.get("BUILD_SOURCEVERSION", "")}
    collection, project = env.get("SYSTEM_COLLECTIONURI", ""), env.get("SYSTEM_TEAMPROJECT", "")
    if collection and project and env.get("BUILD_BUILDID"):
        links["ci_run_url"] = (
            f"{collection.rstrip('/')}/{urllib.parse.quote(project)}/_build/results?buildId={env['BUILD_BUILDID']}"
        )
    return links


# Each CI's marker variable and what its variables say; the first CI whose marker is set is used.
CI_SYSTEMS: list[tuple[str, Callable[[dict[str, str]], dict[str, str]]]] = [
    ("GITHUB_ACTIONS", _github_actions),
    ("GITLAB_CI", _gitlab_ci),
    ("BITBUCKET_BUILD_NUMBER", _bitbucket),
    ("TF_BUILD", _azure_pipelines),
    # CircleCI and Jenkins (multibranch: CHANGE_URL) name their links outright.
    (
        "CIRCLECI",
        lambda env: {
            "commit_sha": env.get("CIRCLE_SHA1", ""),
            "ci_run_url": env.get("CIRCLE_BUILD_URL", ""),
            "pull_request_url": env.get("CIRCLE_PULL_REQUEST", ""),
        },
    ),
    (
        "JENKINS_URL",
        lambda env: {
            "commit_sha": env.get("GIT_COMMIT", ""),
            "ci_run_url": env.get("BUILD_URL", ""),
            "pull_request_url": env.get("CHANGE_URL", ""),
        },
    ),
]


def links_from_ci(env: dict[str, str]) -> dict[str, str]:
    """The commit, pull request and CI run of the pipeline the gate runs in, from its CI's variables."""
    for marker, read in CI_SYSTEMS:
        if env.get(marker):
            return {name: value for name, value in read(env).items() if value}
    return {}


def change_links(args: argparse.Namespace, env: dict[str, str]) -> dict[str, str]:
    """What the CI says, each overridden by its option when given."""
    links = links_from_ci(env)
    for name in ("commit_sha", "pull_request_url", "ci_run_url"):
        given = getattr(args, name, None)
        if given:
            links[name] = given
    return links


def environment_path(environment: str) -> str:
    """The API path of an environment given by id or by project/environment path."""
    return urllib.parse.quote(environment.strip().strip("/"), safe="/")


def deployment_request(args: argparse.Namespace, deployment_type: str) -> dict[str, Any]:
    body: dict[str, Any] = {"type": deployment_type, "trigger_name": args.trigger}
    if args.revision:
        body["revision"] = args.revision
    body["plan"] = read_json_file(args.plan, "plan") if args.plan else None
    if args.plan_text:
        if args.plan_text == "-" and args.plan == "-":
            raise GateError("--plan and --plan-text cannot both read standard input")
        body["plan_text"] = read_plan_text(args.plan_text)
    cost: dict[str, float] = {}
    if args.cost_total is not None:
        cost["total_monthly_cost"] = args.cost_total
    if args.cost_diff is not None:
        cost["monthly_cost_diff"] = args.cost_diff
    if cost:
        body["cost_estimation"] = cost
    if args.idempotency_key:
        body["idempotency_key"] = args.idempotency_key
    body.update(change_links(args, dict(os.environ)))
    return body


def describe(deployment: dict[str, Any]) -> str:
    status = deployment.get("status", "?")
    if status in UNDECIDED:
        decision = deployment.get("decision") or "none yet"
        return f"deployment {deployment.get('id')} is {status} (decision: {decision})"
    # A final status is the whole verdict; which policy decision led there is in the reasons below.
    return f"deployment {deployment.get('id')} is {status}"


def requirement_lines(deployment: dict[str, Any], final: bool = False) -> list[str]:
    """Each requirement the policies declare, with its state ("2/2 approvals ✓") and, while it waits,
    who may still clear it."""
    requirements = deployment.get("requirements")
    if not isinstance(requirements, list):
        return []
    lines = []
    for item in requirements:
        if not isinstance(item, dict):
            continue
        line = f"  requirement: {item.get('summary', '?')} ({item.get('policy', '?')})"
        if not final and not item.get("met"):
            people = item.get("may_satisfy")
            if isinstance(people, list):
                line += f"; can be cleared by {', '.join(map(str, people)) or 'nobody who may still approve'}"
        lines.append(line)
    return lines


def messages_of(deployment: dict[str, Any], kind: str) -> list[str]:
    messages = deployment.get("messages") or {}
    values = messages.get(kind) if isinstance(messages, dict) else None
    return [str(value) for value in values] if isinstance(values, list) else []


def explanations_of(deployment: dict[str, Any]) -> dict[str, str]:
    """Why each message of the latest evaluation was given, in short: message -> "deny rule at
    main.rego:12 read input.x = "y"" (the platform masks sensitive values before they get here)."""
    evaluations = deployment.get("evaluations")
    if not isinstance(evaluations, list) or not evaluations or not isinstance(evaluations[-1], dict):
        return {}
    why: dict[str, str] = {}
    for outcome in evaluations[-1].get("outcomes") or []:
        for item in (outcome.get("explanation") or []) if isinstance(outcome, dict) else []:
            if not isinstance(item, dict) or not isinstance(item.get("message"), str):
                continue
            line = f"{item.get('rule', '?')} rule at {item.get('file', '?')}:{item.get('line', '?')}"
            reads = [r for r in item.get("reads") or [] if isinstance(r, dict)][:3]
            if reads:
                line += " read " + ", ".join(f"{r.get('path')} = {json.dumps(r.get('value'))}" for r in reads)
            why.setdefault(item["message"], line[:300])
    return why


def explanations_pending(deployment: dict[str, Any]) -> bool:
    """Whether the platform is still preparing the explanations of the latest evaluation."""
    evaluations = deployment.get("evaluations")
    latest = evaluations[-1] if isinstance(evaluations, list) and evaluations else None
    return isinstance(latest, dict) and latest.get("explanations_pending") is True


def with_explanations(
    client: Client,
    deployment: dict[str, Any],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """The deployment read again until its latest evaluation is explained, for EXPLANATION_WAIT_S at most
    (then as it is: the reasons print without their "from ..." lines)."""
    deadline = clock() + EXPLANATION_WAIT_S
    while explanations_pending(deployment) and clock() < deadline:
        sleep(EXPLANATION_POLL_S)
        try:
            deployment = client.request("GET", f"/api/v1/deployments/{deployment['id']}/")
        except GateError:
            break
    return deployment


def reason_lines(kind: str, messages: list[str], why: dict[str, str]) -> list[str]:
    """Each message, followed by why it was given when the platform explained it."""
    lines = []
    for message in messages:
        lines.append(f"  {kind}: {message}")
        # A message an enforcement level or a waiver prefixed ("[advisory] ...", "waived by X until T: ...").
        explained = why.get(message) or next(
            (line for given, line in why.items() if message.endswith((f"] {given}", f": {given}"))), None
        )
        if explained:
            lines.append(f"    from {explained}")
    return lines


def approvals_of(deployment: dict[str, Any]) -> list[dict[str, Any]]:
    approvals = deployment.get("approvals")
    return [a for a in approvals if isinstance(a, dict)] if isinstance(approvals, list) else []


def approval_line(approval: dict[str, Any]) -> str:
    verb = "rejected" if approval.get("decision") == "reject" else "approved"
    comment = str(approval.get("comment") or "").strip()
    carried = approval.get("carried_over_from")
    origin = f" (carried over from deployment {carried}: same plan)" if carried else ""
    return f"  {verb} by {approval.get('user', '?')}{origin}" + (f": {comment}" if comment else "")


def report_final(deployment: dict[str, Any], out: Callable[[str], None]) -> int:
    """Print the verdict with its reasons and return the exit code for a final status."""
    status = deployment.get("status")
    out(describe(deployment))
    why = explanations_of(deployment)
    for kind in ("deny", "warn"):
        for line in reason_lines(kind, messages_of(deployment, kind), why):
            out(line)
    for line in requirement_lines(deployment, final=True):
        out(line)
    approvals = approvals_of(deployment)
    if approvals:
        out(f"approvals ({len(approvals)}):")
        for approval in approvals:
            out(approval_line(approval))
    if status == "superseded" and deployment.get("superseded_by"):
        out(f"  superseded by deployment {deployment['superseded_by']}, a newer one of this environment")
    if status == "expired" and deployment.get("released_at"):
        out("  the release went stale: the pipeline did not complete it in time")
    elif status == "expired":
        out("  nobody approved or rejected it in time")
    if status in RELEASED:
        out("released: the deployment may proceed")
        return EXIT_RELEASED
    if status in STOPPED:
        out("stopped: do not apply")
        return EXIT_STOPPED
    error = deployment.get("error")
    out(f"error: the platform could not decide{': ' + str(error) if error else ''}")
    return EXIT_ERROR


class StatusWatcher:
    """Polls a deployment the cheap way: its slim status (``/status/``), sent with the tag of the last
    answer, so that while nothing changes the platform answers 304 and does no work. Only when the slim
    status shows a new approval or a final status is the full deployment read once (the gate prints the
    approvals and who may still act from it). A platform without the slim status is polled in full."""

    def __init__(self, client: Client, deployment_id: Any) -> None:
        self.client = client
        self.full_path = f"/api/v1/deployments/{deployment_id}/"
        self.status_path = f"{self.full_path}status/"
        self.etag = ""
        self.slim = True

    def next(self, deployment: dict[str, Any]) -> dict[str, Any]:
        """The deployment as it now is, given it as it was last seen."""
        if not self.slim:
            return self.client.request("GET", self.full_path)
        try:
            status, self.etag = self.client.poll(self.status_path, self.etag)
        except GateError as exc:
            if exc.http_status != 404:
                raise
            self.slim = False  # an older platform (an unknown deployment is a 404 of the full GET too)
            return self.client.request("GET", self.full_path)
        if status is None:
            return deployment  # 304: unchanged
        if status.get("status") not in UNDECIDED or status.get("approvals", 0) != len(
            approvals_of(deployment)
        ):
            return self.client.request("GET", self.full_path)
        return {
            **deployment,
            **{key: status.get(key) for key in ("status", "decision", "messages", "error", "queued_reason")},
        }


def wait_for_verdict(
    client: Client,
    deployment: dict[str, Any],
    *,
    wait_for_approval: bool,
    timeout: float,
    poll_interval: float,
    cancel_on_timeout: bool = True,
    out: Callable[[str], None] = say,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Poll the deployment until its status says what the pipeline must do, and return the exit code."""
    deadline = clock() + timeout
    shown_pending: list[str] | None = None
    shown_requirements: list[str] = []
    shown_status: str | None = None
    shown_approvals = 0
    waited_for_explanations = False
    failures = 0
    deployment_id = deployment.get("id")
    watcher = StatusWatcher(client, deployment_id)
    while True:
        status = deployment.get("status")
        if status not in UNDECIDED:
            return report_final(with_explanations(client, deployment, clock, sleep), out)
        if status == "pending_approval":
            pending = messages_of(deployment, "pending")
            if pending != shown_pending and explanations_pending(deployment) and not waited_for_explanations:
                waited_for_explanations = True
                deployment = with_explanations(client, deployment, clock, sleep)
                continue  # the status may have moved on meanwhile
            if pending != shown_pending:
                out(f"waiting for approval of deployment {deployment_id}:")
                reasons = pending or ["(no policy gave a reason; waiting for an approver)"]
                for line in reason_lines("pending", reasons, explanations_of(deployment)):
                    out(line)
                shown_pending = pending
                waited_for_explanations = False
            requirements = requirement_lines(deployment)
            if requirements != shown_requirements:
                for line in requirements:
                    out(line)
                shown_requirements = requirements
            approvals = approvals_of(deployment)
            if len(approvals) > shown_approvals:
                for approval in approvals[shown_approvals:]:
                    out(approval_line(approval))
                shown_approvals = len(approvals)
                waiting_on = deployment.get("approvers_to_act")
                if isinstance(waiting_on, list):
                    out(f"  may still approve: {', '.join(map(str, waiting_on)) or 'nobody'}")
            if not wait_for_approval:
                out(
                    f"not released: deployment {deployment_id} waits for approval (pass --wait to wait for it)"
                )
                return EXIT_PENDING
        elif status != shown_status:
            if deployment.get("queued_reason"):
                out(f"{describe(deployment)}: {deployment['queued_reason']}")
            else:
                out(f"{describe(deployment)}; waiting for the policies' verdict")
        shown_status = status
        if clock() >= deadline:
            out(f"timed out after {timeout:g}s; deployment {deployment_id} is still {status}")
            if cancel_on_timeout:
                try:
                    client.request("POST", f"/api/v1/deployments/{deployment_id}/cancel/")
                    out(f"cancelled deployment {deployment_id} (pass --keep-on-timeout to leave it waiting)")
                except GateError as exc:
                    out(f"warning: could not cancel deployment {deployment_id}: {exc}")
            return EXIT_TIMED_OUT
        sleep(max(0.0, min(poll_interval, deadline - clock())))
        try:
            deployment = watcher.next(deployment)
            failures = 0
        except GateError as exc:
            failures += 1
            if failures >= MAX_CONSECUTIVE_POLL_FAILURES:
                raise
            out(f"warning: {exc} (retrying)")


def command_deploy(args: argparse.Namespace, deployment_type: str) -> int:
    client = Client(args.url, args.token)
    body = deployment_request(args, deployment_type)
    deployment = client.request(
        "POST", f"/api/v1/environments/{environment_path(args.environment)}/deployments/", body
    )
    if not isinstance(deployment, dict) or "id" not in deployment:
        raise GateError(f"the platform answered without a deployment id: {deployment!r}")
    say(f"{deployment_type} requested: {describe(deployment)}")
    page = deployment.get("web_url") or f"{client.base_url}/deployments/{deployment['id']}/"
    say(f"deployment page: {page}")
    return wait_for_verdict(
        client,
        deployment,
        wait_for_approval=args.wait,
        timeout=args.timeout,
        poll_interval=args.poll_interval,
        cancel_on_timeout=not args.keep_on_timeout,
    )


def command_complete(args: argparse.Namespace) -> int:
    client = Client(args.url, args.token)
    body: dict[str, Any] = {"status": args.status}
    if args.state:
        body["state"] = read_json_file(args.state, "state")
    try:
        deployment = client.request("POST", f"/api/v1/deployments/{args.deployment}/complete/", body)
    except GateError as exc:
        if exc.http_status == 409 and exc.code == "release_expired":
            say(f"error: {exc}")
            say("stopped: the release expired before it was completed; trigger a new deployment")
            return EXIT_STOPPED
        raise
    shown = deployment if isinstance(deployment, dict) else {"id": args.deployment, "status": args.status}
    say(f"recorded: {describe(shown)}")
    return EXIT_RELEASED


def positive_number(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {raw!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be greater than zero: {raw!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="policy-gate",
        description="Gate a deployment on the approval-policy platform.",
        epilog="Exit codes: 0 released; 2 error (no verdict); 3 pending (without --wait); "
        "4 denied, rejected, cancelled, expired or superseded (for complete: the release expired); 5 timed out (deployment cancelled unless "
        "--keep-on-timeout). 1 is Python's own: the gate could not start.",
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--url",
        default=os.environ.get("PLATFORM_URL", "http://127.0.0.1:8000"),
        help="the platform's address (default: $PLATFORM_URL, else http://127.0.0.1:8000)",
    )
    common.add_argument(
        "--token",
        default=os.environ.get("PLATFORM_TOKEN", ""),
        help="a service account's API token, scoped to deploy (default: $PLATFORM_TOKEN)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    for deployment_type in ("deploy", "destroy"):
        sub = commands.add_parser(deployment_type, parents=[common], help=f"request a {deployment_type}")
        sub.add_argument(
            "--environment",
            required=True,
            help="environment id, or its path: project/environment (as much of the project path as is unique)",
        )
        sub.add_argument("--plan", help="plan JSON (`terraform show -json plan.out`), - for stdin")
        sub.add_argument(
            "--plan-text",
            help="the plan as `terraform show plan.out` prints it, shown beside the plan view; - for stdin",
        )
        sub.add_argument("--wait", action="store_true", help="wait while the deployment is pending approval")
        sub.add_argument("--revision", default="")
        sub.add_argument("--trigger", default="cd", help="trigger name (default: cd)")
        sub.add_argument(
            "--idempotency-key", default="", help="makes a retried request return the same deployment"
        )
        sub.add_argument(
            "--commit", dest="commit_sha", default="", help="commit SHA (default: from the CI's variables)"
        )
        sub.add_argument(
            "--pull-request-url", default="", help="pull/merge request URL (default: from the CI's variables)"
        )
        sub.add_argument("--ci-run-url", default="", help="CI run URL (default: from the CI's variables)")
        sub.add_argument("--cost-total", type=float, default=None, help="total monthly cost")
        sub.add_argument("--cost-diff", type=float, default=None, help="monthly cost difference")
        sub.add_argument("--timeout", type=positive_number, default=3600.0, help="seconds (default 3600)")
        sub.add_argument("--poll-interval", type=positive_number, default=5.0, help="seconds (default 5)")
        sub.add_argument(
            "--keep-on-timeout",
            action="store_true",
            help="leave the deployment waiting when --timeout passes (default: cancel it)",
        )
    complete = commands.add_parser("complete", parents=[common], help="report the outcome of an apply")
    complete.add_argument("--deployment", required=True, help="deployment id")
    complete.add_argument("--status", required=True, choices=["succeeded", "failed"])
    complete.add_argument("--state", help="the new terraform.tfstate (JSON)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if not args.token:
            raise GateError("no API token: pass --token or set PLATFORM_TOKEN")
        if args.command == "complete":
            return command_complete(args)
        return command_deploy(args, args.command)
    except GateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - an unexpected failure is "no verdict" (2), never Python's 1
        print(f"error: the gate failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
