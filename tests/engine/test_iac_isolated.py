"""The configuration view is computed in a child process: same document, bounded in time."""

from policies_app.iac.configuration import evaluate_configuration
from policies_app.iac.isolated import evaluate_configuration_isolated

CONFIGURATION = """
variable "names" {
  type = list(string)
}
variable "replicas" {
  type = number
}
variable "label" {
  type = string
}
resource "terraform_data" "web" {
  count = var.replicas
  input = "${var.label}-${var.names[count.index]}"
}
output "first" {
  value = terraform_data.web[0].input
}
"""


def test_the_child_process_gives_the_same_document_as_evaluating_in_process(tmp_path):
    (tmp_path / "main.tf").write_text(CONFIGURATION)
    variables = {"names": ["a", "b"], "replicas": 2, "label": "web"}
    isolated = evaluate_configuration_isolated(
        str(tmp_path), variables=variables, cache_dir=None, timeout_s=60
    )
    assert isolated == evaluate_configuration(str(tmp_path), variables=variables)
    assert isolated["outputs"]["first"]["value"] == "web-a"
    assert [r["values"]["input"] for r in isolated["resources"]] == ["web-a", "web-b"]


def test_an_evaluation_over_its_time_bound_becomes_an_error_diagnostic(tmp_path):
    (tmp_path / "main.tf").write_text(CONFIGURATION)
    document = evaluate_configuration_isolated(str(tmp_path), variables={}, cache_dir=None, timeout_s=0.01)
    assert document["resources"] == []
    assert document["diagnostics"][0]["summary"] == "Configuration evaluation timed out"


def test_errors_in_the_configuration_come_back_as_its_own_diagnostics(tmp_path):
    (tmp_path / "main.tf").write_text(CONFIGURATION)
    document = evaluate_configuration_isolated(
        str(tmp_path), variables={"replicas": 1, "label": "x"}, cache_dir=None, timeout_s=60
    )
    assert [(d["summary"], d["line"], d["column"]) for d in document["diagnostics"]] == [
        ("No value for required variable", 2, 1)
    ]


def test_the_child_process_reads_the_templates_source_and_the_provider_schema_handed_over(tmp_path):
    (tmp_path / "modules" / "m").mkdir(parents=True)
    (tmp_path / "modules" / "m" / "main.tf").write_text(
        'output "text" {\n  value = trimspace(file("${path.module}/greeting.txt"))\n}\n'
    )
    (tmp_path / "modules" / "m" / "greeting.txt").write_text("hello\n")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "main.tf").write_text(
        'module "m" {\n  source = "../modules/m"\n}\noutput "text" {\n  value = module.m.text\n}\n'
        'resource "example_thing" "t" {\n  size = "3"\n}\n'
    )
    schema = {
        "provider_schemas": {
            "example": {
                "resource_schemas": {
                    "example_thing": {"block": {"attributes": {"size": {"type": "number", "optional": True}}}}
                }
            }
        }
    }
    document = evaluate_configuration_isolated(
        str(tmp_path / "root"),
        variables={},
        cache_dir=None,
        timeout_s=60,
        source_root=str(tmp_path),
        provider_schema=schema,
    )
    assert document["diagnostics"] == []
    assert document["outputs"]["text"]["value"] == "hello"
    assert document["resources"][0]["values"] == {"size": 3}
