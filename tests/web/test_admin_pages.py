"""Administration in the product, page by page: who gets 404, who sees no buttons, and each action
allowed for who may and refused (with the use case's status) for who may not."""

import csv
import io
import json
import re
import tarfile

import pytest
from django.core import mail
from django.template import Context
from django.template import Template as DjangoTemplate
from django.test import RequestFactory
from django.urls import reverse

from policies_app.deployments.stored_inputs import store_plan
from policies_app.models import (
    ApiToken,
    Approval,
    AuditEntry,
    Deployment,
    Environment,
    Project,
    ProjectMembership,
    Template,
)
from policies_app.projects import projects
from tests.builders import make_policy, make_user, plan_with
from tests.receiver import Receiver

pytestmark = pytest.mark.django_db

ALLOW = 'package env0\n\nallow contains "ok" if true\n'


@pytest.fixture
def pat(world):
    """An admin of Payments (and so of Payments EU)."""
    user = make_user("pat")
    ProjectMembership.objects.create(project=world.payments, user=user, role="admin")
    return user


def login(client, user):
    client.force_login(user)
    return client


def post(client, path, **data):
    return client.post(path, data)


def has_forms(html: str) -> bool:
    return bool(re.search(r'name="action" value="(settings|add_member|attach_policy|add_webhook)"', html))


# --- the project page ----------------------------------------------------------------------------------


def test_the_project_page_is_not_found_for_an_outsider_and_read_only_for_a_viewer(client, world, pat):
    url = reverse("web:project-detail", args=[world.payments_eu.pk])
    assert login(client, world.charlie).get(url).status_code == 404
    viewer = login(client, world.vera).get(url)
    assert viewer.status_code == 200 and not has_forms(viewer.content.decode())
    admin = login(client, pat).get(url)
    assert has_forms(admin.content.decode())


def test_a_project_admin_creates_a_sub_project_and_others_cannot(client, world, pat):
    assert login(client, world.alice).get(reverse("web:project-create")).status_code == 404
    response = post(login(client, pat), reverse("web:project-create"), name="Cards", parent=world.payments.pk)
    cards = Project.objects.get(name="Cards")
    assert response.status_code == 302 and response["Location"] == reverse(
        "web:project-detail", args=[cards.pk]
    )
    assert cards.parent == world.payments
    refused = post(client, reverse("web:project-create"), name="Root", parent="")
    assert refused.status_code == 400 and not Project.objects.filter(name="Root").exists()
    root = post(login(client, world.admin), reverse("web:project-create"), name="Root", parent="")
    assert root.status_code == 302 and Project.objects.get(name="Root").parent is None


def test_members_are_added_and_removed_by_admins_only(client, world, pat):
    url = reverse("web:project-detail", args=[world.payments_eu.pk])
    refused = post(login(client, world.alice), url, action="add_member", username="charlie", role="viewer")
    assert refused.status_code == 403 and "Only admins" in refused.content.decode()
    added = post(login(client, pat), url, action="add_member", username="charlie", role="deployer")
    assert added.status_code == 302
    membership = ProjectMembership.objects.get(project=world.payments_eu, user=world.charlie)
    assert membership.role == "deployer"
    unknown = post(client, url, action="add_member", username="nobody", role="viewer")
    assert unknown.status_code == 400 and "No user is named" in unknown.content.decode()
    assert post(client, url, action="remove_member", membership=membership.pk).status_code == 302
    assert not ProjectMembership.objects.filter(pk=membership.pk).exists()
    assert AuditEntry.objects.filter(action="membership.revoked", actor=pat).exists()


def test_policies_are_attached_and_detached_from_the_project_page(client, world, pat):
    policy = make_policy("eu rules", ALLOW)
    world.template.approval_policies.add(policy)  # seen by members of projects using the template
    url = reverse("web:project-detail", args=[world.payments_eu.pk])
    assert post(login(client, world.vera), url, action="attach_policy", policy=policy.pk).status_code == 403
    assert post(login(client, pat), url, action="attach_policy", policy=policy.pk).status_code == 302
    assert list(world.payments_eu.approval_policies.all()) == [policy]
    entry = AuditEntry.objects.get(action="policy.attached")
    assert (entry.actor, entry.project) == (pat, world.payments_eu)
    assert post(client, url, action="detach_policy", policy=policy.pk).status_code == 302
    assert not world.payments_eu.approval_policies.exists()
    assert AuditEntry.objects.filter(action="policy.detached").exists()


def test_a_policy_attached_from_above_cannot_be_detached_from_below(client, world, pat):
    policy = make_policy("org rule", ALLOW)
    projects.attach_policy(world.admin, world.payments_eu, policy)  # from the organisation
    url = reverse("web:project-detail", args=[world.payments_eu.pk])
    assert 'value="detach_policy"' not in login(client, pat).get(url).content.decode(), "no button"
    request = RequestFactory().get("/")
    request.user = pat
    include = DjangoTemplate("{% load platform_tags %}{% policy_attachments policy %}").render(
        Context({"request": request, "policy": policy, "csrf_token": "x"})
    )
    assert "project Platform / Payments / Payments EU" in include and 'value="detach"' not in include
    refused = post(login(client, pat), url, action="detach_policy", policy=policy.pk)
    assert refused.status_code == 403 and "only its admins may detach it" in refused.content.decode()


def test_settings_change_the_expiry_and_move_the_project(client, world, pat):
    url = reverse("web:project-detail", args=[world.payments_eu.pk])
    response = post(
        login(client, pat),
        url,
        action="settings",
        name="Payments EU",
        parent=world.payments.pk,
        pending_expiry_hours=12,
    )
    assert response.status_code == 302
    world.payments_eu.refresh_from_db()
    assert world.payments_eu.pending_expiry_hours == 12
    assert "12 hours" in client.get(url).content.decode()


# --- webhooks ------------------------------------------------------------------------------------------


def test_an_admin_adds_a_webhook_and_sends_a_test_from_its_page(
    client, world, pat, loopback_allowed, django_capture_on_commit_callbacks
):
    receiver = Receiver()
    try:
        url = reverse("web:project-detail", args=[world.payments.pk])
        added = post(
            login(client, pat), url, action="add_webhook", name="chat", url=receiver.url, format="chat"
        )
        # The new webhook's secret is shown on this answer only (like a token's key): no redirect.
        assert added.status_code == 200
        hook = world.payments.webhooks.get()
        assert hook.secret in added.content.decode()
        assert hook.secret not in client.get(url).content.decode()
        page = reverse("web:webhook-detail", args=[hook.pk])
        assert login(client, world.alice).get(page).status_code == 404
        assert login(client, world.charlie).get(page).status_code == 404
        with django_capture_on_commit_callbacks(execute=True):
            tested = login(client, pat).post(page, {"action": "test"}, follow=True)
        assert "The test message is on its way" in tested.content.decode()
        tested = client.get(page)
        assert "Delivered" in tested.content.decode()
        assert receiver.received[0].json() == {
            "text": "Test message from the policy platform for webhook chat."
        }
        assert "ping" in tested.content.decode(), "the history shows the delivery"
    finally:
        receiver.close()


# --- environments and templates ------------------------------------------------------------------------


def test_an_admin_creates_and_changes_an_environment_and_a_viewer_cannot(client, world, pat):
    create = reverse("web:environment-create", args=[world.payments_eu.pk])
    assert login(client, world.vera).get(create).status_code == 404
    response = post(
        login(client, pat),
        create,
        name="staging",
        template=world.template.pk,
        **{
            "environment-TOTAL_FORMS": "2",
            "environment-INITIAL_FORMS": "0",
            "environment-0-name": "AWS_REGION",
            "environment-0-value": "eu-west-1",
            "environment-1-name": "TOKEN",
            "environment-1-value": "not-to-be-shown",
            "environment-1-sensitive": "on",
            "terraform-TOTAL_FORMS": "0",
            "terraform-INITIAL_FORMS": "0",
        },
    )
    environment = Environment.objects.get(name="staging")
    assert response.status_code == 302
    assert environment.environment_variables == {"AWS_REGION": "eu-west-1", "TOKEN": "not-to-be-shown"}
    edit = reverse("web:environment-edit", args=[environment.pk])
    form = client.get(edit).content.decode()
    assert "not-to-be-shown" not in form and "********" in form
    bad = post(
        client,
        edit,
        name="staging",
        template=world.template.pk,
        **{"environment-TOTAL_FORMS": "1", "environment-INITIAL_FORMS": "0", "environment-0-value": "x"},
        **{"terraform-TOTAL_FORMS": "0", "terraform-INITIAL_FORMS": "0"},
    )
    assert bad.status_code == 400 and "This value needs a name." in bad.content.decode()
    assert login(client, world.vera).get(edit).status_code == 404


def test_the_environment_page_summarises_its_state(client, world):
    from policies_app.projects.states import store_state

    store_state(
        world.environment,
        {
            "version": 4,
            "serial": 5,
            "lineage": "abc",
            "terraform_version": "1.11.4",
            "outputs": {
                "url": {"value": "https://x", "type": "string"},
                "pw": {"value": "p", "type": "string", "sensitive": True},
            },
            "resources": [
                {
                    "mode": "managed",
                    "type": "aws_s3_bucket",
                    "name": "b",
                    "provider": "p",
                    "instances": [{"attributes": {"id": "b"}}],
                }
            ],
        },
        user=world.bob,
    )
    html = (
        login(client, world.vera)
        .get(reverse("web:environment-detail", args=[world.environment.pk]))
        .content.decode()
    )
    assert "1 × <code>aws_s3_bucket</code>" in html and "1.11.4" in html and "abc" in html
    assert "https://x" in html and "(sensitive value)" in html and '"p"' not in html


def test_templates_are_listed_for_members_and_managed_by_organisation_admins(client, world):
    assert login(client, world.vera).get(reverse("web:template-list")).status_code == 200
    assert client.get(reverse("web:template-create")).status_code == 404
    detail = reverse("web:template-detail", args=[world.template.pk])
    assert 'value="settings"' not in client.get(detail).content.decode()
    assert login(client, world.charlie).get(detail).status_code == 404
    created = post(login(client, world.admin), reverse("web:template-create"), name="k8s", type="k8s")
    assert created.status_code == 302 and Template.objects.filter(name="k8s").exists()
    policy = make_policy("template rule", ALLOW)
    assert post(client, detail, action="attach_policy", policy=policy.pk).status_code == 302
    assert list(world.template.approval_policies.all()) == [policy]


def test_an_uploaded_archive_is_downloadable_from_its_link_by_those_who_may_see_it(
    client, world, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        data = b'output "x" { value = 1 }\n'
        info = tarfile.TarInfo("network/main.tf")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    buffer.name = "network.tar.gz"
    detail = reverse("web:template-detail", args=[world.template.pk])
    assert (
        login(client, world.admin).post(detail, {"action": "archive", "archive": buffer}).status_code == 302
    )
    world.template.refresh_from_db()
    link = world.template.archive.url
    assert link.startswith("/media/template-archives/")
    download = client.get(link)
    assert download.status_code == 200 and b"".join(download.streaming_content)[:2] == b"\x1f\x8b"
    assert login(client, world.charlie).get(link).status_code == 404


# --- attaching from the policy page --------------------------------------------------------------------


def test_the_policy_page_include_lists_attachments_and_attaches_where_the_user_may(client, world, pat):
    policy = make_policy("shared rule", ALLOW)
    world.template.approval_policies.add(policy)  # seen by members of projects using the template
    request = RequestFactory().get("/")
    request.user = pat
    html = DjangoTemplate("{% load platform_tags %}{% policy_attachments policy %}").render(
        Context({"request": request, "policy": policy, "csrf_token": "x"})
    )
    assert (
        f'value="project:{world.payments.pk}"' in html and f'value="project:{world.platform.pk}"' not in html
    )
    url = reverse("web:policy-attach", args=[policy.pk])
    attached = login(client, pat).post(url, {"action": "attach", "target": f"project:{world.payments.pk}"})
    assert attached.status_code == 302 and list(world.payments.approval_policies.all()) == [policy]
    refused = client.post(url, {"action": "attach", "target": f"project:{world.platform.pk}"}, follow=True)
    assert not world.platform.approval_policies.filter(pk=policy.pk).exists()
    assert "Choose a project or a template." in refused.content.decode(), "Platform is not Pat's to see"
    viewer = login(client, world.vera).post(
        url, {"action": "attach", "target": f"project:{world.platform.pk}"}, follow=True
    )
    assert "Only admins of this project" in viewer.content.decode()
    assert not world.platform.approval_policies.filter(pk=policy.pk).exists()
    assert (
        login(client, world.charlie).post(url, {"action": "attach", "target": "project:1"}).status_code == 404
    )


# --- users, tokens, notifications ----------------------------------------------------------------------


def test_only_organisation_admins_manage_users_and_an_invited_user_chooses_a_password(
    client, world, settings, django_capture_on_commit_callbacks
):
    settings.PLATFORM_URL = "http://testserver"
    for persona in (world.alice, world.vera, world.charlie):
        assert login(client, persona).get(reverse("web:user-list")).status_code == 404
    with django_capture_on_commit_callbacks(execute=True):
        created = post(
            login(client, world.admin), reverse("web:user-list"), username="nina", email="nina@example.com"
        )
    assert created.status_code == 302
    [invitation] = mail.outbox
    link = re.search(r"http://testserver(/accounts/reset/\S+)", invitation.body).group(1)
    client.logout()
    form = client.get(link, follow=True)
    assert form.status_code == 200 and "Choose your password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "a-long-passphrase", "new_password2": "a-long-passphrase"},
    )
    assert done.status_code == 302
    assert client.login(username="nina", password="a-long-passphrase")
    nina = AuditEntry.objects.get(action="user.created").target_id
    deactivated = post(
        login(client, world.admin), reverse("web:user-change", args=[nina]), organisation_role=""
    )
    assert deactivated.status_code == 302
    assert not client.login(username="nina", password="a-long-passphrase")


def test_a_user_makes_several_named_tokens_sees_their_last_use_and_revokes_them(client, world):
    account = reverse("web:account")
    login(client, world.bob)
    first = post(client, account, action="create_token", name="deploy pipeline")
    key = re.search(r'<code id="new-key">(\S+)</code>', first.content.decode()).group(1)
    post(client, account, action="create_token", name="nightly drift")
    assert ApiToken.objects.filter(user=world.bob).count() == 2
    assert key not in client.get(account).content.decode(), "the key is shown once"
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/me/").json()["username"] == "bob"
    token = ApiToken.objects.get(name="deploy pipeline")
    assert token.last_used_at is not None
    assert post(login(client, world.alice), account, action="revoke_token", token=token.pk).status_code == 404
    assert post(login(client, world.bob), account, action="revoke_token", token=token.pk).status_code == 302
    assert api.get("/api/v1/me/").status_code == 401
    assert AuditEntry.objects.filter(action="token.revoked", actor=world.bob).exists()


def test_a_user_chooses_how_to_be_told(client, world):
    response = post(
        login(client, world.alice), reverse("web:account"), action="notifications", email="daily_digest"
    )
    assert response.status_code == 302
    from policies_app.notifications.approval_emails import email_mode

    assert email_mode(world.alice) == "daily_digest"


# --- the audit log -------------------------------------------------------------------------------------


def test_the_audit_log_is_for_admins_filterable_and_exported_as_csv_and_json(client, world, pat):
    make_policy("audited", ALLOW)
    projects.update_project(pat, world.payments_eu, description="changed")
    for persona in (world.vera, world.alice, world.charlie):
        assert login(client, persona).get(reverse("web:audit-log")).status_code == 404
    everything = login(client, world.admin).get(reverse("web:audit-log"))
    actions = {entry.action for entry in everything.context["page"].object_list}
    assert {"policy.created", "project.changed"} <= actions
    policies_only = client.get(reverse("web:audit-log"), {"action": "policy."})
    assert {e.action for e in policies_only.context["page"].object_list} == {"policy.created"}
    exported = client.get(reverse("web:audit-export", args=["csv"]), {"action": "project."})
    rows = list(csv.DictReader(io.StringIO(b"".join(exported.streaming_content).decode())))
    assert [(r["actor"], r["action"]) for r in rows] == [("pat", "project.changed")]
    assert json.loads(rows[0]["after"])["pending_expiry_hours"] is None
    as_json = json.loads(b"".join(client.get(reverse("web:audit-export", args=["json"])).streaming_content))
    assert {entry["action"] for entry in as_json} >= {"policy.created", "project.changed"}
    # A project admin reads their projects' entries, not the organisation's.
    mine = login(client, pat).get(reverse("web:audit-log"))
    assert {e.action for e in mine.context["page"].object_list} == {"project.changed"}


# --- the deployment page -------------------------------------------------------------------------------


def pending(world, **fields):
    return Deployment.objects.create(
        environment=world.environment,
        deployer=world.bob,
        status="pending_approval",
        decision="pending",
        plan_document_id=store_plan(
            plan_with(("aws_db_instance.main", ["delete"]), ("aws_s3_bucket.logs", ["create"]))
        ),
        **fields,
    )


def test_the_deployment_page_summarises_the_plan_and_shows_the_templates_revision(client, world):
    deployment = pending(world)
    html = (
        login(client, world.vera).get(reverse("web:deployment-detail", args=[deployment.pk])).content.decode()
    )
    assert "Plan: 1 to delete, 1 to create" in html
    assert html.index("aws_db_instance.main") < html.index("aws_s3_bucket.logs"), "destroys first"
    assert 'main <span class="muted small">(the template' in html


def test_only_the_deployer_and_admins_see_cancel_and_nobody_sees_buttons_they_cannot_use(client, world, pat):
    deployment = pending(world)
    url = reverse("web:deployment-detail", args=[deployment.pk])
    for persona, decide, cancel in (
        (world.alice, True, False),
        (world.bob, False, True),
        (pat, True, True),
        (world.vera, False, False),
    ):
        html = login(client, persona).get(url).content.decode()
        assert ('value="approve"' in html) is decide, persona
        assert ("Cancel deployment" in html) is cancel, persona
    Approval.objects.create(deployment=deployment, user=world.alice, decision="approve", comment="fine")
    html = login(client, world.alice).get(url).content.decode()
    assert 'value="approve"' not in html and "already approved or rejected" in html
    assert 'badge tone-good">Approve' in html and "“fine”" in html


def test_approving_a_destroy_needs_the_confirmation(client, world):
    deployment = pending(world)
    Deployment.objects.filter(pk=deployment.pk).update(type="destroy")
    url = reverse("web:deployment-decide", args=[deployment.pk])
    login(client, world.alice)
    assert (
        'name="confirm_destroy"'
        in client.get(reverse("web:deployment-detail", args=[deployment.pk])).content.decode()
    )
    refused = client.post(url, {"decision": "approve"})
    assert refused.status_code == 400 and "Confirm" in refused.content.decode()
    assert not Approval.objects.exists()
    assert client.post(url, {"decision": "approve", "confirm_destroy": "on"}).status_code == 302
    assert Approval.objects.get().decision == "approve"


def test_the_live_part_of_the_page_changes_version_when_the_deployment_moves(client, world):
    deployment = pending(world)
    url = reverse("web:deployment-live", args=[deployment.pk])
    login(client, world.alice)
    before = client.get(url).json()
    assert before["final"] is False and "Pending approval" in before["html"]
    Deployment.objects.filter(pk=deployment.pk).update(status="approved")
    after = client.get(url).json()
    assert after["version"] != before["version"] and "Approved" in after["html"]
    assert login(client, world.charlie).get(url).status_code == 404


def test_the_policy_page_shows_where_it_is_attached_and_offers_to_attach_it(client, world, pat):
    policy = make_policy("shared rule", ALLOW)
    world.template.approval_policies.add(policy)
    page = login(client, pat).get(reverse("web:policy-detail", args=[policy.pk])).content.decode()
    assert reverse("web:policy-attach", args=[policy.pk]) in page
    assert f'value="project:{world.payments.pk}"' in page
