"""The two engine adapters. They run only inside the supervised worker process (worker.py).

Each adapter loads the input ONCE per evaluation and evaluates every policy in its own namespace:
- regorus: a base engine holds the input and the library; each policy gets ``base.clone()`` (the input
  is shared, not copied) plus its own modules and data.
- regopy: loading an input costs ~0.5 s per MB, so each policy is compiled once into a bundle (cached)
  and every bundle is run against one interpreter that holds the input.
Each decision rule is queried on its own (``data.env0.deny``...): regorus fails open when the whole
package is queried and a module imports its own package. That alone is not enough (a single module
importing its own package still failed open), so references.py also rewrites such imports beforehand.
"""

from __future__ import annotations

import ctypes
import json
import re
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from policies_app.rego.decisions import normalise_rule_value
from policies_app.rego.errors import parse_regopy_errors, parse_regorus_error
from policies_app.rego.lexer import code_tokens, find_calls, tokenize
from policies_app.rego.prepare import PreparedPolicy, library_modules, rule_ref
from policies_app.rego.types import DECISION_RULES, PolicyCompileError

RuleValues = dict[str, list[str]]
_FUNCTION_NOT_FOUND = re.compile(r"^Function not found: (?P<name>[A-Za-z_][A-Za-z0-9_.]*)")
_CACHE_SIZE = 256


class PolicyRuntimeError(Exception):
    def __init__(
        self, message: str, *, file: str | None = None, line: int | None = None, column: int | None = None
    ):
        super().__init__(message)
        self.message, self.file, self.line, self.column = message, file, line, column


class LRUCache(OrderedDict):
    def get_or_create(self, key: Any, create: Callable[[], Any]) -> Any:
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = create()
        self[key] = value
        if len(self) > _CACHE_SIZE:
            self.popitem(last=False)
        return value


def _messages(values: dict[str, Any]) -> RuleValues:
    return {rule: normalise_rule_value(values.get(rule), rule=rule) for rule in DECISION_RULES}


class RegorusAdapter:
    name = "regorus"

    def __init__(self) -> None:
        import regorus

        self._regorus = regorus

    def _engine(self, base: Any, policy: PreparedPolicy, *, with_library: bool) -> Any:
        engine = base.clone() if base is not None else self._regorus.Engine()
        engine.set_gather_prints(True)  # print() in a policy must not write into our protocol or logs
        if with_library:
            engine.set_rego_v0(False)
            for filename, source in library_modules():
                self._add(engine, filename, source, policy.name)
        engine.set_rego_v0(policy.rego_version == "v0")
        for filename, source in policy.modules:
            self._add(engine, filename, source, policy.name)
        if policy.data_json is not None:
            engine.add_data_json(policy.data_json)
        return engine

    def _add(self, engine: Any, filename: str, source: str, policy: str) -> None:
        try:
            engine.add_policy(filename, source)
        except Exception as error:  # regorus raises RuntimeError with a Rust report
            parsed = parse_regorus_error(str(error))
            raise PolicyCompileError(
                parsed.message,
                policy=policy,
                file=parsed.file or filename,
                line=parsed.line,
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
                raise PolicyRuntimeError(
                    parsed.message, file=parsed.file, line=parsed.line, column=parsed.column
                ) from None
            rows = result.get("result") or []
            values[rule] = rows[0]["expressions"][0]["value"] if rows else None
        return _messages(values)

    def check(self, policy: PreparedPolicy, *, static_only: bool = False) -> None:
        """Parse and compile. ``static_only`` keeps syntax and safety errors only (used to vet regopy policies)."""
        engine = self._engine(None, policy, with_library=True)
        engine.set_input_json("{}")
        try:
            # regorus compiles lazily: unknown functions and unsafe variables show up when rules are evaluated.
            self._rules(engine, policy)
        except PolicyRuntimeError as error:
            if static_only and "unsafe" not in error.message:
                return
            raise PolicyCompileError(
                error.message, policy=policy.name, file=error.file, line=error.line, column=error.column
            ) from None

    def evaluate(self, policies: list[PreparedPolicy], input_json: str, report: Callable[..., None]) -> None:
        base = self._regorus.Engine()
        try:
            base.set_input_json(input_json)
        except Exception as error:
            raise PolicyRuntimeError(
                f"the policy input is not valid JSON: {parse_regorus_error(str(error)).message}"
            ) from None
        base.set_rego_v0(False)
        for filename, source in library_modules():
            try:
                self._add(base, filename, source, "")
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


class RegopyAdapter:
    name = "regopy"

    def __init__(self) -> None:
        import regopy
        from regopy import rego_shared

        self._regopy = regopy
        self._shared = rego_shared
        self._bundles = LRUCache()
        # regoSetInputJSON is in the C API but not wrapped by regopy 1.5.2.
        self._set_input_json = rego_shared.rego.regoSetInputJSON
        self._set_input_json.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        self._set_input_json.restype = ctypes.c_uint32

    def _compile(self, policy: PreparedPolicy, sources: dict[str, str]) -> tuple[Any, Any]:
        # regopy needs no v0 switch: rego-cpp's grammar accepts v0 rule bodies (``deny[msg] { ... }``)
        # and v1 (``deny contains msg if { ... }``) alike. v0 code using if/contains/in/every as plain
        # names is refused at check time with rego-cpp's message.
        interpreter = self._regopy.Interpreter()
        interpreter.strict_built_in_errors = True
        try:
            for filename, source in (*library_modules(), *policy.modules):
                interpreter.add_module(filename, source)
            if policy.data_json is not None:
                interpreter.add_data_json(policy.data_json)
            entrypoints = ["/".join((*policy.package, rule)) for rule in DECISION_RULES]
            bundle = interpreter.build(None, entrypoints)
        except self._shared.RegoError as error:
            first = parse_regopy_errors(str(error), sources)[0]
            raise PolicyCompileError(
                first.message, policy=policy.name, file=first.file, line=first.line, column=first.column
            ) from None
        if not bundle.ok():
            raise PolicyCompileError("regopy could not build the policy", policy=policy.name)
        return interpreter, bundle

    def _bundle(self, policy: PreparedPolicy, cache_key: Any) -> Any:
        sources = dict((*library_modules(), *policy.modules))
        return self._bundles.get_or_create(cache_key, lambda: self._compile(policy, sources))[1]

    def _rules(self, runner: Any, bundle: Any, policy: PreparedPolicy) -> RuleValues:
        shared = self._shared
        values: dict[str, Any] = {}
        for rule in DECISION_RULES:
            entrypoint = "/".join((*policy.package, rule))
            output = shared.rego_bundle_query_entrypoint(runner._impl, bundle._impl, entrypoint)
            try:
                ok = shared.rego_output_ok(output)
                text = shared.rego_output_string(output)
            finally:
                shared.rego_free_output(output)
            if not ok:
                # rego-cpp 1.5.2 does not expose the message of a runtime error through its C API.
                raise PolicyRuntimeError(
                    f"regopy reported an evaluation error in rule {rule} (no detail given)"
                )
            if text.strip() == "undefined":
                values[rule] = None
                continue
            try:
                document = json.loads(text)
            except ValueError:
                if text.lstrip().startswith("{"):
                    # rego-cpp 1.5.2 does not escape quotes inside strings of its JSON output.
                    raise PolicyRuntimeError(f"regopy returned malformed JSON for rule {rule}") from None
                first = parse_regopy_errors(text, {})[0]
                raise PolicyRuntimeError(first.message, file=first.file, line=first.line) from None
            expressions = document.get("expressions") or [None]
            values[rule] = expressions[0]
        return _messages(values)

    def _runner(self, input_json: str) -> Any:
        runner = self._regopy.Interpreter()
        runner.strict_built_in_errors = True  # otherwise a failing builtin is silently undefined (fail-open)
        # Not regopy.Input(value): strings built that way keep quotes and newlines unescaped, so
        # input.s == "a\"b" is false. Not \u escapes either: rego-cpp does not decode them ("\u00e9" != "é").
        if "\\u" in input_json:
            input_json = json.dumps(json.loads(input_json), ensure_ascii=False, separators=(",", ":"))
        status = self._set_input_json(runner._impl, input_json.encode("utf-8"))
        if status != 0:
            detail = self._shared.rego_get_error(runner._impl).strip().splitlines()
            raise PolicyRuntimeError(
                f"the policy input is not valid JSON: {detail[0] if detail else 'rejected by regopy'}"
            )
        return runner

    def check(self, policy: PreparedPolicy, cache_key: Any) -> None:
        bundle = self._bundle(policy, cache_key)
        try:
            self._rules(self._runner("{}"), bundle, policy)
        except PolicyRuntimeError as error:
            file, line, column = error.file, error.line, error.column
            missing = _FUNCTION_NOT_FOUND.match(error.message)
            if missing and file is None:
                # rego-cpp names the function but not where it is called: find the call ourselves.
                file, line, column = _locate_call(policy, missing["name"])
            raise PolicyCompileError(
                error.message, policy=policy.name, file=file, line=line, column=column
            ) from None

    def evaluate(
        self,
        policies: list[PreparedPolicy],
        cache_keys: list[Any],
        input_json: str,
        report: Callable[..., None],
    ) -> None:
        try:
            runner = self._runner(input_json)
        except ValueError as error:
            raise PolicyRuntimeError(f"the policy input is not valid JSON: {error}") from None
        for index, policy in enumerate(policies):
            report(index, "started")
            try:
                bundle = self._bundle(policy, cache_keys[index])
                report(index, "outcome", messages=self._rules(runner, bundle, policy))
            except (PolicyCompileError, PolicyRuntimeError) as error:
                report(index, "outcome", error=_error_dict(error))


def _locate_call(policy: PreparedPolicy, name: str) -> tuple[str | None, int | None, int | None]:
    for filename, source in policy.modules:
        code = code_tokens(tokenize(source))
        for _, first, last in find_calls(code, {name}):
            if last + 1 < len(code) and code[last + 1].text == "(":
                return filename, code[first].line, code[first].column
    return None, None, None


def _error_dict(error: PolicyCompileError | PolicyRuntimeError) -> dict[str, Any]:
    return {"file": error.file, "line": error.line, "column": error.column, "message": error.message}
