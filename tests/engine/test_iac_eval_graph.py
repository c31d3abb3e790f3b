"""The dependency graph: ordering, cycles, and the references found in expressions."""

from __future__ import annotations

from policies_app.iac.graph import Graph, body_references, expression_references, topological_order
from policies_app.iac.hcl_native import parse_native

from .test_iac_eval_support import parse_expression


def refs(text: str) -> list[tuple]:
    return expression_references(parse_expression(text, "t.tf"))


def test_it_orders_dependencies_first_without_recursion_on_long_chains():
    graph = Graph()
    for i in range(20000):
        graph.add_edge(i, i - 1) if i else graph.add_node(0)
    order, cycles = topological_order(graph)
    assert order == list(range(20000)) and cycles == []


def test_a_lazy_order_holds_only_the_requested_nodes_and_their_ancestors_not_yet_done():
    graph = Graph()
    graph.add_node("a")
    graph.add_edge("c", "b")
    graph.add_edge("b", "a")
    graph.add_node("unrelated")
    assert topological_order(graph, ["c"])[0] == ["a", "b", "c"]
    assert topological_order(graph, ["c"], done={"a"})[0] == ["b", "c"]


def test_it_reports_each_cycle_once_in_reference_order():
    graph = Graph()
    graph.add_edge("a", "b")
    graph.add_edge("b", "c")
    graph.add_edge("c", "a")
    graph.add_edge("d", "a")
    graph.add_edge("d", "not a node")  # ignored: references to blocks that do not exist
    order, cycles = topological_order(graph)
    assert cycles == [["a", "b", "c", "a"]]
    assert sorted(order) == ["a", "b", "c", "d"]


def test_it_finds_every_kind_of_block_reference():
    assert refs("var.a + local.b") == [("var", "a"), ("local", "b")]
    assert refs("aws_instance.web[0].id") == [("resource", "aws_instance", "web")]
    assert refs("data.aws_ami.x.id") == [("data", "aws_ami", "x")]
    assert refs("module.m.out") == [("module", "m", "out")]
    assert refs('module.m["k"].out') == [("module", "m", "out")]
    assert refs("module.m") == [("module", "m", None)]
    assert refs("aws_instance.web[*].id") == [("resource", "aws_instance", "web")]
    assert refs('"${var.x}-%{for i in local.l}${i}%{endfor}"') == [("var", "x"), ("local", "l")]
    assert refs("f(var.a[local.i])") == [("local", "i"), ("var", "a")]


def test_count_each_self_path_terraform_and_for_variables_are_not_blocks():
    assert refs("count.index + each.key + self.id + path.module + terraform.workspace") == []
    assert refs("[for aws_instance in var.l : aws_instance.web]") == [("var", "l")]
    assert refs('"%{for local in var.l}${local.x}%{endfor}"') == [("var", "l")]


def test_dynamic_block_iterators_hide_blocks_of_the_same_name():
    body = (
        parse_native(
            """
resource "x" "y" {
  dynamic "ingress" {
    for_each = var.rules
    content {
      port = ingress.value
      name = local.name
    }
  }
}
""",
            "t.tf",
        )
        .body.blocks[0]
        .body
    )
    assert sorted(body_references(body)) == [("local", "name"), ("var", "rules")]
