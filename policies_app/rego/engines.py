"""The engine adapters. They run only inside the supervised worker process (worker.py).

Each adapter evaluates every policy in its own namespace:
- regorus: a base engine holds the input (loaded ONCE per evaluation); each policy gets ``base.clone()``
  (the input is shared, not copied) plus its own modules and data. Only a policy that may read the shared
  library (``reaches_library``) is cloned from a second base that has it: compiling the library's
  modules again with every policy cost about a millisecond per policy, as much as a trivial policy's
  whole evaluation. The four decision rules are read by one query, so that a helper they share is
  evaluated once, each rule by its own reference (``deny := [value | value := data.env0.deny]; ...``),
  never the whole package: regorus fails open when the whole package is queried and a module imports
  its own package. That alone is not enough (a single module importing its own package still failed
  open), so references.py also rewrites such imports beforehand.
- opa: OPA 1.20's Go library (opa-golib-python-bindings). Each policy is compiled once into its own
  OpaEngine (cached); OPA takes the input with each query, so the four rules are read in one query.
  The bindings cannot keep an input between queries: OPA parses and converts the input it is given on
  every query (≈230 ms for 3.76 MB). So the input is encoded once per evaluation (not once per policy,
  as ``eval_query`` would), and each policy is given only the top-level parts of the input it can read
  (``input_keys``: its modules, and the shared library's when it can reach it, scanned for ``input.x``);
  a policy that may read the input as a whole (``input`` alone, ``input[x]``, a template string) gets all
  of it. What a policy reads is the same either way, so its decision is too.
  Better still, the policies of one evaluation are compiled together into one OpaEngine (cached per set
  of policies), each under a namespace of its own (``namespaced``: ``package env0`` becomes
  ``package __p3.env0``, ``data.x`` becomes ``data.__p3.x``, the shared library excepted), and decided by
  ONE query over the input read once. Where that cannot be done exactly (a policy reading ``data``
  with a computed key, a template string, a package under ``lib``), or where the combined compile or
  query reports any error, each policy is evaluated on its own engine as before, so an error is
  exactly that policy's own.

Why this module is long: both adapters, and what the OPA one needs to read the input once (what a
policy can read of the input, the namespacing that lets policies share one engine, the fallback), are
one piece: they share the rule values, the error translation and the caches.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from policies_app.rego.contract import DECISION_RULES, PolicyCompileError
from policies_app.rego.decisions import normalise_rule_value
from policies_app.rego.errors import parse_opa_error, parse_regorus_error
from policies_app.rego.lexer import IDENT, STRING, code_tokens, find_calls, string_value, tokenize
from policies_app.rego.opa_sprintf import EXTENSIONS
from policies_app.rego.prepare import PreparedPolicy, library_modules, library_modules_for_regorus, rule_ref

RuleValues = dict[str, list[str]]
_UNDEFINED_FUNCTION = re.compile(r"^undefined function (?P<name>[A-Za-z_][A-Za-z0-9_.]*)")
_CACHE_SIZE = 256


class PolicyRuntimeError(Exception):
    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, column: int | None = None
    ):
        super().__init__(message)
        self.message, self.file, self.line, self.column = message, file, line, column


class LRUCache(OrderedDict):
    def __init__(self, size: int = _CACHE_SIZE, on_evict: Callable[[Any], None] | None = None) -> None:
        super().__init__()
        self.size = size
        self.on_evict = on_evict

    def get_or_create(self, key: Any, create: Callable[[], Any]) -> Any:
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = create()
        self[key] = value
        if len(self) > self.size:
            _, evicted = self.popitem(last=False)
            if self.on_evict is not None:
                self.on_evict(evicted)
        return value


def _messages(values: dict[str, Any]) -> RuleValues:
    return {rule: normalise_rule_value(values.get(rule), rule=rule) for rule in DECISION_RULES}


class RegorusAdapter:
    name = "regorus"

    def __init__(self) -> None:
        import regorus

        self._regorus = regorus
        self._library_readers = LRUCache()  # by policy and its modules: scanned once per worker

    def _new_engine(self) -> Any:
        engine = self._regorus.Engine()
        for extension, arguments, function in EXTENSIONS.values():
            engine.add_extension(
                extension, arguments, function
            )  # sprintf... calls renamed to it (prepare.py)
        return engine

    def _engine(self, base: Any, policy: PreparedPolicy, *, with_library: bool) -> Any:
        engine = base.clone() if base is not None else self._new_engine()
        engine.set_gather_prints(True)  # print() in a policy must not write into our protocol or logs
        if with_library:
            engine.set_rego_v0(False)
            for filename, source in library_modules_for_regorus():
                self._add(engine, filename, source, policy)
        engine.set_rego_v0(policy.rego_version == "v0")
        for filename, source in policy.modules:
            self._add(engine, filename, source, policy)
        if policy.data_json is not None:
            engine.add_data_json(policy.data_json)
        return engine

    def _add(self, engine: Any, filename: str, source: str, policy: PreparedPolicy | None) -> None:
        try:
            engine.add_policy(filename, source)
        except Exception as error:  # regorus raises RuntimeError with a Rust report
            parsed = parse_regorus_error(str(error))
            file, line = parsed.file or filename, parsed.line
            if policy is not None:
                file, line = policy.locate(file, line)
            raise PolicyCompileError(
                parsed.message,
                policy=policy.name if policy is not None else "",
                file=file,
                line=line,
                column=parsed.column,
            ) from None

    def _rules(self, engine: Any, policy: PreparedPolicy) -> RuleValues:
        # The four rules in ONE query, as OPA reads them: a helper two rules share (a walk over every
        # resource change) is evaluated once, where four queries evaluated it once each.
        query = "; ".join(
            f"{rule} := [value | value := {rule_ref(policy.package, rule)}]" for rule in DECISION_RULES
        )
        try:
            # As JSON: the Python conversion fails on a set of objects ("unhashable type: 'dict'").
            result = json.loads(engine.eval_query_as_json(query))
        except Exception as error:
            parsed = parse_regorus_error(str(error))
            file, line = policy.locate(parsed.file, parsed.line)
            raise PolicyRuntimeError(parsed.message, file=file, line=line, column=parsed.column) from None
        [row] = result.get("result") or [{}]
        bindings = row.get("bindings") or {}
        return _messages({rule: (bindings.get(rule) or [None])[0] for rule in DECISION_RULES})

    def check(self, policy: PreparedPolicy) -> None:
        """Parse and compile (regorus compiles lazily: the rules are evaluated on an empty input)."""
        engine = self._engine(None, policy, with_library=True)
        engine.set_input_json("{}")
        try:
            self._rules(engine, policy)
        except PolicyRuntimeError as error:
            if error.message.startswith(_EXTENSION_ERRORS) or _at_formatting_call(policy, error):
                return  # a message sprintf leaves to OPA (opa_sprintf.py), which compiled the policy
            if _EVALUATION_ERRORS.search(error.message):
                # An error of evaluating, not of compiling (a body reached on the empty input, e.g.
                # through ``with input.x as 100``): OPA compiled the policy, and where regorus raises
                # this at evaluation, OPA decides (runner.py).
                return
            raise PolicyCompileError(
                error.message, policy=policy.name, file=error.file, line=error.line, column=error.column
            ) from None

    def evaluate(self, policies: list[PreparedPolicy], input_json: str, report: Callable[..., None]) -> None:
        base = self._new_engine()
        try:
            base.set_input_json(input_json)
        except Exception as error:
            raise PolicyRuntimeError(
                f"the policy input is not valid JSON: {parse_regorus_error(str(error)).message}"
            ) from None
        base.set_rego_v0(False)
        with_library: list[Any] = []  # made once, when a policy may read the library

        def library_base() -> Any:
            if not with_library:
                engine = base.clone()  # the input is shared, not read again
                for filename, source in library_modules_for_regorus():
                    try:
                        self._add(engine, filename, source, None)
                    except PolicyCompileError as error:
                        raise PolicyRuntimeError(
                            f"shared library: {error.message}",
                            file=error.file,
                            line=error.line,
                            column=error.column,
                        ) from None
                with_library.append(engine)
            return with_library[0]

        for index, policy in enumerate(policies):
            report(index, "started")
            reads_library = self._library_readers.get_or_create(
                (policy.key, policy.modules), lambda policy=policy: reaches_library(policy)
            )
            parent = library_base() if reads_library else base
            try:
                engine = self._engine(parent, policy, with_library=False)
                report(index, "outcome", messages=self._rules(engine, policy))
            except (PolicyCompileError, PolicyRuntimeError) as error:
                report(index, "outcome", error=_error_dict(error))


_EVALUATION_ERRORS = re.compile(
    r"^`[\w.]+` (?:requires|expects) |must not produce multiple outputs|(?:divide|division|modulo) by zero"
)
_EXTENSION_ERRORS = tuple(f"extension '{extension}'" for extension, _, _ in EXTENSIONS.values())


def _at_formatting_call(policy: PreparedPolicy, error: PolicyRuntimeError) -> bool:
    """Whether regorus failed at a ``sprintf`` call (renamed to the extension) before the extension
    ran: its Python bindings cannot hand over some values (a set holding an array or an object:
    "unhashable type"). At evaluation such an error sends the policy to OPA, which compiled it."""
    if error.line is None or error.column is None:
        return False
    source = dict(policy.modules).get(error.file or "")
    lines = source.splitlines() if source is not None else []
    if not 0 < error.line <= len(lines):
        return False
    calls = [lines[error.line - 1].find(f"{extension}(") for extension, _, _ in EXTENSIONS.values()]
    return any(0 <= call < error.column for call in calls)


_OPA_QUERY = "; ".join(f"{rule} := [value | value := data.env0.{rule}]" for rule in DECISION_RULES)
_WHOLE = None  # input_keys: the policy may read the whole input


def _input_reads(modules: tuple[tuple[str, str], ...]) -> tuple[frozenset[str] | None, bool]:
    """The top-level input keys these modules read (None: possibly any of them), and whether they may
    reach the shared library (``data.lib``, ``lib``, or ``data`` read with a computed key)."""
    keys: set[str] | None = set()
    library = False
    for _, source in modules:
        code = code_tokens(tokenize(source))
        for index, token in enumerate(code):
            if token.kind == STRING and token.text.startswith("$"):
                return _WHOLE, True  # a template string: expressions we do not look into
            if token.kind != IDENT:
                continue
            after = code[index + 1 : index + 4]
            dotted = len(after) >= 2 and after[0].text == "." and after[1].kind == IDENT
            if token.text == "lib" or (token.text == "data" and not dotted):
                library = True
            if token.text != "input" or keys is None:
                continue
            if dotted:
                keys.add(after[1].text)
            elif len(after) == 3 and after[0].text == "[" and after[2].text == "]":
                key = string_value(after[1])
                keys = None if key is None else keys | {key}
            else:
                keys = None  # input alone, input[x], with input as ...: any part of it
    return (None if keys is None else frozenset(keys)), library


def reaches_library(policy: PreparedPolicy) -> bool:
    """Whether the policy (as regorus gets it) may read the shared library: only then is it compiled
    with it (compiling the library again costs about a millisecond per policy and evaluation)."""
    return _input_reads(policy.modules)[1]


def input_keys(policy: PreparedPolicy) -> frozenset[str] | None:
    """The top-level keys of the input that ``policy`` can read on OPA; None when it may read any."""
    keys, library = _input_reads(policy.opa_modules)
    if keys is _WHOLE or not library:
        return keys
    library_keys, _ = _input_reads(library_modules())
    return _WHOLE if library_keys is _WHOLE else keys | library_keys


class _EncodedInput:
    """The input, parsed once, encoded once as the bindings encode it, and once per set of top-level keys
    the policies read. ``error``: what encoding it raised (the bindings raise it on every query)."""

    def __init__(self, value: Any, encode: Callable[[Any], bytes], error_type: type[Exception]) -> None:
        self.value, self._encode = value, encode
        self.error: Exception | None = None
        self._parts: dict[frozenset[str] | None, bytes] = {}
        if value is None:
            self._parts[_WHOLE] = b""  # no input at all, as eval_query(query, None) sends
            return
        try:
            self._parts[_WHOLE] = encode(value)
        except error_type as error:
            self.error = error

    def of(self, keys: frozenset[str] | None) -> bytes:
        if self.error is not None:
            raise self.error
        if keys is _WHOLE or not isinstance(self.value, dict):
            return self._parts[_WHOLE]
        if keys not in self._parts:
            self._parts[keys] = self._encode({key: self.value[key] for key in self.value if key in keys})
        return self._parts[keys]


def namespaced(modules: tuple[tuple[str, str], ...], prefix: str) -> tuple[tuple[str, str], ...] | None:
    """The modules with every package and every reference into ``data`` moved under ``data.<prefix>``
    (the shared library's ``data.lib`` excepted), so that several policies share one engine without
    seeing each other; None when that cannot be done exactly."""
    result = []
    for filename, source in modules:
        code = code_tokens(tokenize(source))
        inserts: list[int] = []
        for index, token in enumerate(code):
            if token.kind == STRING and token.text.startswith("$"):
                return None  # a template string: references we do not see
            if token.kind != IDENT or (index > 0 and code[index - 1].text == "."):
                continue  # a field named "data" or "package" is no reference
            following = code[index + 1] if index + 1 < len(code) else None
            if token.text == "package":
                if following is None or following.kind != IDENT or following.text == "lib":
                    return None
                inserts.append(following.start)
            elif token.text == "data":
                after = code[index + 2] if index + 2 < len(code) else None
                if following is None or following.text != "." or after is None or after.kind != IDENT:
                    return None  # data alone or data[x]: any package, ours or another policy's
                if after.text != "lib":
                    inserts.append(after.start)
        for position in sorted(inserts, reverse=True):
            source = f"{source[:position]}{prefix}.{source[position:]}"
        result.append((f"{prefix}/{filename}", source))
    return tuple(result)


class _Combined:
    """Several policies compiled into one OpaEngine, and the one query that reads all their rules."""

    def __init__(self, engine: Any, prefixes: list[str]) -> None:
        self.engine = engine
        self.query = "; ".join(
            f"{prefix}_{rule} := [value | value := data.{prefix}.env0.{rule}]"
            for prefix in prefixes
            for rule in DECISION_RULES
        )
        self.prefixes = prefixes

    def close(self) -> None:
        self.engine.close()


class OpaAdapter:
    """OPA itself. Every policy is compiled into its own engine, kept while the worker lives."""

    name = "opa"

    def __init__(self) -> None:
        from opa_bindings import OpaEngine, OpaError
        from opa_bindings.engine import _cstr, _dumps

        self._opa_engine = OpaEngine
        self._opa_error = OpaError
        self._cstr, self._dumps = _cstr, _dumps  # the bindings' own encodings (pinned: 0.4.4)
        self._engines = LRUCache(64, on_evict=lambda engine: engine.close())  # Go memory: freed on close
        self._input_keys = LRUCache()
        # Sets of policies compiled together (None: they cannot be, or OPA refused them together).
        self._combined = LRUCache(16, on_evict=lambda combined: combined and combined.close())

    def _compile(self, policy: PreparedPolicy) -> Any:
        engine = self._opa_engine()
        engine.print_handler = lambda message, location: None  # print() must not reach our protocol or logs
        try:
            for filename, source in (*library_modules(), *policy.opa_modules):
                engine.add_policy(filename, source)
            if policy.data_json is not None:
                engine.add_data(json.loads(policy.data_json))
            # OPA compiles every module on the first query, whatever the query: a policy it refuses
            # fails here. The query reads no rule, so nothing of the policy runs yet.
            engine.eval_query("compiled := true")
        except self._opa_error as error:
            engine.close()
            if error.code in ("parse_error", "prepare_error", "compile_error"):
                raise self._compile_error(policy, error) from None
            if error.code != "eval_error":
                raise PolicyCompileError(f"OPA: {error.message}", policy=policy.name) from None
        return engine

    def _compile_error(self, policy: PreparedPolicy, error: Exception) -> PolicyCompileError:
        parsed = parse_opa_error(error.message)
        file, line, column = parsed.file, parsed.line, parsed.column
        missing = _UNDEFINED_FUNCTION.match(parsed.message)
        if missing:
            # OPA gives the line of an undefined function, not the column: find the call ourselves.
            file, line, column = _locate_call(policy.user_modules, missing["name"], file, line)
        return PolicyCompileError(parsed.message, policy=policy.name, file=file, line=line, column=column)

    def _engine(self, policy: PreparedPolicy, cache_key: Any) -> Any:
        return self._engines.get_or_create(cache_key, lambda: self._compile(policy))

    def check(self, policy: PreparedPolicy, cache_key: Any) -> None:
        self._engine(policy, cache_key)

    def _compile_together(self, policies: list[PreparedPolicy]) -> _Combined | None:
        prefixes = [f"__p{index}" for index in range(len(policies))]
        parts = [
            namespaced(policy.opa_modules, prefix) for policy, prefix in zip(policies, prefixes, strict=True)
        ]
        if any(part is None for part in parts):
            return None
        engine = self._opa_engine()
        engine.print_handler = lambda message, location: None
        try:
            for filename, source in library_modules():
                engine.add_policy(filename, source)
            for policy, prefix, modules in zip(policies, prefixes, parts, strict=True):
                for filename, source in modules or ():
                    engine.add_policy(filename, source)
                if policy.data_json is not None:
                    engine.add_data(json.loads(policy.data_json), prefix)
            engine.eval_query("compiled := true")
        except self._opa_error:
            engine.close()
            return None  # each policy on its own engine says what is wrong with it
        return _Combined(engine, prefixes)

    def _decide_together(
        self, policies: list[PreparedPolicy], cache_keys: list[Any], given: _EncodedInput
    ) -> list[RuleValues] | None:
        """Every policy's rule values from one query over the input read once; None when not possible."""
        if len(policies) < 2 or given.error is not None:
            return None
        combined = self._combined.get_or_create(tuple(cache_keys), lambda: self._compile_together(policies))
        if combined is None:
            return None
        try:
            [bindings] = self._eval_query(combined.engine, combined.query, given.of(_WHOLE)) or [{}]
        except self._opa_error:
            return None  # an error of one policy: each is evaluated on its own, to report exactly its own
        return [
            _messages({rule: (bindings.get(f"{prefix}_{rule}") or [None])[0] for rule in DECISION_RULES})
            for prefix in combined.prefixes
        ]

    def _eval_query(self, engine: Any, query: str, encoded: bytes) -> list[dict[str, Any]]:
        """``engine.eval_query(query, input)`` with the input already encoded: what eval_query does
        (opa_bindings 0.4.4, engine.py), without encoding the input again for every policy."""
        engine._check_open()
        with engine._eval_lock:
            engine._eval_reset()
            rows = engine._eval_result(
                engine._call(engine._lib.OpaEvalQuery, self._cstr(query), encoded, 0, 0)
            )
        return [row.get("bindings", {}) for row in rows] if rows else []

    def _rules(self, engine: Any, policy: PreparedPolicy, cache_key: Any, given: _EncodedInput) -> RuleValues:
        try:
            keys = self._input_keys.get_or_create(cache_key, lambda: input_keys(policy))
            [bindings] = self._eval_query(engine, _OPA_QUERY, given.of(keys)) or [{}]
        except self._opa_error as error:
            parsed = parse_opa_error(error.message)
            raise PolicyRuntimeError(
                parsed.message, file=parsed.file, line=parsed.line, column=parsed.column
            ) from None
        return _messages({rule: (bindings.get(rule) or [None])[0] for rule in DECISION_RULES})

    def evaluate(
        self,
        policies: list[PreparedPolicy],
        cache_keys: list[Any],
        input_json: str,
        report: Callable[..., None],
        *,
        together: bool = True,
    ) -> None:
        """``together``: try one query for all the policies first (False: one engine per policy, so that a
        policy that loops or exhausts memory is named by the "started" before it)."""
        try:
            input_value = json.loads(input_json)
        except ValueError as error:
            raise PolicyRuntimeError(f"the policy input is not valid JSON: {error}") from None
        given = _EncodedInput(input_value, self._dumps, self._opa_error)
        together = self._decide_together(policies, cache_keys, given) if together else None
        if together is not None:
            for index, values in enumerate(together):
                report(index, "started")
                report(index, "outcome", messages=values)
            return
        for index, policy in enumerate(policies):
            report(index, "started")
            try:
                engine = self._engine(policy, cache_keys[index])
                report(index, "outcome", messages=self._rules(engine, policy, cache_keys[index], given))
            except (PolicyCompileError, PolicyRuntimeError) as error:
                report(index, "outcome", error=_error_dict(error))


def _locate_call(
    modules: tuple[tuple[str, str], ...], name: str, file: str | None, line: int | None
) -> tuple[str | None, int | None, int | None]:
    """Where ``name(...)`` is called, preferring the file and line an engine named."""
    found = []
    for filename, source in modules:
        code = code_tokens(tokenize(source))
        for _, first, last in find_calls(code, {name}):
            if last + 1 < len(code) and code[last + 1].text == "(":
                found.append((filename, code[first].line, code[first].column))
    for candidate in found:
        if candidate[0] == file and (line is None or candidate[1] == line):
            return candidate
    return found[0] if found else (file, line, None)


def _error_dict(error: PolicyCompileError | PolicyRuntimeError) -> dict[str, Any]:
    return {"file": error.file, "line": error.line, "column": error.column, "message": error.message}
