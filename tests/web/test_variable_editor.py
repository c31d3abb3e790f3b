"""The environment form's key/value editors: rows instead of raw JSON, a sensitive tick per row, sensitive
values never sent back to the page (only the mask, which keeps the stored value), problems beside their
row, and a form that works with plain posts (no script)."""

import re

import pytest
from django.urls import reverse

from policies_app.models import Environment, ProjectMembership
from tests.builders import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def pat(world):
    """An admin of Payments (and so of Payments EU)."""
    user = make_user("pat")
    ProjectMembership.objects.create(project=world.payments, user=user, role="admin")
    return user


def rows(kind: str, *items: tuple[str, str, bool], extra: int = 2, initial: int = 0) -> dict[str, str]:
    """A post of the rows of one kind, as the page sends them (with a few empty rows left empty)."""
    data = {
        f"{kind}-TOTAL_FORMS": str(len(items) + extra),
        f"{kind}-INITIAL_FORMS": str(initial),
        f"{kind}-MIN_NUM_FORMS": "0",
        f"{kind}-MAX_NUM_FORMS": "1000",
    }
    for index, (name, value, sensitive) in enumerate(items):
        data[f"{kind}-{index}-name"] = name
        data[f"{kind}-{index}-value"] = value
        if sensitive:
            data[f"{kind}-{index}-sensitive"] = "on"
    return data


def form_post(world, name="staging", environment=(), terraform=(), **extra):
    return {
        "name": name,
        "template": world.template.pk,
        **rows("environment", *environment),
        **rows("terraform", *terraform),
        **extra,
    }


def inputs_of(html: str) -> dict[str, str]:
    return dict(re.findall(r'name="([^"]+)"[^>]*?value="([^"]*)"', html))


def test_variables_are_rows_and_sensitive_values_are_never_rendered_back(client, world, pat):
    client.force_login(pat)
    create = reverse("web:environment-create", args=[world.payments_eu.pk])
    empty = client.get(create).content.decode()
    assert 'name="environment-0-name"' in empty and 'name="terraform-2-value"' in empty, "a few empty rows"
    assert "<textarea" not in empty, "no raw JSON to type"
    response = client.post(
        create,
        form_post(
            world,
            environment=[("AWS_REGION", "eu-west-1", False), ("TOKEN", "s3cret-token", True)],
            terraform=[
                ("instance_count", "3", False),
                ("db_password", "hunter2-db", True),
                ("label", "x y", False),
            ],
        ),
    )
    assert response.status_code == 302, response.content.decode()
    environment = Environment.objects.get(name="staging")
    assert environment.environment_variables == {"AWS_REGION": "eu-west-1", "TOKEN": "s3cret-token"}
    assert environment.terraform_variables == {
        "instance_count": 3,
        "db_password": "hunter2-db",
        "label": "x y",
    }
    assert environment.sensitive_variables == {"environment": ["TOKEN"], "terraform": ["db_password"]}

    edit = reverse("web:environment-edit", args=[environment.pk])
    page = client.get(edit).content.decode()
    assert "s3cret-token" not in page and "hunter2-db" not in page
    shown = inputs_of(page)
    by_name = {shown[f"environment-{i}-name"]: shown[f"environment-{i}-value"] for i in range(2)}
    assert by_name == {"AWS_REGION": "eu-west-1", "TOKEN": "********"}
    assert shown["terraform-1-name"] == "instance_count" and shown["terraform-1-value"] == "3"

    # The page sent back as it was shown (masks included) keeps every stored value.
    sent = {name: value for name, value in shown.items() if name != "csrfmiddlewaretoken"}
    sent.update(
        {"template": world.template.pk, "environment-1-sensitive": "on", "terraform-0-sensitive": "on"}
    )
    sent["environment-0-value"] = "eu-central-1"
    assert client.post(edit, sent).status_code == 302
    environment.refresh_from_db()
    assert environment.environment_variables == {"AWS_REGION": "eu-central-1", "TOKEN": "s3cret-token"}
    assert environment.terraform_variables["db_password"] == "hunter2-db"


def test_problems_are_shown_beside_their_row_and_a_new_secret_is_not_echoed(client, world, pat):
    client.force_login(pat)
    create = reverse("web:environment-create", args=[world.payments_eu.pk])
    response = client.post(
        create,
        form_post(
            world,
            environment=[
                ("A", "1", False),
                ("A", "2", False),
                ("", "orphan", False),
                ("KEY", "typed-secret", True),
            ],
        ),
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert not Environment.objects.filter(name="staging").exists()
    row_of = {
        m.group(1): m.group(0)
        for m in re.finditer(r'<tr class="variable-row[^"]*">.*?name="([^"]+)-name".*?</tr>', html, re.S)
    }
    assert "A is given twice." in row_of["environment-1"] and "given twice" not in row_of["environment-0"]
    assert "This value needs a name." in row_of["environment-2"]
    assert "typed-secret" not in html and "Type the sensitive value again" in row_of["environment-3"]


def test_a_viewer_cannot_open_the_editor(client, world):
    client.force_login(world.vera)
    assert client.get(reverse("web:environment-edit", args=[world.environment.pk])).status_code == 404
