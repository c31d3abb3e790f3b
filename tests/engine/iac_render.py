"""A compact text form of syntax trees, so loader tests can state whole trees in one readable line.

``(a + (b * c))``, ``var.x[0]``, ``f(a, b...)``, ``T["x-" ${a}]`` (template), ``@`` (splat item),
``splat[*](src; @.id)``, ``[for k, v in m : v if c]``, ``type(list(string))``.
"""

from __future__ import annotations

import json

from policies_app.iac import syntax_nodes


def render(node) -> str:
    kind = type(node)
    if kind is syntax_nodes.Literal:
        return json.dumps(node.value)
    if kind is syntax_nodes.TemplateExpr:
        return "T[" + " ".join(_part(p) for p in node.parts) + "]"
    if kind is syntax_nodes.TupleExpr:
        return "[" + ", ".join(render(i) for i in node.items) + "]"
    if kind is syntax_nodes.ObjectExpr:
        return "{" + ", ".join(f"{render(k)}={render(v)}" for k, v in node.items) + "}"
    if kind is syntax_nodes.Reference:
        return node.name
    if kind is syntax_nodes.GetAttr:
        return f"{render(node.target)}.{node.name}"
    if kind is syntax_nodes.Index:
        return f"{render(node.target)}[{render(node.key)}]"
    if kind is syntax_nodes.SplatItem:
        return "@"
    if kind is syntax_nodes.Splat:
        return f"splat{'[*]' if node.full else '.*'}({render(node.source)}; {render(node.each)})"
    if kind is syntax_nodes.FunctionCall:
        return f"{node.name}({', '.join(render(a) for a in node.args)}{'...' if node.expand_final else ''})"
    if kind is syntax_nodes.Conditional:
        return f"({render(node.condition)} ? {render(node.true_expr)} : {render(node.false_expr)})"
    if kind is syntax_nodes.BinaryOp:
        return f"({render(node.left)} {node.op} {render(node.right)})"
    if kind is syntax_nodes.UnaryOp:
        return f"({node.op}{render(node.operand)})"
    if kind is syntax_nodes.ForExpr:
        head = f"for {node.key_var + ', ' if node.key_var else ''}{node.value_var} in {render(node.collection)} : "
        cond = f" if {render(node.condition)}" if node.condition is not None else ""
        if node.key_expr is None:
            return f"[{head}{render(node.value_expr)}{cond}]"
        group = "..." if node.grouping else ""
        return f"{{{head}{render(node.key_expr)} => {render(node.value_expr)}{group}{cond}}}"
    if kind is syntax_nodes.TypeExpr:
        return f"type({node.text})"
    raise TypeError(f"cannot render {node!r}")


def _part(part) -> str:
    if type(part) is str:
        return json.dumps(part)
    if type(part) is syntax_nodes.Interpolation:
        return "${" + render(part.expr) + "}"
    if type(part) is syntax_nodes.IfDirective:
        then = " ".join(_part(p) for p in part.then_parts)
        other = " ".join(_part(p) for p in part.else_parts)
        return f"%if({render(part.condition)}){{{then}}}else{{{other}}}"
    if type(part) is syntax_nodes.ForDirective:
        head = f"{part.key_var + ', ' if part.key_var else ''}{part.value_var}"
        return f"%for({head} in {render(part.collection)}){{{' '.join(_part(p) for p in part.body_parts)}}}"
    raise TypeError(f"cannot render template part {part!r}")


def render_body(body: syntax_nodes.Body, indent: str = "") -> list[str]:
    """Lines describing a body: ``name = expr`` and ``block type "label" {`` ... ``}``."""
    lines = [f"{indent}{name} = {render(attr.expr)}" for name, attr in body.attributes.items()]
    for block in body.blocks:
        labels = "".join(f' "{label}"' for label in block.labels)
        lines.append(f"{indent}{block.type}{labels} {{")
        lines.extend(render_body(block.body, indent + "  "))
        lines.append(f"{indent}}}")
    return lines
