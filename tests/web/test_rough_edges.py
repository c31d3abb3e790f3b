"""The rough edges of issue 19 item 9: times with their time zone and how long ago, words instead of the
Rego input's ``deployResume``, the superuser's organisation role, the site administration only in a
superuser's navigation, and every plan count coloured by its action."""

import pytest

from tests.builders import ONE_APPROVER, make_policy, make_user, plan_with

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("commits_run_on_commit_callbacks")]


@pytest.fixture
def approved_after_a_resume(world, api):
    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    response = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/",
        {"plan": plan_with(("aws_s3_bucket.logs", ["create"]), ("aws_instance.web", ["update"]))},
        format="json",
    )
    deployment_id = response.json()["id"]
    approved = api(world.alice).post(f"/api/v1/deployments/{deployment_id}/approve/", {}, format="json")
    assert approved.json()["status"] == "approved"
    return deployment_id


def test_the_deployment_page_says_times_with_their_zone_and_in_words(world, client, approved_after_a_resume):
    client.force_login(world.vera)
    page = client.get(f"/deployments/{approved_after_a_resume}/").content.decode()
    assert " UTC</time>" in page
    assert "(just now)" in page
    assert "deployResume" not in page
    assert "Re-evaluated after an approval" in page
    assert "re-evaluated after an approval: allow" in page  # the event trail


def test_plan_counts_and_rows_are_coloured_by_action(world, client, approved_after_a_resume):
    client.force_login(world.vera)
    page = client.get(f"/deployments/{approved_after_a_resume}/").content.decode()
    assert '<li class="action-create"><strong>1</strong> to create</li>' in page
    assert '<li class="action-update"><strong>1</strong> to update</li>' in page
    assert '<li class="action-delete none"><strong>0</strong> to delete</li>' in page
    assert '<strong class="verb-create">create</strong>' in page
    assert '<strong class="verb-update">update</strong>' in page


def test_the_site_administration_is_in_a_superusers_navigation_only(world, client):
    staff = make_user("stella", is_staff=True)
    client.force_login(staff)
    page = client.get("/").content.decode()
    navigation = page.split('<nav aria-label="Main">')[1].split("</nav>")[0]
    assert "/admin/" not in navigation and "Django admin" not in navigation
    assert 'href="/admin/"' in client.get("/account/").content.decode()
    client.force_login(world.admin)
    navigation = client.get("/").content.decode().split('<nav aria-label="Main">')[1].split("</nav>")[0]
    assert '<a href="/admin/">Site administration</a>' in navigation


def test_the_superusers_organisation_role_is_said_plainly(world, client):
    client.force_login(world.admin)
    page = client.get("/users/").content.decode()
    assert "Superuser (holds every role)" in page
    assert "(none)" not in page
