"""A client that sends one request at a time is never told the dry-run engine is busy (issue 20).

Through the live server, as the web UI and a scripted client use it: a refused save (a compile error,
a builtin the platform refuses, a policy whose compilation runs out of time and makes the worker
restart), the editor's check that the edit page sends by itself when it shows the refused policy
again, then dry runs one after the other."""

import json
import threading
import time
import urllib.error
import urllib.request

import pytest
from django.db import connections
from django.test import override_settings

from tests.builders import api_key_for

pytestmark = pytest.mark.django_db(transaction=True)

QUICK = 'package env0\n\nallow contains "ok" if true\n'
# OPA compiles it at once; regorus, folding the constant comprehension, runs out of time.
SLOW_TO_COMPILE = (
    'package env0\n\npending contains sprintf("%d", '
    "[count({x | some x in numbers.range(1, 30000000); x % 7 == 0})]) if true\n"
)
SLOW_TO_EVALUATE = SLOW_TO_COMPILE.replace("30000000", "input.n")
REFUSED = [
    "package env0\nallow contains x if {",
    'package env0\nallow contains "x" if http.send({"method": "get", "url": "http://127.0.0.1/"})',
    SLOW_TO_COMPILE,
]


def call(live_server, key: str, path: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{live_server.url}{path}", data=json.dumps(body).encode(), method="POST"
    )
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json")
    request.add_header("Authorization", f"Token {key}")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@pytest.fixture
def client(world, live_server, monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    # Many requests in a row: the per-user rates are not what is tested here.
    rates = {**SimpleRateThrottle.THROTTLE_RATES, "dry_run": None, "editor_check": None}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)
    key = api_key_for(world.admin)

    def send(path: str, body: dict) -> tuple[int, dict]:
        return call(live_server, key, path, body)

    return send


def save(send, name: str, source: str) -> tuple[int, dict]:
    modules = [{"filename": "main.rego", "source": source}]
    return send("/api/v1/policies/", {"name": name, "rego_version": "v1", "modules": modules})


def check(send, source: str) -> tuple[int, dict]:
    modules = [{"filename": "main.rego", "source": source}]
    return send("/api/v1/policies/check/", {"rego_version": "v1", "modules": modules})


def dry_run(send, policy_id: int, input_document: dict, *, explain: bool) -> tuple[int, dict]:
    body = {"input": input_document, "explain": explain}
    return send(f"/api/v1/policies/{policy_id}/evaluate/", body)


@override_settings(POLICY_EVALUATION_TIMEOUT_SECONDS=3)
def test_dry_runs_after_refused_saves_and_dry_runs_are_never_busy(client):
    quick = save(client, "quick", QUICK)[1]["id"]
    slow = save(client, "slow", SLOW_TO_EVALUATE)[1]["id"]
    answers = []
    for round_number in range(2):
        for number, source in enumerate(REFUSED):
            status, body = save(client, f"refused {round_number} {number}", source)
            assert status == 400, body
            answers.append(dry_run(client, quick, {}, explain=False))
            answers.append(dry_run(client, quick, {}, explain=True))
            assert check(client, source)[0] == 200
            answers.append(dry_run(client, quick, {}, explain=True))
        # A dry run that runs out of time (its worker is killed and replaced), then dry runs at once.
        answers.append(dry_run(client, slow, {"n": 30000000}, explain=True))
        answers.append(dry_run(client, quick, {}, explain=False))
        answers.append(dry_run(client, quick, {}, explain=True))
        answers.append(dry_run(client, quick, {}, explain=True))
    assert [status for status, _ in answers] == [200] * len(answers), [a for a in answers if a[0] != 200]
    assert answers[-1][1]["decision"] == "allow" and answers[-1][1]["fired"]
    timed_out = answers[9][1]
    assert timed_out["decision"] == "error" and "exceeded 3 s" in timed_out["error"]


@override_settings(POLICY_EVALUATION_TIMEOUT_SECONDS=4)
def test_the_editors_own_check_of_a_refused_policy_does_not_make_a_dry_run_busy(client):
    """The edit page shows a refused policy again and its script checks it at once (policy_editor.js),
    without the user doing anything: that check must not take the worker the user's next dry run needs."""
    quick = save(client, "quick", QUICK)[1]["id"]
    assert save(client, "refused", SLOW_TO_COMPILE)[0] == 400
    checked: dict = {}

    def editor_check() -> None:
        try:
            checked["answer"] = check(client, SLOW_TO_COMPILE)
        finally:
            connections.close_all()

    page_script = threading.Thread(target=editor_check)
    page_script.start()
    statuses = []
    try:
        started = time.monotonic()
        while page_script.is_alive() and time.monotonic() - started < 30:
            statuses.append(dry_run(client, quick, {}, explain=True)[0])
    finally:
        page_script.join(60)
    assert statuses and set(statuses) == {200}, statuses
    status, body = checked["answer"]
    assert status == 200 and "exceeded 4 s" in body["problems"][0]["message"]
