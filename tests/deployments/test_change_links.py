"""Links to the change: a deployment carries its commit, pull request and CI run; environments are
addressed by project/environment path as well as by id; the environment page shows both and a pipeline
snippet."""

from urllib.parse import quote

import pytest

from policies_app.models import Deployment, Environment, Project

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("commits_run_on_commit_callbacks")]

LINKS = {
    "commit_sha": "9fceb02d0ae598e95dc970b74767f19372d61af8",
    "pull_request_url": "https://github.com/acme/infra/pull/42",
    "ci_run_url": "https://github.com/acme/infra/actions/runs/123456",
}


def test_a_deployment_carries_its_links_through_the_api_and_the_page(world, api, client):
    response = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", LINKS, format="json"
    )
    assert response.status_code == 201, response.json()
    body = api(world.vera).get(f"/api/v1/deployments/{response.json()['id']}/").json()
    assert {name: body[name] for name in LINKS} == LINKS
    assert body["web_url"].endswith(f"/deployments/{body['id']}/")
    client.force_login(world.vera)
    page = client.get(f"/deployments/{body['id']}/").content.decode()
    assert (
        '<a href="https://github.com/acme/infra/pull/42" rel="noopener noreferrer">pull request</a>' in page
    )
    assert 'href="https://github.com/acme/infra/actions/runs/123456"' in page
    assert "9fceb02d0ae5" in page


def test_links_are_optional(world, api):
    response = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", {}, format="json"
    )
    assert response.status_code == 201
    assert (response.json()["commit_sha"], response.json()["pull_request_url"]) == ("", "")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("pull_request_url", "not a link", "Enter a valid URL."),
        ("ci_run_url", "javascript:alert(1)", "Enter a valid URL."),
        ("ci_run_url", "ftp://ci.example.com/run/1", "Enter an http or https URL."),
        ("pull_request_url", "https://example.com/" + "x" * 500, "no more than 500 characters"),
        ("commit_sha", "not-a-sha", "A commit SHA is 7 to 64 hexadecimal characters."),
    ],
)
def test_a_bad_link_is_a_400_naming_the_field(world, api, field, value, message):
    response = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", {field: value}, format="json"
    )
    assert response.status_code == 400
    assert message in " ".join(response.json()[field])
    assert not Deployment.objects.exists()


@pytest.mark.parametrize(
    "path", ["Payments EU/prod", "Platform/Payments/Payments EU/prod", "/Payments/Payments EU/prod/"]
)
def test_an_environment_is_triggered_by_its_path(world, api, path):
    response = api(world.bob).post(f"/api/v1/environments/{quote(path)}/deployments/", {}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["environment"] == world.environment.pk
    listed = api(world.bob).get(f"/api/v1/environments/{quote(path)}/deployments/").json()
    assert [d["id"] for d in listed["results"]] == [response.json()["id"]]


def test_a_path_naming_several_environments_asks_for_more_of_it(world, api):
    other = Project.objects.create(name="Payments EU", parent=world.platform)
    Environment.objects.create(name="prod", project=other, template=world.template)
    response = api(world.bob).post(
        f"/api/v1/environments/{quote('Payments EU/prod')}/deployments/", {}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["environment"] == [
        "'Payments EU/prod' names several environments (Platform/Payments EU/prod, "
        "Platform/Payments/Payments EU/prod): write more of its path."
    ]
    exact = api(world.bob).post(
        f"/api/v1/environments/{quote('Payments/Payments EU/prod')}/deployments/", {}, format="json"
    )
    assert exact.json()["environment"] == world.environment.pk


@pytest.mark.parametrize("path", ["Payments EU/staging", "Nowhere/prod", "prod.json"])
def test_an_unknown_path_is_a_404(world, api, path):
    response = api(world.bob).post(f"/api/v1/environments/{quote(path)}/deployments/", {}, format="json")
    assert response.status_code == 404


def test_an_environment_one_may_not_see_is_not_found_by_its_path_either(world, api):
    response = api(world.charlie).post(
        f"/api/v1/environments/{quote('Payments EU/prod')}/deployments/", {}, format="json"
    )
    assert response.status_code == 404
    # A viewer sees it and may not trigger it: refused as by id.
    by_viewer = api(world.vera).post(
        f"/api/v1/environments/{quote('Payments EU/prod')}/deployments/", {}, format="json"
    )
    by_id = api(world.vera).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", {}, format="json"
    )
    assert by_viewer.status_code == by_id.status_code == 403


def test_the_environment_page_shows_its_id_path_and_a_pipeline_snippet(world, client, settings):
    settings.PLATFORM_URL = "https://platform.example.com"
    client.force_login(world.vera)
    page = client.get(f"/environments/{world.environment.pk}/").content.decode()
    assert f"<code>{world.environment.pk}</code>" in page
    assert "<code>Platform/Payments/Payments EU/prod</code>" in page
    assert (
        "policy-gate deploy --environment &#x27;Platform/Payments/Payments EU/prod&#x27; --plan plan.json --wait"
        in page
    )
    assert "PLATFORM_URL: https://platform.example.com" in page
    assert "PLATFORM_TOKEN: ${{ secrets.PLATFORM_TOKEN }}" in page


def test_the_pipeline_snippets_are_yaml_whose_gate_step_names_the_environment():
    import shlex

    import yaml

    from policies_app.projects.environment_paths import pipeline_snippets

    snippets = dict(pipeline_snippets("Platform/Payments EU/prod's", "https://platform.example.com"))
    github = yaml.safe_load(snippets["GitHub Actions"])
    gate_step = next(step for step in github if step["name"] == "Wait for approval")
    assert gate_step["env"]["PLATFORM_URL"] == "https://platform.example.com"
    assert shlex.split(gate_step["run"])[:4] == [
        "policy-gate",
        "deploy",
        "--environment",
        "Platform/Payments EU/prod's",
    ]
    gitlab = yaml.safe_load(snippets["GitLab CI"])
    assert shlex.split(gitlab["deploy"]["script"][1])[3] == "Platform/Payments EU/prod's"
