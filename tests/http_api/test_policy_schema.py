"""The OpenAPI schema describes every key a policy is shown with (a key the schema leaves out is one a
generated client cannot read): the Policy component's readable properties are exactly the keys of
GET /api/v1/policies/{id}/, and the PolicyRevision component's those of its revisions."""

import pytest

from policies_app.models import PolicyRepository
from tests.builders import ONE_APPROVER, make_policy

pytestmark = pytest.mark.django_db


def readable_properties(schema: dict, component: str) -> set[str]:
    properties = schema["components"]["schemas"][component]["properties"]
    return {name for name, spec in properties.items() if not spec.get("writeOnly")}


def test_the_schema_shows_every_key_a_policy_is_returned_with(world, api):
    policy = make_policy("one approver", ONE_APPROVER)
    client = api(world.admin)
    schema = client.get("/api/schema/?format=json").json()
    shown = client.get(f"/api/v1/policies/{policy.pk}/").json()
    assert set(shown) == readable_properties(schema, "Policy")
    assert set(shown["latest_revision"]) == readable_properties(schema, "PolicyRevision")
    revisions = client.get(f"/api/v1/policies/{policy.pk}/revisions/").json()
    assert set(revisions[0]) == readable_properties(schema, "PolicyRevision")


def test_the_schema_shows_every_key_of_a_policy_synced_from_a_repository(world, api):
    policy = make_policy("synced", ONE_APPROVER)
    policy.repository = PolicyRepository.objects.create(name="policies", url="https://git.example/p.git")
    policy.repository_path = "payments"
    policy.repository_revision = "main"
    policy.save()
    client = api(world.admin)
    schema = client.get("/api/schema/?format=json").json()
    source = client.get(f"/api/v1/policies/{policy.pk}/").json()["source"]
    assert set(source) == readable_properties(schema, "PolicySource")
    assert set(source["repository"]) == readable_properties(schema, "PolicyRepositoryReference")
