"""A compact text form of syntax trees, so loader tests can state whole trees in one readable line.

``(a + (b * c))``, ``var.x[0]``, ``f(a, b...)``, ``T["x-" ${a}]`` (template), ``@`` (splat item),
``splat[*](src; @.id)``, ``[for k, v in m : v if c]``, ``type(list(string))``.
"""

from __future__ import annotations

import json

from policies_app.iac import ast


def render(node) -> str:
    kind = type(node)
    if kind is ast.Literal:
        return json.dumps(node.value)
    if kind is ast.TemplateExpr:
        return "T[" + " ".join(_part(p) for p in node.parts) + "]"
    if kind is ast.TupleExpr:
        return "[" + ", ".join(render(i) for i in node.items) + "]"
    if kind is ast.ObjectExpr:
        return "{" + ", ".join(f"{render(k)}={render(v)}" for k, v in node.items) + "}"
    if kind is ast.Reference:
        return node.name
    if kind is ast.GetAttr:
        return f"{render(node.target)}.{node.name}"
    if kind is ast.Index:
        return f"{render(node.target)}[{render(node.key)}]"
    if kind is ast.SplatItem:
        return "@"
    if kind is ast.Splat:
        return f"splat{'[*]' if node.full else '.*'}({render(node.source)}; {render(node.each)})"
    if kind is ast.FunctionCall:
        return f"{node.name}({', '.join(render(a) for a in node.args)}{'...' if node.expand_final else ''})"
    if kind is ast.Conditional:
        return f"({render(node.condition)} ? {render(node.true_expr)} : {render(node.false_expr)})"
    if kind is ast.BinaryOp:
        return f"({render(node.left)} {node.op} {render(node.right)})"
    if kind is ast.UnaryOp:
        return f"({node.op}{render(node.operand)})"
    if kind is ast.ForExpr:
        head = f"for {node.key_var + ', ' if node.key_var else ''}{node.value_var} in {render(node.collection)} : "
        cond = f" if {render(node.condition)}" if node.condition is not None else ""
        if node.key_expr is None:
            return f"[{head}{render(node.value_expr)}{cond}]"
        group = "..." if node.grouping else ""
        return f"{{{head}{render(node.key_expr)} => {render(node.value_expr)}{group}{cond}}}"
    if kind is ast.TypeExpr:
        return f"type({node.text})"
    raise TypeError(f"cannot render {node!r}")


def _part(part) -> str:
    if type(part) is str:
        return json.dumps(part)
    if type(part) is ast.Interpolation:
        return "${" + render(part.expr) + "}"
    if type(part) is ast.IfDirective:
        then = " ".join(_part(p) for p in part.then_parts)
        other = " ".join(_part(p) for p in part.else_parts)
        return f"%if({render(part.condition)}){{{then}}}else{{{other}}}"
    if type(part) is ast.ForDirective:
        head = f"{part.key_var + ', ' if part.key_var else ''}{part.value_var}"
        return f"%for({head} in {render(part.collection)}){{{' '.join(_part(p) for p in part.body_parts)}}}"
    raise TypeError(f"cannot render template part {part!r}")


def render_body(body: ast.Body, indent: str = "") -> list[str]:
    """Lines describing a body: ``name = expr`` and ``block type "label" {`` ... ``}``."""
    lines = [f"{indent}{name} = {render(attr.expr)}" for name, attr in body.attributes.items()]
    for block in body.blocks:
        labels = "".join(f' "{label}"' for label in block.labels)
        lines.append(f"{indent}{block.type}{labels} {{")
        lines.extend(render_body(block.body, indent + "  "))
        lines.append(f"{indent}}}")
    return lines
