"""A template's configuration view, computed once per template files, variables and evaluator, then kept.

Evaluating a configuration runs in a child process bounded in time (iac/isolated.py), which costs a
few hundred milliseconds even for a small template; a deployment is evaluated again at every approval.
The view depends only on the template's files (a checkout is named by its commit, an archive by the hash
of its bytes), the Terraform variables, the template's provider schema and the evaluator's own code, so
it is stored under a key made of those and reused. Files in a plain local directory can change under the same name: never kept.

A view is computed once: when a template's files change, a worker computes its environments' views
before any deployment needs them (projects/template_views.py); a trigger that still finds one missing
computes it under a lock named by the key, and every concurrent trigger (threads of this process, other
processes) waits for that computation and reads its result instead of starting a second one. The lock
is a stripe lock in the process, then PostgreSQL's transaction advisory lock, or SQLite's write lock
(which SQLite has only one of: other writers wait for the computation, bounded by
IAC_EVALUATION_TIMEOUT_SECONDS, within the connection's 20 s busy timeout).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from policies_app.guards.file_sandbox import TemplateFiles
from policies_app.iac.isolated import evaluate_configuration_isolated
from policies_app.models import ConfigurationView, Environment

IAC_PACKAGE = Path(__file__).resolve().parent / "iac"
# What iac/isolated.py answers when the child process could not finish: worth trying again later.
UNFINISHED = frozenset({"Configuration evaluation timed out", "Configuration evaluation failed"})
# Threads of one process wait here before asking the database, so that they never hold a connection
# each while one of them computes; a key always falls on the same stripe.
_STRIPES = tuple(threading.Lock() for _ in range(64))


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


def _kept(key: str) -> dict[str, Any] | None:
    return ConfigurationView.objects.filter(key=key).values_list("document", flat=True).first()


def _stripe(key: str) -> threading.Lock:
    return _STRIPES[int(key[:8], 16) % len(_STRIPES)]


@contextlib.contextmanager
def _single_flight(key: str) -> Iterator[None]:
    """Held by one computation of the view ``key`` at a time, across threads and processes; a
    transaction whose commit (at the end, or the caller's) publishes the view before another holder
    looks for it again."""
    # The stripe is taken inside the transaction and let go before it commits: the commit runs its
    # callbacks, and in the embedded mode a callback is a whole task that may compute a view on the same
    # stripe in this thread (a template's views, due after a new commit was seen). Taken outside, it
    # waited for itself. Entering an outermost transaction asks nothing of the database yet.
    with transaction.atomic(), _stripe(key), connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # Held until the transaction ends, so a waiter finds the view committed.
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [int(key[:15], 16)])
        elif connection.vendor == "sqlite":
            # A write, even of no row, takes SQLite's one write lock until the transaction ends.
            cursor.execute(f"UPDATE {ConfigurationView._meta.db_table} SET key = key WHERE key = %s", [key])
        yield


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
    compute = functools.partial(
        evaluate_configuration_isolated,
        directory,
        variables=variables,
        cache_dir=settings.IAC_PARSE_CACHE_DIR,
        timeout_s=settings.IAC_EVALUATION_TIMEOUT_SECONDS,
        source_root=source_root,
        provider_schema=provider_schema,
        sensitive_variables=sensitive,
    )
    if key is None:
        return compute()
    kept = _kept(key)
    if kept is not None:
        return kept
    with _single_flight(key):
        kept = _kept(key)  # computed by the holder this one waited for
        if kept is not None:
            return kept
        document = compute()
        if not _unfinished(document):
            ConfigurationView.objects.create(key=key, document=document)
    return document


def environment_configuration_view(
    environment: Environment, files: TemplateFiles, terraform_variables: dict[str, Any]
) -> dict[str, Any]:
    """The view of ``environment``'s template ``files`` with ``terraform_variables`` (the environment's,
    and a deployment's own on top): what a deployment's evaluation reads and what a template change
    computes ahead for each environment."""
    return configuration_view(
        files.directory,
        terraform_variables,
        source_root=files.root,
        provider_schema=environment.template.provider_schema,
        sensitive_variables=sorted(environment.sensitive_names("terraform") & set(terraform_variables)),
    )
