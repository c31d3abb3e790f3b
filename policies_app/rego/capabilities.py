"""The one list of Rego builtins the platform runs (OPA's "capabilities"), applied to every module compiled.

Every module reaches an engine through the supervised worker: policy modules through prepare.py (saving,
syncing, the editor's check, drafts, replays, "try it", catalog installs, deployments) and test modules
through testing.py (tests on save and sync, ``manage.py policy_test``, the API's test run); the worker
checks each one here before an engine compiles it, whoever asked. A refused builtin is a
PolicyCompileError with file, line and column, so a module that uses one never runs at all.

Why not let the engines refuse: regorus compiles ``http.send`` and evaluates it to undefined (a deny rule
that depends on it silently never fires), and opa-golib-python-bindings 0.4.4 builds OPA's ``rego.New``
without a capabilities option (its bridge exposes none), while a builtin registered under the same name
does not replace OPA's own. So we read the modules ourselves, twice:

- on regorus's syntax tree (the complete reading): every reference whose leading names spell a refused
  builtin, wherever it stands: a call, the target or the value of ``with`` (``with count as http.send``
  makes every ``count`` call send a request in OPA), a rule or function head, an import, a package. A
  name that would shadow a builtin is refused too, whatever it resolves to: the check stays one rule.
- on the token stream (lexer.py), which does not depend on regorus's parser: OPA parses the text itself,
  and a difference between the two parsers must not let a call through.

``ALLOWED_BUILTINS`` is the review record of OPA 1.20's other builtins: a test compares it with the
builtins OPA and regorus actually have, so that an engine upgrade that adds one fails until someone
reviews the newcomer here. docs/security.md ("The shared guards") explains each decision.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from policies_app.rego.contract import PolicyCompileError
from policies_app.rego.lexer import code_tokens, find_calls, tokenize
from policies_app.rego.syntax_tree import REF_KINDS, Node, ParsedModule, parse_module, ref_path

OPA_VERSION = "1.20"

# Refused, and why (each reason follows the builtin's name in the error). Each was tried on both engines
# before it was listed: tests/engine/test_rego_capabilities.py keeps the attempts.
REFUSED_BUILTINS: dict[str, str] = {
    "http.send": (
        "reaches the network: OPA sends the request from the server to any address, internal ones "
        "included, and hands the response to the policy, where a message or a test report shows it"
    ),
    "net.lookup_ip_addr": (
        "reaches the network: it resolves names with the server's DNS, which maps internal names and "
        "carries data out in the names looked up"
    ),
    "opa.runtime": (
        "exposes the server: OPA fills it with the process's environment variables and configuration "
        "whenever the host provides them"
    ),
    "json.match_schema": (
        "reaches the network and the server's files: OPA follows $ref and $id in the schema, fetching "
        "http(s) URLs and reading file:// paths"
    ),
    "json.verify_schema": (
        "reaches the network and the server's files: OPA follows $ref and $id in the schema, fetching "
        "http(s) URLs and reading file:// paths"
    ),
}

# Reviewed and allowed: they compute on their arguments only. Notes on the ones worth a second look:
# time.now_ns, rand.intn, uuid.rfc4122 are not deterministic, which is no security matter; time.*
# with a time-zone name reads Go's zoneinfo database only (Go refuses names with "..", "/" first);
# io.jwt.* take their keys as arguments and fetch nothing (a jku or x5u header is ignored);
# crypto.x509.* verify against the certificates given, without fetching; providers.aws.sign_req
# signs a request and never sends it; rego.parse_module parses text and runs nothing; print and
# trace output is captured by the worker and discarded; net.cidr_expand and the rest can build
# large values, which the worker's time and memory limits bound (supervisor.py); the regex and
# glob builtins run on RE2 (OPA) and Rust's regex (regorus), neither of which backtracks.
ALLOWED_BUILTINS = frozenset(
    {
        # operators and comparisons
        *("and", "or", "assign", "eq", "equal", "neq", "gt", "gte", "lt", "lte"),
        *("plus", "minus", "mul", "div", "rem", "abs", "ceil", "floor", "round"),
        *("intersection", "union", "set_diff", "internal.member_2", "internal.member_3"),
        # aggregates, arrays, objects, types
        *("all", "any", "count", "max", "min", "product", "sort", "sum"),
        *("array.concat", "array.flatten", "array.reverse", "array.slice"),
        *("object.filter", "object.get", "object.keys", "object.remove", "object.subset"),
        *("object.union", "object.union_n", "json.filter", "json.patch", "json.remove", "walk"),
        *("cast_array", "cast_boolean", "cast_null", "cast_object", "cast_set", "cast_string"),
        *("is_array", "is_boolean", "is_null", "is_number", "is_object", "is_set", "is_string"),
        *("type_name", "to_number", "numbers.range", "numbers.range_step", "format_int"),
        *("bits.and", "bits.lsh", "bits.negate", "bits.or", "bits.rsh", "bits.xor"),
        *("graph.reachable", "graph.reachable_paths", "units.parse", "units.parse_bytes"),
        # strings
        *("concat", "contains", "endswith", "startswith", "indexof", "indexof_n", "lower", "upper"),
        *("replace", "split", "sprintf", "substring", "trim", "trim_left", "trim_prefix"),
        *("trim_right", "trim_space", "trim_suffix", "strings.any_prefix_match"),
        *("strings.any_suffix_match", "strings.count", "strings.render_template"),
        *("strings.replace_n", "strings.reverse", "strings.split_n", "internal.template_string"),
        *("re_match", "regex.find_all_string_submatch_n", "regex.find_n", "regex.globs_match"),
        *("regex.is_valid", "regex.match", "regex.replace", "regex.split", "regex.template_match"),
        *("glob.match", "glob.quote_meta"),
        # encodings
        *("base64.decode", "base64.encode", "base64.is_valid", "base64url.decode"),
        *("base64url.encode", "base64url.encode_no_pad", "hex.decode", "hex.encode"),
        *("json.is_valid", "json.marshal", "json.marshal_with_options", "json.unmarshal"),
        *("yaml.is_valid", "yaml.marshal", "yaml.unmarshal", "urlquery.decode"),
        *("urlquery.decode_object", "urlquery.encode", "urlquery.encode_object"),
        *("uri.is_valid", "uri.parse", "semver.compare", "semver.is_valid"),
        *("graphql.is_valid", "graphql.parse", "graphql.parse_and_verify", "graphql.parse_query"),
        *("graphql.parse_schema", "graphql.schema_is_valid"),
        # cryptography and tokens
        *("crypto.hmac.equal", "crypto.hmac.md5", "crypto.hmac.sha1", "crypto.hmac.sha256"),
        *("crypto.hmac.sha512", "crypto.md5", "crypto.sha1", "crypto.sha256"),
        *("crypto.parse_private_keys", "crypto.x509.parse_and_verify_certificates"),
        *("crypto.x509.parse_and_verify_certificates_with_options",),
        *("crypto.x509.parse_certificate_request", "crypto.x509.parse_certificates"),
        *("crypto.x509.parse_keypair", "crypto.x509.parse_rsa_private_key"),
        *("io.jwt.decode", "io.jwt.decode_verify", "io.jwt.encode_sign", "io.jwt.encode_sign_raw"),
        *("io.jwt.verify_eddsa", "io.jwt.verify_es256", "io.jwt.verify_es384"),
        *("io.jwt.verify_es512", "io.jwt.verify_hs256", "io.jwt.verify_hs384"),
        *("io.jwt.verify_hs512", "io.jwt.verify_ps256", "io.jwt.verify_ps384"),
        *("io.jwt.verify_ps512", "io.jwt.verify_rs256", "io.jwt.verify_rs384"),
        *("io.jwt.verify_rs512", "providers.aws.sign_req"),
        # network values (computed, never looked up)
        *("net.cidr_contains", "net.cidr_contains_matches", "net.cidr_expand", "net.cidr_intersects"),
        *("net.cidr_is_valid", "net.cidr_merge", "net.cidr_overlap"),
        # time, randomness, identifiers
        *("time.add_date", "time.clock", "time.date", "time.diff", "time.format", "time.now_ns"),
        *("time.parse_duration_ns", "time.parse_ns", "time.parse_rfc3339_ns", "time.weekday"),
        *("rand.intn", "uuid.parse", "uuid.rfc4122"),
        # Rego itself
        *("rego.metadata.chain", "rego.metadata.rule", "rego.parse_module"),
        *("print", "internal.print", "trace", "internal.test_case"),
    }
)

_REFUSED_PATHS = {tuple(name.split(".")): name for name in REFUSED_BUILTINS}


@dataclass(frozen=True)
class RefusedBuiltin:
    """Where a module names a refused builtin."""

    builtin: str
    file: str
    line: int
    column: int

    def error(self, policy: str = "") -> PolicyCompileError:
        return PolicyCompileError(
            f"{self.builtin} {REFUSED_BUILTINS[self.builtin]}; it is not allowed in approval "
            "policies or their tests",
            policy=policy,
            file=self.file,
            line=self.line,
            column=self.column,
        )


def refused_in_tokens(filename: str, source: str) -> RefusedBuiltin | None:
    """The first refused builtin the token stream names (strings, comments and fields excluded)."""
    code = code_tokens(tokenize(source))
    for builtin, first, _last in find_calls(code, REFUSED_BUILTINS.keys()):
        return RefusedBuiltin(builtin, filename, code[first].line, code[first].column)
    return None


def _references(node: object) -> Iterator[Node]:
    """Every reference node of a syntax tree (outermost first), in whatever part of the tree it stands."""
    if isinstance(node, dict):
        if len(node) == 1 and next(iter(node)) in REF_KINDS:
            yield node
        for value in node.values():
            yield from _references(value)
    elif isinstance(node, list):
        for value in node:
            yield from _references(value)


def _root_var(refr: Node) -> Node:
    while "Var" not in refr:
        refr = refr[next(iter(refr))]["refr"]
    return refr["Var"]


def refused_in_tree(module: ParsedModule) -> RefusedBuiltin | None:
    """The first refused builtin, in source order, that a reference of the module's syntax tree names."""
    found = []
    for refr in _references(module.tree):
        path = ref_path(refr)
        for refused, builtin in _REFUSED_PATHS.items():
            if path[: len(refused)] == refused:
                found.append((_root_var(refr)["span"]["start"], builtin))
    if not found:
        return None
    start, builtin = min(found)
    line_start = module.data.rfind(b"\n", 0, start) + 1
    line = module.data.count(b"\n", 0, start) + 1
    column = len(module.data[line_start:start].decode("utf-8")) + 1
    return RefusedBuiltin(builtin, module.filename, line, column)


def require_allowed_builtins(filename: str, source: str, *, rego_v0: bool) -> ParsedModule:
    """The module parsed, when it names no refused builtin; PolicyCompileError with the position of
    the first refused one, or of a syntax error."""
    refused = refused_in_tokens(filename, source)
    if refused is not None:
        raise refused.error()
    module = parse_module(filename, source, rego_v0)
    refused = refused_in_tree(module)
    if refused is not None:
        raise refused.error()
    return module


def refused_in_test_module(filename: str, source: str, *, rego_v0: bool) -> RefusedBuiltin | None:
    """A test module's refused builtin, checked when its policy is saved or synced. A test module that
    does not parse names nothing that could run: its test run reports the syntax error, as before."""
    refused = refused_in_tokens(filename, source)
    if refused is not None:
        return refused
    try:
        module = parse_module(filename, source, rego_v0)
    except PolicyCompileError:
        return None
    return refused_in_tree(module)
