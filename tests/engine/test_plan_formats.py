"""Which plan each template type may carry (policies_app.iac.plan_formats)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from policies_app.iac.plan_formats import PlanFormatError, check_plan, terragrunt_run_all_from_ndjson

SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "plans-and-states"
needs_fixtures = pytest.mark.skipif(
    not SHARED.is_dir(),
    reason="third-party fixtures not present (../shared/fixtures is absent in this clone)",
)


def terraform_plan(*actions_per_change: list[str]) -> dict:
    return {
        "format_version": "1.2",
        "terraform_version": "1.11.4",
        "planned_values": {"root_module": {}},
        "resource_changes": [
            {
                "address": f"terraform_data.r{n}",
                "mode": "managed",
                "type": "terraform_data",
                "name": f"r{n}",
                "change": {"actions": actions, "before": None, "after": {}},
            }
            for n, actions in enumerate(actions_per_change)
        ],
    }


PULUMI_PREVIEW = {
    "steps": [
        {
            "op": "create",
            "urn": "urn:pulumi:dev::shop::aws:s3/bucket:Bucket::media",
            "newState": {"type": "aws:s3/bucket:Bucket", "inputs": {}},
        },
        {"op": "same", "urn": "urn:pulumi:dev::shop::pulumi:pulumi:Stack::shop-dev"},
    ],
    "duration": 1200000000,
    "changeSummary": {"create": 1, "same": 1},
}
PULUMI_DESTROY_PREVIEW = {
    "steps": [
        {
            "op": "delete",
            "urn": "urn:pulumi:dev::shop::aws:s3/bucket:Bucket::media",
            "oldState": {"type": "aws:s3/bucket:Bucket"},
        }
    ],
    "changeSummary": {"delete": 1},
}
PULUMI_UPDATE_PLAN = {
    "manifest": {"time": "2026-12-01T10:00:00Z", "magic": "abc", "version": "v3.140.0"},
    "config": {"aws:region": "eu-west-1"},
    "resourcePlans": {
        "urn:pulumi:dev::shop::aws:s3/bucket:Bucket::media": {
            "goal": {"type": "aws:s3/bucket:Bucket"},
            "steps": ["create"],
            "state": {},
        },
    },
}
CHANGE_SET = {
    "ChangeSetName": "deploy-42",
    "ChangeSetId": "arn:aws:cloudformation:eu-west-1:123456789012:changeSet/deploy-42/abc",
    "StackName": "shop",
    "Status": "CREATE_COMPLETE",
    "Changes": [
        {
            "Type": "Resource",
            "ResourceChange": {
                "Action": "Remove",
                "LogicalResourceId": "MediaBucket",
                "ResourceType": "AWS::S3::Bucket",
                "Replacement": "False",
            },
        },
        {
            "Type": "Resource",
            "ResourceChange": {
                "Action": "Add",
                "LogicalResourceId": "Queue",
                "ResourceType": "AWS::SQS::Queue",
            },
        },
    ],
}
STACK_RESOURCES = {
    "StackResourceSummaries": [
        {
            "LogicalResourceId": "MediaBucket",
            "PhysicalResourceId": "shop-media",
            "ResourceType": "AWS::S3::Bucket",
            "LastUpdatedTimestamp": "2026-11-30T10:00:00Z",
            "ResourceStatus": "CREATE_COMPLETE",
        },
    ]
}


# ----------------------------------------------------------------------------------- what is fine


@pytest.mark.parametrize(
    "template_type", ["terraform", "opentofu", "terragrunt", "pulumi", "cloudformation", "k8s", "helm"]
)
@pytest.mark.parametrize("deployment_type", ["deploy", "destroy"])
def test_it_accepts_no_plan_for_every_template_type(template_type, deployment_type):
    check_plan(template_type, deployment_type, None)


@pytest.mark.parametrize(
    ("template_type", "deployment_type", "plan"),
    [
        ("terraform", "deploy", terraform_plan(["create"], ["delete", "create"], ["no-op"])),
        ("opentofu", "destroy", terraform_plan(["delete"])),
        ("terragrunt", "deploy", terraform_plan(["update"])),
        (
            "terragrunt",
            "destroy",
            {"is_run_all": True, "modules": {"vpc": terraform_plan(["delete"]), "eks": terraform_plan()}},
        ),
        ("pulumi", "deploy", PULUMI_PREVIEW),
        ("pulumi", "deploy", PULUMI_UPDATE_PLAN),
        ("pulumi", "destroy", PULUMI_DESTROY_PREVIEW),
        ("cloudformation", "deploy", CHANGE_SET),
        ("cloudformation", "destroy", STACK_RESOURCES),
        ("terraform", "deployResume", terraform_plan(["create"])),
    ],
)
def test_it_accepts_the_plan_each_template_type_sends(template_type, deployment_type, plan):
    check_plan(template_type, deployment_type, plan)


def test_it_accepts_a_terraform_plan_without_changes_which_omits_resource_changes():
    plan = terraform_plan()
    del plan["resource_changes"]
    check_plan("terraform", "deploy", plan)


# ------------------------------------------------------------------------------- what is refused


@pytest.mark.parametrize(
    ("template_type", "deployment_type", "plan", "message"),
    [
        ("k8s", "deploy", {}, "k8s deployment has no plan: plan must be null"),
        ("helm", "destroy", terraform_plan(), "plan must be null"),
        ("terraform", "deploy", [], "must be a JSON object"),
        ("terraform", "deploy", {"resource_changes": []}, "needs format_version to be a string"),
        (
            "terraform",
            "deploy",
            {**terraform_plan(), "format_version": "2.0"},
            "format_version '2.0' is not supported",
        ),
        (
            "terraform",
            "deploy",
            {**terraform_plan(), "resource_changes": {}},
            "needs resource_changes to be a list",
        ),
        ("terraform", "deploy", {"format_version": "1.2"}, "needs resource_changes to be a list"),
        (
            "opentofu",
            "deploy",
            terraform_plan(["explode"]),
            r"resource_changes\[0\]\.change\.actions\[0\]: unknown action",
        ),
        (
            "terraform",
            "deploy",
            terraform_plan([]),
            r"resource_changes\[0\]\.change\.actions must be a non-empty list",
        ),
        ("terragrunt", "deploy", {"is_run_all": True, "modules": []}, "needs modules to be an object"),
        ("terragrunt", "deploy", {"is_run_all": False, "modules": {}}, "needs is_run_all to be true"),
        (
            "terragrunt",
            "deploy",
            {"is_run_all": True, "modules": {"vpc": {"format_version": 1}}},
            r"modules\['vpc'\] needs format_version to be a string",
        ),
        ("pulumi", "deploy", {"hello": 1}, "none of those keys is present"),
        ("pulumi", "destroy", PULUMI_UPDATE_PLAN, "destroy --preview-only"),
        (
            "pulumi",
            "deploy",
            {"steps": [{"op": "create", "urn": "bucket"}]},
            r"steps\[0\]\.urn must be a Pulumi URN",
        ),
        ("pulumi", "deploy", {"steps": {}}, "steps to be a list"),
        (
            "pulumi",
            "deploy",
            {"changeSummary": {"create": "1"}},
            r"changeSummary\['create'\] must be a whole number",
        ),
        ("pulumi", "deploy", {"manifest": {}, "resourcePlans": {"x": {}}}, "must be a Pulumi URN"),
        ("cloudformation", "deploy", STACK_RESOURCES, "this is a ListStackResources response"),
        ("cloudformation", "destroy", CHANGE_SET, "this is a DescribeChangeSet response"),
        ("cloudformation", "deploy", {"StackName": "s"}, "needs Changes to be a list"),
        (
            "cloudformation",
            "deploy",
            {"Changes": []},
            "needs ChangeSetName, ChangeSetId, StackName or StackId",
        ),
        (
            "cloudformation",
            "destroy",
            {"StackResourceSummaries": [{"LogicalResourceId": "A"}]},
            r"StackResourceSummaries\[0\]\.ResourceType must be a string",
        ),
        ("serverless", "deploy", None, "unknown template type 'serverless'"),
        ("terraform", "task", None, "unknown deployment type 'task'"),
    ],
)
def test_it_rejects_a_plan_that_does_not_fit_naming_why(template_type, deployment_type, plan, message):
    with pytest.raises(PlanFormatError, match=message):
        check_plan(template_type, deployment_type, plan)


def test_it_rejects_a_change_set_whose_resource_change_lacks_its_logical_id():
    change_set = copy.deepcopy(CHANGE_SET)
    del change_set["Changes"][1]["ResourceChange"]["LogicalResourceId"]
    with pytest.raises(
        PlanFormatError, match=r"Changes\[1\]\.ResourceChange\.LogicalResourceId must be a string"
    ):
        check_plan("cloudformation", "deploy", change_set)


# --------------------------------------------------------------------------- third-party fixtures


def _load_any_encoding(path: Path):
    raw = path.read_bytes()
    # Checkov keeps two UTF-16 plans (with a byte-order mark); the API gets parsed JSON, so decode here.
    text = raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode("utf-8")
    return json.loads(text)


def _fixture_plans() -> list[Path]:
    if not SHARED.is_dir():
        return []
    found = [
        *SHARED.glob("trivy-tfjson/testdata/*.json"),
        *SHARED.glob("checkov/**/*.json"),
        *SHARED.glob("opentofu/show-json/*/output.json"),
    ]
    return sorted(path for path in found if path.name != "corrupted-tfplan.json")


@needs_fixtures
@pytest.mark.parametrize("path", _fixture_plans(), ids=lambda p: str(p.relative_to(SHARED)))
def test_real_terraform_and_opentofu_plans_are_accepted(path):
    plan = _load_any_encoding(path)
    check_plan("terraform", "deploy", plan)
    check_plan("opentofu", "destroy", plan)
    check_plan("terragrunt", "deploy", plan)


@needs_fixtures
def test_the_corrupted_checkov_plan_is_rejected_as_state_output():
    plan = _load_any_encoding(SHARED / "checkov" / "plan" / "corrupted-tfplan.json")
    with pytest.raises(PlanFormatError, match="show -json` state output"):
        check_plan("terraform", "deploy", plan)


@needs_fixtures
def test_fixture_plans_cover_every_format_version_from_0_1_to_1_2():
    versions = {_load_any_encoding(path)["format_version"] for path in _fixture_plans()}
    assert {"0.1", "0.2", "1.0", "1.1", "1.2"} <= versions


# -------------------------------------------------------------------------------- terragrunt ndjson


@needs_fixtures
def test_terragrunt_ndjson_becomes_a_run_all_plan_keyed_by_position_when_paths_are_unknown():
    text = (SHARED / "terragrunt-run-all" / "6-terragrunt-multiplan" / "plan.json").read_text()
    plan = terragrunt_run_all_from_ndjson(text)

    assert plan["is_run_all"] is True
    assert list(plan["modules"]) == ["0", "1", "2"]
    assert [m["resource_changes"][0]["address"] for m in plan["modules"].values()] == [
        "local_file.cache",
        "local_file.database",
        "local_file.server",
    ]
    check_plan("terragrunt", "deploy", plan)


@needs_fixtures
def test_terragrunt_output_uses_the_module_paths_the_caller_knows():
    text = (SHARED / "terragrunt-run-all" / "6-terragrunt-multiplan" / "plan.json").read_text()
    plan = terragrunt_run_all_from_ndjson(text, ["multiple/cache", "multiple/database", "multiple/server"])
    assert plan["modules"]["multiple/server"]["resource_changes"][0]["address"] == "local_file.server"
    with pytest.raises(PlanFormatError, match="2 module paths given for 3 plans"):
        terragrunt_run_all_from_ndjson(text, ["a", "b"])


@needs_fixtures
@pytest.mark.parametrize("case", ["0-create", "1-modify", "2-delete", "3-remove", "4-empty", "5-terragrunt"])
def test_single_module_terragrunt_output_pretty_printed_or_not_is_read(case):
    plan = terragrunt_run_all_from_ndjson((SHARED / "terragrunt-run-all" / case / "plan.json").read_text())
    assert list(plan["modules"]) == ["0"]
    check_plan("terragrunt", "deploy", plan)


def test_terragrunt_log_prefixes_give_the_module_paths():
    vpc = json.dumps(terraform_plan(["create"]))
    eks = json.dumps(terraform_plan(["delete"]))
    text = f"[live/vpc] {vpc}\n12:00:01.250 STDOUT [live/eks] tofu: {eks}\n"
    plan = terragrunt_run_all_from_ndjson(text)
    assert set(plan["modules"]) == {"live/vpc", "live/eks"}
    assert plan["modules"]["live/eks"]["resource_changes"][0]["change"]["actions"] == ["delete"]


def test_terragrunt_output_that_is_not_json_is_rejected_with_its_line():
    text = json.dumps(terraform_plan()) + "\nError: something went wrong\n"
    with pytest.raises(PlanFormatError, match="line 2: expected a JSON plan"):
        terragrunt_run_all_from_ndjson(text)
    with pytest.raises(PlanFormatError, match=r"modules\['0'\] needs format_version"):
        terragrunt_run_all_from_ndjson('{"values": {}}\n')
