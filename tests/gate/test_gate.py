"""The pipeline gate client, run as a pipeline runs it: a separate process speaking HTTP to a real server.

Every live test runs a copy of gate.py from a temporary folder with `python -I` (isolated: no current
directory, no PYTHONPATH), which proves that the client needs nothing but the standard library."""

import ast
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.utils import timezone

from policies_app.deployments.approvals import record_approval
from policies_app.deployments.explanations import explain_evaluation
from policies_app.deployments.stored_inputs import plan_of
from policies_app.models import Deployment, EnvironmentState, Evaluation
from policy_gate import gate
from tests.builders import ONE_APPROVER, api_key_for, make_policy, plan_with

GATE_SOURCE = Path(gate.__file__)

ALLOW = 'package env0\n\nallow contains "small change" if true\n'
DENY_OVER_BUDGET = """package env0

deny contains msg if {
	input.costEstimation.monthlyCostDiff > 100
	msg := sprintf("monthly cost grows by %v, over 100", [input.costEstimation.monthlyCostDiff])
}
allow contains "within budget" if input.costEstimation.monthlyCostDiff <= 100
"""
STATE = {
    "version": 4,
    "terraform_version": "1.11.4",
    "serial": 1,
    "lineage": "gate-test",
    "outputs": {},
    "resources": [],
}


# --- without a server --------------------------------------------------------------------------------


def test_the_gate_imports_only_the_standard_library():
    tree = ast.parse(GATE_SOURCE.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "a relative import would tie the gate to the package"
            imported.add(node.module.split(".")[0])
    assert imported, "the check found no imports at all"
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported - set(sys.stdlib_module_names)


def test_the_gate_runs_alone_from_a_copied_file(tmp_path):
    copy = tmp_path / "gate.py"
    shutil.copy(GATE_SOURCE, copy)
    result = subprocess.run(
        [sys.executable, "-I", str(copy), "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "deploy" in result.stdout and "complete" in result.stdout


def test_the_gate_runs_as_a_module_of_the_package():
    root = GATE_SOURCE.parents[1]
    result = subprocess.run(
        [sys.executable, "-m", "policy_gate", "deploy", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=root,
    )
    assert result.returncode == 0, result.stderr
    assert "--idempotency-key" in result.stdout


def test_an_unreadable_plan_is_an_error_before_anything_is_sent(tmp_path, capsys):
    bad = tmp_path / "plan.json"
    bad.write_text("not json")
    code = gate.main(
        ["deploy", "--url", "http://127.0.0.1:9", "--token", "t", "--environment", "1", "--plan", str(bad)]
    )
    assert code == gate.EXIT_ERROR
    assert "is not valid JSON" in capsys.readouterr().err


def test_a_missing_token_is_an_error(monkeypatch, capsys):
    monkeypatch.delenv("PLATFORM_TOKEN", raising=False)
    assert gate.main(["deploy", "--url", "http://127.0.0.1:9", "--environment", "1"]) == gate.EXIT_ERROR
    assert "no API token" in capsys.readouterr().err


def test_an_unreachable_platform_is_an_error(capsys):
    # Port 9 (discard) is closed on loopback: the connection is refused at once.
    assert gate.main(["deploy", "--url", "http://127.0.0.1:9", "--token", "t", "--environment", "1"]) == 2
    assert "cannot reach the platform" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("status", "code"),
    [
        ("approved", 0),
        ("succeeded", 0),
        ("denied", 4),
        ("rejected", 4),
        ("cancelled", 4),
        ("expired", 4),
        ("superseded", 4),
        ("error", 2),
    ],
)
def test_each_final_status_has_its_exit_code(status, code):
    lines = []
    deployment = {"id": 1, "status": status, "messages": {"deny": ["because"]}}
    assert gate.report_final(deployment, lines.append) == code
    if status == "denied":
        assert "  deny: because" in lines


def test_an_expired_release_is_told_apart_from_an_expired_wait():
    lines = []
    stale = {"id": 1, "status": "expired", "released_at": "2026-01-01T00:00:00Z"}
    assert gate.report_final(stale, lines.append) == gate.EXIT_STOPPED
    assert "  the release went stale: the pipeline did not complete it in time" in lines
    lines.clear()
    assert gate.report_final({"id": 2, "status": "expired", "released_at": None}, lines.append) == 4
    assert "  nobody approved or rejected it in time" in lines


def test_the_api_error_message_is_flattened_for_the_log():
    assert gate.flatten_errors({"detail": "Invalid token.", "code": "x"}) == "Invalid token. (x)"
    assert gate.flatten_errors({"plan": ["must be an object"]}) == "plan: must be an object"


# --- against a live server ---------------------------------------------------------------------------


@pytest.fixture
def gate_copy(tmp_path):
    copy = tmp_path / "isolated" / "gate.py"
    copy.parent.mkdir()
    shutil.copy(GATE_SOURCE, copy)
    return copy


@pytest.fixture
def pipeline(world, live_server, gate_copy, tmp_path):
    """Runs the gate the way a pipeline does, with Bob's real token against the live server."""
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan_with(("aws_s3_bucket.logs", ["create"]))))
    token = api_key_for(world.bob)

    def command(*args, token=token, with_plan=True):
        cmd = [sys.executable, "-I", str(gate_copy), *args, "--url", live_server.url, "--token", token]
        if with_plan and args and args[0] in ("deploy", "destroy"):
            cmd += ["--environment", str(world.environment.pk), "--plan", str(plan_file)]
        return cmd

    def run(*args, timeout=60, **kwargs):
        return subprocess.run(command(*args, **kwargs), capture_output=True, text=True, timeout=timeout)

    run.command = command
    return run


@pytest.mark.django_db(transaction=True)
def test_a_released_deployment_exits_zero(world, pipeline):
    world.platform.approval_policies.add(make_policy("allow", ALLOW))
    result = pipeline("deploy", "--wait", "--revision", "main", "--idempotency-key", "run-1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "released" in result.stdout
    deployment = Deployment.objects.get()
    assert (deployment.status, deployment.trigger_name, deployment.revision) == ("approved", "cd", "main")
    assert deployment.idempotency_key == "run-1"
    assert plan_of(deployment)["resource_changes"][0]["address"] == "aws_s3_bucket.logs"


@pytest.mark.django_db(transaction=True)
def test_a_denied_deployment_exits_four_with_the_reason(world, pipeline):
    world.platform.approval_policies.add(make_policy("budget", DENY_OVER_BUDGET))
    result = pipeline("deploy", "--wait", "--cost-total", "900", "--cost-diff", "250")
    assert result.returncode == 4, result.stdout + result.stderr
    assert "deny: monthly cost grows by 250, over 100" in result.stdout
    deployment = Deployment.objects.get()
    assert (deployment.status, deployment.total_monthly_cost, deployment.monthly_cost_diff) == (
        "denied",
        900,
        250,
    )


@pytest.mark.django_db(transaction=True)
def test_the_gate_waits_while_pending_and_is_released_by_an_approval(world, pipeline):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    process = subprocess.Popen(
        pipeline.command("deploy", "--wait", "--poll-interval", "0.2", "--timeout", "60"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    # Only reads the pipe; every database access stays in this thread.
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True)
    reader.start()
    try:
        seen = []
        deadline = time.monotonic() + 30
        while not any("pending: needs one approver" in line for line in seen):
            assert time.monotonic() < deadline, f"the gate never said why it waits: {seen}"
            seen.append(lines.get(timeout=30))
        time.sleep(0.5)  # let it poll a few times while still pending
        assert process.poll() is None, "the gate stopped waiting while the deployment was pending"

        record_approval(Deployment.objects.get(), world.alice, "approve", "ship it")

        assert process.wait(timeout=30) == 0, process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
    reader.join(timeout=10)
    while not lines.empty():
        seen.append(lines.get_nowait())
    output = "".join(seen)
    assert output.count("waiting for approval") == 1, "the same reasons are printed only once"
    assert "released" in output
    assert Deployment.objects.get().status == "approved"


@pytest.mark.django_db(transaction=True)
def test_waiting_longer_than_the_timeout_exits_five_and_cancels_the_deployment(world, pipeline):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    started = time.monotonic()
    result = pipeline("deploy", "--wait", "--timeout", "1", "--poll-interval", "0.2")
    assert result.returncode == 5, result.stdout + result.stderr
    assert "timed out after 1s" in result.stdout
    assert time.monotonic() - started < 20
    deployment = Deployment.objects.get()
    assert deployment.status == "cancelled"
    assert f"cancelled deployment {deployment.pk}" in result.stdout


@pytest.mark.django_db(transaction=True)
def test_told_to_keep_it_the_gate_leaves_a_timed_out_deployment_waiting(world, pipeline):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    result = pipeline("deploy", "--wait", "--timeout", "1", "--poll-interval", "0.2", "--keep-on-timeout")
    assert result.returncode == 5, result.stdout + result.stderr
    assert Deployment.objects.get().status == "pending_approval"


@pytest.mark.django_db(transaction=True)
def test_a_rejection_prints_the_rejecter_and_the_comment_and_exits_four(world, pipeline):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    process = subprocess.Popen(
        pipeline.command("deploy", "--wait", "--poll-interval", "0.2", "--timeout", "60"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not Deployment.objects.filter(status="pending_approval").exists():
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.1)
        record_approval(Deployment.objects.get(), world.alice, "reject", "not on a Friday")
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 4, out + err
    assert "rejected by alice: not on a Friday" in out
    # The final word is the rejection, not the reasons it waited for.
    assert f"deployment {Deployment.objects.get().pk} is rejected\n" in out
    assert "(decision: pending)" not in out.split("waiting for approval")[-1]
    assert "  deny: rejected by alice: not on a Friday" in out


@pytest.mark.django_db(transaction=True)
def test_the_gate_says_why_a_deployment_waits_queued_behind_an_unfinished_release(world, pipeline):
    world.platform.approval_policies.add(make_policy("allow", ALLOW))
    first = pipeline("deploy", "--wait")
    assert first.returncode == 0, first.stdout + first.stderr
    released = Deployment.objects.get()
    result = pipeline("deploy", "--wait", "--timeout", "1", "--poll-interval", "0.2", "--keep-on-timeout")
    assert result.returncode == 5
    assert f"Waits for deployment #{released.pk} of this environment, released and not yet completed" in (
        result.stdout
    )


def test_approval_progress_is_printed_as_approvals_arrive():
    lines = []
    pending = {
        "id": 7,
        "status": "pending_approval",
        "messages": {"pending": ["needs two approvals"]},
        "approvals": [{"user": "alice", "decision": "approve", "comment": "ok"}],
        "approvers_to_act": ["sam"],
    }
    approved = {**pending, "status": "approved", "approvers_to_act": None}

    class Client:
        def poll(self, path, etag):
            assert path == "/api/v1/deployments/7/status/"
            return {"id": 7, "status": "approved", "approvals": 1}, '"t"'

        def request(self, method, path, body=None):
            assert path == "/api/v1/deployments/7/"
            return approved

    code = gate.wait_for_verdict(
        Client(), pending, wait_for_approval=True, timeout=60, poll_interval=0.01, out=lines.append
    )
    assert code == 0
    assert "  approved by alice: ok" in lines
    assert "  may still approve: sam" in lines


@pytest.mark.django_db(transaction=True)
def test_the_gate_polls_the_slim_status_with_its_tag_and_reads_the_full_deployment_only_on_a_change(
    world, live_server
):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    exchanges = []

    class Recording(gate.Client):
        """The gate's own client against the live server, noting each request and whether it was a 304."""

        def exchange(self, method, path, body=None, etag=""):
            answer, tag = super().exchange(method, path, body, etag)
            exchanges.append((method, path.removeprefix("/api/v1/deployments/"), bool(etag), answer is None))
            return answer, tag

    client = Recording(live_server.url, api_key_for(world.bob))
    deployment = client.request(
        "POST",
        f"/api/v1/environments/{world.environment.pk}/deployments/",
        {"type": "deploy", "plan": plan_with(("aws_s3_bucket.logs", ["create"]))},
    )
    assert deployment["status"] == "pending_approval"
    naps = []

    def sleep(seconds):
        naps.append(seconds)
        if len(naps) == 4:  # approved while the gate waits, after three polls
            record_approval(Deployment.objects.get(), world.alice, "approve", "ship it")

    lines = []
    code = gate.wait_for_verdict(
        client,
        deployment,
        wait_for_approval=True,
        timeout=60,
        poll_interval=0.01,
        out=lines.append,
        sleep=sleep,
    )
    assert code == 0, lines
    pk = deployment["id"]
    assert exchanges[1:] == [
        ("GET", f"{pk}/status/", False, False),  # the first poll: no tag yet
        ("GET", f"{pk}/status/", True, True),  # unchanged: 304
        ("GET", f"{pk}/status/", True, True),
        ("GET", f"{pk}/status/", True, False),  # approved: a new status
        ("GET", f"{pk}/", False, False),  # read in full once, for the approvals it prints
    ]
    assert "  approved by alice: ship it" in lines and "released: the deployment may proceed" in lines


def test_an_unexpected_failure_is_exit_two_never_pythons_one(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(gate, "command_deploy", broken)
    assert gate.main(["deploy", "--url", "http://127.0.0.1:9", "--token", "t", "--environment", "1"]) == 2
    assert "RuntimeError: boom" in capsys.readouterr().err


def test_the_gate_installs_with_pip_alone_as_a_command_that_runs_from_any_directory(tmp_path):
    # Built from a copy of the whole repository: pip builds a local project in place and would leave
    # build/ in the checkout.
    checkout = GATE_SOURCE.parents[1]
    root = tmp_path / "checkout"
    ignored = shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".venv", ".git", "var", "artifacts", "node_modules"
    )
    shutil.copytree(checkout, root, ignore=ignored)
    target = tmp_path / "site"
    installed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(root),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    packages = {path.name for path in target.iterdir() if path.name not in ("bin",)}
    assert {name for name in packages if not name.endswith(".dist-info")} == {"policy_gate"}
    command = target / "bin" / "policy-gate"
    assert command.exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run(
        [str(command), "deploy", "--url", "http://127.0.0.1:9", "--token", "t", "--environment", "1"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=elsewhere,
        env={**os.environ, "PYTHONPATH": str(target)},
    )
    assert result.returncode == 2, result.stderr
    assert "cannot reach the platform" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_without_wait_a_pending_deployment_exits_three(world, pipeline):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    result = pipeline("deploy")
    assert result.returncode == 3, result.stdout + result.stderr
    assert "pending: needs one approver" in result.stdout


TWO_WITH_SECURITY = """# METADATA
# custom:
#   approvals: 2
#   team: security team
package env0

import rego.v1

import data.lib.approvals

pending contains "two approvals, one from security" if {
	count(input.approvers) < 2
}

pending contains "two approvals, one from security" if approvals.count_in_team("security team") < 1
"""


@pytest.mark.django_db(transaction=True)
def test_the_gate_prints_each_requirement_with_its_state_and_who_can_clear_it(world, pipeline):
    world.platform.approval_policies.add(make_policy("production", TWO_WITH_SECURITY))
    result = pipeline("deploy")
    assert result.returncode == 3, result.stdout + result.stderr
    assert "  requirement: 0/2 approvals ✗ (production); can be cleared by admin, alice, sam" in result.stdout
    assert "  requirement: security team 0/1 ✗ (production); can be cleared by sam" in result.stdout


@pytest.mark.django_db(transaction=True)
def test_a_bad_token_exits_two_with_the_apis_message(world, pipeline):
    result = pipeline("deploy", "--wait", token="not-a-real-token")
    assert result.returncode == 2
    assert "HTTP 401" in result.stderr and "Invalid token" in result.stderr
    assert not Deployment.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_user_who_may_not_deploy_exits_two_with_the_apis_message(world, pipeline):
    result = pipeline("deploy", "--wait", token=api_key_for(world.vera))
    assert result.returncode == 2
    assert "HTTP 403" in result.stderr
    assert not Deployment.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_destroy_then_complete_records_the_outcome_and_the_new_state(world, pipeline, tmp_path):
    world.platform.approval_policies.add(make_policy("allow", ALLOW))
    released = pipeline("destroy", "--wait")
    assert released.returncode == 0, released.stdout + released.stderr
    deployment = Deployment.objects.get()
    assert deployment.type == "destroy"

    state_file = tmp_path / "terraform.tfstate"
    state_file.write_text(json.dumps(STATE))
    done = pipeline(
        "complete", "--deployment", str(deployment.pk), "--status", "succeeded", "--state", str(state_file)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    deployment.refresh_from_db()
    assert deployment.status == "succeeded"
    assert EnvironmentState.objects.get(environment=world.environment).lineage == "gate-test"

    again = pipeline("complete", "--deployment", str(deployment.pk), "--status", "succeeded")
    assert again.returncode == 2
    assert "HTTP 409" in again.stderr


GITHUB_PULL_REQUEST_RUN = {
    "GITHUB_ACTIONS": "true",
    "GITHUB_SHA": "9fceb02d0ae598e95dc970b74767f19372d61af8",
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "acme/infra",
    "GITHUB_RUN_ID": "123456",
    "GITHUB_REF": "refs/pull/42/merge",
}


def test_the_links_come_from_each_cis_variables():
    assert gate.links_from_ci(GITHUB_PULL_REQUEST_RUN) == {
        "commit_sha": "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "ci_run_url": "https://github.com/acme/infra/actions/runs/123456",
        "pull_request_url": "https://github.com/acme/infra/pull/42",
    }
    # A push to a branch has no pull request.
    assert "pull_request_url" not in gate.links_from_ci(
        {**GITHUB_PULL_REQUEST_RUN, "GITHUB_REF": "refs/heads/main"}
    )
    assert gate.links_from_ci(
        {
            "GITLAB_CI": "true",
            "CI_COMMIT_SHA": "b" * 40,
            "CI_PIPELINE_URL": "https://gitlab.example.com/acme/infra/-/pipelines/77",
            "CI_PROJECT_URL": "https://gitlab.example.com/acme/infra",
            "CI_MERGE_REQUEST_IID": "5",
        }
    ) == {
        "commit_sha": "b" * 40,
        "ci_run_url": "https://gitlab.example.com/acme/infra/-/pipelines/77",
        "pull_request_url": "https://gitlab.example.com/acme/infra/-/merge_requests/5",
    }
    assert gate.links_from_ci(
        {"JENKINS_URL": "https://ci/", "GIT_COMMIT": "c" * 40, "BUILD_URL": "https://ci/job/infra/9/"}
    ) == {"commit_sha": "c" * 40, "ci_run_url": "https://ci/job/infra/9/"}
    assert gate.links_from_ci({"GITHUB_SHA": "a" * 40}) == {}, "no CI's marker, no links"


@pytest.mark.django_db(transaction=True)
def test_in_github_actions_the_gate_sends_the_links_names_the_environment_by_path_and_prints_the_page(
    world, pipeline, tmp_path, settings
):
    world.platform.approval_policies.add(make_policy("allow", ALLOW))
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan_with(("aws_s3_bucket.logs", ["create"]))))
    command = pipeline.command(
        "deploy",
        "--environment",
        "Payments/Payments EU/prod",
        "--plan",
        str(plan_file),
        "--wait",
        with_plan=False,
    )
    env = {**os.environ, **GITHUB_PULL_REQUEST_RUN}
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    deployment = Deployment.objects.get()
    assert deployment.environment_id == world.environment.pk
    assert (deployment.commit_sha, deployment.pull_request_url, deployment.ci_run_url) == (
        "9fceb02d0ae598e95dc970b74767f19372d61af8",
        "https://github.com/acme/infra/pull/42",
        "https://github.com/acme/infra/actions/runs/123456",
    )
    assert f"deployment page: {settings.PLATFORM_URL}/deployments/{deployment.pk}/" in result.stdout
    # An option wins over the CI's variable (this one waits behind the first, unfinished: not for long).
    subprocess.run(
        [*command, "--commit", "d" * 40, "--timeout", "1", "--poll-interval", "0.2"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert Deployment.objects.latest("id").commit_sha == "d" * 40


@pytest.mark.django_db(transaction=True)
def test_completing_a_release_that_went_stale_exits_four_and_says_so(world, pipeline):
    from policies_app.deployments.sweeps import sweep_waiting_deployments

    world.platform.approval_policies.add(make_policy("allow", ALLOW))
    released = pipeline("deploy", "--wait")
    assert released.returncode == 0, released.stdout + released.stderr
    deployment = Deployment.objects.get()
    sweep_waiting_deployments(deployment.expires_at)
    late = pipeline("complete", "--deployment", str(deployment.pk), "--status", "succeeded")
    assert late.returncode == gate.EXIT_STOPPED == 4, late.stdout + late.stderr
    assert "HTTP 409: The release expired" in late.stdout
    assert "stopped: the release expired before it was completed; trigger a new deployment" in late.stdout
    deployment.refresh_from_db()
    assert deployment.status == "expired"


def _explanation_still_due(world, url: str) -> tuple[gate.Client, dict, int]:
    """A deployment denied by a policy whose explanation a worker has not written yet (as with a real
    broker, where the explanation follows the decision), read through the live server."""
    world.platform.approval_policies.add(make_policy("public buckets", PUBLIC_BUCKETS))
    client = gate.Client(url, api_key_for(world.bob))
    created = client.request(
        "POST", f"/api/v1/environments/{world.environment.pk}/deployments/", {"plan": EXPLAINED_PLAN}
    )
    evaluation = Evaluation.objects.get(deployment_id=created["id"])
    unexplained = [
        {key: value for key, value in o.items() if key != "explanation"} for o in evaluation.outcomes
    ]
    Evaluation.objects.filter(pk=evaluation.pk).update(
        outcomes=unexplained, explanations_due_at=timezone.now()
    )
    deployment = client.request("GET", f"/api/v1/deployments/{created['id']}/")
    assert deployment["status"] == "denied" and gate.explanations_pending(deployment)
    return client, deployment, evaluation.pk


class FakeTime:
    """The gate's clock and sleep: sleeping moves the clock on, and may run what a worker would do."""

    def __init__(self, meanwhile=None) -> None:
        self.now = 0.0
        self.sleeps = 0
        self.meanwhile = meanwhile

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds
        if self.meanwhile is not None:
            self.meanwhile()


EXPLAINED_PLAN = plan_with(("aws_s3_bucket.logs", ["create"]))
EXPLAINED_PLAN["resource_changes"][0]["change"]["after"] = {"acl": "public-read"}
PUBLIC_BUCKETS = """package env0

deny contains sprintf("%s is public", [change.address]) if {
    some change in input.plan.resource_changes
    change.change.after.acl == "public-read"
}
"""


@pytest.mark.django_db(transaction=True)
def test_the_gate_waits_briefly_for_the_explanation_a_worker_writes_after_the_decision(world, live_server):
    client, deployment, evaluation_id = _explanation_still_due(world, live_server.url)
    time_ = FakeTime(meanwhile=lambda: explain_evaluation(evaluation_id))
    printed: list[str] = []

    code = gate.wait_for_verdict(
        client, deployment, wait_for_approval=False, timeout=60, poll_interval=5,
        out=printed.append, clock=time_.clock, sleep=time_.sleep,
    )  # fmt: skip

    assert code == gate.EXIT_STOPPED
    reason = printed.index("  deny: aws_s3_bucket.logs is public")
    assert printed[reason + 1].startswith(
        "    from deny rule at main.rego:3 read input.plan.resource_changes[0]"
    )
    assert time_.sleeps == 1


@pytest.mark.django_db(transaction=True)
def test_an_explanation_that_does_not_come_holds_the_gate_a_few_seconds_at_most(world, live_server):
    client, deployment, _ = _explanation_still_due(world, live_server.url)
    time_ = FakeTime()
    printed: list[str] = []

    code = gate.wait_for_verdict(
        client, deployment, wait_for_approval=False, timeout=60, poll_interval=5,
        out=printed.append, clock=time_.clock, sleep=time_.sleep,
    )  # fmt: skip

    assert code == gate.EXIT_STOPPED
    reason = printed.index("  deny: aws_s3_bucket.logs is public")
    assert not printed[reason + 1 :] or not printed[reason + 1].startswith("    from")
    assert time_.now <= gate.EXPLANATION_WAIT_S + gate.EXPLANATION_POLL_S
