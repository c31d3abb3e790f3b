"""Sensitive values: marks from sensitive variables and sensitive(), through module outputs, carried through
expressions and functions as Terraform carries them (checked against terraform by the oracle case
iac_corpus/sensitive_values; these tests need no terraform)."""

from __future__ import annotations

import pytest

from policies_app.iac.values import (
    UNKNOWN,
    Sensitive,
    TfSet,
    contains_unknown,
    sensitive_tree,
    to_json_compatible,
    unknown_tree,
    unmark_deep,
)

from .test_iac_eval_support import errors, evaluate_files, outputs, resources_by_address, value_of

SECRET = Sensitive("hunter2")


def _is_sensitive(text: str, **names) -> bool:
    return value_of(f"issensitive({text})", names, variables={"secret": SECRET, "plain": "p"})


@pytest.mark.parametrize(
    "expression",
    [
        "var.secret",
        '"x-${var.secret}"',
        "upper(var.secret)",
        "length(var.secret)",
        'var.secret == "x"',
        "length(var.secret) + 1",
        "{ a = var.secret }.a",
        "[var.plain, var.secret][1]",
        'var.secret != "" ? 1 : 2',
        "jsonencode({ a = var.secret })",
        "sensitive(1)",
        "sensitive(null)",
        'try(var.secret, "x")',
        "!sensitive(true)",
        '{ a = 1 }[sensitive("a")]',
    ],
)
def test_a_value_derived_from_a_sensitive_one_is_sensitive(expression):
    assert _is_sensitive(expression) is True


@pytest.mark.parametrize(
    "expression",
    [
        "var.plain",
        "{ a = var.secret }",
        "[var.plain, var.secret]",
        "[var.plain, var.secret][0]",
        "merge({ a = var.secret }, { b = 1 })",
        "merge({ a = var.secret }, { b = 1 }).b",
        'concat([var.secret], ["x"])[1]',
        "keys({ a = var.secret })",
        "length({ a = var.secret })",
        "[for s in [var.secret] : s]",
        "nonsensitive(var.secret)",
        'nonsensitive("not a secret")',
        "can(var.secret)",
        'true ? { a = var.secret } : { a = "x" }',
    ],
)
def test_marks_stay_where_they_were_put_as_in_terraform(expression):
    assert _is_sensitive(expression) is False


def test_issensitive_of_an_unknown_value_is_unknown_unless_it_is_marked():
    assert value_of("issensitive(var.u)", variables={"u": UNKNOWN}) is UNKNOWN
    assert value_of("issensitive(sensitive(var.u))", variables={"u": UNKNOWN}) is True


def test_nonsensitive_removes_only_the_values_own_mark():
    value = value_of("nonsensitive(sensitive({ a = var.secret, b = 1 }))", variables={"secret": SECRET})
    assert value == {"a": SECRET, "b": 1}


def test_operators_compute_on_the_value_under_the_mark():
    assert value_of("var.n * 2 + 1", variables={"n": Sensitive(20)}) == Sensitive(41)
    assert value_of('"${var.secret}!"', variables={"secret": SECRET}) == Sensitive("hunter2!")
    assert value_of("[for c in var.l : upper(c)]", variables={"l": Sensitive(["a", "b"])}) == Sensitive(
        ["A", "B"]
    )


def test_the_value_helpers_see_through_marks():
    value = {"a": Sensitive(UNKNOWN), "b": [1, Sensitive({"c": 2})], "d": "plain"}
    assert contains_unknown(value)
    assert to_json_compatible(value) == {"a": None, "b": [1, {"c": 2}], "d": "plain"}
    assert unknown_tree(value) == {"a": True}
    assert sensitive_tree(value) == {"a": True, "b": [False, True]}
    assert unmark_deep(value) == {"a": UNKNOWN, "b": [1, {"c": 2}], "d": "plain"}
    assert unmark_deep(TfSet([Sensitive("b"), "a"])) == TfSet(["a", "b"])


SENSITIVE_CONFIG = {
    "main.tf": """
variable "password" {
  type      = string
  default   = "hunter2"
  sensitive = true
}
locals {
  credentials = { user = "admin", password = var.password }
}
resource "terraform_data" "db" {
  input = { credentials = local.credentials, ports = [80, var.password] }
}
resource "terraform_data" "public" {
  input = "nothing to hide"
}
output "credentials" {
  value     = local.credentials
  sensitive = true
}
output "user" { value = local.credentials.user }
""",
}


def test_resources_mark_their_sensitive_attributes_like_a_plans_after_sensitive(tmp_path):
    resources = resources_by_address(evaluate_files(tmp_path, SENSITIVE_CONFIG))
    assert resources["terraform_data.db"]["sensitive"] == {
        "input": {"credentials": {"password": True}, "ports": [False, True]}
    }
    assert resources["terraform_data.db"]["values"]["input"]["credentials"]["password"] == "hunter2"
    assert resources["terraform_data.public"]["sensitive"] == {}


def test_an_output_declared_sensitive_is_reported_so_and_is_not_an_error(tmp_path):
    document = evaluate_files(tmp_path, SENSITIVE_CONFIG)
    assert errors(document) == []
    assert document["outputs"]["credentials"]["sensitive"] is True
    assert document["outputs"]["user"] == {"value": "admin", "sensitive": False, "unknown": False}


def test_a_root_output_holding_a_sensitive_value_without_saying_so_is_an_error(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
variable "sec" {
  default   = "s"
  sensitive = true
}

output "leak" {
  value = { nested = [var.sec] }
}
"""
        },
    )
    [error] = errors(document)
    assert error["summary"] == "Output refers to sensitive values"
    assert "'leak'" in error["detail"]
    assert (error["file"].endswith("main.tf"), error["line"], error["column"]) == (
        True,
        7,
        1,
    )  # the text starts with a newline


def test_a_child_modules_outputs_carry_their_values_marks_not_their_declaration(tmp_path):
    # What terraform 1.11 plans (iac_corpus/module_output_declared_sensitive): `sensitive = true` on a
    # child's output does not make the caller's value sensitive; the value's own marks do.
    document = evaluate_files(
        tmp_path,
        {
            "child/main.tf": """
variable "token" {
  sensitive = true
}
output "token" { value = var.token }
output "declared" {
  value     = "x"
  sensitive = true
}
""",
            "main.tf": """
module "child" {
  source = "./child"
  token  = "t"
}
output "token" { value = nonsensitive(module.child.token) }
output "declared" { value = module.child.declared }
output "leak" { value = module.child.token }
""",
        },
    )
    [error] = errors(document)
    assert error["summary"] == "Output refers to sensitive values" and "'leak'" in error["detail"]
    assert outputs(document)["token"] == "t" and outputs(document)["declared"] == "x"


def test_for_each_refuses_a_sensitive_collection_but_accepts_sensitive_elements(tmp_path):
    document = evaluate_files(
        tmp_path,
        {
            "main.tf": """
variable "names" {
  type      = set(string)
  default   = ["a"]
  sensitive = true
}
variable "sec" {
  default   = "s"
  sensitive = true
}
resource "terraform_data" "refused" {
  for_each = var.names
}
resource "terraform_data" "by_key" {
  for_each = { k = var.sec }
  input    = each.value
}
resource "terraform_data" "counted" {
  count = length(var.sec)
}
"""
        },
    )
    [error] = errors(document)
    assert error["summary"] == "Invalid for_each argument" and "sensitive" in error["detail"]
    resources = resources_by_address(document)
    assert resources['terraform_data.by_key["k"]']["sensitive"] == {"input": True}
    assert "terraform_data.counted[0]" in resources
