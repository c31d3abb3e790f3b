"""The effective-policies endpoint finds and loads the policies in one query (no project tree), in exactly
the order and with exactly the policies the evaluation uses (ProjectTree.effective_policies)."""

import pytest

from policies_app.models import Project
from policies_app.projects.tree import tree_for
from tests.builders import api_client_for, make_policy

pytestmark = pytest.mark.django_db

SOURCE = 'package env0\n\nallow contains "ok" if true\n'


def test_the_endpoint_lists_what_the_evaluation_applies_in_its_order(world):
    # Names chosen so that alphabetical order and the order of the chain disagree.
    policies = {
        name: make_policy(name, SOURCE)
        for name in ("a-root", "b-leaf", "c-middle", "d-both", "z-tmpl", "m-x")
    }
    world.platform.approval_policies.add(policies["a-root"], policies["d-both"])
    world.payments.approval_policies.add(policies["c-middle"], policies["m-x"])
    world.payments_eu.approval_policies.add(policies["b-leaf"], policies["d-both"])
    world.template.approval_policies.add(policies["z-tmpl"], policies["m-x"])
    sibling = Project.objects.create(name="Data", parent=world.platform)
    sibling.approval_policies.add(make_policy("not on this branch", SOURCE))

    response = api_client_for(world.vera).get(
        f"/api/v1/environments/{world.environment.pk}/effective-policies/"
    )

    assert response.status_code == 200, "a viewer, the lowest role, sees what applies"
    expected = [policy.name for policy in tree_for(world.payments_eu).effective_policies(world.environment)]
    assert expected == ["m-x", "z-tmpl", "b-leaf", "d-both", "c-middle", "a-root"]
    assert [policy["name"] for policy in response.json()] == expected
    assert response.json()[0]["latest_revision"]["modules"][0]["source"] == SOURCE


def test_an_environment_with_no_policies_has_none(world):
    response = api_client_for(world.bob).get(
        f"/api/v1/environments/{world.environment.pk}/effective-policies/"
    )
    assert (response.status_code, response.json()) == (200, [])
