"""Operations (issue 18): /metrics counts what the platform decides, read through the real server;
/readyz asks the database, the broker and an engine worker; JSON logs carry the request id from the web
request into the task that evaluates it, with the deployment id."""

import json
import re
import urllib.error
import urllib.request

import pytest

from policies_app.models import Environment
from tests.accounts.live import api_call
from tests.builders import ONE_APPROVER, api_key_for, make_policy
from tests.processes import RedisServer, celery_worker, gunicorn, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

SCRAPE_TOKEN = "scrape-secret-for-the-test"


def get(base: str, path: str, headers: dict | None = None) -> tuple[int, str]:
    request = urllib.request.Request(base + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def sample(exposition: str, name: str, **labels: str) -> float:
    """The value of one sample of the exposition (0 when absent)."""
    for line in exposition.splitlines():
        match = re.match(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        if all(found.get(key) == value for key, value in labels.items()):
            return float(match.group(3))
    return 0.0


def scrape(base: str) -> str:
    status, body = get(base, "/metrics", {"Authorization": f"Bearer {SCRAPE_TOKEN}"})
    assert status == 200, body
    return body


def json_lines(path) -> list[dict]:
    lines = []
    for line in path.read_text().splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            continue  # gunicorn's own lines
    return lines


@pytest.fixture
def two_environments(world):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    staging = Environment.objects.create(name="staging", project=world.payments, template=world.template)
    return world.environment, staging


def test_triggered_deployments_are_counted_and_read_from_metrics(world, two_environments, tmp_path):
    key = api_key_for(world.bob)
    with gunicorn(tmp_path, METRICS_TOKEN=SCRAPE_TOKEN) as base:
        before = scrape(base)
        engine = "regorus"  # the default engine (settings.POLICY_ENGINE)
        for environment in two_environments:
            status, body = api_call(
                base, key, "POST", f"/api/v1/environments/{environment.pk}/deployments/", {}
            )
            assert status == 201, body
        after = scrape(base)

    decided = "policy_platform_decisions_total"
    assert sample(before, decided, outcome="pending", engine=engine) == 0
    assert sample(after, decided, outcome="pending", engine=engine) == 2, [
        line for line in after.splitlines() if line.startswith(decided)
    ]
    assert sample(after, "policy_platform_evaluation_seconds_count", engine=engine) == 2
    assert sample(after, "policy_platform_deployments_waiting", status="pending_approval") == 2
    assert sample(after, "policy_platform_oldest_pending_approval_age_seconds") > 0
    assert sample(after, "policy_platform_outbox_lag_seconds", work="evaluation") == 0
    # The framework's figures, from django-prometheus.
    assert sample(after, "django_http_responses_total_by_status_total", status="201") >= 2


def test_metrics_are_refused_without_the_token_or_an_allowed_network(world, tmp_path):
    with gunicorn(tmp_path, METRICS_TOKEN=SCRAPE_TOKEN) as base:
        assert get(base, "/metrics")[0] == 403
        assert get(base, "/metrics", {"Authorization": "Bearer wrong"})[0] == 403
        assert get(base, "/metrics", {"Authorization": f"Token {api_key_for(world.admin)}"})[0] == 403
    with gunicorn(tmp_path, METRICS_ALLOWED_NETWORKS="127.0.0.0/8") as base:
        status, body = get(base, "/metrics")
        assert status == 200 and "policy_platform_deployments_waiting" in body
    with gunicorn(tmp_path) as base:
        assert get(base, "/metrics") == (
            403,
            "Metrics are off: set METRICS_TOKEN or METRICS_ALLOWED_NETWORKS.",
        )


def test_readyz_answers_503_when_the_database_or_the_engine_does_not(world, tmp_path):
    with gunicorn(tmp_path) as base:
        status, body = get(base, "/readyz")
        assert (status, json.loads(body)) == (
            200,
            {"ready": True, "checks": {"database": "ok", "engine_worker": "ok"}},
        )
    unreachable = tmp_path / "no-such-folder" / "db.sqlite3"
    with gunicorn(tmp_path, DATABASE_URL=f"sqlite:///{unreachable}") as base:
        status, body = get(base, "/readyz")
        assert status == 503
        assert json.loads(body)["checks"]["database"] == "unavailable"
        assert get(base, "/healthz") == (200, "ok"), "liveness asks nothing of the database"
    with gunicorn(tmp_path, READINESS_TIMEOUT_SECONDS="0.001") as base:
        status, body = get(base, "/readyz")
        assert status == 503
        assert json.loads(body)["checks"] == {"database": "ok", "engine_worker": "no engine worker answered"}


def test_json_logs_carry_the_request_id_into_the_workers_task_and_its_decision(
    world, two_environments, tmp_path
):
    """Through Redis to a real Celery worker: the id the request came with is in the worker's lines."""
    redis = RedisServer(tmp_path)
    redis.start()
    environment = two_environments[0]
    try:
        with (
            celery_worker(tmp_path, redis.url, LOG_FORMAT="json"),
            gunicorn(tmp_path, CELERY_BROKER_URL=redis.url, LOG_FORMAT="json") as base,
        ):
            wait_until(lambda: json.loads(get(base, "/readyz")[1])["ready"], 60, what="a worker ready")
            request = urllib.request.Request(
                f"{base}/api/v1/environments/{environment.pk}/deployments/",
                data=b"{}",
                method="POST",
                headers={
                    "Authorization": f"Token {api_key_for(world.bob)}",
                    "Content-Type": "application/json",
                    "X-Request-ID": "pipeline-run-42",
                },
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.headers["X-Request-ID"] == "pipeline-run-42"
                deployment_id = json.loads(response.read())["id"]
            worker_log = tmp_path / "worker.log"

            def decided() -> bool:
                return any(line.get("decision") for line in json_lines(worker_log))

            wait_until(decided, 30, what="the worker's decision")
            wait_until(
                lambda: any(line.get("task") for line in json_lines(worker_log)), 10, what="the task's line"
            )
    finally:
        redis.stop()
    [web_line] = [
        line for line in json_lines(tmp_path.glob("gunicorn-*.log").__next__()) if line.get("status") == 201
    ]
    assert (web_line["request_id"], web_line["method"], web_line["logger"]) == (
        "pipeline-run-42",
        "POST",
        "policies_app.requests",
    )
    worker_lines = json_lines(tmp_path / "worker.log")
    [decision] = [line for line in worker_lines if line.get("decision")]
    assert (decision["request_id"], decision["deployment_id"], decision["decision"]) == (
        "pipeline-run-42",
        deployment_id,
        "pending",
    )
    [task] = [
        line for line in worker_lines if line.get("task") == "policies_app.tasks.evaluate_deployment_task"
    ]
    assert (task["request_id"], task["deployment_id"], task["state"]) == (
        "pipeline-run-42",
        deployment_id,
        "SUCCESS",
    )


def test_the_grafana_dashboard_draws_only_metrics_the_platform_exposes(world, client):
    from pathlib import Path

    from policies_app.ops.metrics_view import exposition

    # django-prometheus declares its per-view metrics when its middleware first runs, as in a serving
    # platform: a request first, so the test does not depend on an earlier test having made one.
    assert client.get("/healthz").status_code == 200
    dashboard = json.loads(
        (Path(__file__).resolve().parents[2] / "platform/grafana-dashboard.json").read_text()
    )
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    drawn = {name for expr in expressions for name in re.findall(r"\b((?:policy_platform|django)_\w+)", expr)}
    exposed = exposition().decode()
    # Histograms and counters are exposed with their suffixes (_bucket, _total) once they have a sample.
    declared = set(re.findall(r"^# TYPE (\w+) ", exposed, re.M))
    missing = {
        name
        for name in drawn
        if not any(name == d or name.startswith(d + "_") or d.startswith(name) for d in declared)
    }
    assert drawn and missing == set(), missing


SLOW = """package env0

pending contains sprintf("%d", [count({x | some x in numbers.range(1, 3000000); x % 7 == 0})]) if true
"""


def counted(name: str, **labels: str) -> float:
    from prometheus_client import REGISTRY

    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_an_engine_timeout_is_counted_with_its_failed_closed_decision(world, settings):
    from policies_app.deployments import lifecycle

    world.platform.approval_policies.add(make_policy("slow", SLOW))
    settings.POLICY_EVALUATION_TIMEOUT_SECONDS = 0.5
    engine = settings.POLICY_ENGINE
    timeouts = counted("policy_platform_engine_timeouts_total", engine=engine)
    restarts = counted("policy_platform_engine_worker_restarts_total", engine=engine, reason="timeout")
    errors = counted("policy_platform_decisions_total", outcome="error", engine=engine)
    deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob)  # evaluated on commit
    deployment.refresh_from_db()
    assert deployment.status == "error", deployment.error
    assert counted("policy_platform_engine_timeouts_total", engine=engine) == timeouts + 1
    assert (
        counted("policy_platform_engine_worker_restarts_total", engine=engine, reason="timeout")
        == restarts + 1
    )
    assert counted("policy_platform_decisions_total", outcome="error", engine=engine) == errors + 1


def test_a_failed_webhook_delivery_is_counted(world, loopback_allowed):
    from policies_app.notifications import webhooks

    webhook = webhooks.create_webhook(world.admin, world.payments, name="chat", url="http://127.0.0.1:9/hook")
    before = sum(
        counted("policy_platform_webhook_delivery_failures_total", kind=kind, final="true")
        for kind in set(webhooks.FAILURES.values())
    )
    delivery = webhooks.send_test(world.admin, webhook)  # attempted on commit: nothing listens on port 9
    delivery.refresh_from_db()
    assert delivery.status == "failed"
    after = sum(
        counted("policy_platform_webhook_delivery_failures_total", kind=kind, final="true")
        for kind in set(webhooks.FAILURES.values())
    )
    assert after == before + 1
