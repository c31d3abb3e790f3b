"""The engine adapters. They run only inside the supervised worker process (worker.py).

Each adapter evaluates every policy in its own namespace:
- regorus: a base engine holds the input (loaded ONCE per evaluation) and the library; each policy gets
  ``base.clone()`` (the input is shared, not copied) plus its own modules and data. Each decision rule
  is queried on its own (``data.env0.deny``...): regorus fails open when the whole package is queried
  and a module imports its own package. That alone is not enough (a single module importing its own
  package still failed open), so references.py also rewrites such imports beforehand.
- opa: OPA 1.20's Go library (opa-golib-python-bindings). Each policy is compiled once into its own
  OpaEngine (cached); OPA takes the input with each query, so the four rules are read in one query.
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
from policies_app.rego.lexer import code_tokens, find_calls, tokenize
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
        values: dict[str, Any] = {}
        for rule in DECISION_RULES:
            try:
                # As JSON: the Python conversion fails on a set of objects ("unhashable type: 'dict'").
                result = json.loads(engine.eval_query_as_json(rule_ref(policy.package, rule)))
            except Exception as error:
                parsed = parse_regorus_error(str(error))
                file, line = policy.locate(parsed.file, parsed.line)
                raise PolicyRuntimeError(parsed.message, file=file, line=line, column=parsed.column) from None
            rows = result.get("result") or []
            values[rule] = rows[0]["expressions"][0]["value"] if rows else None
        return _messages(values)

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
        for filename, source in library_modules_for_regorus():
            try:
                self._add(base, filename, source, None)
            except PolicyCompileError as error:
                raise PolicyRuntimeError(
                    f"shared library: {error.message}", file=error.file, line=error.line, column=error.column
                ) from None
        for index, policy in enumerate(policies):
            report(index, "started")
            try:
                engine = self._engine(base, policy, with_library=False)
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


class OpaAdapter:
    """OPA itself. Every policy is compiled into its own engine, kept while the worker lives."""

    name = "opa"

    def __init__(self) -> None:
        from opa_bindings import OpaEngine, OpaError

        self._opa_engine = OpaEngine
        self._opa_error = OpaError
        self._engines = LRUCache(64, on_evict=lambda engine: engine.close())  # Go memory: freed on close

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

    def _rules(self, engine: Any, input_value: Any) -> RuleValues:
        try:
            [bindings] = engine.eval_query(_OPA_QUERY, input_value) or [{}]
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
    ) -> None:
        try:
            input_value = json.loads(input_json)
        except ValueError as error:
            raise PolicyRuntimeError(f"the policy input is not valid JSON: {error}") from None
        for index, policy in enumerate(policies):
            report(index, "started")
            try:
                engine = self._engine(policy, cache_keys[index])
                report(index, "outcome", messages=self._rules(engine, input_value))
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
