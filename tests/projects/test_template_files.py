"""A template's files and the file sandbox (issue 16: finding 1, and finding 10's template half), through the
real server where the findings were found: who manages templates reads nothing of the server's disk."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import secrets
import subprocess
import sys
import tarfile
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.db import connection

from policies_app.choices import OrganisationRole
from policies_app.iac.file_sandbox import LOCAL_SOURCE_REFUSED
from policies_app.models import Environment, OrganisationMembership, Template
from tests.builders import ONE_APPROVER, api_key_for, make_policy, make_user
from tests.processes import ROOT, gunicorn, wait_until


def archive_of(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            content = text.encode()
            member = tarfile.TarInfo(name)
            member.size = len(content)
            archive.addfile(member, io.BytesIO(content))
    return buffer.getvalue()


class Caller:
    """One user's token against the real server."""

    def __init__(self, base: str, user) -> None:
        self.base, self.token = base, api_key_for(user)

    def request(
        self, method: str, path: str, body: Any = None, archive: bytes | None = None
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Token {self.token}"}
        data = None
        if archive is not None:
            boundary = uuid.uuid4().hex
            headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
            data = (
                (
                    f'--{boundary}\r\nContent-Disposition: form-data; name="archive"; filename="t.tar.gz"\r\n'
                    "Content-Type: application/gzip\r\n\r\n"
                ).encode()
                + archive
                + f"\r\n--{boundary}--\r\n".encode()
            )
        elif body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")


def deployed_configuration(deployer: Caller, environment: Environment) -> dict:
    """Deploy the environment and read what the policies were given, as the finding did."""
    status, deployment = deployer.request("POST", f"/api/v1/environments/{environment.pk}/deployments/", {})
    assert status == 201, deployment
    found: dict = {}

    def evaluated() -> bool:
        status, document = deployer.request("GET", f"/api/v1/deployments/{deployment['id']}/input/")
        found.update(document if status == 200 else {})
        return status == 200

    wait_until(evaluated, 120, interval=0.5, what="the deployment's evaluation")
    return found["configuration"]


@pytest.mark.django_db(transaction=True)
def test_finding_1_a_template_manager_reads_no_file_of_the_server(world, tmp_path):
    """As written: an archive whose main.tf reads the server's secret key lands at a predictable path under
    the template cache; a template with repository "/" and a path into it; deploy; the deployment's input
    showed the file in configuration.outputs (and filebase64 of the SQLite file, the whole database).
    Tried as each of the lowest roles that manage templates: a non-superuser organisation admin, and a user
    holding only the Django permission to change templates."""
    var = tmp_path / "var"
    var.mkdir()
    secret = f"secret-{secrets.token_hex(16)}"
    (var / "secret-key").write_text(secret)
    database = connection.settings_dict["NAME"]
    readable = str(database) if connection.vendor == "sqlite" else str(var / "secret-key")
    olga = make_user("olga")
    OrganisationMembership.objects.create(user=olga, role=OrganisationRole.ADMIN)
    tina = make_user("tina")
    tina.user_permissions.add(Permission.objects.get(codename="change_template"))
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    main_tf = (
        f'output "k" {{ value = file("{var}/secret-key") }}\n'
        f'output "db" {{ value = filebase64("{readable}") }}\n'
        # From web/ in the archive's folder: archives/<sha256>/web, under var/cache/templates.
        'output "up" { value = file("../../../../../secret-key") }\n'
        'output "listed" { value = fileset("../../../../..", "*") }\n'
    )
    with gunicorn(tmp_path, PLATFORM_VAR_DIR=str(var)) as base:
        deployer = Caller(base, world.bob)
        for manager in (olga, tina):
            caller, name = Caller(base, manager), manager.username
            status, template = caller.request(
                "POST", "/api/v1/templates/", {"name": f"archive-{name}", "type": "terraform", "path": "web"}
            )
            assert status == 201, template
            archive = archive_of({"web/main.tf": main_tf})
            status, uploaded = caller.request(
                "POST", f"/api/v1/templates/{template['id']}/archive/", archive=archive
            )
            assert status == 200, uploaded
            # The finding's premise still holds: the files sit at a path one can compute...
            unpacked = var / "cache" / "templates" / "archives" / hashlib.sha256(archive).hexdigest() / "web"
            assert (unpacked / "main.tf").is_file()
            # ...but no template may name it: "/" is not a source, and the refusal names the field.
            status, refused = caller.request(
                "POST",
                "/api/v1/templates/",
                {"name": f"root-{name}", "type": "terraform", "repository": "/", "path": str(unpacked)[1:]},
            )
            assert (status, refused) == (400, {"repository": [LOCAL_SOURCE_REFUSED]})
            assert not Template.objects.filter(name=f"root-{name}").exists()

            environment = Environment.objects.create(
                name=f"leak-{name}",
                project=world.payments_eu,
                template=Template.objects.get(pk=template["id"]),
            )
            configuration = deployed_configuration(deployer, environment)
            shown = json.dumps(configuration)
            assert secret not in shown and base64.b64encode(secret.encode()).decode() not in shown
            assert base64.b64encode(b"SQLite format 3").decode()[:16] not in shown
            assert {name: output["value"] for name, output in configuration["outputs"].items()} == {
                "k": None,
                "db": None,
                "up": None,
                "listed": None,
            }
            problems = [d for d in configuration["diagnostics"] if d["severity"] == "error"]
            assert len(problems) == 4
            assert all("outside the template" in problem["detail"] for problem in problems)
            assert {problem["file"] for problem in problems} == {"web/main.tf"}
            assert str(tmp_path) not in shown and str(var) not in shown
            if connection.vendor == "sqlite":
                assert str(Path(database).parent) not in shown

        # A row that already says "/" (saved before this check, or through the Django admin) reads nothing
        # either: the evaluation refuses it, and says so without a path of the server.
        unpacked_path = next((var / "cache" / "templates" / "archives").glob("[0-9a-f]*/web"))
        old = Template.objects.create(
            name="old", type="terraform", repository="/", path=str(unpacked_path)[1:]
        )
        environment = Environment.objects.create(name="old", project=world.payments_eu, template=old)
        configuration = deployed_configuration(deployer, environment)
        assert secret not in json.dumps(configuration)
        [problem] = configuration["diagnostics"]
        assert problem["summary"] == "Template files could not be read"
        assert problem["detail"] == f"repository '/': {LOCAL_SOURCE_REFUSED}"


@pytest.mark.django_db(transaction=True)
def test_finding_10_a_local_path_as_template_repository_is_refused_alike_whether_it_exists_or_not(
    world, tmp_path
):
    """The template half of finding 10: a template's repository could be any directory or file:// URL of
    the server, and the error told whether the path existed. One answer now, naming the field."""
    var = tmp_path / "var"
    (var / "secrets").mkdir(parents=True)
    olga = make_user("olga")
    OrganisationMembership.objects.create(user=olga, role=OrganisationRole.ADMIN)
    # The remote template below is on loopback, which the egress guard allows only when told to.
    with gunicorn(tmp_path, PLATFORM_VAR_DIR=str(var), EGRESS_ALLOWED_NETWORKS="127.0.0.1/32") as base:
        caller = Caller(base, olga)
        answers = {}
        for number, repository in enumerate(
            [
                "/",
                "/etc",
                "/no/such/directory",
                str(var / "secrets"),
                "file:///etc",
                "file:///no/such",
                "../x",
            ]
        ):
            answers[repository] = caller.request(
                "POST",
                "/api/v1/templates/",
                {"name": f"t{number}", "type": "terraform", "repository": repository},
            )
        assert set(map(json.dumps, answers.values())) == {
            json.dumps([400, {"repository": [LOCAL_SOURCE_REFUSED]}])
        }
        status, created = caller.request(
            "POST",
            "/api/v1/templates/",
            {"name": "remote", "type": "terraform", "repository": "https://127.0.0.1:9/infra.git"},
        )
        assert status == 201, created
        status, refused = caller.request(
            "PATCH", f"/api/v1/templates/{created['id']}/", {"repository": "/etc", "path": "../../etc"}
        )
        assert status == 400 and set(refused) == {"repository", "path"}
    assert Template.objects.get(pk=created["id"]).repository == "https://127.0.0.1:9/infra.git"


TEMPLATE = """
variable "replicas" {
  type    = number
  default = 2
}
resource "terraform_data" "web" {
  count = var.replicas
}
output "greeting" {
  value = trimspace(file("${path.module}/../shared/greeting.txt"))
}
"""


def use_local_template(world, api, repository: str, path: str = "web") -> Any:
    return api(world.admin).patch(
        f"/api/v1/templates/{world.template.pk}/",
        {"repository": repository, "path": path, "revision": ""},
        format="json",
    )


@pytest.mark.usefixtures("commits_run_on_commit_callbacks")
def test_a_directory_under_a_listed_root_is_a_template_source_and_its_own_root(
    world, api, settings, tmp_path
):
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path / "roots")]
    repository = tmp_path / "roots" / "infra"
    (repository / "web").mkdir(parents=True)
    (repository / "shared").mkdir()
    (repository / "web" / "main.tf").write_text(TEMPLATE)
    (repository / "shared" / "greeting.txt").write_text("hello\n")
    (tmp_path / "roots" / "secret.txt").write_text("not this template's")
    assert use_local_template(world, api, str(repository)).status_code == 200
    deployment = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", {}, format="json"
    )
    configuration = (
        api(world.bob).get(f"/api/v1/deployments/{deployment.json()['id']}/input/").json()["configuration"]
    )
    assert configuration["outputs"]["greeting"]["value"] == "hello"
    assert configuration["diagnostics"] == []

    # The root is the template's directory, not the listed root: a neighbour stays out of reach.
    (repository / "web" / "main.tf").write_text('output "x" { value = file("../../secret.txt") }\n')
    deployment = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", {}, format="json"
    )
    configuration = (
        api(world.bob).get(f"/api/v1/deployments/{deployment.json()['id']}/input/").json()["configuration"]
    )
    [problem] = configuration["diagnostics"]
    assert "outside the template" in problem["detail"] and problem["file"] == "web/main.tf"

    # A symlink out of the directory makes the whole source refused, before anything reads it.
    (repository / "web" / "terraform.tfvars").symlink_to(tmp_path / "roots" / "secret.txt")
    deployment = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", {}, format="json"
    )
    configuration = (
        api(world.bob).get(f"/api/v1/deployments/{deployment.json()['id']}/input/").json()["configuration"]
    )
    [problem] = configuration["diagnostics"]
    assert "symlink 'web/terraform.tfvars' points outside the template" in problem["detail"]
    assert "not this template's" not in json.dumps(configuration)


@pytest.mark.django_db
def test_the_platforms_own_directories_are_refused_even_under_a_listed_root(world, api, settings, tmp_path):
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path)]
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    (tmp_path / "checkouts" / "archives").mkdir(parents=True)
    for repository in (str(tmp_path / "checkouts" / "archives"), str(tmp_path), settings.BASE_DIR, "/"):
        response = use_local_template(world, api, str(repository), path="")
        assert response.status_code == 400 and response.json() == {"repository": [LOCAL_SOURCE_REFUSED]}


@pytest.mark.django_db
def test_a_refused_archive_names_no_path_of_the_server(world, api, settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, target in (("up", "."), ("out", "up/..")):
            link = tarfile.TarInfo(name)
            link.type, link.linkname = tarfile.SYMTYPE, target
            archive.addfile(link)
    buffer.seek(0)
    buffer.name = "t.tar.gz"
    response = api(world.admin).post(
        f"/api/v1/templates/{world.template.pk}/archive/", {"archive": buffer}, format="multipart"
    )
    assert response.status_code == 400, response.content
    assert "outside" in response.json()["archive"][0]
    assert str(tmp_path) not in response.content.decode()


@pytest.mark.parametrize("roots", ["/", "relative/templates", "/srv/templates,/"])
def test_a_root_that_would_open_the_whole_disk_or_depends_on_the_working_directory_stops_the_platform(roots):
    started = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LOCAL_REPOSITORY_ROOTS": roots},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode != 0
    assert "LOCAL_REPOSITORY_ROOTS lists absolute directories other than /" in started.stderr
