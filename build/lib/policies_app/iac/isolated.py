"""Evaluating a configuration in a child process, bounded in time.

Template files come from repositories the platform does not control: a pathological configuration, or
a bug of ours that recurses or spins, must cost one evaluation, never the web server or Celery worker
that builds the policy input.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _failure(summary: str, detail: str) -> dict[str, Any]:
    diagnostic = {
        "severity": "error",
        "summary": summary,
        "detail": detail,
        "file": None,
        "line": None,
        "column": None,
    }
    return {"outputs": {}, "resources": [], "diagnostics": [diagnostic]}


def evaluate_configuration_isolated(
    directory: str, *, variables: dict[str, Any], cache_dir: str | None, timeout_s: float
) -> dict[str, Any]:
    """The same document as configuration.evaluate_configuration, computed by ``python -m policies_app.iac``.

    Values that are not strings are passed as their JSON text, which is also their HCL text, so they
    are read the way terraform reads ``-var`` (a list or a number keeps its type).
    """
    command = [sys.executable, "-m", "policies_app.iac", directory, "--compact"]
    for name, value in variables.items():
        command += ["--var", f"{name}={value if isinstance(value, str) else json.dumps(value)}"]
    if cache_dir:
        command += ["--cache-dir", cache_dir]
    try:
        finished = subprocess.run(
            command, cwd=_PROJECT_ROOT, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return _failure(
            "Configuration evaluation timed out", f"the evaluation took longer than {timeout_s:g} s"
        )
    if finished.returncode not in (0, 1):  # 1 means error diagnostics, which the document carries
        detail = (finished.stderr.strip().splitlines() or [f"exit status {finished.returncode}"])[-1]
        return _failure("Configuration evaluation failed", detail)
    try:
        return json.loads(finished.stdout)
    except json.JSONDecodeError:
        return _failure("Configuration evaluation failed", "the evaluator printed no document")
