"""Waking a worker: the one place in policies_app that sends a Celery task.

Work the platform owes is recorded in a row, in the transaction that makes it due: a deployment's
``evaluation_due_at``, an ``ApprovalRequestEmail`` or ``InvitationEmail`` not yet sent, a
``WebhookDelivery`` whose next attempt is due, a ``PolicyReplay`` still queued. Sending the task is
only a wake-up call, made once that transaction commits (a worker never looks for a row that is not
there yet). When the broker is down the call is logged and dropped, never raised into the request that
already committed; a periodic sweeper (settings.CELERY_BEAT_SCHEDULE, or ``manage.py run_periodic``)
finds the work in its row and wakes a worker again.

Tasks are named, not imported: services never import ``policies_app.tasks`` (which imports them), so
there is no import circle between the two. apps.py registers the tasks in every process.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from celery import Task, current_app
from django.db import transaction

logger = logging.getLogger(__name__)


def wake(task_name: str, *args: Any) -> None:
    """Send the task ``task_name`` (its full name, e.g. ``policies_app.tasks.replay_task``) with ``args``
    once the current transaction commits (at once outside a transaction).

    Without a broker (CELERY_TASK_ALWAYS_EAGER) the task runs in this process at that moment. An unknown
    name is a defect of the caller and raises here, inside its transaction; a failure to send does not."""
    task = current_app.tasks[task_name]
    transaction.on_commit(partial(_send, task, args))


def _send(task: Task, args: tuple[Any, ...]) -> None:
    try:
        task.apply_async(args)
    except Exception:  # noqa: BLE001 - the broker may be down: the row keeps the work, a sweeper resends it
        logger.exception("could not send %s%r now; a periodic sweep sends it again", task.name, args)
