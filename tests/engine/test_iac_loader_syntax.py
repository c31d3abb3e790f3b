"""Native syntax (.tf/.tofu) -> syntax tree: every expression form, templates, heredocs, errors."""

from __future__ import annotations

import pytest

from policies_app.iac import syntax_nodes
from policies_app.iac.hcl_native import parse_native
from policies_app.iac.loader import ConfigSyntaxError, parse_expression, parse_template, parse_traversal

from .iac_render import render, render_body


def expr(text: str) -> str:
    return render(parse_expression(text))


def body(text: str) -> list[str]:
    return render_body(parse_native(text, "main.tf").body)


# ---- literals ----


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("1.5", 1.5),
        ("1e3", 1000),
        ("true", True),
        ("false", False),
        ("null", None),
        ('"plain"', "plain"),
        ('""', ""),
        (r'"a\nb\t\"q\" \\ \u00e9"', 'a\nb\t"q" \\ é'),
        ('"$${x} %%{y}"', "${x} %{y}"),
    ],
)
def test_it_reads_literals_with_their_python_values(text, value):
    node = parse_expression(text)
    assert type(node) is syntax_nodes.Literal
    assert node.value == value
    assert type(node.value) is type(value)


def test_it_keeps_whole_numbers_as_int_and_fractions_as_float():
    assert type(parse_expression("2.0").value) is int
    assert type(parse_expression("0.25").value) is float


# ---- templates ----


def test_it_parses_interpolation_into_template_parts():
    assert expr('"hi ${var.name}!"') == 'T["hi " ${var.name} "!"]'


def test_it_returns_the_inner_expression_for_a_template_that_is_one_interpolation():
    assert expr('"${var.list}"') == "var.list"
    assert expr('" ${var.list}"') == 'T[" " ${var.list}]'


def test_it_nests_if_and_for_directives():
    assert expr('"%{ if a }yes%{ else }no%{ endif }"') == 'T[%if(a){"yes"}else{"no"}]'
    assert expr('"%{ for k, v in m }${k}=${v};%{ endfor }"') == 'T[%for(k, v in m){${k} "=" ${v} ";"}]'
    assert expr('"%{ for x in xs }${x}%{ endfor }"') == "T[%for(x in xs){${x}}]"


def test_it_applies_strip_markers_to_the_neighbouring_text():
    assert expr('"a  %{~ if c ~}  b  %{~ endif ~}  z"') == 'T["a" %if(c){"b"}else{} "z"]'


def test_it_rejects_an_unclosed_directive_with_a_position():
    with pytest.raises(ConfigSyntaxError) as info:
        parse_expression('"%{ if a }yes"', "x.tf", 3, 5)
    assert info.value.file == "x.tf" and info.value.line == 3


def test_it_parses_heredocs_with_interpolation_and_keeps_the_final_newline():
    lines = body("x = <<EOT\nhello ${name}\n  there\nEOT\n")
    assert lines == ['x = T["hello " ${name} "\\n  there\\n"]']


def test_it_strips_the_common_indentation_of_an_indented_heredoc():
    lines = body("x = <<-EOT\n    one\n      two\n\n    three\n    EOT\ny = 1\n")
    assert lines == ['x = "one\\n  two\\n\\nthree\\n"', "y = 1"]


def test_it_parses_directives_inside_heredocs():
    lines = body("x = <<EOT\n%{ for s in list ~}\n- ${s}\n%{ endfor ~}\nEOT\n")
    assert lines == ['x = T[%for(s in list){"- " ${s} "\\n"}]']


def test_it_parses_string_templates_for_templatefile_and_json():
    assert render(parse_template("Hello, ${name}!")) == 'T["Hello, " ${name} "!"]'
    assert render(parse_template("${x}")) == "x"
    assert render(parse_template("no interpolation")) == '"no interpolation"'
    assert render(parse_template("$${not} %%{this}")) == '"${not} %{this}"'
    assert (
        render(parse_template('${join(",", [for s in l : "${s}!"])}'))
        == 'join(",", [for s in l : T[${s} "!"]])'
    )


def test_it_reports_template_errors_at_the_template_position():
    with pytest.raises(ConfigSyntaxError) as info:
        parse_template("line one\nbad ${1 +}", "f.tf.json", 10, 4)
    assert (info.value.file, info.value.line) == ("f.tf.json", 11)
    with pytest.raises(ConfigSyntaxError):
        parse_template("never closed ${x", "f.tf.json", 1, 1)


# ---- collections ----


def test_it_parses_tuples_with_trailing_commas_and_newlines():
    assert expr("[1, 2,\n 3,\n]") == "[1, 2, 3]"
    assert expr("[]") == "[]"


def test_it_parses_object_keys_in_every_form():
    assert expr('{a = 1, "b" : 2, (c) = 3, d.e = 4}') == '{"a"=1, "b"=2, c=3, d.e=4}'
    assert expr("{\n  a = 1\n  b = 2\n}") == '{"a"=1, "b"=2}'
    assert expr("{for = 1, in = 2}") == '{"for"=1, "in"=2}'


# ---- traversals ----


def test_it_parses_references_attributes_and_indexes():
    assert expr('var.a.b[0]["k"]') == 'var.a.b[0]["k"]'
    assert expr("aws_instance.web.0.id") == "aws_instance.web[0].id"
    assert expr("f(x).y") == "f(x).y"


def test_it_keeps_full_splat_steps_inside_each():
    assert expr("aws_instance.web[*].ebs[0].size") == "splat[*](aws_instance.web; @.ebs[0].size)"


def test_it_keeps_only_attribute_steps_inside_an_attribute_splat():
    assert expr("list.*.id") == "splat.*(list; @.id)"
    assert expr("list.*.a.0.b") == "splat.*(list; @.a[0].b)"
    # an index after `.*.attr` applies to the whole result, as in HCL
    assert expr("list.*.id[0]") == "splat.*(list; @.id)[0]"


# ---- calls and operators ----


def test_it_parses_function_calls_with_expansion_and_provider_namespaces():
    assert expr("max(1, 2)") == "max(1, 2)"
    assert expr("max(list...)") == "max(list...)"
    assert expr("concat(a,\n  b,\n)") == "concat(a, b)"
    assert expr("provider::aws::arn_parse(x)") == "provider::aws::arn_parse(x)"


@pytest.mark.parametrize(
    ("text", "tree"),
    [
        ("1 + 2 * 3", "(1 + (2 * 3))"),
        ("1 - 2 - 3", "((1 - 2) - 3)"),
        ("8 / 4 / 2", "((8 / 4) / 2)"),
        ("a || b && c", "(a || (b && c))"),
        ("a == b && c != d", "((a == b) && (c != d))"),
        ("1 + 2 < 4 == true", "(((1 + 2) < 4) == true)"),
        ("!a && b", "((!a) && b)"),
        ("-x * 2", "((-x) * 2)"),
        ("(1 + 2) * 3", "((1 + 2) * 3)"),
        ("a ? b : c ? d : e", "(a ? b : (c ? d : e))"),
        ("a > 1 ? x + 1 : y", "((a > 1) ? (x + 1) : y)"),
        ("a % 2 + 1", "((a % 2) + 1)"),
    ],
)
def test_it_applies_operator_precedence_and_associativity(text, tree):
    assert expr(text) == tree


# ---- for expressions ----


def test_it_parses_for_expressions():
    assert expr("[for s in list : upper(s)]") == "[for s in list : upper(s)]"
    assert expr("[for i, s in list : s if i > 0]") == "[for i, s in list : s if (i > 0)]"
    assert expr("{for k, v in map : v => k}") == "{for k, v in map : v => k}"
    assert (
        expr('{for s in list : substr(s, 0, 1) => s... if s != ""}')
        == '{for s in list : substr(s, 0, 1) => s... if (s != "")}'
    )


# ---- files ----


def test_it_reads_blocks_labels_and_attribute_positions():
    parsed = parse_native(
        '# c\nresource "aws_instance" "web" {\n  ami = "x" // why\n  ebs {\n    size = 1\n  }\n}\n'
        "locals { a = 1 }\n",
        "m/main.tf",
    )
    resource, local_block = parsed.body.blocks
    assert (resource.type, resource.labels, resource.pos.line) == ("resource", ["aws_instance", "web"], 2)
    assert resource.body.attributes["ami"].pos == syntax_nodes.Pos("m/main.tf", 3, 3)
    assert resource.body.blocks[0].body.attributes["size"].pos.line == 5
    assert local_block.body.attributes["a"].expr.value == 1


def test_it_keeps_the_source_text_of_a_variable_type():
    parsed = parse_native(
        'variable "a" {\n  type = list(object({ a = string, b = optional(number, 1) }))\n  default = []\n}\n'
        'variable "b" { type = string }\n',
        "v.tf",
    )
    first = parsed.body.blocks[0].body.attributes["type"].expr
    second = parsed.body.blocks[1].body.attributes["type"].expr
    assert type(first) is syntax_nodes.TypeExpr
    assert first.text == "list(object({ a = string, b = optional(number, 1) }))"
    assert render(first.expr) == 'list(object({"a"=string, "b"=optional(number, 1)}))'
    assert second.text == "string"


def test_it_accepts_a_file_without_a_final_newline_and_crlf_line_ends():
    assert body('a = 1\r\nb = "x"') == ["a = 1", 'b = "x"']


def test_it_names_file_line_and_column_of_a_syntax_error():
    with pytest.raises(ConfigSyntaxError) as info:
        parse_native('resource "a" "b" {\n  x = 1 +\n}\n', "broken.tf")
    error = info.value
    assert (error.file, error.line) == ("broken.tf", 3)
    assert str(error).startswith("broken.tf:3:")
    assert error.column >= 1


def test_it_rejects_an_attribute_defined_twice():
    with pytest.raises(ConfigSyntaxError, match="already defined"):
        parse_native("a = 1\na = 2\n", "dup.tf")


def test_it_reports_positions_of_an_expression_parsed_at_an_offset():
    node = parse_expression("var.x + 1", "vars.tfvars", 7, 5)
    assert node.pos == syntax_nodes.Pos("vars.tfvars", 7, 5)
    with pytest.raises(ConfigSyntaxError) as info:
        parse_expression("1 +", "cli", 2, 3)
    assert (info.value.file, info.value.line) == ("cli", 2)


def test_it_parses_static_references_written_as_strings():
    assert render(parse_traversal("aws_instance.web", "f.tf.json", 3)) == "aws_instance.web"
    assert render(parse_traversal('var.m["k"]', "f.tf.json", 3)) == 'var.m["k"]'
    with pytest.raises(ConfigSyntaxError) as info:
        parse_traversal("${oops}", "f.tf.json", 3)
    assert info.value.line == 3


def test_it_applies_strip_markers_inside_interpolations():
    assert expr('"a  ${~ x ~}  b"') == 'T["a" ${x} "b"]'
    # a quoted string is one literal: the marker trims escaped newlines too (terraform: "aX")
    assert expr('"a\\n  ${~ "X"}"') == 'T["a" ${"X"}]'


# The expected trees below were checked against terraform 1.11 (terraform console, templatefile()).


def test_it_trims_only_the_neighbouring_line_in_templates_and_heredocs():
    # terraform: templatefile and the JSON string give "a  \nX  b"; the heredoc adds a final newline
    assert render(parse_template('a  \n  ${~ "X" ~}  \n  b')) == 'T["a  \\n" ${"X"} "  b"]'
    assert body('h = <<EOT\na  \n  ${~ "X" ~}  \n  b\nEOT\n') == ['h = T["a  \\n" ${"X"} "  b\\n"]']


def test_it_removes_heredoc_indentation_after_strip_markers_as_terraform_does():
    # terraform: "      a\nX      b\n": the trimmed line start counts as no indentation at all
    assert body('f = <<-EOT\n      a\n    ${~ "X" ~}\n      b\n    EOT\n') == [
        'f = T["      a\\n" ${"X"} "      b\\n"]'
    ]
    # terraform: "    0:1\n    1:2\n    2:3\n" for list = [1, 2, 3]
    assert body("s = <<-EOT\n    %{~ for i, v in list ~}\n    ${i}:${v}\n    %{~ endfor ~}\n  EOT\n") == [
        's = T[%for(i, v in list){"    " ${i} ":" ${v} "\\n"}]'
    ]


def test_it_reads_empty_and_comment_only_files_as_empty_bodies():
    for text in ("", "# only a comment", "/* block\ncomment */\n\n", "// line"):
        assert body(text) == []


def test_it_leaves_a_trailing_comment_out_of_a_variable_type_text():
    parsed = parse_native('variable "a" {\n  type = map(string) # why\n}\n', "v.tf")
    assert parsed.body.blocks[0].body.attributes["type"].expr.text == "map(string)"
