"""The document of an evaluation that could not be done at all: one error diagnostic and nothing else.

Shared by the evaluator (a defect of ours) and by the runner of isolated evaluations (a timeout, a
crash), which imports nothing heavier than this.
"""

from __future__ import annotations

from typing import Any


def failure_document(summary: str, detail: str) -> dict[str, Any]:
    diagnostic = {
        "severity": "error",
        "summary": summary,
        "detail": detail,
        "file": None,
        "line": None,
        "column": None,
    }
    return {"outputs": {}, "resources": [], "diagnostics": [diagnostic]}
