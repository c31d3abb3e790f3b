"""The catalog's install forms, generated from each entry's JSON Schema: an input per parameter with its
default in JSON's spelling, the typed values installed as JSON values, and each problem the schema finds
shown beside its field (not at the top of the page)."""

import re

import pytest
from django.urls import reverse

from policies_app.models import ApprovalPolicy
from policies_app.policies import catalog

pytestmark = pytest.mark.django_db


def card(html: str, slug: str) -> str:
    return re.search(rf'<div class="card" id="entry-{slug}">.*?</form>', html, re.S).group(0)


def row(html: str, name: str) -> str:
    """The form row of one field (its input, help and errors)."""
    return re.search(
        rf'<div class="form-row[^"]*">(?:(?!<div class="form-row).)*?name="{name}".*?(?=<div class="form-row|<p><button)',
        html,
        re.S,
    ).group(0)


def test_every_parameter_has_an_input_with_its_default_in_json_spelling(client, world):
    client.force_login(world.admin)
    html = client.get(reverse("web:policy-catalog")).content.decode()
    exposure = card(html, "no-public-exposure")
    assert 'type="checkbox" name="no-public-exposure-check_buckets"' in exposure
    assert "Default: true." in exposure and "True" not in exposure and "None" not in exposure
    assert "Default: []." in exposure, "a list's default in JSON"
    window = card(html, "change-window")
    assert re.search(r'name="change-window-days" value="Monday"[^>]*checked', window), (
        "ticks for a list of choices"
    )
    assert not re.search(r'name="change-window-days" value="Sunday"[^>]*checked', window)
    assert re.search(r"<legend><code>days</code></legend>", window), "a group of ticks under its name"
    assert re.search(r'<select name="change-window-outside"', window)
    assert 'name="change-window-start_hour" value="9"' in window
    assert "<textarea" not in card(html, "require-approvers"), "no raw JSON"
    for entry in catalog.catalog().values():
        for parameter in entry.schema.get("properties", {}):
            assert f'name="{entry.slug}-{parameter}"' in html, (entry.slug, parameter)


def test_typed_values_are_installed_as_json_values(client, world):
    client.force_login(world.admin)
    response = client.post(
        reverse("web:policy-catalog"),
        {
            "entry": "change-window",
            "change-window-name": "office hours",
            "change-window-days": ["Monday", "Friday"],
            "change-window-start_hour": "8",
            "change-window-end_hour": "18",
            "change-window-timezone": "Europe/Paris",
            "change-window-outside": "pending",
        },
    )
    assert response.status_code == 302, response.content.decode()
    policy = ApprovalPolicy.objects.get(name="office hours")
    assert policy.active_revision.data == {
        "policyData": {
            "days": ["Monday", "Friday"],
            "start_hour": 8,
            "end_hour": 18,
            "timezone": "Europe/Paris",
            "outside": "pending",
        }
    }
    response = client.post(
        reverse("web:policy-catalog"),
        {
            "entry": "no-public-exposure",
            "no-public-exposure-name": "exposure",
            "no-public-exposure-check_ingress": "on",
            "no-public-exposure-allowed_ports": "443\n80\n",
        },
    )
    assert response.status_code == 302, response.content.decode()
    assert ApprovalPolicy.objects.get(name="exposure").active_revision.data == {
        "policyData": {"check_buckets": False, "check_ingress": True, "allowed_ports": [443, 80]}
    }


def test_problems_are_shown_beside_their_field(client, world):
    client.force_login(world.admin)
    response = client.post(
        reverse("web:policy-catalog"),
        {
            "entry": "change-window",
            "change-window-name": "bad window",
            "change-window-start_hour": "30",
            "change-window-end_hour": "18",
            "change-window-timezone": "Mars/Olympus",
            "change-window-outside": "deny",
        },
    )
    html = response.content.decode()
    assert response.status_code == 400 and not ApprovalPolicy.objects.filter(name="bad window").exists()
    window = card(html, "change-window")
    assert "30 is greater than the maximum of 23" in row(window, "change-window-start_hour")
    assert "is not a known timezone" in row(window, "change-window-timezone")
    assert "should be non-empty" in row(window, "change-window-days") or "too short" in row(
        window, "change-window-days"
    )
    assert "maximum" not in row(window, "change-window-end_hour")
    assert 'value="30"' in window, "what was typed is kept"
    cost = client.post(
        reverse("web:policy-catalog"),
        {"entry": "cost-limits", "cost-limits-name": "cost", "cost-limits-deny_above": "ten"},
    ).content.decode()
    assert "This parameter is required." in row(card(cost, "cost-limits"), "cost-limits-approval_above")
    assert "A number" in row(card(cost, "cost-limits"), "cost-limits-deny_above")


def test_a_viewer_sees_the_parameters_but_no_form(client, world):
    client.force_login(world.vera)
    html = client.get(reverse("web:policy-catalog")).content.decode()
    assert "<form" not in html.split("<h1>")[1] and "count" in html
