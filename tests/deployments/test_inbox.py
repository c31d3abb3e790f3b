"""The queue knows who must act: "waiting for me" holds what a user may approve now (not their own, not
what they decided, nothing for viewers), with its count in the navigation; "my deployments"; and every
deployment filtered, searched, sorted and paginated, on the page and in the API."""

import pytest
from django.urls import reverse

from policies_app.deployments import inbox
from policies_app.models import Approval, Deployment, Environment, Project, ProjectMembership
from tests.builders import make_user

pytestmark = pytest.mark.django_db


def make(world, status="pending_approval", deployer=None, environment=None, revision="main"):
    return Deployment.objects.create(
        environment=environment or world.environment,
        deployer=deployer or world.bob,
        status=status,
        revision=revision,
    )


def waiting_ids(user):
    return set(inbox.waiting_for(user).values_list("pk", flat=True))


def test_waiting_for_me_is_what_i_may_approve_now(world):
    bobs = make(world)
    alices = make(world, deployer=world.alice)
    decided = make(world)
    Approval.objects.create(deployment=decided, user=world.alice, decision="approve")
    make(world, status="approved")
    assert waiting_ids(world.alice) == {bobs.pk}, "not her own, not one she decided, only pending"
    assert waiting_ids(world.sam) == {bobs.pk, alices.pk, decided.pk}
    assert waiting_ids(world.bob) == set(), "a deployer approves nothing"
    assert waiting_ids(world.vera) == set()
    assert waiting_ids(world.charlie) == set()


def test_an_approver_of_a_sub_project_waits_only_for_its_deployments(world):
    dana = make_user("dana")
    ProjectMembership.objects.create(project=world.payments_eu, user=dana, role="approver")
    elsewhere = Environment.objects.create(
        name="other",
        project=Project.objects.create(name="Other", parent=world.platform),
        template=world.template,
    )
    here = make(world)
    make(world, environment=elsewhere)
    assert waiting_ids(dana) == {here.pk}


def test_the_navigation_counts_what_waits_for_me_and_the_queue_opens_on_it(client, world):
    make(world)
    make(world)
    make(world, status="approved")
    client.force_login(world.alice)
    response = client.get(reverse("web:deployment-queue"))
    assert response.context["filters"].view == "waiting"
    assert len(response.context["page"].object_list) == 2
    assert 'aria-label="2 waiting"' in response.content.decode()
    client.force_login(world.vera)
    # Nothing waiting: no "0" badge.
    assert 'class="count"' not in client.get(reverse("web:project-tree")).content.decode()


def test_my_deployments_are_the_ones_i_triggered(client, world):
    mine = make(world, deployer=world.alice, status="approved")
    make(world)
    client.force_login(world.alice)
    response = client.get(reverse("web:deployment-queue"), {"view": "mine"})
    assert [d.pk for d in response.context["page"].object_list] == [mine.pk]


def test_all_deployments_filter_by_project_deployer_type_status_date_and_search(client, world):
    staging = Environment.objects.create(name="staging", project=world.payments, template=world.template)
    in_eu = make(world, revision="feature-x")
    in_payments = make(world, environment=staging, deployer=world.alice, status="approved")
    destroy = make(world, status="denied")
    Deployment.objects.filter(pk=destroy.pk).update(type="destroy")
    client.force_login(world.sam)

    def shown(**query):
        response = client.get(reverse("web:deployment-queue"), {"view": "all", **query})
        assert response.status_code == 200
        return {d.pk for d in response.context["page"].object_list}

    assert shown(project=world.payments_eu.pk) == {in_eu.pk, destroy.pk}
    assert shown(project=world.payments.pk) == {in_eu.pk, in_payments.pk, destroy.pk}, "sub-projects too"
    assert shown(deployer="alice") == {in_payments.pk}
    assert shown(type="destroy") == {destroy.pk}
    assert shown(status="approved") == {in_payments.pk}
    assert shown(q="feature") == {in_eu.pk}
    assert shown(q=f"#{destroy.pk}") == {destroy.pk}
    assert shown(q="staging") == {in_payments.pk}
    assert shown(since="2000-01-01", until="2000-01-02") == set()
    assert shown(since="bogus") == set(), "an invalid filter shows nothing rather than everything"
    assert shown(environment=staging.pk) == {in_payments.pk}


def test_the_queue_names_what_it_is_narrowed_to_without_listing_every_project_and_environment(client, world):
    Environment.objects.create(name="another-environment", project=world.payments, template=world.template)
    client.force_login(world.sam)
    page = client.get(reverse("web:deployment-queue"), {"view": "all", "environment": world.environment.pk})
    assert ("environment", "Payments EU / prod", "view=all") in page.context["narrowed_to"]
    search_form = page.content.decode().split('role="search"')[1].split("</form>")[0]
    assert "another-environment" not in search_form and '<select name="environment"' not in search_form
    hidden = client.get(reverse("web:deployment-queue"), {"view": "all", "environment": 999999})
    assert [name for _, name, _ in hidden.context["narrowed_to"]] == ["#999999"]
    assert list(hidden.context["page"].object_list) == []
