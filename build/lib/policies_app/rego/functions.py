"""Functions defined in more than one module of a policy, gathered into one module for regorus.

OPA compiles a function whose definitions are spread over several modules of one package (env0's
own multi-file examples define ``format(meta)`` in both allow.rego and deny.rego). regorus refuses it
("binding plan not found for parameter x"), though it accepts the same definitions in one module. So
every definition of such a function moves into one generated module per package, and its place in the
original module is left blank (the lines stay, so positions in that module do not move). Import aliases
in a moved definition are written out in full, since the generated module has no aliases of its own.
``MergedModule.lines`` maps each line of the generated module back to the user's file and line.
"""

from __future__ import annotations

from dataclasses import dataclass

from policies_app.rego.lexer import IDENT, code_tokens, tokenize
from policies_app.rego.references import ref_text
from policies_app.rego.syntax_tree import (
    ParsedModule,
    Source,
    import_aliases,
    is_function,
    kind_of,
    package_path,
    rule_name,
    span,
)

MERGED_PREFIX = "merged-functions/"


@dataclass(frozen=True)
class MergedModule:
    filename: str
    source: str
    lines: tuple[tuple[str, int], ...]  # line N of source (1-based) came from lines[N - 1]


def _rule_span(module: ParsedModule, rule: dict) -> tuple[int, int]:
    inner = rule[kind_of(rule)]["span"]
    end = inner["end"]
    # A rule ending in a string literal (``f(1) := "one"``) ends before its closing quote.
    if module.data[end : end + 1] in (b'"', b"`"):
        end += 1
    return inner["start"], end


def _expand_aliases(text: str, aliases: dict[str, str]) -> str:
    if not aliases:
        return text
    code = code_tokens(tokenize(text))
    edits = []
    for index, token in enumerate(code):
        if token.kind != IDENT or token.text not in aliases:
            continue
        if index > 0 and code[index - 1].text == ".":
            continue
        edits.append((token.start, token.end, aliases[token.text]))
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _keyword_imports(module: ParsedModule) -> bool:
    for entry in module.tree.get("imports") or []:
        start, end = span(entry["refr"])
        if module.text(start, end).startswith(("future.", "rego.")):
            return True
    return False


def merge_split_functions(
    modules: list[ParsedModule], *, rego_v0: bool
) -> tuple[list[tuple[str, str]], list[MergedModule]]:
    """The modules with split functions moved out, and one generated module per package that had any."""
    by_package: dict[tuple[str, ...], dict[tuple[str, ...], list[tuple[int, dict]]]] = {}
    for position, module in enumerate(modules):
        functions = by_package.setdefault(package_path(module), {})
        for rule in module.tree.get("rules") or []:
            if is_function(rule):
                functions.setdefault(rule_name(rule), []).append((position, rule))
    edits = [Source(module.data) for module in modules]
    merged: list[MergedModule] = []
    for package, functions in by_package.items():
        split = {
            name: rules for name, rules in functions.items() if len({position for position, _ in rules}) > 1
        }
        if not split:
            continue
        header = [f"package {ref_text(package)}"]
        contributors = {position for rules in split.values() for position, _ in rules}
        if rego_v0 and any(_keyword_imports(modules[position]) for position in contributors):
            header.append("import future.keywords")
        text_lines = list(header)
        origins: list[tuple[str, int]] = [(modules[min(contributors)].filename, 1)] * len(header)
        for rules in split.values():
            for position, rule in rules:
                module = modules[position]
                start, end = _rule_span(module, rule)
                text = _expand_aliases(module.text(start, end), import_aliases(module))
                first_line = rule[kind_of(rule)]["span"]["line"]
                for offset, line in enumerate(text.split("\n")):
                    text_lines.append(line)
                    origins.append((module.filename, first_line + offset))
                edits[position].replace(start, end, "\n" * module.text(start, end).count("\n"))
        merged.append(
            MergedModule(
                f"{MERGED_PREFIX}{'.'.join(package)}.rego", "\n".join(text_lines) + "\n", tuple(origins)
            )
        )
    if not merged:
        return [(module.filename, module.source) for module in modules], []
    return [(module.filename, edits[i].result()) for i, module in enumerate(modules)], merged
