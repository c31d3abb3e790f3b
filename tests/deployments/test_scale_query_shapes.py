"""Query shapes that keep the queues fast at organisation scale (bench/bench_scale.py measures them on
1,000,000 deployments; these tests keep the shapes, which a small database cannot time)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from policies_app import access
from policies_app.deployments import lifecycle
from policies_app.deployments.stored_inputs import store_plan
from policies_app.models import Deployment
from tests.builders import make_policy

pytestmark = pytest.mark.django_db

TWO_APPROVERS = 'package env0\n\nallow contains "two approvers" if count(input.approvers) >= 2\n'


def test_the_pending_queue_of_the_api_is_not_made_distinct(world, api):
    """DISTINCT over whole deployment rows (plans and messages included) made PostgreSQL sort every pending
    deployment for each page: 230 ms of SQL for 10,000 pending. A status is a column of the row itself, so
    no row can come twice."""
    Deployment.objects.create(environment=world.environment, deployer=world.bob, status="pending_approval")
    with CaptureQueriesContext(connection) as queries:
        response = api(world.alice).get("/api/v1/deployments/?status=pending_approval&status=queued")
    assert response.status_code == 200
    assert response.json()["count"] == 1
    assert not [query["sql"] for query in queries if "DISTINCT" in query["sql"].upper()]


def test_deployments_are_filtered_by_the_visible_projects_ids_not_by_every_grant_on_every_row(world):
    """Matching each grant's path against every joined environment cost 30 ms for 20 grants over 20,000
    environments; the visible projects are found first, and environments matched by project id."""
    sql = str(access.visible_deployments(world.alice).query)
    assert '"policies_app_environment"."project_id" IN (SELECT' in sql
    assert sql.count("LIKE") == 1  # alice's one grant, checked once, inside the subquery
    assert "LIKE" not in sql.split("IN (SELECT")[0]


def test_a_user_sees_the_same_deployments_through_the_subquery(world):
    elsewhere = world.platform.__class__.objects.create(name="Elsewhere")
    hidden_environment = world.environment.__class__.objects.create(
        name="prod", project=elsewhere, template=world.template
    )
    seen = Deployment.objects.create(environment=world.environment, deployer=world.bob)
    Deployment.objects.create(environment=hidden_environment, deployer=world.bob)
    assert list(access.visible_deployments(world.alice)) == [seen]
    assert list(access.visible_deployments(world.charlie)) == []
    assert access.visible_deployments(world.admin).count() == 2


def test_the_queues_have_an_index_in_their_order():
    """Deployments in one status, newest first: without this index an organisation admin's queue read and
    sorted all 10,000 pending deployments for each page of 50 (40 ms; 10 ms with it)."""
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Deployment._meta.db_table)
    queue = constraints.get("deployment_queue")
    assert queue is not None and queue["index"]
    assert queue["columns"] == ["status", "created_at", "id"]
    assert queue["orders"] == ["ASC", "DESC", "DESC"]


def test_approving_reads_the_details_once_and_never_the_stored_inputs(
    world, api, django_capture_on_commit_callbacks
):
    """An approval loaded the deployment with all its evaluations twice (to decide, then to answer), each
    with its stored input, which holds the whole plan; the answer shows neither input."""
    world.platform.approval_policies.add(make_policy("two approvers", TWO_APPROVERS))
    with django_capture_on_commit_callbacks(execute=True):
        deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob)
    assert deployment.evaluations.count() == 1

    with CaptureQueriesContext(connection) as queries:
        response = api(world.alice).post(f"/api/v1/deployments/{deployment.pk}/approve/", {}, format="json")
        listed = api(world.alice).get("/api/v1/deployments/")
    assert response.status_code == 200 and listed.status_code == 200
    assert len(response.json()["evaluations"]) == 1
    assert len(listed.json()["results"][0]["evaluations"]) == 1
    sql = [query["sql"] for query in queries]
    assert not [query for query in sql if "input_json" in query]
    reads = [
        query for query in sql if query.startswith("SELECT") and 'FROM "policies_app_evaluation"' in query
    ]
    assert len(reads) == 2  # one for the approval's answer, one for the list


def test_the_deployment_list_reads_neither_plans_nor_what_it_does_not_show(world, api):
    """A page of 100 deployments decoded every plan (up to the request size limit each) and built the
    environment, project and template of each row, none of which the list shows."""
    plan = {"format_version": "1.2", "resource_changes": [{"address": "aws_instance.x"}] * 50}
    Deployment.objects.create(
        environment=world.environment, deployer=world.bob, plan_document_id=store_plan(plan)
    )
    with CaptureQueriesContext(connection) as queries:
        response = api(world.alice).get("/api/v1/deployments/")
    assert response.status_code == 200
    assert response.json()["results"][0]["deployer"] == "bob"
    assert response.json()["results"][0]["environment"] == world.environment.pk
    rows = [
        query["sql"] for query in queries if query["sql"].startswith('SELECT "policies_app_deployment"."id"')
    ]
    assert len(rows) == 1
    assert not [query for query in queries if "policies_app_storeddocument" in query["sql"]]
    assert '"policies_app_template"' not in rows[0]
