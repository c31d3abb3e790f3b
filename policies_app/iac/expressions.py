"""Evaluating expressions the way Terraform does, with unknown values as first-class citizens.

The evaluator knows nothing of blocks or graphs: names that are not bound locally (``var``, ``local``,
``module``, ``data``, resource types) are asked of a ``Resolver`` supplied by the configuration, so
the same code serves locals, resource arguments, outputs and tfvars files. Errors are raised as
``EvalError`` carrying the position; callers turn them into diagnostics.

Why this module is long: it is one evaluator over every node type of the expression syntax
(``Evaluator``, one method per node type), with the rules every node shares (unknown and sensitive
values, implicit conversions, errors with positions) beside it. Split by node type, each piece would
need the evaluator and those rules back.
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable
from typing import Any, Protocol

from policies_app.iac import syntax_nodes, type_constraints
from policies_app.iac.functions import FunctionError, UnsupportedFunction, call_function, registry
from policies_app.iac.records import Record
from policies_app.iac.type_unification import unknown_of_either
from policies_app.iac.values import (
    UNKNOWN,
    Sensitive,
    TfSet,
    UnknownValue,
    contains_sensitive,
    contains_unknown,
    is_unknown,
    mark,
    number_bounds,
    template_prefix,
    unmark_deep,
)

# What an operator gives before its operands are known: a bool or a number, never null (the
# operator functions of cty's stdlib declare refineNonNull).
_UNKNOWN_BOOL = UnknownValue(type_constraints.BOOL, True)
_UNKNOWN_NUMBER = UnknownValue(type_constraints.NUMBER, True)
_COMPARISONS = frozenset({"<", "<=", ">", ">="})


def _compared_bounds(op: str, left: Any, right: Any) -> Any:
    """A comparison with an unknown side, decided where the sides' bounds do not overlap (cty's
    LessThan and GreaterThan, which treat every bound as exclusive; ``a <= b`` is ``a < b || a ==
    b``, and the equality is false only where a known side lies outside the other's bounds)."""
    if op in (">", ">="):
        left, right = right, left  # a > b is b < a
    (left_low, left_high), (right_low, right_high) = number_bounds(left), number_bounds(right)
    if left_high < right_low:
        return True
    if left_low > right_high and (op in ("<", ">") or not (is_unknown(left) and is_unknown(right))):
        return False
    return _UNKNOWN_BOOL


class EvalError(Exception):
    """An error in the configuration found while evaluating; ``pos`` says where."""

    def __init__(self, summary: str, pos: syntax_nodes.Pos | None, detail: str = "") -> None:
        super().__init__(summary if not detail else f"{summary}: {detail}")
        self.summary = summary
        self.detail = detail
        self.pos = pos


class Diagnostic(Record):
    """One error or warning about the configuration, with where it is."""

    severity: str  # "error" | "warning"
    summary: str
    detail: str
    file: str | None
    line: int | None
    column: int | None  # 1-based; None when not known

    _fields = ("severity", "summary", "detail", "file", "line", "column")

    def __init__(
        self,
        severity: str,
        summary: str,
        detail: str = "",
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.severity = severity
        self.summary = summary
        self.detail = detail
        self.file = file
        self.line = line
        self.column = column

    @classmethod
    def at(cls, severity: str, summary: str, detail: str, pos: syntax_nodes.Pos | None) -> Diagnostic:
        if pos is None:
            return cls(severity, summary, detail)
        return cls(severity, summary, detail, pos.file, pos.line, pos.column or None)

    @classmethod
    def from_error(cls, error: EvalError) -> Diagnostic:
        return cls.at("error", error.summary, error.detail, error.pos)

    def as_dict(self) -> dict:
        return {
            "severity": self.severity,
            "summary": self.summary,
            "detail": self.detail,
            "file": self.file,
            "line": self.line,
            "column": self.column,
        }


class Resolver(Protocol):
    """What the configuration answers for names the expression does not bind itself."""

    def variable(self, name: str, pos: syntax_nodes.Pos) -> Any: ...
    def local(self, name: str, pos: syntax_nodes.Pos) -> Any: ...
    def module(self, name: str, pos: syntax_nodes.Pos) -> Any: ...
    def resource(self, type_: str, name: str, pos: syntax_nodes.Pos) -> Any: ...
    def data(self, type_: str, name: str, pos: syntax_nodes.Pos) -> Any: ...


class NoReferences:
    """A resolver for places that allow no references at all (tfvars files, -var values)."""

    def _refuse(self, what: str, pos: syntax_nodes.Pos) -> Any:
        raise EvalError("Variables not allowed", pos, f"{what} cannot be referenced here")

    def variable(self, name: str, pos: syntax_nodes.Pos) -> Any:
        return self._refuse(f"var.{name}", pos)

    def local(self, name: str, pos: syntax_nodes.Pos) -> Any:
        return self._refuse(f"local.{name}", pos)

    def module(self, name: str, pos: syntax_nodes.Pos) -> Any:
        return self._refuse(f"module.{name}", pos)

    def resource(self, type_: str, name: str, pos: syntax_nodes.Pos) -> Any:
        return self._refuse(f"{type_}.{name}", pos)

    def data(self, type_: str, name: str, pos: syntax_nodes.Pos) -> Any:
        return self._refuse(f"data.{type_}.{name}", pos)


class ResourceObject(dict):
    """A resource instance seen from an expression: attributes not set in the configuration exist only
    after apply, so reading one gives UNKNOWN instead of an error."""

    __slots__ = ()


class Scope(Record):
    """Names bound around an expression (for variables, count, each, self, iterators), chained to the
    enclosing scope; the root carries the resolver and what functions need."""

    names: dict[str, Any]
    resolver: Any
    parent: Scope | None
    function_context: Any
    warnings: list[Diagnostic]

    _fields = ("names", "resolver", "parent", "function_context", "warnings")

    def __init__(
        self,
        names: dict[str, Any],
        resolver: Any,
        parent: Scope | None = None,
        function_context: Any = None,
        warnings: list[Diagnostic] | None = None,
    ) -> None:
        self.names = names
        self.resolver = resolver
        self.parent = parent
        self.function_context = function_context
        self.warnings = list() if warnings is None else warnings

    def child(self, names: dict[str, Any]) -> Scope:
        return Scope(names, self.resolver, self, self.function_context, self.warnings)

    def lookup(self, name: str) -> tuple[bool, Any]:
        scope: Scope | None = self
        while scope is not None:
            names = scope.names
            if name in names:
                return True, names[name]
            scope = scope.parent
        return False, None


class _Namespace:
    """``var``, ``local``, ``data.TYPE``... on the way to a value: never a value itself."""

    __slots__ = ("kind", "prefix", "key")

    def __init__(self, kind: str, prefix: str = "", key: Any = None) -> None:
        self.kind = kind
        self.prefix = prefix
        self.key = key  # the instance key of a "module_instance"

    def describe(self) -> str:
        return f"{self.prefix}" if self.prefix else self.kind


_MODULE_KINDS = frozenset({"module_call", "module_instance"})
_wants_declared_types: frozenset[str] | None = None


def wants_declared_types(name: str) -> bool:
    """Whether the built-in ``name`` is given its arguments' declared types."""
    global _wants_declared_types
    if _wants_declared_types is None:
        _wants_declared_types = frozenset(n for n, spec in registry().items() if spec.wants_declared_types)
    return name in _wants_declared_types


_RESERVED_UNBOUND = {
    "count": "count.index can only be used in a block that sets count",
    "each": "each.key and each.value can only be used in a block that sets for_each",
    "self": "self can only be used in provisioner, connection and postcondition blocks",
}

_UNKNOWN_PART = 1
_SENSITIVE_PART = 2


def type_label(value: Any) -> str:
    if value is None:
        return "null"
    if is_unknown(value):
        return "unknown"
    if value.__class__ is Sensitive:
        return type_label(value.value)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, TfSet):
        return "set"
    if isinstance(value, list):
        return "tuple"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, _Namespace):
        return "reference"
    return type(value).__name__


_DECIMAL_CONTEXT = decimal.Context(prec=60, rounding=decimal.ROUND_HALF_EVEN)


def _decimal(value: int | float) -> decimal.Decimal:
    # repr() is the shortest text that reads back as the same float: 0.1 stays 0.1, not 0.1000000000000000055.
    return decimal.Decimal(value) if isinstance(value, int) else decimal.Decimal(repr(value))


def arithmetic(op: str, left: int | float, right: int | float) -> int | float:
    """Terraform computes with arbitrary precision decimals: 0.1 + 0.2 is 0.3 and 1 / 3 rounds only once,
    when the result becomes a float. Whole numbers stay exact ints. Division by zero is the caller's."""
    if isinstance(left, int) and isinstance(right, int):
        if op == "+":
            return left + right
        if op == "-":
            return left - right
        if op == "*":
            return left * right
        if op == "/" and left % right == 0:
            return left // right
        if op == "%":
            # Go's remainder keeps the dividend's sign: -7 % 3 is -1.
            remainder = abs(left) % abs(right)
            return -remainder if left < 0 else remainder
    if (
        isinstance(left, float)
        and not math.isfinite(left)
        or isinstance(right, float)
        and not math.isfinite(right)
    ):
        result_float = {
            "+": lambda: left + right,
            "-": lambda: left - right,
            "*": lambda: left * right,
            "/": lambda: left / right,
            "%": lambda: math.fmod(left, right),
        }[op]()
        return type_constraints.normalize_number(result_float)
    a, b = _decimal(left), _decimal(right)
    context = _DECIMAL_CONTEXT
    if op == "+":
        result = context.add(a, b)
    elif op == "-":
        result = context.subtract(a, b)
    elif op == "*":
        result = context.multiply(a, b)
    elif op == "/":
        result = context.divide(a, b)
    else:
        result = context.remainder(a, b)  # sign of the dividend, like Go
    if result == result.to_integral_value():
        return int(result)
    return float(result)


def _checked_arithmetic(
    op: str, left: int | float, right: int | float, pos: syntax_nodes.Pos | None
) -> int | float:
    """Terraform's (cty's) answers where plain arithmetic has none: 1/0 is +Inf, -1/0 is -Inf, x % 0
    is x; 0/0, inf/inf, inf*0, inf-inf and a modulo with an infinite operand are errors."""
    infinite = (isinstance(left, float) and math.isinf(left)) or (
        isinstance(right, float) and math.isinf(right)
    )
    if op == "/" and right == 0:
        if left == 0:
            raise EvalError("Operation failed", pos, "can't divide zero by zero or infinity by infinity")
        return math.inf if left > 0 else -math.inf
    if op == "%":
        if infinite:
            raise EvalError("Operation failed", pos, "can't use modulo with zero and infinity")
        if right == 0:
            return left
    result = arithmetic(op, left, right)
    if isinstance(result, float) and math.isnan(result):
        what = {"/": "divide infinity by infinity", "*": "multiply zero by infinity"}.get(
            op, "subtract infinity from itself"
        )
        raise EvalError("Operation failed", pos, f"can't {what}")
    return result


def to_number(value: Any, pos: syntax_nodes.Pos | None, what: str = "operand") -> int | float:
    """type_constraints.to_number with the position and Terraform's wording for operators."""
    if value is None:
        raise EvalError("Invalid operand", pos, f"the {what} is null; a number is required")
    try:
        return type_constraints.to_number(value)
    except type_constraints.ConversionError as error:
        raise EvalError("Invalid operand", pos, f"unsuitable value for the {what}: {error}") from None


def to_bool(value: Any, pos: syntax_nodes.Pos | None, what: str = "condition") -> bool:
    if value is None:
        raise EvalError("Invalid operand", pos, f"the {what} is null; a bool is required")
    try:
        return type_constraints.to_bool(value)
    except type_constraints.ConversionError as error:
        raise EvalError("Invalid operand", pos, f"unsuitable value for the {what}: {error}") from None


def to_string(value: Any, pos: syntax_nodes.Pos | None, what: str = "value") -> str:
    if isinstance(value, str):
        return value
    if value is None:
        raise EvalError("Invalid template interpolation value", pos, f"the {what} is null")
    if isinstance(value, (dict, list, tuple)):
        raise EvalError(
            "Invalid template interpolation value",
            pos,
            f"cannot include a {type_label(value)} value in a string template",
        )
    try:
        return type_constraints.to_string(value)
    except type_constraints.ConversionError as error:
        raise EvalError("Invalid template interpolation value", pos, str(error)) from None


values_equal = (
    type_constraints.values_equal
)  # Terraform's ==: no conversion between types ("1" == 1 is false)
equal_with_unknowns = type_constraints.equal_with_unknowns


def iterate_collection(collection: Any, pos: syntax_nodes.Pos | None) -> list[tuple[Any, Any]]:
    """(key, value) pairs in Terraform's order: list index, map keys sorted, set element as both."""
    if isinstance(collection, TfSet):
        return [(item, item) for item in collection]
    if isinstance(collection, (list, tuple)):
        return list(enumerate(collection))
    if isinstance(collection, dict):
        return [(key, collection[key]) for key in sorted(collection)]
    if collection is None:
        raise EvalError("Iteration over null value", pos, "a null value cannot be used as the collection")
    raise EvalError(
        "Iteration over non-iterable value",
        pos,
        f"a {type_label(collection)} value cannot be used as the collection in a 'for'",
    )


def _conditional_result(
    value: Any, unified: type_constraints.TypeConstraint | None, pos: syntax_nodes.Pos, kinds: str
) -> Any:
    """A conditional's chosen value converted to the type both results unify to."""
    if unified is None:
        raise EvalError(
            "Inconsistent conditional result types",
            pos,
            f"the true and false result expressions must have consistent types ({kinds})",
        )
    try:
        return type_constraints.convert(value, unified)
    except type_constraints.ConversionError as error:
        raise EvalError("Inconsistent conditional result types", pos, str(error)) from None


class Evaluator:
    """Evaluates expression trees. One instance is shared; all state lives in the Scope."""

    def __init__(self) -> None:
        self._dispatch: dict[type, Callable[[Any, Scope], Any]] = {
            syntax_nodes.Literal: self._literal,
            syntax_nodes.TemplateExpr: self._template,
            syntax_nodes.TupleExpr: self._tuple,
            syntax_nodes.ObjectExpr: self._object,
            syntax_nodes.Reference: self._reference,
            syntax_nodes.GetAttr: self._get_attr,
            syntax_nodes.Index: self._index,
            syntax_nodes.Splat: self._splat,
            syntax_nodes.SplatItem: self._splat_item,
            syntax_nodes.FunctionCall: self._function_call,
            syntax_nodes.Conditional: self._conditional,
            syntax_nodes.BinaryOp: self._binary,
            syntax_nodes.UnaryOp: self._unary,
            syntax_nodes.ForExpr: self._for,
        }

    def evaluate(self, expr: syntax_nodes.Expr, scope: Scope) -> Any:
        """The value of ``expr``; raises EvalError for errors in the configuration."""
        value = self._eval(expr, scope)
        if isinstance(value, _Namespace):
            if value.kind in _MODULE_KINDS:
                return self._whole_module(value, expr.pos, scope)
            raise EvalError(
                "Invalid reference", expr.pos, f"{value.describe()} must be followed by an attribute name"
            )
        return value

    def _eval(self, expr: syntax_nodes.Expr, scope: Scope) -> Any:
        handler = self._dispatch.get(type(expr))
        if handler is None:
            raise EvalError("Unsupported expression", getattr(expr, "pos", None), type(expr).__name__)
        return handler(expr, scope)

    # -- leaves and constructors -----------------------------------------------------------------

    def _literal(self, expr: syntax_nodes.Literal, scope: Scope) -> Any:
        value = expr.value
        if type(value) is float and value.is_integer():
            return int(value)  # values.py: whole numbers are ints (1e21 too)
        return value

    def _tuple(self, expr: syntax_nodes.TupleExpr, scope: Scope) -> Any:
        return [self.evaluate(item, scope) for item in expr.items]

    def _object(self, expr: syntax_nodes.ObjectExpr, scope: Scope) -> Any:
        result: Any = {}
        unknown_key = marked_key = False
        for key_expr, value_expr in expr.items:
            key = self.evaluate(key_expr, scope)
            value = self.evaluate(value_expr, scope)
            if key.__class__ is Sensitive:
                key = key.value
                marked_key = True
            if is_unknown(key):
                unknown_key = True
                continue
            if key is None:
                raise EvalError("Invalid object key", key_expr.pos, "an object key must not be null")
            result[to_string(key, key_expr.pos, "object key")] = value
        result = UNKNOWN if unknown_key else result
        return mark(result) if marked_key else result

    # -- references --------------------------------------------------------------------------------

    def _reference(self, expr: syntax_nodes.Reference, scope: Scope) -> Any:
        found, value = scope.lookup(expr.name)
        if found:
            return value
        name = expr.name
        if name in ("var", "local", "module", "data", "ephemeral"):
            return _Namespace(name)
        if name in _RESERVED_UNBOUND:
            raise EvalError(f"Invalid reference to {name}", expr.pos, _RESERVED_UNBOUND[name])
        if name in ("path", "terraform"):
            raise EvalError(f"Invalid reference to {name}", expr.pos, f"{name} is not available here")
        return _Namespace("resource_type", name)

    def _get_attr(self, expr: syntax_nodes.GetAttr, scope: Scope) -> Any:
        target = self._eval(expr.target, scope)
        return self.get_attr(target, expr.name, expr.pos, scope)

    def get_attr(self, target: Any, name: str, pos: syntax_nodes.Pos, scope: Scope) -> Any:
        if isinstance(target, _Namespace):
            resolver = scope.resolver
            kind = target.kind
            if kind == "local":
                return resolver.local(name, pos)
            if kind == "var":
                return resolver.variable(name, pos)
            if kind == "module":
                if getattr(resolver, "module_output", None) is None:
                    return resolver.module(name, pos)
                # module.NAME.OUTPUT reads that output alone: reading every output of the module
                # would make a value wired from one output into another module's input a false cycle.
                return _Namespace("module_call", name)
            if kind in _MODULE_KINDS:
                has_index = kind == "module_instance"
                value = resolver.module_output(target.prefix, has_index, target.key, name, pos)
                if value is NotImplemented:  # an unusual shape: the whole module object decides
                    return self.get_attr(self._whole_module(target, pos, scope), name, pos, scope)
                return value
            if kind == "data":
                return _Namespace("data_type", f"data.{name}")
            if kind == "data_type":
                return resolver.data(target.prefix[5:], name, pos)
            if kind == "ephemeral":
                return _Namespace("ephemeral_type", f"ephemeral.{name}")
            if kind == "ephemeral_type":
                return UNKNOWN  # ephemeral resources exist only during a run, never in a plan
            return resolver.resource(target.prefix, name, pos)
        if target.__class__ is Sensitive:  # an attribute of a sensitive object is sensitive
            return mark(self.get_attr(target.value, name, pos, scope))
        if is_unknown(target):
            return UNKNOWN
        if isinstance(target, dict):
            if name in target:
                return target[name]
            if isinstance(target, ResourceObject):
                return UNKNOWN
            raise EvalError(
                "Unsupported attribute", pos, f"this object does not have an attribute named {name!r}"
            )
        if target is None:
            raise EvalError(
                "Attempt to get attribute from null value",
                pos,
                "this value is null, so it does not have any attributes",
            )
        raise EvalError(
            "Unsupported attribute", pos, f"can't access attribute {name!r} on a {type_label(target)} value"
        )

    def _index(self, expr: syntax_nodes.Index, scope: Scope) -> Any:
        target = self._eval(expr.target, scope)
        key = self.evaluate(expr.key, scope)
        if isinstance(target, _Namespace):
            if target.kind == "module_call":
                return _Namespace("module_instance", target.prefix, key)
            if target.kind == "module_instance":
                return self.index(self._whole_module(target, expr.pos, scope), key, expr.pos)
            if isinstance(key, str):
                return self.get_attr(target, key, expr.pos, scope)
            raise EvalError("Invalid reference", expr.pos, f"{target.describe()} cannot be indexed")
        return self.index(target, key, expr.pos)

    def _whole_module(self, target: _Namespace, pos: syntax_nodes.Pos, scope: Scope) -> Any:
        """``module.NAME`` (or ``module.NAME[KEY]``) used as a value: the object of all its outputs."""
        value = scope.resolver.module(target.prefix, pos)
        if target.kind == "module_instance":
            return self.index(value, target.key, pos)
        return value

    def index(self, target: Any, key: Any, pos: syntax_nodes.Pos) -> Any:
        if target.__class__ is Sensitive or key.__class__ is Sensitive:
            target = target.value if target.__class__ is Sensitive else target
            key = key.value if key.__class__ is Sensitive else key
            return mark(self.index(target, key, pos))
        if is_unknown(target) or is_unknown(key):
            return UNKNOWN
        if key is None:
            raise EvalError("Invalid index", pos, "can't use a null value as an indexing key")
        if isinstance(target, TfSet):
            raise EvalError(
                "Invalid index",
                pos,
                "elements of a set are identified only by their value "
                "and don't have any separate index or key to select with",
            )
        if isinstance(target, (list, tuple)):
            number = to_number(key, pos, "index")
            if not isinstance(number, int) or isinstance(key, bool):
                raise EvalError("Invalid index", pos, "the index must be a whole number")
            if number < 0 or number >= len(target):
                raise EvalError(
                    "Invalid index",
                    pos,
                    f"the given key does not identify an element in this collection value "
                    f"(index {number}, length {len(target)})",
                )
            return target[number]
        if isinstance(target, dict):
            if isinstance(key, (dict, list, tuple)):
                raise EvalError("Invalid index", pos, "a map key must be a string")
            name = to_string(key, pos, "key")
            if name in target:
                return target[name]
            if isinstance(target, ResourceObject):
                return UNKNOWN
            raise EvalError(
                "Invalid index",
                pos,
                f"the given key does not identify an element in this collection value: {name!r}",
            )
        if target is None:
            raise EvalError("Attempt to index null value", pos, "this value is null, so it has no elements")
        raise EvalError("Invalid index", pos, f"this value ({type_label(target)}) does not have any indices")

    def _splat(self, expr: syntax_nodes.Splat, scope: Scope) -> Any:
        source = self.evaluate(expr.source, scope)
        if source.__class__ is Sensitive:
            return mark(self._splat_of(expr, source.value, scope))
        return self._splat_of(expr, source, scope)

    def _splat_of(self, expr: syntax_nodes.Splat, source: Any, scope: Scope) -> Any:
        if is_unknown(source):
            return UNKNOWN
        if source is None:
            return []
        items = list(source) if isinstance(source, (list, tuple)) else [source]
        results = []
        for item in items:
            results.append(self.evaluate(expr.each, scope.child({"\0splat": item})))
        return results

    def _splat_item(self, expr: syntax_nodes.SplatItem, scope: Scope) -> Any:
        found, value = scope.lookup("\0splat")
        if not found:
            raise EvalError("Invalid splat", expr.pos, "splat item outside a splat expression")
        return value

    # -- operators -----------------------------------------------------------------------------------

    def _conditional(self, expr: syntax_nodes.Conditional, scope: Scope) -> Any:
        # HCL evaluates both results (their types decide the result's type) but reports only the
        # chosen one's errors, and neither's when the condition is unknown: `var.x == null ? true :
        # contains(["a"], var.x)` is how real modules guard a call that fails on null. The result
        # carries the condition's mark and both results' own marks, whichever is chosen.
        true_value, true_error = self._attempt(expr.true_expr, scope)
        false_value, false_error = self._attempt(expr.false_expr, scope)
        condition = self.evaluate(expr.condition, scope)
        marked = False
        if condition.__class__ is Sensitive:
            condition, marked = condition.value, True
        if true_value.__class__ is Sensitive:
            true_value, marked = true_value.value, True
        if false_value.__class__ is Sensitive:
            false_value, marked = false_value.value, True
        if is_unknown(condition):
            result = (
                None
                if true_value is None and false_value is None
                else unknown_of_either(true_value, false_value)
            )
            return mark(result) if marked else result
        if to_bool(condition, expr.condition.pos):
            chosen, error, other, other_expr = true_value, true_error, false_value, expr.false_expr
        else:
            chosen, error, other, other_expr = false_value, false_error, true_value, expr.true_expr
        if error is not None:
            raise error
        if other is None and chosen is not None and not is_unknown(chosen):
            # A null of a declared type still decides the result's type (var.port != null ? var.port
            # : 5432, with var.port a null string, is "5432"): terraform's nulls are typed, ours not.
            other_type = self.declared_type(other_expr, scope)
            if other_type is not None:
                chosen = self._convert_to_common(chosen, other_type, expr.pos)
        result = self._unify(chosen, other, expr.pos)
        return mark(result) if marked else result

    def _convert_to_common(
        self, value: Any, other_type: type_constraints.TypeConstraint, pos: syntax_nodes.Pos
    ) -> Any:
        unified = type_constraints.unify([type_constraints.infer_type(unmark_deep(value)), other_type])
        return _conditional_result(
            value, unified, pos, f"{type_constraints.type_name(unmark_deep(value))}, {other_type}"
        )

    def declared_type(self, expr: syntax_nodes.Expr, scope: Scope) -> type_constraints.TypeConstraint | None:
        """The type a declaration gives an expression (a variable's: ``var.x``, ``var.x.attr``,
        ``var.x["key"]``; a conversion function's: ``toset(...)``), when that is all that tells which
        type its null has; None otherwise."""
        steps: list[Any] = []
        node = expr
        while True:
            if isinstance(node, syntax_nodes.GetAttr):
                steps.append(node.name)
                node = node.target
            elif isinstance(node, syntax_nodes.Index) and isinstance(node.key, syntax_nodes.Literal):
                steps.append(node.key.value)
                node = node.target
            else:
                break
        if isinstance(node, syntax_nodes.FunctionCall) and not steps and node.name in registry():
            return registry()[node.name].result_type
        if (
            not (isinstance(node, syntax_nodes.Reference) and node.name == "var" and steps)
            or scope.lookup("var")[0]
        ):
            return None
        variable_type = getattr(scope.resolver, "variable_type", None)
        constraint = variable_type(steps.pop()) if variable_type is not None else None
        while steps and constraint is not None:
            step = steps.pop()
            if isinstance(constraint, type_constraints.ObjectType) and isinstance(step, str):
                constraint = constraint.attribute_types.get(step)
            elif isinstance(constraint, (type_constraints.MapType, type_constraints.ListType)):
                constraint = constraint.element
            elif (
                isinstance(constraint, type_constraints.TupleType)
                and isinstance(step, int)
                and 0 <= step < len(constraint.elements)
            ):
                constraint = constraint.elements[step]
            else:
                constraint = None
        return None if isinstance(constraint, type_constraints.AnyType) else constraint

    def _attempt(self, expr: syntax_nodes.Expr, scope: Scope) -> tuple[Any, EvalError | None]:
        """The value and no error, or UNKNOWN (a value of any type, as HCL's DynamicVal) and the error."""
        try:
            return self.evaluate(expr, scope), None
        except EvalError as error:
            return UNKNOWN, error

    def _unify(self, chosen: Any, other: Any, pos: syntax_nodes.Pos) -> Any:
        """Both results of a conditional share one type: a number or bool beside a string becomes a
        string, as Terraform's type unification does."""
        if chosen is None or is_unknown(chosen) or other is None or other is UNKNOWN:
            return chosen
        if contains_sensitive(chosen) or contains_sensitive(other):
            # Types are inferred without the marks; the chosen value keeps its own marks unless it has
            # to be converted, and then the converted value is sensitive as a whole.
            plain = unmark_deep(chosen)
            unified_value = self._unify(plain, unmark_deep(other), pos)
            if unified_value is plain or (
                type(unified_value) is type(plain) and values_equal(unified_value, plain)
            ):
                return chosen
            return mark(unified_value)
        kind, other_kind = type_constraints.primitive_kind(chosen), type_constraints.primitive_kind(other)
        if kind is not None and kind == other_kind:
            return chosen  # the common case, without inferring types
        unified = type_constraints.unify(
            [type_constraints.infer_type(chosen), type_constraints.infer_type(other)]
        )
        if unified is None and (kind is None or other_kind is None):
            # Collections that cty still unifies where type_constraints.unify does not: keep the chosen value
            # rather than refuse it.
            return chosen
        return _conditional_result(
            chosen, unified, pos, f"{type_constraints.type_name(chosen)}, {type_constraints.type_name(other)}"
        )

    def _binary(self, expr: syntax_nodes.BinaryOp, scope: Scope) -> Any:
        left = self.evaluate(expr.left, scope)
        right = self.evaluate(expr.right, scope)
        if left.__class__ is Sensitive or right.__class__ is Sensitive:
            return mark(self._binary_values(expr, unmark_deep(left), unmark_deep(right)))
        if (expr.op == "==" or expr.op == "!=") and (contains_sensitive(left) or contains_sensitive(right)):
            return mark(self._binary_values(expr, unmark_deep(left), unmark_deep(right)))
        return self._binary_values(expr, left, right)

    def _binary_values(self, expr: syntax_nodes.BinaryOp, left: Any, right: Any) -> Any:
        op = expr.op
        if op == "==" or op == "!=":
            equal = equal_with_unknowns(left, right)
            if is_unknown(equal):
                return _UNKNOWN_BOOL
            return equal if op == "==" else not equal
        if op == "&&" or op == "||":
            # No short-circuit: both sides are evaluated (and their errors raised) as in Terraform,
            # and an unknown side makes the result unknown even when the other decides it.
            left_bool = left if is_unknown(left) else to_bool(left, expr.left.pos, "operand")
            right_bool = right if is_unknown(right) else to_bool(right, expr.right.pos, "operand")
            if is_unknown(left_bool) or is_unknown(right_bool):
                return _UNKNOWN_BOOL
            return (left_bool and right_bool) if op == "&&" else (left_bool or right_bool)
        left_number = left if is_unknown(left) else to_number(left, expr.left.pos)
        right_number = right if is_unknown(right) else to_number(right, expr.right.pos)
        if is_unknown(left_number) or is_unknown(right_number):
            if op in _COMPARISONS:
                return _compared_bounds(op, left_number, right_number)
            return _UNKNOWN_NUMBER
        if op in ("+", "-", "*", "/", "%"):
            return _checked_arithmetic(op, left_number, right_number, expr.pos)
        if op == "<":
            return left_number < right_number
        if op == "<=":
            return left_number <= right_number
        if op == ">":
            return left_number > right_number
        if op == ">=":
            return left_number >= right_number
        raise EvalError("Unsupported operator", expr.pos, op)

    def _unary(self, expr: syntax_nodes.UnaryOp, scope: Scope) -> Any:
        operand = self.evaluate(expr.operand, scope)
        if operand.__class__ is Sensitive:
            return mark(self._unary_value(expr, operand.value))
        return self._unary_value(expr, operand)

    def _unary_value(self, expr: syntax_nodes.UnaryOp, operand: Any) -> Any:
        if is_unknown(operand):
            return _UNKNOWN_BOOL if expr.op == "!" else _UNKNOWN_NUMBER
        if expr.op == "!":
            return not to_bool(operand, expr.operand.pos, "operand")
        return arithmetic("-", 0, to_number(operand, expr.operand.pos))

    # -- templates and for expressions ---------------------------------------------------------------

    def _template(self, expr: syntax_nodes.TemplateExpr, scope: Scope) -> Any:
        # A template that becomes unknown is still a string, never null, and starts with what its
        # parts before the first unknown one rendered (HCL's TemplateExpr; a directive is one part,
        # so text its known branch or loop rendered before an unknown does not count).
        out: list[str] = []
        flags = 0
        known = -1  # the number of rendered pieces before the first unknown part
        for part in expr.parts:
            rendered = len(out)
            part_flags = self._render_parts([part], scope, out)
            if part_flags & _UNKNOWN_PART and known < 0:
                known = rendered
            flags |= part_flags
        if known >= 0:
            result: Any = UnknownValue(
                type_constraints.STRING, True, prefix=template_prefix("".join(out[:known]))
            )
        else:
            result = "".join(out)
        return mark(result) if flags & _SENSITIVE_PART else result

    def _render_parts(self, parts: list, scope: Scope, out: list[str]) -> int:
        """Appends the rendered parts; returns _UNKNOWN_PART when some part is unknown (the result is
        then unknown, but every part is still evaluated so that its errors are reported), plus
        _SENSITIVE_PART when some part is sensitive (the whole string is then sensitive)."""
        unknown = 0
        for part in parts:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, syntax_nodes.Interpolation):
                value = self.evaluate(part.expr, scope)
                if value.__class__ is Sensitive:
                    unknown |= _SENSITIVE_PART
                    value = value.value
                if is_unknown(value):
                    unknown |= _UNKNOWN_PART
                elif contains_unknown(value):
                    raise EvalError(
                        "Invalid template interpolation value",
                        part.expr.pos,
                        f"cannot include a {type_label(value)} value in a string template",
                    )
                else:
                    out.append(to_string(value, part.expr.pos))
            elif isinstance(part, syntax_nodes.IfDirective):
                condition = self.evaluate(part.condition, scope)
                if condition.__class__ is Sensitive:
                    unknown |= _SENSITIVE_PART
                    condition = condition.value
                if is_unknown(condition):
                    unknown |= _UNKNOWN_PART
                    self._render_parts(part.then_parts, scope, [])
                    self._render_parts(part.else_parts, scope, [])
                elif to_bool(condition, part.condition.pos):
                    unknown |= self._render_parts(part.then_parts, scope, out)
                else:
                    unknown |= self._render_parts(part.else_parts, scope, out)
            elif isinstance(part, syntax_nodes.ForDirective):
                collection = self.evaluate(part.collection, scope)
                if collection.__class__ is Sensitive:
                    unknown |= _SENSITIVE_PART
                    collection = collection.value
                if is_unknown(collection):
                    unknown |= _UNKNOWN_PART
                    continue
                for key, value in iterate_collection(collection, part.collection.pos):
                    names = {part.value_var: value}
                    if part.key_var:
                        names[part.key_var] = key
                    unknown |= self._render_parts(part.body_parts, scope.child(names), out)
            else:
                raise EvalError("Unsupported template part", None, type(part).__name__)
        return unknown

    def _for(self, expr: syntax_nodes.ForExpr, scope: Scope) -> Any:
        collection = self.evaluate(expr.collection, scope)
        marked = [collection.__class__ is Sensitive]
        if marked[0]:
            collection = collection.value
        result = self._for_over(expr, collection, scope, marked)
        return mark(result) if marked[0] else result

    def _for_over(self, expr: syntax_nodes.ForExpr, collection: Any, scope: Scope, marked: list[bool]) -> Any:
        """The for expression's value; sets marked[0] when a sensitive condition or key decides the
        shape of the result (which is then sensitive as a whole, as in Terraform)."""
        if is_unknown(collection):
            return UNKNOWN
        pairs = iterate_collection(collection, expr.collection.pos)
        is_object = expr.key_expr is not None
        items: list[Any] = []
        result: dict[str, Any] = {}
        unknown = False
        for key, value in pairs:
            names = {expr.value_var: value}
            if expr.key_var:
                names[expr.key_var] = key
            inner = scope.child(names)
            if expr.condition is not None:
                keep = self.evaluate(expr.condition, inner)
                if keep.__class__ is Sensitive:
                    marked[0] = True
                    keep = keep.value
                if is_unknown(keep):
                    unknown = True
                    continue
                if not to_bool(keep, expr.condition.pos, "for condition"):
                    continue
            if not is_object:
                items.append(self.evaluate(expr.value_expr, inner))
                continue
            out_key = self.evaluate(expr.key_expr, inner)
            out_value = self.evaluate(expr.value_expr, inner)
            if out_key.__class__ is Sensitive:
                marked[0] = True
                out_key = out_key.value
            if is_unknown(out_key):
                unknown = True
                continue
            if out_key is None:
                raise EvalError("Invalid object key", expr.key_expr.pos, "the key expression produced null")
            out_key = to_string(out_key, expr.key_expr.pos, "object key")
            if expr.grouping:
                result.setdefault(out_key, []).append(out_value)
            elif out_key in result:
                raise EvalError(
                    "Duplicate object key",
                    expr.key_expr.pos,
                    f"two different items produced the key {out_key!r} in this 'for' expression; "
                    "if duplicates are expected, use the ellipsis (...) after the value "
                    "expression to enable grouping by key",
                )
            else:
                result[out_key] = out_value
        if unknown:
            return UNKNOWN
        if not is_object:
            return items
        return {key: result[key] for key in sorted(result)}

    # -- functions -------------------------------------------------------------------------------------

    def _function_call(self, expr: syntax_nodes.FunctionCall, scope: Scope) -> Any:
        name = expr.name
        if name == "try":
            return self._try(expr, scope)
        if name == "can":
            return self._can(expr, scope)
        args = [self.evaluate(arg, scope) for arg in expr.args]
        marked = False
        if expr.expand_final and args:
            last = args.pop()
            if last.__class__ is Sensitive:
                marked = True
                last = last.value
            if is_unknown(last):
                return UNKNOWN
            if not isinstance(last, (list, tuple)):
                raise EvalError(
                    "Invalid expanding argument value",
                    expr.args[-1].pos,
                    "the expanding argument (indicated by ...) must be a list, tuple or set",
                )
            args.extend(last)
        # Unknown and sensitive arguments are the library's business: length([unknown]) is still 1.
        declared = None
        if wants_declared_types(name):
            written = expr.args[:-1] if expr.expand_final else expr.args
            declared = [
                type_constraints.ANY
                if isinstance(arg, syntax_nodes.Literal) and arg.value is None
                else self.declared_type(arg, scope)
                for arg in written
            ]
            declared += [None] * (len(args) - len(declared))  # the elements of an expanded list
        try:
            result = call_function(name, args, scope.function_context, declared)
        except UnsupportedFunction as error:
            return self._unsupported(getattr(error, "name", name), expr.pos, scope)
        except FunctionError as error:
            raise EvalError(
                "Error in function call", expr.pos, f"call to function {name!r} failed: {error}"
            ) from None
        return mark(result) if marked else result

    def _unsupported(self, name: str, pos: syntax_nodes.Pos, scope: Scope) -> Any:
        if not name.startswith("provider::"):
            # Not a function of Terraform or OpenTofu at all: terraform refuses the configuration.
            raise EvalError("Call to unknown function", pos, f"there is no function named {name!r}")
        # Provider functions run inside provider plugins, which a static evaluation never starts.
        scope.warnings.append(
            Diagnostic.at(
                "warning",
                f"Unsupported function {name!r}",
                f"the function {name!r} is not supported by the static evaluator; its result is treated as "
                "unknown",
                pos,
            )
        )
        return UNKNOWN

    def _try(self, expr: syntax_nodes.FunctionCall, scope: Scope) -> Any:
        if not expr.args:
            raise EvalError("Invalid function argument", expr.pos, "try() needs at least one argument")
        errors: list[str] = []
        for arg in expr.args:
            try:
                value = self.evaluate(arg, scope)
            except EvalError as error:
                errors.append(str(error))
                continue
            # A value that is not wholly known may still fail once known: Terraform answers unknown.
            if contains_unknown(value):
                return mark(UNKNOWN) if contains_sensitive(value) else UNKNOWN
            return value
        raise EvalError(
            "Error in function call", expr.pos, "no expression given to try() succeeded: " + "; ".join(errors)
        )

    def _can(self, expr: syntax_nodes.FunctionCall, scope: Scope) -> Any:
        if len(expr.args) != 1:
            raise EvalError("Invalid function argument", expr.pos, "can() takes exactly one argument")
        try:
            value = self.evaluate(expr.args[0], scope)
        except EvalError:
            return False
        return UNKNOWN if contains_unknown(value) else True


EVALUATOR = Evaluator()


def evaluate(expr: syntax_nodes.Expr, scope: Scope) -> Any:
    """Evaluate ``expr`` in ``scope`` (raises EvalError)."""
    return EVALUATOR.evaluate(expr, scope)


def constant_scope(function_context: Any = None) -> Scope:
    """A scope where no reference is allowed: tfvars files and -var values."""
    return Scope({}, NoReferences(), function_context=function_context)
