"""A template's configuration view, computed once per template files, variables and evaluator, then kept.

Evaluating a configuration runs in a child process bounded in time (iac/isolated.py), which costs a
few hundred milliseconds even for a small template; a deployment is evaluated again at every approval.
The view depends only on the template's files (a checkout is named by its commit, an archive by the hash
of its bytes), the Terraform variables, the template's provider schema and the evaluator's own code, so
it is stored under a key made of those and reused. Files in a plain local directory can change under the same name: never kept.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from policies_app.iac.isolated import evaluate_configuration_isolated
from policies_app.models import ConfigurationView

IAC_PACKAGE = Path(__file__).resolve().parent / "iac"
# What iac/isolated.py answers when the child process could not finish: worth trying again later.
UNFINISHED = frozenset({"Configuration evaluation timed out", "Configuration evaluation failed"})


@functools.cache
def evaluator_version() -> str:
    """A hash of the evaluator's code: a new version of it computes every view afresh."""
    digest = hashlib.sha256()
    for path in sorted(IAC_PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(IAC_PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _key(
    directory: str, source_root: str, variables: dict[str, Any], provider_schema: Any, sensitive: list[str]
) -> str | None:
    checkouts = Path(settings.TEMPLATE_CHECKOUT_DIR).resolve()
    where, root = Path(directory).resolve(), Path(source_root).resolve()
    if checkouts not in where.parents or (root != checkouts and checkouts not in root.parents):
        return None
    identity = [
        where.relative_to(checkouts).as_posix(),
        root.relative_to(checkouts).as_posix(),
        variables,
        provider_schema,
        evaluator_version(),
    ]
    if sensitive:  # views kept before sensitive variables were tracked keep their keys
        identity.append(sensitive)
    return hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()


def _unfinished(document: dict[str, Any]) -> bool:
    return any(diagnostic.get("summary") in UNFINISHED for diagnostic in document.get("diagnostics", []))


def configuration_view(
    directory: str,
    variables: dict[str, Any],
    *,
    source_root: str,
    provider_schema: dict[str, Any] | None,
    sensitive_variables: list[str] | None = None,
) -> dict[str, Any]:
    """The view of the configuration in ``directory`` (inside the template's files at ``source_root``)
    with ``variables`` and the template's provider schema, computed at most once. With
    ``sensitive_variables`` (names of root variables held sensitive), the view also says where values
    derived from them are (``sensitive_paths``: iac/sensitive_paths.py)."""
    sensitive = sorted(set(sensitive_variables or ()))
    key = _key(directory, source_root, variables, provider_schema, sensitive)
    if key is not None:
        kept = ConfigurationView.objects.filter(key=key).values_list("document", flat=True).first()
        if kept is not None:
            return kept
    document = evaluate_configuration_isolated(
        directory,
        variables=variables,
        cache_dir=settings.IAC_PARSE_CACHE_DIR,
        timeout_s=settings.IAC_EVALUATION_TIMEOUT_SECONDS,
        source_root=source_root,
        provider_schema=provider_schema,
        sensitive_variables=sensitive,
    )
    if key is not None and not _unfinished(document):
        try:
            with transaction.atomic():
                ConfigurationView.objects.create(key=key, document=document)
        except IntegrityError:
            pass  # another evaluation kept the same view meanwhile
    return document
