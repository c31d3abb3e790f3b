"""Reading the audit log: who may see which entries, the filters, and the CSV and JSON exports.

Organisation roles read every entry; a project admin reads the entries of the projects they administer
(and below). Organisation-wide entries (policies, templates, teams, users) are for organisation roles.

A CSV export is opened in spreadsheets, which run a cell that starts like a formula: such cells (any
text a user chose, such as a project's name) are escaped as OWASP recommends (``spreadsheet_cell``)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

from django.apps import apps
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q, QuerySet
from django.utils import timezone

from policies_app.access import Grants
from policies_app.choices import Capability
from policies_app.models import AuditEntry

EXPORT_FIELDS = ("id", "created_at", "actor", "action", "target_type", "target_id", "target", "project")
CHAIN_FIELDS = ("sequence", "previous_hash", "entry_hash")
EXPORT_LIMIT = 100_000
# What a spreadsheet reads as the start of a formula (OWASP, "CSV Injection").
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class AuditFilters:
    actor: str = ""  # username
    action: str = ""  # an exact action or a prefix ending with "." (e.g. "policy.")
    target_type: str = ""
    project: int | None = None  # the project and its sub-projects
    since: date | None = None
    until: date | None = None
    text: str = ""


def visible_entries(user: AbstractBaseUser) -> QuerySet[AuditEntry]:
    held = Grants.of(user)
    entries = AuditEntry.objects.select_related("actor", "project")
    if held.sees_everything:
        return entries
    return entries.filter(held.capability_filter(Capability.ADMINISTER, "project__") or Q())


def may_read_audit_log(user: AbstractBaseUser) -> bool:
    held = Grants.of(user)
    return held.sees_everything or held.administers_some_project


def filtered(entries: QuerySet[AuditEntry], filters: AuditFilters) -> QuerySet[AuditEntry]:
    if filters.actor:
        entries = entries.filter(actor__username=filters.actor)
    if filters.action:
        if filters.action.endswith("."):
            entries = entries.filter(action__startswith=filters.action)
        else:
            entries = entries.filter(action=filters.action)
    if filters.target_type:
        entries = entries.filter(target_type=_target_type_named(filters.target_type))
    if filters.project is not None:
        entries = entries.filter(
            Q(project_id=filters.project) | Q(project__lineage__contains=f"/{filters.project}/")
        )
    zone = timezone.get_current_timezone()
    if filters.since:
        entries = entries.filter(created_at__gte=datetime.combine(filters.since, time.min, zone))
    if filters.until:
        entries = entries.filter(created_at__lte=datetime.combine(filters.until, time.max, zone))
    if filters.text:
        entries = entries.filter(Q(target_repr__icontains=filters.text) | Q(action__icontains=filters.text))
    return entries


def _target_type_named(name: str) -> str:
    """Target types are kept in words ("approval policy"); a filter by the model's name (what the log
    kept before) still finds them."""
    for model in apps.get_models():
        if model._meta.model_name == name.lower():
            return str(model._meta.verbose_name)
    return name


def as_record(entry: AuditEntry) -> dict[str, Any]:
    return {
        "id": entry.pk,
        "created_at": entry.created_at.isoformat(),
        "actor": entry.actor.get_username() if entry.actor else None,
        "action": entry.action,
        "target_type": entry.target_type,
        "target_id": entry.target_id,
        "target": entry.target_repr,
        "project": entry.project_id,
        "before": entry.before,
        "after": entry.after,
        # Its place in the tamper-evident chain (models/audit.py): verify_audit checks them.
        "sequence": entry.sequence,
        "previous_hash": entry.previous_hash,
        "entry_hash": entry.entry_hash,
    }


def export_json(entries: Iterable[AuditEntry]) -> Iterator[str]:
    """A JSON array, streamed entry by entry (an export of a long log never sits in memory whole)."""
    yield "["
    for position, entry in enumerate(entries):
        yield ("," if position else "") + "\n" + json.dumps(as_record(entry), sort_keys=True)
    yield "\n]\n"


def spreadsheet_cell(value: Any) -> str:
    """A cell no spreadsheet runs: one that would start a formula is prefixed with a quote (and every
    cell is quoted by the writer, so a separator inside one cannot start another)."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_TRIGGERS) else text


def export_csv(entries: Iterable[AuditEntry]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow([*EXPORT_FIELDS, "before", "after", *CHAIN_FIELDS])
    yield flush()
    for entry in entries:
        record = as_record(entry)
        writer.writerow(
            spreadsheet_cell(cell)
            for cell in (
                *(record[name] for name in EXPORT_FIELDS),
                json.dumps(entry.before, sort_keys=True) if entry.before is not None else None,
                json.dumps(entry.after, sort_keys=True) if entry.after is not None else None,
                *(record[name] for name in CHAIN_FIELDS),
            )
        )
        yield flush()
