"""env0's decision rules: how a rule's value becomes messages, and how decisions combine."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from policies_app.rego.contract import DECISION_ORDER, DECISION_RULES

_RANK = {decision: rank for rank, decision in enumerate(DECISION_ORDER)}


def combine_decisions(decisions: Iterable[str | None]) -> str:
    """The strictest decision wins (error > deny > pending > warn > allow); nothing fired => pending.

    env0 waits for a human when no rule says anything, so "pending" is the default, never "allow".
    """
    strictest: str | None = None
    for decision in decisions:
        if decision is None:
            continue
        if decision not in _RANK:
            raise ValueError(f"unknown decision {decision!r}; expected one of {', '.join(DECISION_ORDER)}")
        if strictest is None or _RANK[decision] < _RANK[strictest]:
            strictest = decision
    return strictest or "pending"


def policy_decision(messages: Mapping[str, list[str]]) -> str | None:
    """The strictest rule of one policy that produced at least one message; None when none fired."""
    for rule in DECISION_RULES:
        if messages.get(rule):
            return rule
    return None


def _jsonable(value: Any) -> Any:
    # regorus hands back Python sets for Rego sets; JSON has none, and a set's order is arbitrary,
    # so sort by the JSON text to make both engines print the same message.
    if isinstance(value, (set, frozenset)):
        items = [_jsonable(item) for item in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, Mapping):
        return {k if isinstance(k, str) else _message(k): _jsonable(v) for k, v in value.items()}
    return value


def _message(item: Any) -> str:
    if isinstance(item, str):
        return item
    return json.dumps(_jsonable(item), sort_keys=True, ensure_ascii=False)


def normalise_rule_value(value: Any, *, rule: str | None = None) -> list[str]:
    """Turn whatever a decision rule evaluated to into a list of messages.

    - undefined (None) or false: no message;
    - true: one message, the rule's name (``rule``, or "true" when the caller does not name it);
    - a string: that one message;
    - a set or array: its elements (non-strings as JSON); sets come out sorted so that both engines agree;
    - an object: its keys (a partial object rule ``deny[msg] := true``).
    - any other scalar: its JSON text.
    """
    if value is None or value is False:
        return []
    if value is True:
        return [rule or "true"]
    if isinstance(value, str):
        return [value]
    if isinstance(value, (set, frozenset)):
        return sorted(_message(item) for item in value)
    if isinstance(value, (list, tuple)):
        return [_message(item) for item in value]
    if isinstance(value, Mapping):
        return [_message(key) for key in value]
    return [_message(value)]


@dataclass(frozen=True)
class MessageLimits:
    """How much of what policies say is kept: a policy decides, it does not get to fill the database."""

    per_policy: int = 100
    characters: int = 10_000
    per_evaluation: int = 1_000

    def __post_init__(self) -> None:
        for name in ("per_policy", "characters", "per_evaluation"):
            if getattr(self, name) < 1:
                raise ValueError(f"message limit {name} must be at least 1")


def truncate_message(message: str, characters: int) -> str:
    if len(message) <= characters:
        return message
    return f"{message[:characters]}… [truncated: {len(message)} characters]"


def more_messages(count: int) -> str:
    return f"… and {count} more message{'' if count == 1 else 's'}"


def limit_messages(
    messages: Mapping[str, list[str]], limits: MessageLimits, remaining: int
) -> tuple[dict[str, list[str]], int]:
    """One policy's messages within the limits; returns them and how many real messages were kept.

    Rules are taken strictest first, so what is cut is what matters least. A rule that fired never
    comes back empty when a stricter one did not fire: its messages give way to a marker
    ("… and 12 more messages"), so the policy's decision is the same after cutting as before.
    """
    budget = max(min(limits.per_policy, remaining), 0)
    kept: dict[str, list[str]] = {}
    used = 0
    decided = False  # a stricter rule already fired: this one cannot change the decision
    for rule in DECISION_RULES:
        rule_messages = list(messages.get(rule, []))
        take = min(len(rule_messages), budget - used)
        kept[rule] = [truncate_message(message, limits.characters) for message in rule_messages[:take]]
        used += take
        dropped = len(rule_messages) - take
        if dropped and (kept[rule] or not decided):
            kept[rule].append(more_messages(dropped))
        decided = decided or bool(rule_messages)
    return kept, used
