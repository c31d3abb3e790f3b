"""An environment's current Terraform state as people read it: what made it, and what it holds."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from policies_app.iac.state_view import StateFormatError, normalise_state

MASK = "(sensitive value)"


@dataclass(frozen=True)
class StateSummary:
    serial: int | None
    lineage: str
    terraform_version: str | None
    resources: int = 0
    by_type: list[tuple[str, int]] = field(default_factory=list)
    outputs: list[tuple[str, str]] = field(default_factory=list)
    problem: str = ""


def summarise_state(document: Any) -> StateSummary:
    try:
        state = normalise_state(document)
    except StateFormatError as problem:
        return StateSummary(None, "", None, problem=str(problem))
    managed = [i for i in state["instances"] if i.get("mode") == "managed"]
    by_type = Counter(instance.get("type", "?") for instance in managed)
    outputs = []
    for name, output in sorted((state.get("outputs") or {}).items()):
        output = output if isinstance(output, dict) else {"value": output}
        value = output.get("value")
        shown = MASK if output.get("sensitive") else _short(value)
        outputs.append((name, shown))
    return StateSummary(
        state.get("serial"),
        state.get("lineage") or "",
        state.get("terraform_version"),
        len(managed),
        sorted(by_type.items()),
        outputs,
    )


def _short(value: Any) -> str:
    import json

    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 200 else f"{text[:200]}…"
