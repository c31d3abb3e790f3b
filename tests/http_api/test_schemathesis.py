"""Schemathesis over every operation of /api/schema/, signed in as an organisation admin (who may reach
every write): a bounded, repeatable run in the suite. bench/bench_schemathesis.py runs the long one
against gunicorn. Any server error is a bug of the operation's use case or serializer."""

from contextlib import contextmanager

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections

from policies_app.deployments import lifecycle
from policy_platform.wsgi import application
from tests.builders import api_key_for, make_policy
from tests.http_api.api_fuzzing import fuzz

pytestmark = pytest.mark.django_db

PENDING = 'package env0\n\npending contains "wait" if true\n'


@contextmanager
def wsgi_in_this_transaction():
    """Requests sent to the WSGI application keep the test's database connection (as Django's test client
    does for its own requests): the handler would otherwise close it after each request."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield application
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


def test_no_request_to_any_operation_of_the_schema_is_a_server_error(
    world, api, settings, django_capture_on_commit_callbacks
):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}
    world.platform.approval_policies.add(make_policy("pending", PENDING))
    with django_capture_on_commit_callbacks(execute=True):
        deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob)
    assert deployment.evaluations.count() == 1  # pending: approving, rejecting and cancelling do real work
    response = api(world.admin).get("/api/schema/?format=json")
    assert response.status_code == 200
    schema = schemathesis.openapi.from_dict(response.json())
    token = api_key_for(world.admin)
    known_ids = {
        "projects": [world.payments.pk],
        "templates": [world.template.pk],
        "environments": [world.environment.pk],
        "policies": [world.platform.approval_policies.get().pk],
        "teams": [world.security.pk],
        "deployments": [deployment.pk],
    }

    with wsgi_in_this_transaction() as app:
        report = fuzz(
            schema,
            lambda case: case.call(app=app, headers={"Authorization": f"Token {token}"}),
            examples=10,
            known_ids=known_ids,
        )

    assert report.calls > 100, report.summary()
    assert report.server_errors == [], "\n\n".join(
        f"{error.operation}: {error.status}\n{error.body}\n{error.reproduce}"
        for error in report.server_errors
    )
