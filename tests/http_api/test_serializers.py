"""Serializers tested without HTTP: what they accept, the exact errors they give, and what they show."""

import pytest
from rest_framework.test import APIRequestFactory

from policies_app.api.serializers.deployments import TriggerDeploymentSerializer
from policies_app.api.serializers.environments import EnvironmentSerializer
from policies_app.api.serializers.projects import ProjectSerializer
from policies_app.guards.masking import MASK
from policies_app.models import Environment
from tests.builders import make_policy

pytestmark = pytest.mark.django_db


def context_for(user) -> dict:
    request = APIRequestFactory().get("/")
    request.user = user
    return {"request": request}


def test_a_trigger_without_anything_takes_env0s_defaults():
    serializer = TriggerDeploymentSerializer(data={})
    assert serializer.is_valid(), serializer.errors
    assert serializer.validated_data["type"] == "deploy"
    assert serializer.validated_data["trigger_name"] == "user"
    assert serializer.validated_data["plan"] is None


def test_a_trigger_names_each_bad_field():
    serializer = TriggerDeploymentSerializer(
        data={"type": "explode", "plan": [1], "cost_estimation": {"monthly_cost_diff": "x"}}
    )
    assert not serializer.is_valid()
    assert set(serializer.errors) == {"type", "plan", "cost_estimation"}
    assert serializer.errors["plan"] == ["The plan must be a JSON object or null."]
    assert serializer.errors["cost_estimation"] == {"monthly_cost_diff": ["A valid number is required."]}


def test_a_project_the_user_cannot_see_does_not_exist_for_them(world):
    serializer = EnvironmentSerializer(
        data={"name": "x", "project": world.payments.pk, "template": world.template.pk},
        context=context_for(world.charlie),
    )
    assert not serializer.is_valid()
    assert serializer.errors["project"] == [f'Invalid pk "{world.payments.pk}" - object does not exist.']
    assert serializer.errors["template"] == [f'Invalid pk "{world.template.pk}" - object does not exist.']
    visible = EnvironmentSerializer(
        data={"name": "x", "project": world.payments.pk, "template": world.template.pk},
        context=context_for(world.admin),
    )
    assert visible.is_valid(), visible.errors


def test_an_environment_shows_sensitive_values_masked_and_whether_policies_apply(world):
    world.environment.environment_variables = {"TOKEN": "secret", "REGION": "eu"}
    world.environment.sensitive_variables = {"environment": ["TOKEN"]}
    world.environment.approve_plans_automatically = True
    world.environment.save()
    shown = EnvironmentSerializer(Environment.objects.get(pk=world.environment.pk)).data
    assert shown["environment_variables"] == {"TOKEN": MASK, "REGION": "eu"}
    assert (shown["approval_policies_apply"], shown["approve_plans_automatically"]) == (False, True)
    world.platform.approval_policies.add(make_policy("p", 'package env0\n\npending contains "x" if true\n'))
    shown = EnvironmentSerializer(Environment.objects.get(pk=world.environment.pk)).data
    # Under a policy automatic approval is off, whatever the setting says.
    assert (shown["approval_policies_apply"], shown["approve_plans_automatically"]) == (True, False)


def test_a_project_shows_its_full_name_own_and_inherited_policies(world):
    root_policy = make_policy("root", 'package env0\n\npending contains "x" if true\n')
    world.platform.approval_policies.add(root_policy)
    shown = ProjectSerializer(world.payments_eu).data
    assert shown["full_name"] == "Platform / Payments / Payments EU"
    assert (shown["approval_policies"], shown["inherited_policies"]) == ([], [root_policy.pk])
    listed = ProjectSerializer([world.platform, world.payments_eu], many=True).data
    assert [p["inherited_policies"] for p in listed] == [[], [root_policy.pk]]
