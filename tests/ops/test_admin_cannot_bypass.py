"""Issue 16, finding 15: the Django admin cannot bypass a rule.

The walk goes through every admin registered on ``admin.site``, whatever module registered it, and posts
its real add, change and delete forms through the test client (the change form as the page rendered it,
plus the change an attacker wants: a project's parent and self-approval, an environment's automatic
approval, a role, a team's members, a template's repository, a superuser flag). Each write must be refused
(403, nothing changed), or hold the product's rule and leave an audit entry for every change it made.

It walks as two people: a superuser, and a staff user holding every model permission of the app and of
``auth`` but no role in the product (the Django admin would let such a user change whatever their
permissions name; the product would let them do nothing but author policies)."""

import json

import pytest
from django.contrib import admin
from django.contrib.admin.widgets import RelatedFieldWidgetWrapper
from django.contrib.auth.models import Group, Permission, User
from django.db.models import Model
from django.urls import reverse

from policies_app.models import (
    Approval,
    AuditCheckpoint,
    AuditEntry,
    AuditStreamCursor,
    Deployment,
    DeploymentEvent,
    Environment,
    EnvironmentState,
    Evaluation,
    OrganisationMembership,
    Project,
    ProjectMembership,
    Team,
    Template,
)
from tests.builders import make_policy, make_user

pytestmark = pytest.mark.django_db

PENDING = 'package env0\n\npending contains "wait for a human" if true\n'


def one_row_of_every_model(world) -> None:
    policy = make_policy("two approvers", PENDING)
    world.platform.approval_policies.add(policy)
    deployment = Deployment.objects.create(
        environment=world.environment, deployer=world.bob, status="pending_approval", decision="pending"
    )
    evaluation = Evaluation.objects.create(
        deployment=deployment,
        request_type="deploy",
        input_json=json.dumps({"deploymentRequest": {"type": "deploy"}}),
        decision="pending",
        engine="regorus",
    )
    evaluation.policy_revisions.set([policy.latest_revision])
    Approval.objects.create(deployment=deployment, user=world.alice, decision="approve", comment="ok")
    DeploymentEvent.objects.create(deployment=deployment, kind="triggered", actor=world.bob)
    OrganisationMembership.objects.create(user=world.vera, role="auditor")
    entry = AuditEntry.objects.create(
        actor=world.admin, action="project.created", target_type="project", target_id="1"
    )
    AuditCheckpoint.objects.create(
        sequence=entry.sequence, entry_hash=entry.entry_hash, key_id="k", signature="00" * 64
    )
    AuditStreamCursor.objects.create(target="webhook", sequence=entry.sequence)
    EnvironmentState.objects.create(
        environment=world.environment, document={"version": 4, "serial": 1}, serial=1
    )
    managers = Group.objects.create(name="template managers")
    managers.permissions.add(Permission.objects.get(codename="change_template"))


def staff_with_every_permission():
    """A staff user whose Django permissions name every model of the app and of ``auth``: no role."""
    user = make_user("stella", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=["policies_app", "auth"]))
    return User.objects.get(pk=user.pk)  # permissions are cached on the instance


def the_row(model, world) -> Model:
    """The row the walk attacks: one where the attack changes something the product rules."""
    chosen = {
        Project: world.payments_eu,  # has a parent to lose
        User: world.charlie,
        ProjectMembership: ProjectMembership.objects.filter(user=world.vera).first(),
    }
    return chosen.get(model) or model._default_manager.order_by("pk").first()


def attack(model, world) -> dict:
    """What each write asks for on top of the form as rendered, none of it allowed by the product as is."""
    return {
        Project: {"allow_self_approval": "on", "parent": ""},
        Environment: {"approve_plans_automatically": "on"},
        ProjectMembership: {"role": "admin"},
        OrganisationMembership: {"role": "admin"},
        Team: {"members": [str(u.pk) for u in User.objects.all()]},
        Template: {"repository": "/"},
        User: {"is_superuser": "on", "is_staff": "on", "email": "taken@example.com"},
        Group: {"name": "renamed"},
    }.get(model, {})


def snapshot(model, pk) -> dict | None:
    row = model._default_manager.filter(pk=pk).first()
    if row is None:
        return None
    values = {}
    for field in row._meta.concrete_fields:
        values[field.attname] = field.value_from_object(row)
    for field in row._meta.many_to_many:
        values[field.name] = sorted(getattr(row, field.name).values_list("pk", flat=True))
    return values


def url(model, view, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


def _widget_items(bound):
    widget = bound.field.widget
    while isinstance(widget, RelatedFieldWidgetWrapper):
        widget = widget.widget
    context = widget.get_context(bound.html_name, bound.value(), {})["widget"]
    for part in context.get("subwidgets") or [context]:
        if part.get("type") == "checkbox":
            if part["attrs"].get("checked"):
                yield part["name"], "on"
        elif part["value"] is not None:
            yield part["name"], part["value"]


def form_as_rendered(response) -> dict:
    """The POST a browser would send for the page: the main form's fields and every inline formset's."""
    data: dict = {}
    forms = []
    if response.context and "adminform" in response.context:
        forms.append(response.context["adminform"].form)
        for inline in response.context["inline_admin_formsets"]:
            formset = inline.formset
            forms.append(formset.management_form)
            forms.extend(formset.forms)
    for form in forms:
        for name in form.fields:
            data.update(_widget_items(form[name]))
    return data


def audit_entries() -> int:
    return AuditEntry.objects.count()


@pytest.fixture(params=["superuser", "staff with every permission"])
def admin_user(request, world):
    one_row_of_every_model(world)
    return world.admin if request.param == "superuser" else staff_with_every_permission()


def test_every_registered_admin_refuses_a_change_or_holds_the_rule_and_audits_it(client, world, admin_user):
    client.force_login(admin_user)
    walked, problems = [], []
    for model in list(admin.site._registry):
        row = the_row(model, world)
        assert row is not None, f"no {model.__name__} to attack"
        before, entries = snapshot(model, row.pk), audit_entries()
        page = client.get(url(model, "change", row.pk))
        assert page.status_code == 200, model.__name__
        response = client.post(
            url(model, "change", row.pk), {**form_as_rendered(page), **attack(model, world)}
        )
        after = snapshot(model, row.pk)
        walked.append(model.__name__)
        if response.status_code == 403:
            if after != before:
                problems.append(f"{model.__name__} refused the change but changed")
            continue
        if response.status_code not in (200, 302):
            problems.append(f"{model.__name__} answered {response.status_code}")
        if after != before and audit_entries() == entries:
            problems.append(f"{model.__name__} changed in the admin without an audit entry")
        # Without a role, the product allows none of these changes.
        changed = sorted(k for k in attack(model, world) if k in before and after[k] != before[k])
        if changed and not admin_user.is_superuser:
            problems.append(f"{model.__name__}: {', '.join(changed)} changed by a user without a role")
    assert not problems
    assert {"Project", "Environment", "User", "Group", "Team"} <= set(walked)


def test_every_registered_admin_refuses_a_delete_or_audits_it(client, world, admin_user):
    client.force_login(admin_user)
    problems = []
    for model in list(admin.site._registry):
        row = the_row(model, world)
        if row is None:  # a cascade of an earlier delete took it
            continue
        entries = audit_entries()
        response = client.post(url(model, "delete", row.pk), {"post": "yes"})
        gone = not model._default_manager.filter(pk=row.pk).exists()
        if response.status_code == 403:
            if gone:
                problems.append(f"{model.__name__} refused the delete but deleted")
            continue
        if gone and not admin_user.is_superuser:
            problems.append(f"{model.__name__} deleted by a user without a role")
        if gone and audit_entries() == entries:
            problems.append(f"{model.__name__} deleted in the admin without an audit entry")
    assert not problems


def test_every_registered_admin_refuses_an_add_or_audits_it(client, world, admin_user):
    client.force_login(admin_user)
    problems = []
    for model in list(admin.site._registry):
        count, entries = model._default_manager.count(), audit_entries()
        page = client.get(url(model, "add"))
        if page.status_code == 403:
            if client.post(url(model, "add"), {}).status_code != 403:
                problems.append(f"{model.__name__} shows no add page but takes an add")
            continue
        data = {**form_as_rendered(page), **attack(model, world)}
        data.setdefault("name", f"made in the admin {model.__name__}")
        response = client.post(url(model, "add"), data)
        if model._default_manager.count() > count and audit_entries() == entries:
            problems.append(f"{model.__name__} added in the admin without an audit entry")
        if response.status_code not in (200, 302, 403):
            problems.append(f"{model.__name__} answered {response.status_code}")
    assert not problems


def test_a_ruled_models_page_links_to_the_product_page_that_changes_it(client, world):
    client.force_login(world.admin)
    pages = {
        url(Project, "change", world.payments.pk): f"/projects/{world.payments.pk}/",
        url(Environment, "change", world.environment.pk): f"/environments/{world.environment.pk}/",
        url(Template, "change", world.template.pk): f"/templates/{world.template.pk}/",
        url(Team, "change", world.security.pk): f"/api/v1/teams/{world.security.pk}/",
        url(User, "change", world.charlie.pk): f"/users/{world.charlie.pk}/",
    }
    for page, product in pages.items():
        response = client.get(page)
        assert response.status_code == 200, page
        assert f'href="{product}"' in response.content.decode(), page


def test_an_environments_page_masks_its_sensitive_variables(client, world):
    world.environment.terraform_variables = {"db_password": "hunter2", "region": "eu-west-1"}
    world.environment.sensitive_variables = {"terraform": ["db_password"]}
    world.environment.save()
    client.force_login(world.admin)
    html = client.get(url(Environment, "change", world.environment.pk)).content.decode()
    assert "eu-west-1" in html
    assert "hunter2" not in html


def test_a_superuser_grants_a_permission_in_the_admin_and_the_log_says_so(client, world):
    client.force_login(world.admin)
    page = client.get(url(User, "change", world.charlie.pk))
    template_managers = Group.objects.create(name="template managers")
    data = {**form_as_rendered(page), "groups": [str(template_managers.pk)]}
    assert client.post(url(User, "change", world.charlie.pk), data).status_code == 302
    assert list(world.charlie.groups.all()) == [template_managers]
    entry = AuditEntry.objects.get(action="user.changed", target_id=str(world.charlie.pk))
    assert entry.actor == world.admin
    assert entry.before == {"groups": [], "user_permissions": []}
    assert entry.after == {"groups": ["template managers"], "user_permissions": []}


def test_a_password_set_in_the_admin_is_audited_without_the_password(client, world):
    client.force_login(world.admin)
    response = client.post(
        reverse("admin:auth_user_password_change", args=[world.charlie.pk]),
        {"password1": "a new long passphrase 42", "password2": "a new long passphrase 42"},
    )
    assert response.status_code == 302
    entry = AuditEntry.objects.get(action="user.password_set", target_id=str(world.charlie.pk))
    assert "a new long passphrase" not in json.dumps([entry.before, entry.after])


def test_a_staff_user_with_every_permission_cannot_make_anyone_a_superuser(client, world):
    stella = staff_with_every_permission()
    client.force_login(stella)
    for target in (stella, world.charlie):
        response = client.post(
            url(User, "change", target.pk),
            {"username": target.username, "is_superuser": "on", "is_staff": "on"},
        )
        assert response.status_code == 403
        assert not User.objects.get(pk=target.pk).is_superuser
    password = client.post(
        reverse("admin:auth_user_password_change", args=[world.admin.pk]),
        {"password1": "taken over 123456", "password2": "taken over 123456"},
    )
    assert password.status_code == 403
