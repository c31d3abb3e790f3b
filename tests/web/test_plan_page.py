"""The plan on the deployment page and in the API: action-coloured counts, what forces a replacement, and
the plan's `terraform show` text one click away, kept compressed and shown escaped, without its terminal
colours, and masked by guards/masking.py's rules (a viewer, the lowest role, never sees a sensitive
value); its size is limited and the retention purge removes it with the plan."""

import json
import subprocess
import sys
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from policies_app.deployments.stored_inputs import plan_text_of, purge_inputs, store_plan
from policies_app.models import Deployment, StoredDocument
from tests.builders import api_key_for, make_policy
from tests.gate.test_gate import ALLOW, GATE_SOURCE

SECRET = "s3cr3t-db-password"
PLAN = {
    "format_version": "1.2",
    "variables": {"db_password": {"value": SECRET}},
    "resource_changes": [
        {
            "address": "aws_db_instance.main",
            "mode": "managed",
            "type": "aws_db_instance",
            "name": "main",
            "change": {
                "actions": ["delete", "create"],
                "before": {"engine": "postgres", "password": SECRET, "name": "main", "port": 5432},
                "after": {"engine": "mysql", "password": SECRET, "name": "main", "port": 5432},
                "after_unknown": {"id": True},
                "replace_paths": [["engine"]],
            },
        },
        {
            "address": "aws_s3_bucket.logs",
            "mode": "managed",
            "type": "aws_s3_bucket",
            "name": "logs",
            "change": {"actions": ["create"], "before": None, "after": {"bucket": "logs"}},
        },
    ],
}
TEXT = (
    "\x1b[1m  # aws_db_instance.main\x1b[0m must be replaced\n"
    '-/+ resource "aws_db_instance" "main" {\n'
    '      ~ engine   = "postgres" -> "mysql" # forces replacement\n'
    f'        password = "{SECRET}"\n'
    '        name     = "<script>alert(1)</script>"\n'
    "    }\n"
)


@pytest.fixture
def sent(world, api):
    environment = world.environment
    environment.terraform_variables = {"db_password": SECRET}
    environment.sensitive_variables = {"terraform": ["db_password"]}
    environment.save()
    response = api(world.bob).post(
        f"/api/v1/environments/{environment.pk}/deployments/",
        {"plan": PLAN, "plan_text": TEXT},
        format="json",
    )
    assert response.status_code == 201, response.json()
    return Deployment.objects.get(pk=response.json()["id"])


def test_the_page_shows_the_plan_as_terraform_does_and_its_text_escaped_and_masked(client, world, sent):
    assert sent.plan_counts == {"delete": 0, "replace": 1, "create": 1, "update": 0, "read": 0, "no-op": 0}
    client.force_login(world.vera)
    page = client.get(reverse("web:deployment-detail", args=[sent.pk])).content.decode()
    assert SECRET not in page
    assert '<li class="action-replace"><strong>1</strong> to replace</li>' in page
    assert '<li class="action-create"><strong>1</strong> to create</li>' in page
    assert '<li class="action-read none"><strong>0</strong> to read</li>' in page
    assert "Plan: 2 to add, 0 to change, 1 to destroy." in page
    assert "forced by <code>engine</code>" in page and "# forces replacement</span>" in page
    assert "(sensitive value)" in page
    assert "unchanged attribute" in page  # name and port, folded
    assert '<details class="plan-text" id="plan-text">' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    assert "\x1b" not in page


def test_the_api_answers_the_same_view(api, world, sent):
    shown = api(world.vera).get(f"/api/v1/deployments/{sent.pk}/plan-summary/").json()
    assert SECRET not in json.dumps(shown)
    assert shown["terraform_line"] == "Plan: 2 to add, 0 to change, 1 to destroy."
    (db,) = [r for r in shown["resources"] if r["address"] == "aws_db_instance.main"]
    assert db["replace_paths"] == ["engine"]
    assert {a["path"]: a["after"] for a in db["attributes"]}["password"] == "(sensitive value)"
    assert [a["path"] for a in db["attributes"] if a["forces_replacement"]] == ["engine"]
    assert "must be replaced" in shown["plan_text"] and "********" in shown["plan_text"]


def test_the_text_is_kept_compressed_once_and_purged_with_the_plan(world, sent):
    assert plan_text_of(sent).startswith("  # aws_db_instance.main must be replaced")
    document = StoredDocument.objects.get(key=sent.plan_text_document_id)
    assert len(document.body) < document.size or document.size < 200
    Deployment.objects.filter(pk=sent.pk).update(status="cancelled")
    purge_inputs(0, now=timezone.now() + timedelta(days=1))
    sent.refresh_from_db()
    assert (sent.plan_document_id, sent.plan_text_document_id) == (None, None)
    assert not StoredDocument.objects.filter(key=document.key).exists()


def test_a_plan_text_over_the_limit_is_refused(api, world, settings):
    settings.PLAN_TEXT_MAX_CHARACTERS = 100
    response = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", {"plan_text": "x" * 101}, format="json"
    )
    assert response.status_code == 400
    assert "at most 100" in json.dumps(response.json())


@pytest.mark.django_db(transaction=True)
def test_the_gate_sends_the_plan_text_file(world, live_server, tmp_path):
    world.platform.approval_policies.add(make_policy("allow", ALLOW))
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    (tmp_path / "plan.txt").write_text(TEXT)
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            str(GATE_SOURCE),
            "deploy",
            "--url",
            live_server.url,
            "--token",
            api_key_for(world.bob),
            "--environment",
            str(world.environment.pk),
            "--plan",
            str(tmp_path / "plan.json"),
            "--plan-text",
            str(tmp_path / "plan.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode in (0, 3), result.stdout + result.stderr
    assert "must be replaced" in plan_text_of(Deployment.objects.get())


@pytest.mark.parametrize(
    ("template_type", "plan", "expected"),
    [
        (
            "cloudformation",
            {
                "Changes": [
                    {
                        "Type": "Resource",
                        "ResourceChange": {
                            "Action": "Modify",
                            "Replacement": "True",
                            "LogicalResourceId": "Db",
                            "ResourceType": "AWS::RDS::DBInstance",
                            "Details": [
                                {
                                    "Target": {
                                        "Attribute": "Properties",
                                        "Name": "Engine",
                                        "RequiresRecreation": "Always",
                                    }
                                }
                            ],
                        },
                    }
                ]
            },
            [
                "forced by <code>Properties.Engine</code>",
                '<li class="action-replace"><strong>1</strong> to replace</li>',
            ],
        ),
        (
            "pulumi",
            {
                "steps": [
                    {
                        "op": "update",
                        "urn": "urn:pulumi:dev::shop::aws:s3/bucket:Bucket::logs",
                        "oldState": {"inputs": {"acl": "private"}},
                        "newState": {"inputs": {"acl": "public-read"}},
                    },
                    {"op": "same", "urn": "urn:pulumi:dev::shop::aws:s3/bucket:Bucket::kept"},
                ]
            },
            ['<li class="action-update"><strong>1</strong> to update</li>', "1 resource without changes"],
        ),
    ],
)
def test_the_other_formats_read_the_same_way_on_the_page(client, world, template_type, plan, expected):
    world.template.type = template_type
    world.template.save()
    deployment = Deployment.objects.create(
        environment=world.environment,
        deployer=world.bob,
        status="pending_approval",
        plan_document_id=store_plan(plan),
    )
    client.force_login(world.vera)
    page = client.get(reverse("web:deployment-detail", args=[deployment.pk])).content.decode()
    for text in expected:
        assert text in page


def test_the_django_admin_shows_the_text_masked_and_escaped(client, world, sent):
    client.force_login(world.admin)
    page = client.get(f"/admin/policies_app/deployment/{sent.pk}/change/").content.decode()
    assert "must be replaced" in page and SECRET not in page
    assert "&lt;script&gt;alert(1)" in page
    assert 'name="plan_text_document"' not in page, "no picker over every stored document"
