"""The plan view read against terraform's own output: for a plan made by terraform (terraform_data
resources), each address has the action `terraform show` prints for it, the closing line is Terraform's,
what forces a replacement is what the plan's ``replace_paths`` say (and includes every attribute the text
marks "# forces replacement"), and no sensitive value is ever rendered; the same for a destroy plan, and
for real plans kept in /work/shared/fixtures."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from policies_app.deployments.plan_summary import KNOWN_AFTER_APPLY, SENSITIVE, summarise_plan
from policies_app.guards.masking import plan_secrets

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "plans-and-states"
VERBS = {
    "will be created": "create",
    "will be updated in-place": "update",
    "will be destroyed": "delete",
    "must be replaced": "replace",
    "will be read during apply": "read",
}
HEADER = re.compile(r"^  # (\S+) (?:is tainted, so )?(" + "|".join(VERBS) + r")$", re.MULTILINE)
FIRST = (
    'variable "token" {\n  type      = string\n  sensitive = true\n}\n'
    'resource "terraform_data" "kept" { input = "v1" }\n'
    'resource "terraform_data" "same" { input = "same" }\n'
    'resource "terraform_data" "replaced" {\n  input = { name = "a", size = 1 }\n  triggers_replace = "a"\n}\n'
    'resource "terraform_data" "removed" { input = "bye" }\n'
)
SECOND = (
    'variable "token" {\n  type      = string\n  sensitive = true\n}\n'
    'variable "region" {\n  type = string\n}\n'
    'resource "terraform_data" "kept" { input = "v2" }\n'
    'resource "terraform_data" "same" { input = "same" }\n'
    'resource "terraform_data" "replaced" {\n  input = { name = "a", size = 2 }\n  triggers_replace = "b"\n}\n'
    'resource "terraform_data" "secret" { input = var.token }\n'
    'resource "terraform_data" "where" { input = "in ${var.region}" }\n'
    'data "terraform_remote_state" "later" {\n  backend = "local"\n'
    '  config = { path = "${terraform_data.kept.output}.tfstate" }\n}\n'
)


@pytest.fixture(scope="module")
def made_by_terraform(tmp_path_factory):
    """(plan JSON, plan text, destroy JSON, destroy text), made by terraform itself."""
    if shutil.which("terraform") is None:
        pytest.skip("needs terraform on PATH")
    folder = tmp_path_factory.mktemp("terraform")
    environment = {**os.environ, "TF_CLI_CONFIG_FILE": "/dev/null", "TF_IN_AUTOMATION": "1"}

    def terraform(*args):
        result = subprocess.run(
            ["terraform", *args], cwd=folder, env=environment, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    variables = ["-var", "token=hunter2-secret", "-var", "region=eu-private-7"]
    (folder / "main.tf").write_text(FIRST)
    terraform("init", "-input=false")
    terraform("apply", "-auto-approve", "-input=false", "-var", "token=first-secret")
    (folder / "main.tf").write_text(SECOND)
    terraform("plan", "-input=false", "-out=tfplan", *variables)
    terraform("plan", "-destroy", "-input=false", "-out=destroy.tfplan", *variables)
    return (
        json.loads(terraform("show", "-json", "tfplan")),
        terraform("show", "-no-color", "tfplan"),
        json.loads(terraform("show", "-json", "destroy.tfplan")),
        terraform("show", "-no-color", "destroy.tfplan"),
    )


def actions_in_text(text):
    return {address: VERBS[verb] for address, verb in HEADER.findall(text)}


def forced_in_text(text):
    """The attributes terraform's text marks "# forces replacement", by resource address."""
    forced, address = {}, None
    for line in text.splitlines():
        header = HEADER.match(line)
        if header:
            address = header.group(1)
        elif "# forces replacement" in line and address:
            forced.setdefault(address, set()).add(line.split("=")[0].strip(" ~+-"))
    return forced


def plan_line(text):
    return next(line.strip() for line in text.splitlines() if line.startswith(("Plan:", "No changes.")))


@pytest.mark.terraform
@pytest.mark.parametrize("which", ["apply", "destroy"])
def test_each_address_has_the_action_and_the_closing_line_terraform_prints(made_by_terraform, which):
    plan, text = made_by_terraform[:2] if which == "apply" else made_by_terraform[2:]
    summary = summarise_plan(plan)
    ours = {r.address: r.action for r in summary.changing}
    assert ours == actions_in_text(text)
    assert summary.terraform_line == plan_line(text)
    if which == "apply":
        assert ours["data.terraform_remote_state.later"] == "read"
        assert [r.address for r in summary.unchanged] == ["terraform_data.same"]
    else:
        assert set(ours.values()) == {"delete"}


def rendered_actions(summary):
    """The action each address has on the page (the rendered plan view), by its row's class."""
    from django.template.loader import render_to_string

    html = render_to_string("web/_plan_summary.html", {"summary": summary})
    rows = re.findall(
        r'<details class="resource action-([\w-]+)">\s*<summary>.*?<code>([^<]+)</code> <span', html
    )
    return {address: action for action, address in rows}, html


@pytest.mark.terraform
@pytest.mark.parametrize("which", ["apply", "destroy"])
def test_the_rendered_page_gives_each_address_terraforms_action(made_by_terraform, which):
    plan, text = made_by_terraform[:2] if which == "apply" else made_by_terraform[2:]
    summary = summarise_plan(plan)
    actions, html = rendered_actions(summary)
    assert actions == actions_in_text(text)
    assert summary.terraform_line in html
    if which == "apply":
        # What forces the replacement is on the page, from the plan's replace_paths.
        assert "forced by <code>triggers_replace</code>" in html
        assert "1 resource without changes" in html


@pytest.mark.terraform
def test_what_forces_a_replacement_is_the_plans_replace_paths(made_by_terraform):
    plan, text = made_by_terraform[:2]
    summary = summarise_plan(plan)
    by_address = {r.address: r for r in summary.resources}
    replaced = by_address["terraform_data.replaced"]
    expected = {
        entry["address"]: {path[0] for path in entry["change"].get("replace_paths") or []}
        for entry in plan["resource_changes"]
    }
    for resource in summary.resources:
        forced = {a.path.split(".")[0].split("[")[0] for a in resource.attributes if a.forces_replacement}
        assert forced == expected[resource.address], resource.address
        # terraform's text marks no more than the plan's replace_paths (for terraform_data it marks none).
        assert forced_in_text(text).get(resource.address, set()) <= forced
    assert replaced.replace_paths == ("triggers_replace",)
    changed = {a.path: (a.before, a.after) for a in replaced.changed_attributes}
    assert changed["triggers_replace"] == ('"a"', '"b"')
    assert changed["input.size"] == ("1", "2")
    assert changed["id"][1] == KNOWN_AFTER_APPLY
    assert [a.path for a in replaced.unchanged_attributes] == ["input.name"]
    assert replaced.attributes[: len(changed)] == replaced.changed_attributes, "changed ones first"


@pytest.mark.terraform
def test_sensitive_values_are_printed_as_terraform_prints_them_and_never_shown(made_by_terraform):
    plan, text = made_by_terraform[:2]
    assert "input  = (sensitive value)" in text
    summary = summarise_plan(plan)
    secret = {
        a.path: a.after
        for a in next(r for r in summary.resources if r.address.endswith(".secret")).attributes
    }
    assert secret["input"] == SENSITIVE
    assert "hunter2-secret" not in repr(summary)
    # A variable terraform does not hold sensitive, but the environment does: masked through masking.py.
    where = next(r for r in summarise_plan(plan).resources if r.address.endswith(".where"))
    assert {a.path: a.after for a in where.attributes}["input"] == '"in eu-private-7"'
    secrets = plan_secrets(plan, {"terraform": ["region"]}, {"terraform": {"region": "eu-private-7"}})
    masked = summarise_plan(plan, secrets)
    where = next(r for r in masked.resources if r.address.endswith(".where"))
    assert {a.path: a.after for a in where.attributes}["input"] == SENSITIVE
    assert "eu-private-7" not in repr(masked)


def fixture(*parts):
    path = FIXTURES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (a fresh clone has no ../shared)")
    return json.loads(path.read_text())


def test_a_real_plan_with_a_required_replacement_says_which_attribute_forces_it():
    summary = summarise_plan(fixture("opentofu", "show-json", "requires-replace", "output.json"))
    (resource,) = summary.resources
    assert (resource.action, resource.replace_paths) == ("replace", ("ami",))
    assert [a.path for a in resource.attributes if a.forces_replacement] == ["ami"]


def test_a_real_plan_with_a_sensitive_value_never_shows_it():
    plan = fixture("opentofu", "show-json", "sensitive-values", "output.json")
    summary = summarise_plan(plan, plan_secrets(plan, {}))
    assert {a.path: a.after for a in summary.resources[0].attributes}["ami"] == SENSITIVE
    assert "boop" not in repr(summary)


def test_every_real_plan_kept_aside_is_read_and_rendered():
    """Every plan of the shared fixtures (OpenTofu's show -json outputs, trivy's format versions 0.2 to
    1.2): each resource change has the action its ``actions`` say, and the page renders."""
    from django.template.loader import render_to_string

    files = sorted(FIXTURES.glob("opentofu/show-json/*/output.json")) + sorted(
        FIXTURES.glob("trivy-tfjson/**/*.json")
    )
    if not files:
        pytest.skip(f"{FIXTURES} is absent (a fresh clone has no ../shared)")
    read = 0
    for path in files:
        try:
            plan = json.loads(path.read_text())
        except ValueError:
            continue
        if not isinstance(plan, dict) or "resource_changes" not in plan:
            continue
        secrets = plan_secrets(plan, {})
        summary = summarise_plan(plan, secrets)
        shown = [value for r in summary.resources for a in r.attributes for value in (a.before, a.after)]
        assert not [secret for secret in secrets for value in shown if secret in value], path
        expected = {}
        for entry in plan["resource_changes"]:
            actions = entry["change"]["actions"]
            action = "replace" if {"delete", "create"} <= set(actions) else actions[0]
            if entry.get("mode") == "data" and action != "read":
                continue
            expected[entry["address"]] = "no-op" if action == "forget" else action
        assert {r.address: r.action for r in summary.resources} == expected, path
        assert "<details" in render_to_string("web/_plan_summary.html", {"summary": summary}) or not expected
        read += 1
    assert read >= 10
