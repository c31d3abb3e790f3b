"""YAML as Terraform's yamlencode() writes it and yamldecode() reads it.

Terraform's YAML (cty's fork of go-yaml, itself a port of libyaml) writes every string double-quoted,
multi-line strings as literal blocks when they can be, sequences inside mappings without indentation,
and folds long quoted strings at 80 columns. We emit the same text so that a configuration's rendered
YAML compares equal to what terraform would produce. Decoding uses PyYAML
adjusted to resolve plain scalars as cty does (see _TerraformLoader).
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

from policies_app.iac.type_constraints import format_number, normalize_number
from policies_app.iac.values import TfSet

_BEST_WIDTH = 80
_ESCAPES = {
    "\0": "0",
    "\a": "a",
    "\b": "b",
    "\t": "t",
    "\n": "n",
    "\v": "v",
    "\f": "f",
    "\r": "r",
    "\x1b": "e",
    '"': '"',
    "\\": "\\",
    "\x85": "N",
    "\xa0": "_",
    "\u2028": "L",
    "\u2029": "P",
}
_BREAKS = "\r\n\x85\u2028\u2029"


def _printable(ch: str) -> bool:
    code = ord(ch)
    return (
        code == 0x0A
        or 0x20 <= code <= 0x7E
        or code == 0x85
        or 0xA0 <= code <= 0xD7FF
        or (0xE000 <= code <= 0xFFFD and code != 0xFEFF)
        or 0x10000 <= code <= 0x10FFFF
    )


def _double_quoted(text: str, indent: int, column: int, allow_breaks: bool) -> str:
    out = ['"']
    column += 1
    spaces = False
    for i, ch in enumerate(text):
        if not _printable(ch) or ch in _BREAKS or ch in '"\\' or ch == "\ufeff":
            if ch in _ESCAPES:
                piece = "\\" + _ESCAPES[ch]
            elif ord(ch) <= 0xFF:
                piece = f"\\x{ord(ch):02X}"
            elif ord(ch) <= 0xFFFF:
                piece = f"\\u{ord(ch):04X}"
            else:
                piece = f"\\U{ord(ch):08X}"
            out.append(piece)
            column += len(piece)
            spaces = False
        elif ch == " ":
            if allow_breaks and not spaces and column > _BEST_WIDTH and 0 < i < len(text) - 1:
                out.append("\n" + " " * indent)
                column = indent
                if text[i + 1] == " ":
                    out.append("\\")
                    column += 1
            else:
                out.append(ch)
                column += 1
            spaces = True
        else:
            out.append(ch)
            column += 1
            spaces = False
    out.append('"')
    return "".join(out)


def _literal_allowed(text: str) -> bool:
    if "\n" not in text or text.endswith(" "):
        return False
    if any(not _printable(ch) or ch in "\r\ufeff" for ch in text):
        return False
    return not re.search(r" [\n\x85\u2028\u2029]", text)


def _literal(text: str, indent: int) -> tuple[str, bool]:
    hints = "|"
    if text[:1] in (" ", "\n"):
        hints += "2"
    if not text.endswith("\n"):
        hints += "-"
    elif text == "\n" or text.endswith("\n\n"):
        hints += "+"
    lines = text.split("\n")
    if text.endswith("\n"):
        lines = lines[:-1]
    body = "".join("\n" + (" " * indent + line if line else "") for line in lines)
    return hints + body, hints.endswith("+")


def _scalar(value: Any, indent: int, column: int) -> tuple[str, bool]:
    """The scalar's text and whether it leaves the document open-ended (plain or keep-chomped)."""
    if value is None:
        return "null", True
    if isinstance(value, bool):
        return ("true" if value else "false"), True
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return (".nan" if value != value else (".inf" if value > 0 else "-.inf")), True
        return format_number(value), True
    if _literal_allowed(value):
        return _literal(value, indent)
    return _double_quoted(value, indent, column, allow_breaks=True), False


def _node(value: Any, indent: int, column: int) -> tuple[str, bool]:
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]", False
        items = []
        open_ended = False
        for item in value:
            text, open_ended = _node(item, indent + 2, indent + 2)
            items.append("- " + text)
        return ("\n" + " " * indent).join(items), open_ended
    if isinstance(value, dict):
        if not value:
            return "{}", False
        entries = []
        open_ended = False
        for key in sorted(value):
            item = value[key]
            if "\n" in key or len(key) > 128:
                key_text, _ = _scalar(key, indent + 2, indent + 2)
                value_text, open_ended = _node(item, indent + 2, indent + 2)
                entries.append(f"? {key_text}\n{' ' * indent}: {value_text}")
                continue
            key_text = _double_quoted(key, indent, indent, allow_breaks=False)
            if isinstance(item, dict) and item:
                value_text, open_ended = _node(item, indent + 2, indent + 2)
                entries.append(f"{key_text}:\n{' ' * (indent + 2)}{value_text}")
            elif isinstance(item, (list, tuple)) and item:
                value_text, open_ended = _node(item, indent, indent)
                entries.append(f"{key_text}:\n{' ' * indent}{value_text}")
            else:
                value_text, open_ended = (
                    _scalar(item, indent + 2, indent + len(key_text) + 2)
                    if not isinstance(item, (dict, list, tuple))
                    else _node(item, indent + 2, indent + 2)
                )
                entries.append(f"{key_text}: {value_text}")
        return ("\n" + " " * indent).join(entries), open_ended
    return _scalar(value, indent, column)


def yaml_encode(value: Any) -> str:
    if isinstance(value, (list, tuple, dict)) and not isinstance(value, TfSet) or isinstance(value, TfSet):
        text, _ = _node(value, 0, 0)
        return text + "\n"
    text, open_ended = _scalar(value, 2 if isinstance(value, str) else 0, 0)
    return text + ("\n...\n" if open_ended else "\n")


# --- decoding ----------------------------------------------------------------------------------------------


class _TerraformLoader(yaml.SafeLoader):
    """SafeLoader resolving plain scalars the way cty's YAML decoder does (measured against terraform 1.11):
    YAML 1.1 booleans (yes/no/on/off/y/n), decimal integers even with a leading zero, 0x and 0o integers,
    timestamps turned into RFC 3339 strings, and no sexagesimal numbers or underscores."""


_TerraformLoader.yaml_implicit_resolvers = {}
_RESOLVERS = [
    (
        "tag:yaml.org,2002:bool",
        r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
        "yYnNtTfFoO",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        list("-+0123456789."),
    ),
    (
        "tag:yaml.org,2002:timestamp",
        r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[-+][0-9]{2}:[0-9]{2}))?$",
        list("0123456789"),
    ),
]
_RESOLVERS.append(("tag:yaml.org,2002:merge", r"^(?:<<)$", "<"))
for _tag, _pattern, _first in _RESOLVERS:
    _TerraformLoader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))

_TRUE = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}


def _construct_bool(loader: yaml.SafeLoader, node: yaml.Node) -> bool:
    return loader.construct_scalar(node) in _TRUE


def _construct_int(loader: yaml.SafeLoader, node: yaml.Node) -> int:
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)


def _construct_float(loader: yaml.SafeLoader, node: yaml.Node) -> int | float:
    text = loader.construct_scalar(node).lower()
    if text.endswith((".inf", ".nan")):
        raise ValueError(f"the number {text} cannot be represented in Terraform")
    return normalize_number(float(text))


def _construct_timestamp(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    text = loader.construct_scalar(node)
    if len(text) == 10:
        return text + "T00:00:00Z"
    # Go's RFC 3339 formatting: upper-case T and Z, no fractional seconds.
    text = re.sub(r"\.[0-9]+", "", text[:10] + "T" + text[11:])
    return text[:-1] + "Z" if text.endswith("z") else text


def _construct_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return loader.construct_scalar(node)


def _construct_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Any:
    # Keys become strings while the mapping is built: 1 and true are distinct keys in YAML, equal in Python.
    data: dict[str, Any] = {}
    yield data
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key is None or isinstance(key, (list, dict, tuple)):
            raise ValueError(f"a mapping key must be a string, got {key!r}")
        name = ("true" if key else "false") if isinstance(key, bool) else str(key)
        data[name] = loader.construct_object(value_node, deep=True)


def _refuse_set(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    raise ValueError("YAML sets (!!set) are not supported")


_TerraformLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
_TerraformLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_TerraformLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_TerraformLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
_TerraformLoader.add_constructor("tag:yaml.org,2002:binary", _construct_text)
_TerraformLoader.add_constructor("tag:yaml.org,2002:set", _refuse_set)
_TerraformLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)


def yaml_decode(text: str) -> Any:
    documents = list(yaml.load_all(text, Loader=_TerraformLoader))  # noqa: S506 - a SafeLoader subclass
    if not documents:
        raise ValueError("the string holds no YAML document")
    if len(documents) > 1:
        raise ValueError("yamldecode() accepts only one YAML document")
    return _plain(documents[0])


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(value[key]) for key in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
