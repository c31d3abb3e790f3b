"""Query shapes that keep the queues fast at organisation scale (bench/bench_scale.py measures them on
1,000,000 deployments; these tests keep the shapes, which a small database cannot time)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from policies_app.models import Deployment

pytestmark = pytest.mark.django_db


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
