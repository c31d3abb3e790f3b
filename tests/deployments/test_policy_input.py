"""Policies see the template's configuration, evaluated by the platform, and the environment's state."""

import pytest

from tests.builders import make_policy, plan_with

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("commits_run_on_commit_callbacks")]

CONFIGURATION = """
variable "replicas" {
  type    = number
  default = 1
}

locals {
  names = [for i in range(var.replicas) : "web-${i}"]
}

resource "terraform_data" "web" {
  count = var.replicas
  input = local.names[count.index]
}

output "names" {
  value = local.names
}
"""

TOO_MANY_REPLICAS = """
package env0

replicas := count([r | some r in input.configuration.resources; r.type == "terraform_data"])

deny contains sprintf("%d replicas is more than 2", [replicas]) if replicas > 2
allow contains sprintf("%d replicas", [replicas]) if replicas <= 2
"""

STATE = {
    "version": 4,
    "terraform_version": "1.11.4",
    "serial": 7,
    "lineage": "0d6c-state",
    "outputs": {"endpoint": {"value": "db.internal", "type": "string"}},
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
                        "input": "protected",
                        "output": "protected",
                        "triggers_replace": None,
                    },
                    "sensitive_attributes": [],
                }
            ],
        }
    ],
}

PROTECTS_STATE = """
package env0

import data.lib.tfstate

protected contains name if {
    some name, instances in input.state.resources.terraform_data
    some instance in instances
    instance.attr.input == "protected"
}

deny contains sprintf("destroying %s is not allowed", [name]) if {
    input.deploymentRequest.type == "destroy"
    some name in protected
}
allow contains "nothing protected" if count(protected) == 0
"""


@pytest.fixture
def template_dir(tmp_path):
    folder = tmp_path / "repo" / "web"
    folder.mkdir(parents=True)
    (folder / "main.tf").write_text(CONFIGURATION)
    return tmp_path / "repo"


def trigger(client, environment, **body):
    return client.post(f"/api/v1/environments/{environment.pk}/deployments/", body, format="json").json()


def test_policies_see_the_configuration_evaluated_with_the_deployment_variables(
    world, api, template_dir, settings, tmp_path
):
    settings.IAC_PARSE_CACHE_DIR = str(tmp_path / "parse-cache")
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path)]  # the template is a local directory
    world.template.repository = str(template_dir)
    world.template.path = "web"
    world.template.revision = ""
    world.template.save()
    world.platform.approval_policies.add(make_policy("replicas", TOO_MANY_REPLICAS))

    few = trigger(api(world.bob), world.environment, variables={"terraform": {"replicas": 2}})
    assert few["status"] == "approved", few
    assert few["messages"]["allow"] == ["2 replicas"]
    # Completed, so that the next deployment of the environment is evaluated at once.
    api(world.bob).post(f"/api/v1/deployments/{few['id']}/complete/", {"status": "succeeded"}, format="json")
    many = trigger(api(world.bob), world.environment, variables={"terraform": {"replicas": 3}})
    assert many["status"] == "denied"

    document = api(world.bob).get(f"/api/v1/deployments/{many['id']}/input/").json()
    configuration = document["configuration"]
    assert configuration["outputs"]["names"]["value"] == ["web-0", "web-1", "web-2"]
    assert [r["address"] for r in configuration["resources"]] == [
        "terraform_data.web[0]",
        "terraform_data.web[1]",
        "terraform_data.web[2]",
    ]


def test_policies_see_the_environment_state_in_the_sentinel_shape(world, api):
    client = api(world.bob)
    assert (
        client.put(f"/api/v1/environments/{world.environment.pk}/state/", STATE, format="json").status_code
        == 200
    )
    world.platform.approval_policies.add(make_policy("protect state", PROTECTS_STATE))

    destroy = trigger(client, world.environment, type="destroy", plan=None)
    assert destroy["status"] == "denied"
    assert destroy["messages"]["deny"] == ["destroying database is not allowed"]

    document = client.get(f"/api/v1/deployments/{destroy['id']}/input/").json()
    assert document["state"]["terraform_version"] == "1.11.4"
    assert document["state"]["outputs"]["endpoint"]["value"] == "db.internal"
    assert document["state"]["module_paths"] == [[]]


def test_an_uploaded_archive_is_the_template_source(world, api, settings, tmp_path):
    import io
    import tarfile

    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.IAC_PARSE_CACHE_DIR = str(tmp_path / "parse-cache")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        content = CONFIGURATION.encode()
        member = tarfile.TarInfo("web/main.tf")
        member.size = len(content)
        archive.addfile(member, io.BytesIO(content))
    buffer.seek(0)
    buffer.name = "web.tar.gz"
    world.template.path = "web"
    world.template.save()

    uploaded = api(world.admin).post(
        f"/api/v1/templates/{world.template.pk}/archive/", {"archive": buffer}, format="multipart"
    )
    assert uploaded.status_code == 200, uploaded.content
    world.platform.approval_policies.add(make_policy("replicas", TOO_MANY_REPLICAS))
    body = trigger(api(world.bob), world.environment, variables={"terraform": {"replicas": 5}})
    assert body["messages"]["deny"] == ["5 replicas is more than 2"]


def test_a_broken_archive_is_refused_and_keeps_the_template_as_it_was(world, api, settings, tmp_path):
    import io

    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    junk = io.BytesIO(b"this is not an archive")
    junk.name = "junk.tar.gz"
    response = api(world.admin).post(
        f"/api/v1/templates/{world.template.pk}/archive/", {"archive": junk}, format="multipart"
    )
    assert response.status_code == 400
    assert "archive" in response.json()
    world.template.refresh_from_db()
    assert not world.template.archive
    assert (
        api(world.bob)
        .post(f"/api/v1/templates/{world.template.pk}/archive/", {}, format="multipart")
        .status_code
        == 403
    )


def test_every_policy_can_import_the_shipped_library(world, api):
    uses_tfplan = """
package env0

import data.lib.tfplan

deny contains sprintf("%s would be destroyed", [address]) if {
    some address in tfplan.destroyed_or_replaced
    startswith(address, "aws_db_instance.")
}
allow contains "no database is destroyed" if {
    not any_database_destroyed
}
any_database_destroyed if {
    some address in tfplan.destroyed_or_replaced
    startswith(address, "aws_db_instance.")
}
"""
    world.platform.approval_policies.add(make_policy("keep databases", uses_tfplan))
    plan = plan_with(("aws_db_instance.main", ["delete", "create"]), ("aws_s3_bucket.logs", ["update"]))
    replaced = trigger(api(world.bob), world.environment, plan=plan)
    assert replaced["messages"]["deny"] == ["aws_db_instance.main would be destroyed"]
    safe = trigger(api(world.bob), world.environment, plan=plan_with(("aws_s3_bucket.logs", ["delete"])))
    assert safe["status"] == "approved"


def git_repository(path, files: dict[str, str]) -> str:
    import subprocess

    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@x",
    }
    for command in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *command], cwd=path, check=True, env={**env, "PATH": "/usr/bin:/bin"})
    return str(path)


def test_the_configuration_view_is_computed_once_per_commit_and_variables(world, api, settings, tmp_path):
    from policies_app.models import ConfigurationView

    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path)]  # the template is a local directory
    world.template.repository = git_repository(tmp_path / "repo", {"web/main.tf": CONFIGURATION})
    world.template.path = "web"
    world.template.revision = "main"
    world.template.save()

    trigger(api(world.bob), world.environment, variables={"terraform": {"replicas": 2}})
    # The deployment's view, and the environment's own (its variables alone), computed ahead by a worker
    # once the evaluation saw the template's commit (projects/template_views.py).
    assert ConfigurationView.objects.count() == 2
    # What is kept is what the next evaluation shows: nothing is computed again.
    kept = next(
        view
        for view in ConfigurationView.objects.all()
        if view.document["outputs"]["names"]["value"] == ["web-0", "web-1"]
    )
    kept.document = {**kept.document, "outputs": {"names": {"value": ["kept"]}}}
    kept.save()
    again = trigger(api(world.bob), world.environment, variables={"terraform": {"replicas": 2}})
    shown = api(world.bob).get(f"/api/v1/deployments/{again['id']}/input/").json()["configuration"]
    assert shown["outputs"]["names"]["value"] == ["kept"]
    # Other variables are another view.
    trigger(api(world.bob), world.environment, variables={"terraform": {"replicas": 3}})
    assert ConfigurationView.objects.count() == 3


REPLICAS_NEED_AN_APPROVAL = """
package env0

replicas := count([r | some r in input.configuration.resources; r.type == "terraform_data"])

deny contains sprintf("%d replicas is more than 2", [replicas]) if replicas > 2
pending contains "an approver must look" if {
    replicas <= 2
    count(input.approvers) == 0
}
allow contains sprintf("%d replicas, approved", [replicas]) if {
    replicas <= 2
    count(input.approvers) > 0
}
"""


def test_an_approval_evaluates_the_commit_the_first_evaluation_read_though_the_branch_moved(
    world, api, settings, tmp_path
):
    import subprocess

    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path)]  # the template is a local directory
    repository = tmp_path / "repo"
    world.template.repository = git_repository(repository, {"web/main.tf": CONFIGURATION})
    world.template.path = "web"
    world.template.revision = "main"
    world.template.save()
    world.platform.approval_policies.add(make_policy("replicas", REPLICAS_NEED_AN_APPROVAL))
    first_commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repository, capture_output=True, text=True, check=True
    ).stdout.strip()

    waiting = trigger(api(world.bob), world.environment, variables={"terraform": {"replicas": 2}})
    assert waiting["status"] == "pending_approval", waiting
    assert waiting_commit(api, world, waiting["id"]) == first_commit

    # The branch moves on while the deployment waits: 2 replicas become 3 and 3 resources.
    (repository / "web" / "main.tf").write_text(CONFIGURATION.replace("var.replicas", "3"))
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qam", "three"],
        cwd=repository,
        check=True,
    )

    approved = api(world.alice).post(f"/api/v1/deployments/{waiting['id']}/approve/", {}, format="json")
    assert approved.status_code == 200, approved.content
    decided = api(world.bob).get(f"/api/v1/deployments/{waiting['id']}/").json()
    # The resume read the files the first evaluation read, not what main holds now.
    assert decided["status"] == "approved", decided
    assert decided["messages"]["allow"] == ["2 replicas, approved"]
    assert decided["template_commit"] == first_commit

    # A new deployment of main reads the new commit.
    api(world.bob).post(
        f"/api/v1/deployments/{waiting['id']}/complete/", {"status": "succeeded"}, format="json"
    )
    newer = trigger(api(world.bob), world.environment, variables={"terraform": {"replicas": 2}})
    assert newer["status"] == "denied", newer
    assert waiting_commit(api, world, newer["id"]) not in ("", first_commit)


def waiting_commit(api, world, deployment_id: int) -> str:
    return api(world.bob).get(f"/api/v1/deployments/{deployment_id}/").json()["template_commit"]


def test_a_plain_directory_template_is_evaluated_afresh_each_time(
    world, api, template_dir, settings, tmp_path
):
    from policies_app.models import ConfigurationView

    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path)]  # the template is a local directory
    world.template.repository = str(template_dir)
    world.template.path = "web"
    world.template.revision = ""
    world.template.save()
    trigger(api(world.bob), world.environment)
    assert ConfigurationView.objects.count() == 0


def test_a_template_in_a_subfolder_reads_modules_elsewhere_in_its_repository(world, api, settings, tmp_path):
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path)]  # the template is a local directory
    world.template.repository = git_repository(
        tmp_path / "repo",
        {
            "envs/prod/main.tf": 'module "web" {\n  source = "../../modules/web"\n  replicas = 2\n}\n',
            "modules/web/main.tf": CONFIGURATION,
        },
    )
    world.template.path = "envs/prod"
    world.template.revision = "main"
    world.template.save()
    deployment = trigger(api(world.bob), world.environment)
    configuration = (
        api(world.bob).get(f"/api/v1/deployments/{deployment['id']}/input/").json()["configuration"]
    )
    assert [d for d in configuration["diagnostics"] if d["severity"] == "error"] == []
    assert [r["address"] for r in configuration["resources"]] == [
        "module.web.terraform_data.web[0]",
        "module.web.terraform_data.web[1]",
    ]


SCHEMA = {
    "format_version": "1.0",
    "provider_schemas": {
        "registry.terraform.io/hashicorp/aws": {
            "resource_schemas": {
                "aws_s3_bucket": {
                    "version": 0,
                    "block": {
                        "attributes": {
                            "bucket": {"type": "string", "optional": True, "computed": True},
                            "arn": {"type": "string", "computed": True},
                        }
                    },
                }
            }
        }
    },
}


def test_a_provider_schema_uploaded_with_the_template_decides_what_an_attribute_is(
    world, api, settings, tmp_path
):
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path)]  # the template is a local directory
    world.template.repository = git_repository(
        tmp_path / "repo",
        {"main.tf": 'resource "aws_s3_bucket" "b" {}\noutput "typo" { value = aws_s3_bucket.b.arnn }\n'},
    )
    world.template.path, world.template.revision = "", "main"
    world.template.save()
    url = f"/api/v1/templates/{world.template.pk}/"

    refused = api(world.admin).patch(url, {"provider_schema": {"nope": 1}}, format="json")
    assert refused.status_code == 400 and "provider_schema" in refused.json()

    def errors() -> list[str]:
        deployment = trigger(api(world.bob), world.environment)
        document = api(world.bob).get(f"/api/v1/deployments/{deployment['id']}/input/").json()
        return [d["summary"] for d in document["configuration"]["diagnostics"] if d["severity"] == "error"]

    assert errors() == []  # without a schema, an unknown attribute is only unknown
    assert (
        api(world.admin).patch(url, {"provider_schema": SCHEMA}, format="json").json()["has_provider_schema"]
    )
    assert errors() == ["Unsupported attribute"]
