"""One masking rule for everything shown (issue 16: findings 3, 4 and 6), tried through the API and the pages
as the lowest role that reaches each surface: a viewer of the project, and a policy author without a role
on it. Policies still decide on the real values."""

from __future__ import annotations

import io
import json
import tarfile

import pytest
from django.contrib.auth.models import Permission

from policies_app.deployments import stored_inputs
from policies_app.guards.masking import MASK
from policies_app.models import Deployment, DeploymentEvent, Evaluation, PolicyReplay, ProjectMembership
from tests.builders import make_policy, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("commits_run_on_commit_callbacks")]

PASSWORD = "hunter2-db-password"
PLAN_SECRET = "plan-secret-value-9"
STATE_SECRET = "state-secret-value-7"

TEMPLATE = """
variable "db_password" {
  type = string
}

variable "db_host" {
  type    = string
  default = "db.internal"
}

locals {
  connection = "postgres://app:${var.db_password}@${var.db_host}:5432/app"
}

resource "terraform_data" "database" {
  input = {
    url  = local.connection
    user = "app"
  }
}

output "connection" {
  value = local.connection
}

output "encoded" {
  value = base64encode(var.db_password)
}

output "host" {
  value = var.db_host
}
"""

# Decides on the real value (which it sees) and prints it in its message (which nobody may read).
PRINTS_THE_CONNECTION = """package env0

deny contains sprintf("connection %s is not allowed", [input.configuration.outputs.connection.value]) if {
	contains(input.configuration.outputs.connection.value, "hunter2-db-password")
}
"""


def archive_of(files: dict[str, str]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            content = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(content)
            archive.addfile(member, io.BytesIO(content))
    buffer.seek(0)
    buffer.name = "template.tar.gz"
    return buffer


@pytest.fixture
def secret_template(world, api, settings, tmp_path):
    """The world's template as an uploaded archive reading a password the environment calls sensitive."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.IAC_PARSE_CACHE_DIR = str(tmp_path / "parse-cache")
    world.template.path = "db"
    world.template.save()
    uploaded = api(world.admin).post(
        f"/api/v1/templates/{world.template.pk}/archive/",
        {"archive": archive_of({"db/main.tf": TEMPLATE})},
        format="multipart",
    )
    assert uploaded.status_code == 200, uploaded.content
    changed = api(world.admin).patch(
        f"/api/v1/environments/{world.environment.pk}/",
        {
            "terraform_variables": {"db_password": PASSWORD},
            "sensitive_variables": {"terraform": ["db_password"]},
        },
        format="json",
    )
    assert changed.status_code == 200, changed.json()
    return world


def trigger(client, environment, **body) -> dict:
    created = client.post(f"/api/v1/environments/{environment.pk}/deployments/", body, format="json")
    assert created.status_code == 201, created.json()
    return client.get(f"/api/v1/deployments/{created.json()['id']}/").json()


def shown_to(world, api, client, deployment: dict) -> list[str]:
    """What a viewer of the project reads of the deployment: its input, through the API and the page, the
    deployment and its page."""
    client.force_login(world.vera)
    evaluation = deployment["evaluations"][-1]["id"]
    return [
        api(world.vera).get(f"/api/v1/deployments/{deployment['id']}/input/").content.decode(),
        api(world.vera).get(f"/api/v1/deployments/{deployment['id']}/").content.decode(),
        client.get(f"/deployments/{deployment['id']}/evaluations/{evaluation}/input.json").content.decode(),
        client.get(f"/deployments/{deployment['id']}/").content.decode(),
    ]


def test_finding_3_values_derived_from_a_sensitive_variable_are_masked_in_the_configuration_view(
    secret_template, api, client
):
    world = secret_template
    world.platform.approval_policies.add(make_policy("prints the connection", PRINTS_THE_CONNECTION))
    deployment = trigger(api(world.bob), world.environment)
    # The policy saw the real value and decided on it...
    assert deployment["status"] == "denied"
    # ...and its message is stored without it: the connection string derives from it, so it is masked whole.
    assert deployment["messages"]["deny"] == [f"connection {MASK} is not allowed"]

    for body in shown_to(world, api, client, deployment):
        assert PASSWORD not in body
        assert "aHVudGVyMi1kYi1wYXNzd29yZA" not in body  # base64 of the password: tracked, not matched
    shown = api(world.vera).get(f"/api/v1/deployments/{deployment['id']}/input/").json()
    outputs = shown["configuration"]["outputs"]
    assert (outputs["connection"]["value"], outputs["encoded"]["value"]) == (MASK, MASK)
    assert outputs["host"]["value"] == "db.internal"  # what does not derive from it is shown
    [database] = shown["configuration"]["resources"]
    assert database["values"]["input"] == {"url": MASK, "user": "app"}
    assert shown["variables"]["terraform"]["db_password"] == MASK
    # Policies are given the document as it was: no mask, no new diagnostic, no new key.
    given = json.loads(stored_inputs.input_of(Evaluation.objects.get(deployment_id=deployment["id"])))
    assert given["configuration"]["outputs"]["connection"]["value"] == (
        f"postgres://app:{PASSWORD}@db.internal:5432/app"
    )
    assert given["configuration"]["diagnostics"] == []
    assert set(given["configuration"]) == {"outputs", "resources", "diagnostics"}


def test_finding_3_the_secret_never_reaches_stored_messages_events_or_outcomes(secret_template, api):
    world = secret_template
    world.platform.approval_policies.add(make_policy("prints the connection", PRINTS_THE_CONNECTION))
    deployment = trigger(api(world.bob), world.environment)
    evaluation = Evaluation.objects.get(deployment_id=deployment["id"])
    stored = [
        json.dumps(evaluation.messages),
        json.dumps(evaluation.outcomes),
        json.dumps(Deployment.objects.get(pk=deployment["id"]).messages),
        *DeploymentEvent.objects.filter(deployment_id=deployment["id"]).values_list("detail", flat=True),
    ]
    assert all(PASSWORD not in text for text in stored)
    assert any(MASK in text for text in stored)


SENSITIVE_PLAN = {
    "format_version": "1.2",
    "terraform_version": "1.11.4",
    "variables": {"db_password": {"value": PLAN_SECRET}},
    "configuration": {"root_module": {"variables": {"db_password": {"sensitive": True}}}},
    "planned_values": {
        "outputs": {"token": {"sensitive": True, "value": PLAN_SECRET}},
        "root_module": {
            "resources": [
                {
                    "address": "aws_db_instance.main",
                    "type": "aws_db_instance",
                    "name": "main",
                    "values": {"identifier": "main", "password": PLAN_SECRET},
                    "sensitive_values": {"password": True},
                }
            ]
        },
    },
    "resource_changes": [
        {
            "address": "aws_db_instance.main",
            "type": "aws_db_instance",
            "name": "main",
            "provider_name": "registry.terraform.io/hashicorp/aws",
            "change": {
                "actions": ["update"],
                "before": {"identifier": "main", "password": "old-" + PLAN_SECRET, "tags": ["a", "b"]},
                "after": {"identifier": "main", "password": PLAN_SECRET, "tags": ["a", PLAN_SECRET]},
                "before_sensitive": {"password": True},
                "after_sensitive": {"password": True, "tags": [False, True]},
            },
        }
    ],
    "output_changes": {
        "token": {
            "actions": ["update"],
            "before": None,
            "after": PLAN_SECRET,
            "before_sensitive": False,
            "after_sensitive": True,
        }
    },
}

WATCHES_THE_PASSWORD = """package env0

deny contains sprintf("password %s is the old one", [change.change.after.password]) if {
	some change in input.plan.resource_changes
	change.change.after.password == "plan-secret-value-9"
}
"""


def test_finding_4_plan_values_terraform_marks_sensitive_are_masked_in_the_input(world, api, client):
    world.platform.approval_policies.add(make_policy("watches the password", WATCHES_THE_PASSWORD))
    deployment = trigger(api(world.bob), world.environment, plan=SENSITIVE_PLAN)
    assert deployment["status"] == "denied"  # decided on the real value
    assert deployment["messages"]["deny"] == [f"password {MASK} is the old one"]
    for body in shown_to(world, api, client, deployment):
        assert PLAN_SECRET not in body
    plan = api(world.vera).get(f"/api/v1/deployments/{deployment['id']}/input/").json()["plan"]
    change = plan["resource_changes"][0]["change"]
    assert change["after"] == {"identifier": "main", "password": MASK, "tags": ["a", MASK]}
    assert change["before"]["password"] == MASK and change["before"]["tags"] == ["a", "b"]
    assert plan["output_changes"]["token"]["after"] == MASK
    assert plan["planned_values"]["outputs"]["token"]["value"] == MASK
    assert plan["planned_values"]["root_module"]["resources"][0]["values"] == {
        "identifier": "main",
        "password": MASK,
    }
    assert plan["variables"]["db_password"]["value"] == MASK


SENSITIVE_STATE = {
    "version": 4,
    "terraform_version": "1.11.4",
    "serial": 3,
    "lineage": "masking",
    "outputs": {
        "token": {"value": STATE_SECRET, "type": "string", "sensitive": True},
        "endpoint": {"value": "db.internal", "type": "string"},
    },
    "resources": [
        {
            "mode": "managed",
            "type": "terraform_data",
            "name": "database",
            "provider": 'provider["terraform.io/builtin/terraform"]',
            "instances": [
                {
                    "schema_version": 0,
                    "attributes": {
                        "id": "db-1",
                        "input": {"password": STATE_SECRET, "user": "app"},
                        "output": None,
                        "triggers_replace": None,
                    },
                    "sensitive_attributes": [
                        [
                            {"type": "get_attr", "value": "input"},
                            {"type": "index", "value": {"value": "password", "type": "string"}},
                        ]
                    ],
                }
            ],
        }
    ],
}

READS_THE_STATE = """package env0

deny contains sprintf("state token %s", [input.state.outputs.token.value]) if {
	input.state.outputs.token.value == "state-secret-value-7"
	input.state.resources.terraform_data.database[0].attr.input.password == "state-secret-value-7"
}
"""


def test_finding_4_state_values_terraform_marks_sensitive_are_masked_in_the_state_api_and_the_input(
    world, api, client
):
    uploaded = api(world.bob).put(
        f"/api/v1/environments/{world.environment.pk}/state/", SENSITIVE_STATE, format="json"
    )
    assert uploaded.status_code == 200, uploaded.json()
    answer = api(world.vera).get(f"/api/v1/environments/{world.environment.pk}/state/")
    assert answer.status_code == 200
    assert STATE_SECRET not in answer.content.decode()
    shown = answer.json()
    assert shown["state"]["outputs"]["token"]["value"] == MASK
    assert shown["state"]["outputs"]["endpoint"]["value"] == "db.internal"
    attributes = shown["state"]["resources"][0]["instances"][0]["attributes"]
    assert attributes["input"] == {"password": MASK, "user": "app"}
    assert shown["view"]["outputs"]["token"]["value"] == MASK
    assert shown["view"]["resources"]["terraform_data"]["database"][0]["attr"]["input"]["password"] == MASK

    world.platform.approval_policies.add(make_policy("reads the state", READS_THE_STATE))
    deployment = trigger(api(world.bob), world.environment)
    assert deployment["status"] == "denied"  # decided on the real values
    assert deployment["messages"]["deny"] == [f"state token {MASK}"]
    for body in shown_to(world, api, client, deployment):
        assert STATE_SECRET not in body
    state = api(world.vera).get(f"/api/v1/deployments/{deployment['id']}/input/").json()["state"]
    assert state["outputs"]["token"]["value"] == MASK
    assert state["modules"][""]["outputs"]["token"]["value"] == MASK
    instance = state["modules"][""]["resources"]["terraform_data"]["database"][0]
    assert instance["attr"]["input"] == {"password": MASK, "user": "app"}
    assert state["resources"]["terraform_data"]["database"][0]["attr"]["input"]["user"] == "app"


PRINTS_THE_VARIABLES = """package env0

deny contains sprintf("variables: %v", [input.variables.terraform])
"""


@pytest.fixture
def paula(world):
    """A policy author with no role on any project."""
    author = make_user("paula")
    author.user_permissions.add(Permission.objects.get(codename="change_approvalpolicy"))
    return author


def test_finding_6_a_draft_replay_reads_only_deployments_the_author_can_see(secret_template, api, paula):
    world = secret_template
    policy = make_policy("cost", 'package env0\n\nallow contains "fine" if true\n')
    world.platform.approval_policies.add(policy)
    trigger(api(world.bob), world.environment)

    started = api(paula).post(
        f"/api/v1/policies/{policy.pk}/replay/",
        {"modules": [{"filename": "policy.rego", "source": PRINTS_THE_VARIABLES}]},
        format="json",
    )
    assert started.status_code == 201, started.json()
    result = api(paula).get(started["Location"]).json()
    assert result["status"] == "done"
    assert result["replayed"] == 0 and result["result"]["changed"] == []
    assert PASSWORD not in json.dumps(result)

    # Someone who sees the project replays the same draft: the deployment is replayed, its secret is not shown.
    started = api(world.admin).post(
        f"/api/v1/policies/{policy.pk}/replay/",
        {"modules": [{"filename": "policy.rego", "source": PRINTS_THE_VARIABLES}]},
        format="json",
    )
    done = PolicyReplay.objects.get(pk=started.json()["id"])
    assert done.result["replayed"] == 1
    [changed] = done.result["changed"]
    assert changed["after"] == "deny"
    assert PASSWORD not in json.dumps(done.result) and MASK in json.dumps(done.result)
    # And Paula, who may read replays, does not read that one's deployments either.
    shown = api(paula).get(started["Location"]).json()
    assert shown["result"]["changed"] == []


def test_finding_6_try_it_on_a_recorded_input_shows_no_sensitive_value(secret_template, api, paula):
    world = secret_template
    policy = make_policy("prints", PRINTS_THE_VARIABLES)
    world.platform.approval_policies.add(policy)
    deployment = trigger(api(world.bob), world.environment)
    refused = api(paula).post(
        f"/api/v1/policies/{policy.pk}/evaluate/", {"deployment": deployment["id"]}, format="json"
    )
    assert refused.status_code == 400
    tried = api(world.admin).post(
        f"/api/v1/policies/{policy.pk}/evaluate/", {"deployment": deployment["id"]}, format="json"
    )
    assert tried.status_code == 200, tried.json()
    assert tried.json()["decision"] == "deny"
    assert PASSWORD not in json.dumps(tried.json()) and MASK in tried.json()["deny"][0]


def test_try_it_on_the_editors_unsaved_text_reads_only_seen_deployments_and_masks(
    secret_template, api, paula
):
    """The editor's try-it on text not saved: the same input rule and masking as the saved try-it."""
    world = secret_template
    policy = make_policy("cost", 'package env0\n\nallow contains "fine" if true\n')
    world.platform.approval_policies.add(policy)
    deployment = trigger(api(world.bob), world.environment)
    body = {
        "modules": [{"filename": "policy.rego", "source": PRINTS_THE_VARIABLES}],
        "deployment": deployment["id"],
    }
    url = f"/api/v1/policies/{policy.pk}/try-unsaved/"
    # Paula may edit the policy but sees no deployment: it "does not exist" for her.
    refused = api(paula).post(url, body, format="json")
    assert refused.status_code == 400 and PASSWORD not in refused.content.decode()
    # Vera sees the deployment but may not edit the policy.
    assert api(world.vera).post(url, body, format="json").status_code == 403
    # Made a viewer of Platform, Paula tries the text on it: decided on the real value, shown masked.
    ProjectMembership.objects.create(project=world.platform, user=paula, role="viewer")
    tried = api(paula).post(url, body, format="json")
    assert tried.status_code == 200, tried.json()
    assert tried.json()["decision"] == "deny"
    assert PASSWORD not in json.dumps(tried.json()) and MASK in tried.json()["deny"][0]


SPELLS_THE_PASSWORD = """package env0

deny contains concat("-", split(input.variables.terraform.db_password, ""))
"""


def test_unsaved_text_cannot_spell_a_sensitive_value_past_the_scrubbing(secret_template, api, paula):
    """Finding (review of the editor): text nobody saved or reviewed is run by an author who is only a
    viewer of the project; scrubbing finds a value only as written, so the text must never get it: it
    runs on the input as the author may see it."""
    world = secret_template
    policy = make_policy("cost", 'package env0\n\nallow contains "fine" if true\n')
    world.platform.approval_policies.add(policy)
    deployment = trigger(api(world.bob), world.environment)
    ProjectMembership.objects.create(project=world.platform, user=paula, role="viewer")
    tried = api(paula).post(
        f"/api/v1/policies/{policy.pk}/try-unsaved/",
        {
            "modules": [{"filename": "policy.rego", "source": SPELLS_THE_PASSWORD}],
            "deployment": deployment["id"],
        },
        format="json",
    )
    assert tried.status_code == 200, tried.json()
    shown = json.dumps(tried.json())
    assert "-".join(PASSWORD) not in shown and PASSWORD[::-1] not in shown
    assert tried.json()["deny"] == ["-".join(MASK)]
