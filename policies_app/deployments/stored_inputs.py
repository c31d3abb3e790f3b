"""Where plans and policy inputs are kept, and the one way to read them back.

A deployment's plan is stored once (StoredDocument: compressed, addressed by the hash of its canonical
text); each evaluation keeps its input's skeleton and references to its shared pieces (the plan, the
state and configuration views), which the deployment's other evaluations and identical plans share.
``input_of`` rebuilds the exact bytes the engine saw; every surface (the API, the pages, the admin,
replays, "try it") reads inputs through it and plans through ``plan_of``.

Retention: ``purge_inputs`` removes the inputs of evaluations older than a number of days, the plans of
finished deployments that old, and the documents nothing references any more, in small batches (short
transactions, row locks only). Decisions, messages, outcomes and the audit trail are kept; the rows say
when their input or plan was purged.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Exists, OuterRef, ProtectedError, Q
from django.utils import timezone

from policies_app.choices import FINAL_STATUSES
from policies_app.deployments import input_codec
from policies_app.guards.masking import Sensitivity, shown_input_text
from policies_app.models import Deployment, Evaluation, InputPiece, StoredDocument

logger = logging.getLogger(__name__)

NO_INPUT = "null"  # what an evaluation that failed before building an input records


def store_text(text: str) -> str:
    """Keep ``text`` once; returns its key. Marks an existing copy as used now, which keeps the purge
    from removing it while this reference is being made."""
    key = input_codec.document_key(text)
    now = timezone.now()
    if not StoredDocument.objects.filter(key=key).update(last_used_at=now):
        StoredDocument.objects.bulk_create(
            [StoredDocument(key=key, body=input_codec.compress(text), size=len(text), last_used_at=now)],
            ignore_conflicts=True,  # stored meanwhile by another writer: the same text
        )
    return key


def store_plan(plan: Any) -> str | None:
    """Keep a deployment's plan (None when it has none); returns the key for ``Deployment.plan_document``."""
    return None if plan is None else store_text(input_codec.canonical_plan(plan))


# Colours and cursor moves of a terminal (``terraform show`` without -no-color): meaningless on a page.
TERMINAL_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def store_plan_text(text: str | None) -> str | None:
    """Keep the plan's text as ``terraform show`` printed it (None when none was sent), its terminal
    colours removed; returns the key for ``Deployment.plan_text_document``."""
    return None if not text else store_text(TERMINAL_ESCAPES.sub("", text))


def plan_text_of(deployment: Deployment) -> str | None:
    """The plan's text as the pipeline sent it (None when it sent none or it was purged): unmasked, to be
    shown only through the plan view (web/deployment_views.py masks it)."""
    key = deployment.plan_text_document_id
    return None if key is None else _texts([key]).get(key)


def _texts(keys: Iterable[str]) -> dict[str, str]:
    wanted = set(keys)
    if not wanted:
        return {}
    rows = StoredDocument.objects.filter(key__in=wanted).values_list("key", "body")
    return {key: input_codec.decompress(body) for key, body in rows}


def load_plan(key: str | None) -> Any:
    """The plan stored under ``key`` (None for None)."""
    return None if key is None else json.loads(_texts([key])[key])


def plan_of(deployment: Deployment) -> Any:
    """A deployment's plan (None when it sent none or the plan was purged), read once per object."""
    if not hasattr(deployment, "_plan"):
        key = deployment.plan_document_id
        deployment._plan_json = None if key is None else _texts([key])[key]
        deployment._plan = None if deployment._plan_json is None else json.loads(deployment._plan_json)
    return deployment._plan


def plan_json_of(deployment: Deployment) -> str | None:
    """The text ``input_codec.dumps`` writes for ``plan_of(deployment)``, without writing it again: the
    stored text itself. It is the plan's canonical text (keys sorted, no spaces), which ``plan_of`` decodes
    with its keys in that order, so writing the decoded plan gives the same text back."""
    plan_of(deployment)
    return deployment._plan_json


@dataclass(frozen=True)
class StoredInput:
    skeleton: str
    pieces: list[tuple[int, str]]  # (offset in the skeleton, document key)


def store_input(input_json: str, spans: list[input_codec.Span]) -> StoredInput:
    """Keep an input's shared pieces (outside any transaction: each is one short statement); returns
    what the evaluation row keeps (``record_input``)."""
    skeleton, pieces = input_codec.split_input(input_json, spans)
    return StoredInput(skeleton, [(offset, store_text(text)) for offset, text in pieces])


def record_input(evaluation: Evaluation, stored: StoredInput) -> None:
    """The references of a new evaluation (its skeleton is ``evaluation.input_json``)."""
    InputPiece.objects.bulk_create(
        InputPiece(evaluation=evaluation, offset=offset, document_id=key) for offset, key in stored.pieces
    )


def inputs_of(evaluations: Iterable[Evaluation]) -> dict[int, str | None]:
    """The exact input of each evaluation (None once purged), in two queries for any number of them."""
    evaluations = list(evaluations)
    pieces: dict[int, list[tuple[int, str]]] = {}
    for evaluation_id, offset, key in InputPiece.objects.filter(
        evaluation__in=[evaluation.pk for evaluation in evaluations]
    ).values_list("evaluation_id", "offset", "document_id"):
        pieces.setdefault(evaluation_id, []).append((offset, key))
    texts = _texts(key for found in pieces.values() for _, key in found)
    return {
        evaluation.pk: None
        if evaluation.input_purged_at is not None
        else input_codec.join_input(
            evaluation.input_json, [(offset, texts[key]) for offset, key in pieces.get(evaluation.pk, [])]
        )
        for evaluation in evaluations
    }


def input_of(evaluation: Evaluation) -> str | None:
    """The exact input the engine saw, byte for byte (None once purged)."""
    return inputs_of([evaluation])[evaluation.pk]


def shown_input(evaluation: Evaluation) -> str | None:
    """The input as the API and the pages show it to anyone who may see the deployment (guards/masking.py
    says how), None once purged."""
    text = input_of(evaluation)
    return None if text is None else shown_input_text(text, Sensitivity.of(evaluation))


def purged_detail(evaluation: Evaluation) -> str:
    return (
        f"The input of this evaluation was purged on {evaluation.input_purged_at:%Y-%m-%d} (retention of "
        "policy inputs); its decision and messages are kept."
    )


def recorded(evaluations):
    """Evaluations whose input can still be read: one was built (not a failed-closed "null") and kept."""
    return evaluations.exclude(input_json=NO_INPUT).filter(input_purged_at__isnull=True)


@dataclass
class PurgeCounts:
    evaluations: int = 0
    plans: int = 0
    documents: int = 0


def purge_inputs(days: float, *, batch: int | None = None, now: Any = None) -> PurgeCounts:
    """Remove inputs and plans older than ``days``, then the documents nothing references any more."""
    batch = batch or settings.EVALUATION_INPUT_PURGE_BATCH
    now = now or timezone.now()
    cutoff = now - timedelta(days=days)
    counts = PurgeCounts()
    old = Evaluation.objects.filter(created_at__lt=cutoff, input_purged_at__isnull=True)
    while ids := list(old.order_by("pk").values_list("pk", flat=True)[:batch]):
        with transaction.atomic():
            InputPiece.objects.filter(evaluation_id__in=ids).delete()
            counts.evaluations += Evaluation.objects.filter(pk__in=ids).update(
                input_json="", input_purged_at=now
            )
    # A deployment still waiting may be evaluated again: it keeps its plan.
    finished = Deployment.objects.filter(created_at__lt=cutoff, status__in=FINAL_STATUSES).filter(
        Q(plan_document__isnull=False) | Q(plan_text_document__isnull=False)
    )
    while ids := list(finished.order_by("pk").values_list("pk", flat=True)[:batch]):
        counts.plans += Deployment.objects.filter(pk__in=ids).update(
            plan_document=None, plan_text_document=None, plan_purged_at=now
        )
    counts.documents = _remove_unreferenced(cutoff, batch)
    logger.info("purged inputs older than %s days: %s", days, counts)
    return counts


def _remove_unreferenced(cutoff: Any, batch: int) -> int:
    """Documents unused since ``cutoff`` and referenced by nothing. One used meanwhile has a newer
    ``last_used_at`` (store_text), so the DELETE's own condition spares it; one referenced by a row not yet
    committed makes its batch fail on the reference, and that batch is left for the next purge."""
    unreferenced = (
        StoredDocument.objects.filter(last_used_at__lt=cutoff)
        .exclude(Exists(InputPiece.objects.filter(document=OuterRef("pk"))))
        .exclude(Exists(Deployment.objects.filter(plan_document=OuterRef("pk"))))
        .exclude(Exists(Deployment.objects.filter(plan_text_document=OuterRef("pk"))))
    )
    removed = 0
    skipped: set[str] = set()
    while keys := list(unreferenced.exclude(key__in=skipped).values_list("key", flat=True)[:batch]):
        try:
            with transaction.atomic():
                removed += unreferenced.filter(key__in=keys).delete()[0]
        except (IntegrityError, ProtectedError, DatabaseError):
            logger.warning("documents referenced while being purged are kept: %s", keys[:3])
            skipped.update(keys)
    return removed
