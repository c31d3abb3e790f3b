"""Evaluating a configuration in a child process, bounded in time.

Template files come from repositories the platform does not control: a pathological configuration, or
a bug of ours that recurses or spins, must cost one evaluation, never the web server or Celery worker
that builds the policy input. What comes back is shown to users, so its messages name files relative to
the template's source root, never where the server keeps them (file_sandbox.relative_document).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from policies_app.iac.failures import failure_document
from policies_app.iac.file_sandbox import relative_document

_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def evaluate_configuration_isolated(
    directory: str,
    *,
    variables: dict[str, Any],
    cache_dir: str | None,
    timeout_s: float,
    source_root: str | None = None,
    provider_schema: dict[str, Any] | None = None,
    sensitive_variables: list[str] | tuple[str, ...] = (),
) -> dict[str, Any]:
    """The same document as configuration.evaluate_configuration, computed by ``python -m policies_app.iac``.

    Values that are not strings are passed as their JSON text, which is also their HCL text, so they
    are read the way terraform reads ``-var`` (a list or a number keeps its type). ``source_root`` is
    the template's checkout (``directory`` is inside it): local modules and file functions may read
    it all; by default only ``directory``. ``provider_schema`` is the parsed output of ``terraform
    providers schema -json`` stored with the template (by default the template's own
    providers-schema.json, if it has one). ``sensitive_variables``: root variables held sensitive (the
    document says where values derived from them are: configuration.evaluate_configuration).
    """
    root = source_root or directory
    command = [sys.executable, "-m", "policies_app.iac", directory, "--compact"]
    command += ["--source-root", root]
    # Server directories a message of the child could mention, and how a user sees them instead.
    others = [(str(_PROJECT_ROOT), "(platform)"), (tempfile.gettempdir(), "(temporary files)")]
    if cache_dir:
        others.append((cache_dir, "(parse cache)"))
    for name, value in variables.items():
        command += ["--var", f"{name}={value if isinstance(value, str) else json.dumps(value)}"]
    for name in sensitive_variables:
        command += ["--sensitive-var", name]
    if cache_dir:
        command += ["--cache-dir", cache_dir]
    with contextlib.ExitStack() as stack:
        if provider_schema is not None:  # handed over as a file the child reads
            schema_file = stack.enter_context(
                tempfile.NamedTemporaryFile("w", suffix=".json", encoding="utf-8")
            )
            json.dump(provider_schema, schema_file)
            schema_file.flush()
            command += ["--provider-schema", schema_file.name]
        try:
            finished = subprocess.run(
                command, cwd=_PROJECT_ROOT, capture_output=True, text=True, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired:
            return failure_document(
                "Configuration evaluation timed out", f"the evaluation took longer than {timeout_s:g} s"
            )
    if finished.returncode not in (0, 1):  # 1 means error diagnostics, which the document carries
        detail = (finished.stderr.strip().splitlines() or [f"exit status {finished.returncode}"])[-1]
        document = failure_document("Configuration evaluation failed", detail)
    else:
        try:
            document = json.loads(finished.stdout)
        except json.JSONDecodeError:
            document = failure_document(
                "Configuration evaluation failed", "the evaluator printed no document"
            )
    return relative_document(document, root, *others)
