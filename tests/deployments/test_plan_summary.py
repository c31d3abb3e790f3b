"""The plan as approvers read it: counts, resources grouped by type with destroys and replacements first,
attribute diffs with unknown values "known after apply" and sensitive values masked; for every plan
format a deployment may carry. One test takes a real plan from terraform itself."""

import json
import os
import shutil
import subprocess

import pytest

from policies_app.deployments.plan_summary import KNOWN_AFTER_APPLY, SENSITIVE, summarise_plan


def change(address, actions, before=None, after=None, **masks):
    kind, name = address.rsplit(".", 2)[-2:]
    return {
        "address": address,
        "mode": "managed",
        "type": kind,
        "name": name,
        "change": {"actions": actions, "before": before, "after": after, **masks},
    }


def plan(*changes):
    return {"format_version": "1.2", "resource_changes": list(changes)}


def test_counts_each_action_and_puts_destroys_and_replacements_first():
    summary = summarise_plan(
        plan(
            change("aws_s3_bucket.a", ["create"], None, {"bucket": "a"}),
            change("aws_instance.web", ["update"], {"size": "s"}, {"size": "m"}),
            change("aws_db_instance.main", ["delete", "create"], {"id": "1"}, {"id": "2"}),
            change("aws_s3_bucket.old", ["delete"], {"bucket": "old"}, None),
            change("aws_s3_bucket.same", ["no-op"], {"bucket": "x"}, {"bucket": "x"}),
            {**change("aws_ami.lookup", ["read"]), "mode": "data"},
        )
    )
    assert summary.counts == {"delete": 1, "replace": 1, "create": 1, "update": 1, "read": 1, "no-op": 1}
    assert summary.headline == "1 to delete, 1 to replace, 1 to create, 1 to update, 1 to read"
    assert summary.terraform_line == "Plan: 2 to add, 1 to change, 2 to destroy."
    assert [r.address for r in summary.resources][:2] == ["aws_s3_bucket.old", "aws_db_instance.main"]
    groups = [(g.type, [r.action for r in g.resources]) for g in summary.groups]
    # Types with a destroy or replacement come first, what is only read last; what changes nothing is
    # apart (folded on the page).
    assert groups == [
        ("aws_db_instance", ["replace"]),
        ("aws_s3_bucket", ["delete", "create"]),
        ("aws_instance", ["update"]),
        ("aws_ami", ["read"]),
    ]
    assert [r.address for r in summary.unchanged] == ["aws_s3_bucket.same"]
    assert [(r.symbol, r.verb) for r in summary.resources][:2] == [
        ("-", "will be destroyed"),
        ("-/+", "must be replaced"),
    ]


def test_unknown_values_are_known_after_apply_and_sensitive_ones_are_masked():
    summary = summarise_plan(
        plan(
            change(
                "aws_db_instance.main",
                ["update"],
                {"password": "old-secret", "endpoint": "a.example", "tags": {"team": "x"}, "ports": [1]},
                {"password": "new-secret", "endpoint": None, "tags": {"team": "y"}, "ports": [1, 2]},
                after_unknown={"endpoint": True},
                before_sensitive={"password": True},
                after_sensitive={"password": True},
            )
        )
    )
    attributes = {a.path: (a.before, a.after) for a in summary.resources[0].attributes}
    assert attributes["endpoint"] == ('"a.example"', KNOWN_AFTER_APPLY)
    assert attributes["password"] == (SENSITIVE, SENSITIVE), "printed exactly as Terraform prints it"
    assert attributes["tags.team"] == ('"x"', '"y"')
    assert attributes["ports[1]"] == ("", "2")
    assert "old-secret" not in repr(summary) and "new-secret" not in repr(summary)
    changed = {a.path for a in summary.resources[0].changed_attributes}
    assert changed == {"endpoint", "password", "tags.team", "ports[1]"}


def test_a_missing_or_empty_plan_is_said_plainly():
    assert summarise_plan(None).headline == "no plan was sent with this deployment"
    assert summarise_plan({"format_version": "1.2", "planned_values": {}}).headline == "no changes"


def test_a_terragrunt_run_all_plan_prefixes_addresses_with_their_module():
    summary = summarise_plan(
        {
            "is_run_all": True,
            "modules": {
                "live/vpc": plan(change("aws_vpc.main", ["create"], None, {"cidr": "10.0.0.0/16"})),
                "live/db": plan(change("aws_db_instance.db", ["delete"], {"id": "x"}, None)),
            },
        }
    )
    assert [r.address for r in summary.resources] == ["live/db: aws_db_instance.db", "live/vpc: aws_vpc.main"]


def test_a_pulumi_preview_counts_a_replacement_once():
    urn = "urn:pulumi:dev::shop::aws:s3/bucket:Bucket::logs"
    summary = summarise_plan(
        {
            "steps": [
                {"op": "create-replacement", "urn": urn, "newState": {"inputs": {"acl": "private"}}},
                {"op": "replace", "urn": urn},
                {"op": "delete-replaced", "urn": urn},
                {"op": "same", "urn": "urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev"},
            ],
            "changeSummary": {"replace": 1},
        }
    )
    assert summary.format == "pulumi"
    assert [(r.address, r.type, r.action) for r in summary.resources] == [
        ("logs", "aws:s3/bucket:Bucket", "replace")
    ]


def test_a_cloudformation_change_set_and_a_stack_destroy():
    change_set = summarise_plan(
        {
            "ChangeSetName": "c",
            "Changes": [
                {
                    "Type": "Resource",
                    "ResourceChange": {
                        "Action": "Add",
                        "LogicalResourceId": "Queue",
                        "ResourceType": "AWS::SQS::Queue",
                    },
                },
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
                },
                {
                    "Type": "Resource",
                    "ResourceChange": {
                        "Action": "Modify",
                        "Replacement": "Conditional",
                        "LogicalResourceId": "Fn",
                        "ResourceType": "AWS::Lambda::Function",
                    },
                },
            ],
        }
    )
    assert change_set.counts == {"delete": 0, "replace": 1, "create": 1, "update": 1, "read": 0, "no-op": 0}
    db = next(r for r in change_set.resources if r.address == "Db")
    assert db.replace_paths == ("Properties.Engine",)
    assert [a.forces_replacement for a in db.attributes] == [True]
    assert "may be replaced" in next(r.note for r in change_set.resources if r.address == "Fn")
    destroy = summarise_plan(
        {
            "StackResourceSummaries": [
                {
                    "LogicalResourceId": "Db",
                    "ResourceType": "AWS::RDS::DBInstance",
                    "ResourceStatus": "CREATE_COMPLETE",
                }
            ]
        }
    )
    assert destroy.counts["delete"] == 1


@pytest.mark.terraform
def test_a_real_terraform_plan_is_summarised_as_terraform_describes_it(tmp_path):
    if shutil.which("terraform") is None:
        pytest.skip("needs terraform on PATH")
    environment = {**os.environ, "TF_CLI_CONFIG_FILE": "/dev/null", "TF_IN_AUTOMATION": "1"}

    def terraform(*args):
        result = subprocess.run(
            ["terraform", *args], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    (tmp_path / "main.tf").write_text(
        'variable "token" {\n  type = string\n  sensitive = true\n}\n'
        'resource "terraform_data" "kept" { input = "v1" }\n'
        'resource "terraform_data" "replaced" { triggers_replace = ["a"] }\n'
        'resource "terraform_data" "removed" { input = "bye" }\n'
    )
    terraform("init", "-input=false")
    terraform("apply", "-auto-approve", "-input=false", "-var", "token=first")
    (tmp_path / "main.tf").write_text(
        'variable "token" {\n  type = string\n  sensitive = true\n}\n'
        'resource "terraform_data" "kept" { input = "v2" }\n'
        'resource "terraform_data" "replaced" { triggers_replace = ["b"] }\n'
        'resource "terraform_data" "secret" { input = var.token }\n'
    )
    terraform("plan", "-input=false", "-out=tfplan", "-var", "token=hunter2")
    shown = json.loads(terraform("show", "-json", "tfplan"))
    summary = summarise_plan(shown)
    assert summary.counts == {"delete": 1, "replace": 1, "create": 1, "update": 1, "read": 0, "no-op": 0}
    by_address = {r.address: r for r in summary.resources}
    assert by_address["terraform_data.removed"].action == "delete"
    assert by_address["terraform_data.replaced"].action == "replace"
    secret = {a.path: a for a in by_address["terraform_data.secret"].attributes}
    assert secret["input"].after == SENSITIVE
    assert secret["output"].after == KNOWN_AFTER_APPLY, "output is computed: unknown until apply"
    assert "hunter2" not in repr(summary)
    kept = {a.path: a for a in by_address["terraform_data.kept"].changed_attributes}
    assert (kept["input"].before, kept["input"].after) == ('"v1"', '"v2"')
