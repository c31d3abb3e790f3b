"""Encoding functions: base64decode base64encode base64gunzip base64gzip csvdecode jsondecode jsonencode
textdecodebase64 textencodebase64 urldecode urlencode yamldecode yamlencode."""

from __future__ import annotations

import base64
import binascii
import csv
import gzip
import io
import json
import math
import re
from typing import Any
from urllib.parse import quote_plus, unquote_plus

from policies_app.iac.functions.base import ArgumentError, register, want_string
from policies_app.iac.type_constraints import format_number, normalize_number

# Go's encoding/json as cty drives it: HTML-safe, the two JavaScript line separators escaped too.
_JSON_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\b": "\\b",
    "\f": "\\f",
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def json_string(text: str) -> str:
    out = ['"']
    for ch in text:
        escaped = _JSON_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def json_encode(value: Any) -> str:
    """The JSON text Terraform's jsonencode() produces: sorted keys, no spaces, HTML-safe strings."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            raise ArgumentError("a number that is not finite cannot be encoded as JSON")
        return format_number(value)
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(json_encode(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json_string(k)}:{json_encode(value[k])}" for k in sorted(value)) + "}"
    raise ArgumentError(f"cannot encode a {type(value).__name__} as JSON")


def _reject_constant(name: str) -> Any:
    raise ArgumentError(f"invalid JSON: {name} is not a JSON value")


def _json_number(text: str) -> int | float:
    return normalize_number(float(text))


def _sorted_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A later duplicate key wins, as in Go; attributes come out in key order, as terraform iterates them.
    return dict(sorted(dict(pairs).items()))


@register("jsonencode", 1)
def jsonencode(value: Any) -> str:
    return json_encode(value)


@register("jsondecode", 1)
def jsondecode(text: Any) -> Any:
    try:
        return json.loads(
            want_string(text),
            parse_float=_json_number,
            parse_constant=_reject_constant,
            object_pairs_hook=_sorted_object,
        )
    except json.JSONDecodeError as exc:
        raise ArgumentError(f"invalid JSON: {exc}") from None


@register("base64encode", 1)
def base64encode(text: Any) -> str:
    return base64.b64encode(want_string(text).encode("utf-8")).decode("ascii")


def _from_base64(text: Any) -> bytes:
    s = want_string(text)
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        raise ArgumentError(f"failed to decode base64 data {s!r}") from None


@register("base64decode", 1)
def base64decode(text: Any) -> str:
    raw = _from_base64(text)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ArgumentError("the result of decoding the provided string is not valid UTF-8") from None


_MAX_GUNZIPPED_BYTES = 64 * 1024 * 1024


@register("base64gunzip", 1)
def base64gunzip(text: Any) -> str:
    # OpenTofu's inverse of base64gzip; the output is bounded so that a small input cannot fill memory.
    compressed = _from_base64(text)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(compressed)) as stream:
            raw = stream.read(_MAX_GUNZIPPED_BYTES + 1)
    except (OSError, EOFError) as error:
        raise ArgumentError(f"failed to gunzip the decoded data: {error}") from None
    if len(raw) > _MAX_GUNZIPPED_BYTES:
        raise ArgumentError(f"the uncompressed data is larger than {_MAX_GUNZIPPED_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ArgumentError("the uncompressed data is not valid UTF-8") from None


@register("base64gzip", 1)
def base64gzip(text: Any) -> str:
    # Go's gzip writer leaves the modification time at zero; so do we, for a stable result.
    data = gzip.compress(want_string(text).encode("utf-8"), mtime=0)
    return base64.b64encode(data).decode("ascii")


# IANA character set names and aliases that terraform (golang.org/x/text's ianaindex) accepts, mapped to
# Python codecs. Python knows more aliases ("ascii", "cp1252") that terraform refuses, so we do not ask it.
_IANA_ALIASES: dict[str, tuple[str, ...]] = {
    "ascii": (
        "us-ascii",
        "ansi_x3.4-1968",
        "iso-ir-6",
        "ansi_x3.4-1986",
        "iso_646.irv:1991",
        "iso646-us",
        "us",
        "ibm367",
        "cp367",
        "csascii",
    ),
    "utf-8": ("utf-8", "csutf8"),
    "utf-16": ("utf-16", "csutf16"),
    "utf-16-be": ("utf-16be", "csutf16be"),
    "utf-16-le": ("utf-16le", "csutf16le"),
    "latin-1": (
        "iso-8859-1",
        "iso_8859-1:1987",
        "iso-ir-100",
        "iso_8859-1",
        "latin1",
        "l1",
        "ibm819",
        "cp819",
        "csisolatin1",
    ),
    "iso8859-2": ("iso-8859-2", "iso_8859-2", "latin2", "l2", "csisolatin2"),
    "iso8859-3": ("iso-8859-3", "iso_8859-3", "latin3", "l3", "csisolatin3"),
    "iso8859-4": ("iso-8859-4", "iso_8859-4", "latin4", "l4", "csisolatin4"),
    "iso8859-5": ("iso-8859-5", "iso_8859-5", "cyrillic", "csisolatincyrillic"),
    "iso8859-6": ("iso-8859-6", "iso_8859-6", "arabic", "csisolatinarabic"),
    "iso8859-7": ("iso-8859-7", "iso_8859-7", "greek", "greek8", "csisolatingreek"),
    "iso8859-8": ("iso-8859-8", "iso_8859-8", "hebrew", "csisolatinhebrew"),
    "iso8859-9": ("iso-8859-9", "iso_8859-9", "latin5", "l5", "csisolatin5"),
    "iso8859-10": ("iso-8859-10", "latin6", "l6", "csisolatin6"),
    "iso8859-13": ("iso-8859-13",),
    "iso8859-14": ("iso-8859-14", "iso_8859-14", "latin8", "l8"),
    "iso8859-15": ("iso-8859-15", "iso_8859-15", "latin-9"),
    "iso8859-16": ("iso-8859-16", "iso_8859-16", "latin10", "l10"),
    "cp1250": ("windows-1250", "cswindows1250"),
    "cp1251": ("windows-1251", "cswindows1251"),
    "cp1252": ("windows-1252", "cswindows1252"),
    "cp1253": ("windows-1253", "cswindows1253"),
    "cp1254": ("windows-1254", "cswindows1254"),
    "cp1255": ("windows-1255", "cswindows1255"),
    "cp1256": ("windows-1256", "cswindows1256"),
    "cp1257": ("windows-1257", "cswindows1257"),
    "cp1258": ("windows-1258", "cswindows1258"),
    "cp437": ("ibm437", "cp437", "437", "cspc8codepage437"),
    "cp850": ("ibm850", "cp850", "850", "cspc850multilingual"),
    "cp852": ("ibm852", "cp852", "852", "cspcp852"),
    "cp866": ("ibm866", "cp866", "866", "csibm866"),
    "koi8-r": ("koi8-r", "cskoi8r"),
    "koi8-u": ("koi8-u", "cskoi8u"),
    "mac-roman": ("macintosh", "mac", "csmacintosh"),
    "shift_jis": ("shift_jis", "ms_kanji", "csshiftjis"),
    "euc_jp": ("euc-jp", "extended_unix_code_packed_format_for_japanese", "cseucpkdfmtjapanese"),
    "iso2022_jp": ("iso-2022-jp", "csiso2022jp"),
    "euc_kr": ("euc-kr", "cseuckr"),
    "gbk": ("gbk", "cp936", "ms936", "windows-936", "csgbk"),
    "gb2312": ("gb2312", "csgb2312"),
    "gb18030": ("gb18030", "csgb18030"),
    "big5": ("big5", "csbig5"),
    "tis-620": ("tis-620", "cstis620"),
}
_IANA = {alias: codec for codec, aliases in _IANA_ALIASES.items() for alias in aliases}


def _codec(name: str) -> str:
    codec = _IANA.get(name.lower())
    if codec is None:
        raise ArgumentError(f'"{name}" is not a supported IANA encoding name or alias')
    return codec


def _encode_text(text: str, codec: str) -> bytes:
    if (
        codec == "utf-16"
    ):  # Go writes big-endian with a byte order mark; Python would pick the machine's order
        return b"\xfe\xff" + text.encode("utf-16-be")
    return text.encode(codec)


def _decode_text(data: bytes, codec: str) -> str:
    if codec == "utf-16" and not data.startswith((b"\xfe\xff", b"\xff\xfe")):
        return data.decode("utf-16-be")
    return data.decode(codec)


@register("textencodebase64", 2)
def textencodebase64(text: Any, encoding: Any) -> str:
    codec = _codec(want_string(encoding))
    try:
        data = _encode_text(want_string(text), codec)
    except UnicodeEncodeError:
        raise ArgumentError(
            f"the given string contains characters that cannot be represented in {encoding}"
        ) from None
    return base64.b64encode(data).decode("ascii")


@register("textdecodebase64", 2)
def textdecodebase64(text: Any, encoding: Any) -> str:
    codec = _codec(want_string(encoding))
    try:
        data = base64.b64decode(want_string(text), validate=True)
    except (binascii.Error, ValueError):
        raise ArgumentError("the given value is not valid base64") from None
    try:
        return _decode_text(data, codec)
    except UnicodeDecodeError:
        raise ArgumentError(f"the given value has an invalid {encoding} byte sequence") from None


@register("urlencode", 1)
def urlencode(text: Any) -> str:
    # Go's url.QueryEscape: letters, digits and -_.~ stay; space becomes "+"; the rest %XX.
    return quote_plus(want_string(text), safe="")


_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


@register("urldecode", 1)
def urldecode(text: Any) -> str:
    # OpenTofu's inverse of urlencode (Go's url.QueryUnescape): "+" is a space; a bad escape an error.
    s = want_string(text)
    if bad := _BAD_ESCAPE.search(s):
        raise ArgumentError(f'invalid URL escape "{s[bad.start() : bad.start() + 3]}"')
    try:
        return unquote_plus(s, errors="strict")
    except UnicodeDecodeError:
        raise ArgumentError("the decoded string is not valid UTF-8") from None


@register("csvdecode", 1)
def csvdecode(text: Any) -> list[dict[str, str]]:
    try:
        rows = list(csv.reader(io.StringIO(want_string(text)), strict=True))
    except csv.Error as exc:
        raise ArgumentError(f"invalid CSV: {exc}") from None
    rows = [row for row in rows if row]  # Go's csv reader skips empty lines
    if not rows:
        raise ArgumentError("missing header line")
    header, records = rows[0], rows[1:]
    if len(set(header)) != len(header):
        raise ArgumentError("duplicate column name in the header line")
    for number, record in enumerate(records, start=2):
        if len(record) != len(header):
            raise ArgumentError(f"record on line {number}: wrong number of fields")
    return [dict(zip(header, record, strict=True)) for record in records]


# The YAML library is imported by the YAML functions alone: most configurations never call them, and
# importing it costs every evaluation's start-up some 20 ms.


@register("yamlencode", 1)
def yamlencode(value: Any) -> str:
    from policies_app.iac.functions.yaml_codec import yaml_encode

    return yaml_encode(value)


@register("yamldecode", 1)
def yamldecode(text: Any) -> Any:
    import yaml

    from policies_app.iac.functions.yaml_codec import yaml_decode

    try:
        return yaml_decode(want_string(text))
    except (yaml.YAMLError, ValueError) as exc:
        raise ArgumentError(f"invalid YAML: {exc}") from None
