"""Bad input is a 400 that names the field, never a 500, and nothing half-stored (issue 6, finding 11);
request bodies are never silently dropped and never over the size limit (finding 5)."""

import http.client
import json
from urllib.parse import urlparse

import pytest
from django.test import override_settings

from policies_app.deployments.stored_inputs import plan_of
from policies_app.models import Deployment, EnvironmentState
from tests.builders import api_key_for
from tests.processes import gunicorn

pytestmark = pytest.mark.django_db


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def deployments_url(world) -> str:
    return f"/api/v1/environments/{world.environment.pk}/deployments/"


def post_raw(client, url: str, body: str):
    return client.generic("POST", url, body.encode(), content_type="application/json")


@pytest.mark.parametrize("depth", [1_000, 5_000, 100_000])
def test_a_plan_nested_thousands_of_levels_deep_is_a_400_naming_the_plan(world, api, depth):
    body = '{"plan": {"a": ' + nested(depth) + "}}"
    response = post_raw(api(world.bob), deployments_url(world), body)
    assert response.status_code == 400
    assert "plan" in response.json()
    assert Deployment.objects.count() == 0


def test_a_body_that_is_itself_nested_too_deep_is_a_400(world, api):
    response = post_raw(api(world.bob), deployments_url(world), nested(2_000))
    assert response.status_code == 400
    assert "nested deeper" in response.json()["detail"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"plan": {"format_version": "1.2", "resource_changes": [], "x": "a\u0000b"}}, "plan"),
        ({"variables": {"environment": {"K": "\u0000"}}}, "variables"),
        ({"policy_data": {"k\u0000": 1}}, "policy_data"),
        ({"revision": "main\u0000"}, "revision"),
    ],
)
def test_a_nul_character_anywhere_is_a_400_naming_the_field(world, api, body, field):
    response = api(world.bob).post(deployments_url(world), body, format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert Deployment.objects.count() == 0


@pytest.mark.parametrize(
    "body", ['{"variables": {"terraform": {"n": 1e309}}}', '{"plan": null, "policy_data": -1e999}']
)
def test_a_number_too_large_for_json_is_a_400(world, api, body):
    response = post_raw(api(world.bob), deployments_url(world), body)
    assert response.status_code == 400
    assert "too large" in json.dumps(response.json())


def test_nan_and_infinity_literals_are_not_json(world, api):
    response = post_raw(api(world.bob), deployments_url(world), '{"policy_data": NaN}')
    assert response.status_code == 400


def test_a_huge_limit_is_capped_and_a_huge_offset_is_a_400(world, api):
    assert api(world.alice).get("/api/v1/deployments/", {"limit": 10**26}).status_code == 200
    response = api(world.alice).get("/api/v1/deployments/", {"offset": 10**26})
    assert response.status_code == 400
    assert "offset" in response.json()


def state_nested(depth: int) -> dict:
    value: dict = {}
    for _ in range(depth):
        value = {"v": value}
    return {
        "version": 4,
        "terraform_version": "1.11.4",
        "serial": 1,
        "lineage": "x",
        "outputs": {},
        "resources": [
            {
                "mode": "managed",
                "type": "terraform_data",
                "name": "deep",
                "provider": 'provider["terraform.io/builtin/terraform"]',
                "instances": [{"schema_version": 0, "attributes": value}],
            }
        ],
    }


def test_a_state_nested_past_what_policies_can_read_is_refused_at_upload(world, api):
    url = f"/api/v1/environments/{world.environment.pk}/state/"
    response = api(world.bob).put(url, state_nested(129), format="json")
    assert response.status_code == 400
    assert "state" in json.dumps(response.json()) or "resources" in response.json()
    assert EnvironmentState.objects.count() == 0
    assert api(world.bob).put(url, state_nested(20), format="json").status_code == 200


@override_settings(REQUEST_SIZE_LIMIT_BYTES=10_000)
def test_a_state_over_the_size_limit_is_refused_with_413(world, api):
    state = state_nested(1)
    state["resources"][0]["instances"][0]["attributes"] = {"blob": "x" * 20_000}
    response = api(world.bob).put(f"/api/v1/environments/{world.environment.pk}/state/", state, format="json")
    assert response.status_code == 413
    assert EnvironmentState.objects.count() == 0


def test_runserver_like_servers_answer_411_to_a_chunked_body_instead_of_reading_nothing(world, api):
    client = api(world.bob)
    # The test client's WSGI environment, like runserver's, does not decode chunks.
    response = client.generic(
        "POST", deployments_url(world), b"", content_type="application/json", HTTP_TRANSFER_ENCODING="chunked"
    )
    assert response.status_code == 411
    assert Deployment.objects.count() == 0


def chunked_post(base: str, path: str, token: str, body: bytes, chunk: int = 1000) -> tuple[int, dict]:
    url = urlparse(base)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    connection.putrequest("POST", path)
    connection.putheader("Authorization", f"Token {token}")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Transfer-Encoding", "chunked")
    connection.endheaders()
    for start in range(0, len(body), chunk):
        part = body[start : start + chunk]
        connection.send(f"{len(part):x}\r\n".encode() + part + b"\r\n")
    connection.send(b"0\r\n\r\n")
    response = connection.getresponse()
    payload = response.read()
    connection.close()
    return response.status, json.loads(payload or b"{}")


@pytest.mark.django_db(transaction=True)
def test_gunicorn_reads_a_chunked_body_in_full_and_refuses_one_over_the_limit(world, tmp_path):
    token = api_key_for(world.bob)
    plan = {
        "format_version": "1.2",
        "resource_changes": [
            {
                "address": "aws_db_instance.main",
                "type": "aws_db_instance",
                "name": "main",
                "change": {"actions": ["delete"]},
            }
        ],
    }
    body = json.dumps({"revision": "feature", "plan": plan}).encode()
    with gunicorn(tmp_path, REQUEST_SIZE_LIMIT_BYTES="5000") as base:
        status, created = chunked_post(base, deployments_url(world), token, body)
        assert status == 201, created
        stored = Deployment.objects.get(pk=created["id"])
        assert plan_of(stored) == plan
        assert stored.revision == "feature"

        status, refused = chunked_post(
            base, deployments_url(world), token, b'{"plan": "' + b"x" * 10_000 + b'"}'
        )
        assert status == 413
        assert Deployment.objects.count() == 1
