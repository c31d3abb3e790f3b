"""The production definition (platform/): the Procfile run by bin/run-production under honcho, and the
compose file that runs the same commands in containers.

The honcho run needs PostgreSQL (DATABASE_URL) and redis-server, which .ci/run provides; elsewhere it skips
and says why. Docker is not available here, so compose.yaml is checked by reading it."""

import json
import os
import runpy
import shlex
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.db import connection
from honcho.environ import parse_procfile

from tests.builders import api_key_for, make_policy
from tests.processes import ROOT, RedisServer, database_url, free_port, wait_until

PLATFORM = ROOT / "platform"
TWO_APPROVERS = 'package env0\n\nallow contains "two approvers" if count(input.approvers) >= 2\n'


def procfile() -> dict[str, str]:
    return dict(parse_procfile((PLATFORM / "Procfile").read_text()).processes)


def compose() -> dict:
    return yaml.safe_load((PLATFORM / "compose.yaml").read_text())


def command_words(command: str | list[str]) -> list[str]:
    return shlex.split(command) if isinstance(command, str) else command


# --- the definition, read -----------------------------------------------------------------------------


def test_the_procfile_runs_gunicorn_a_celery_worker_and_celery_beat():
    processes = procfile()
    assert list(processes) == ["web", "worker", "beat"]
    assert command_words(processes["web"])[:3] == ["gunicorn", "--config", "platform/gunicorn.conf.py"]
    assert command_words(processes["worker"])[:4] == ["celery", "--app", "policy_platform", "worker"]
    assert command_words(processes["beat"])[:4] == ["celery", "--app", "policy_platform", "beat"]


def test_compose_runs_the_procfile_commands_next_to_postgresql_and_redis():
    services = compose()["services"]
    assert set(services) == {"postgres", "redis", "migrate", "web", "worker", "beat"}
    for name, command in procfile().items():
        assert command_words(services[name]["command"]) == command_words(command), name
        environment = services[name]["environment"]
        assert environment["DATABASE_URL"].startswith("postgres://platform:")
        assert environment["DATABASE_URL"].endswith("@postgres:5432/platform")
        assert environment["CELERY_BROKER_URL"].startswith("redis://redis:6379/")
        assert environment["DJANGO_DEBUG"] == "false"
        # Archives uploaded through the web are read by the workers: the same volume for all three.
        assert services[name]["volumes"] == ["platform-var:/var/lib/platform"]
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    assert services["postgres"]["image"].startswith("postgres:15")


def test_compose_keeps_redis_messages_across_a_restart():
    redis = compose()["services"]["redis"]
    words = command_words(redis["command"])
    assert words[0] == "redis-server"
    assert words[words.index("--appendonly") + 1] == "yes"
    assert redis["volumes"] == ["redis-data:/data"]


def test_gunicorn_listens_where_honcho_says(monkeypatch):
    monkeypatch.setenv("HOST", "127.0.0.1")
    monkeypatch.setenv("PORT", "5123")
    config = runpy.run_path(str(PLATFORM / "gunicorn.conf.py"))
    assert config["bind"] == "127.0.0.1:5123"
    assert config["workers"] * config["threads"] >= 2


def test_each_web_process_keeps_the_garbage_collector_off_the_requests_path():
    import gc

    config = runpy.run_path(str(PLATFORM / "gunicorn.conf.py"))
    thresholds = gc.get_threshold()
    try:
        config["post_worker_init"](worker=None)
        assert gc.get_threshold()[0] >= 10_000
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


def test_the_platform_folder_is_not_a_python_package():
    # A package named platform would shadow the standard library's platform module.
    assert not (PLATFORM / "__init__.py").exists()
    import platform

    assert hasattr(platform, "python_version")


def test_the_liveness_probe_answers_without_signing_in_or_the_database(client):
    # This test may not touch the database (no django_db mark): neither may the probe.
    response = client.get("/healthz")
    assert (response.status_code, response.content) == (200, b"ok")


def test_run_production_refuses_to_start_without_postgresql_and_redis():
    environment = {**os.environ, "DATABASE_URL": "sqlite:///x.sqlite3", "CELERY_BROKER_URL": "redis://x:1/0"}
    refused = subprocess.run(
        [ROOT / "bin" / "run-production"], env=environment, capture_output=True, text=True, timeout=30
    )
    assert refused.returncode == 2
    assert "DATABASE_URL" in refused.stderr
    environment |= {"DATABASE_URL": "postgres://u@localhost/db", "CELERY_BROKER_URL": ""}
    refused = subprocess.run(
        [ROOT / "bin" / "run-production"], env=environment, capture_output=True, text=True, timeout=30
    )
    assert refused.returncode == 2
    assert "CELERY_BROKER_URL" in refused.stderr


# --- the definition, run ------------------------------------------------------------------------------


class Api:
    def __init__(self, base: str) -> None:
        self.base = base
        self.keys: dict[int, str] = {}

    def call(self, user, method: str, path: str, body=None) -> tuple[int, dict]:
        if user.pk not in self.keys:
            self.keys[user.pk] = api_key_for(user)
        token = self.keys[user.pk]
        request = urllib.request.Request(
            self.base + path,
            data=None if body is None else json.dumps(body).encode(),
            method=method,
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def deployment(self, user, pk: int) -> dict:
        status, body = self.call(user, "GET", f"/api/v1/deployments/{pk}/")
        assert status == 200, body
        return body


def run_production(tmp_path: Path, broker_url: str) -> tuple[subprocess.Popen, str, Path]:
    port = free_port()
    log = tmp_path / "honcho.log"
    environment = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": broker_url,
        "PLATFORM_VAR_DIR": str(tmp_path),
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": "a-secret-for-this-test-only",
        # Production refuses to start without encryption keys; these are the test process's own.
        "SECRET_ENCRYPTION_KEYS": ",".join(settings.SECRET_ENCRYPTION_KEYS),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "HOST": "127.0.0.1",
        "PORT": str(port),
        # The smallest production: one web process, one evaluation at a time, beat sweeping every second.
        "GUNICORN_WORKERS": "1",
        "CELERY_WORKER_CONCURRENCY": "1",
        "POLICY_ENGINE_WORKERS": "1",
        "EVALUATION_SWEEP_INTERVAL_SECONDS": "1",
    }
    process = subprocess.Popen(
        [ROOT / "bin" / "run-production"],
        cwd=tmp_path,
        env=environment,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # honcho and everything it starts: one process group, stopped together
    )
    return process, f"http://127.0.0.1:{port}", log


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)  # honcho passes it on to web, worker and beat
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.mark.django_db(transaction=True)
def test_the_procfile_under_honcho_takes_a_deployment_from_trigger_to_complete(world, tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://... (.ci/run does)")
    redis = RedisServer(tmp_path)  # skips where redis-server is missing
    redis.start()
    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    process, base, log = run_production(tmp_path, redis.url)
    api = Api(base)

    def wait_for(pk: int, what: str, check) -> dict:
        seen: dict = {}

        def done() -> bool:
            seen.update(api.deployment(world.bob, pk))
            return check(seen)

        wait_until(done, 60, interval=0.2, what=f"{what} (log: {log.read_text()[-3000:]})")
        return seen

    try:
        wait_until(lambda: answers(f"{base}/healthz"), 90, what=f"the web answering ({log})")
        # Debug is off: the collected static files are served by the web process itself.
        with urllib.request.urlopen(f"{base}/static/admin/css/base.css", timeout=10) as stylesheet:
            assert b"font-family" in stylesheet.read()

        status, body = api.call(
            world.bob,
            "POST",
            f"/api/v1/environments/{world.environment.pk}/deployments/",
            {"type": "deploy", "revision": "abc123", "idempotency_key": "pipeline-1"},
        )
        assert status == 201, body
        pk = body["id"]
        wait_for(pk, "the worker's first evaluation", lambda d: d["status"] == "pending_approval")

        assert (
            api.call(world.alice, "POST", f"/api/v1/deployments/{pk}/approve/", {"comment": "ok"})[0] == 200
        )
        after_one = wait_for(pk, "the re-evaluation after one approval", lambda d: len(d["evaluations"]) == 2)
        assert after_one["status"] == "pending_approval"
        assert after_one["evaluations"][1]["request_type"] == "deployResume"

        assert api.call(world.sam, "POST", f"/api/v1/deployments/{pk}/approve/", {"comment": "ok"})[0] == 200
        approved = wait_for(
            pk, "the release after two approvals", lambda d: d["status"] != "pending_approval"
        )
        assert approved["status"] == "approved"
        assert approved["decision"] == "allow"
        assert [a["user"] for a in approved["approvals"]] == ["alice", "sam"]

        status, body = api.call(
            world.bob, "POST", f"/api/v1/deployments/{pk}/complete/", {"status": "succeeded"}
        )
        assert (status, body["status"]) == (200, "succeeded"), body

        # Beat is running too: it sends the periodic sweep to the worker.
        wait_until(
            lambda: "resend_lost_evaluations_task" in log.read_text(), 30, what="beat sending the sweep"
        )
        output = log.read_text()
        for name in ("web.1", "worker.1", "beat.1"):
            assert f"{name} " in output or f"{name} |" in output, name
    finally:
        stop(process)
        redis.stop()
    assert process.returncode is not None
    assert "Traceback" not in log.read_text(), log.read_text()[-3000:]
