"""Run the platform's periodic work in this process, on the schedule Celery beat uses in production
(settings.CELERY_BEAT_SCHEDULE): for the embedded setup, where there is no broker and no beat."""

import logging
import time
from datetime import datetime
from typing import Any

from celery.schedules import maybe_schedule
from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import close_old_connections
from django.utils import timezone

from policy_platform.celery import app

logger = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Run the periodic tasks of CELERY_BEAT_SCHEDULE in this process, for ever (or --once)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--once", action="store_true", help="run every task once and stop")

    def handle(self, *args: Any, once: bool = False, **options: Any) -> None:
        schedule = {
            name: maybe_schedule(entry["schedule"]) for name, entry in settings.CELERY_BEAT_SCHEDULE.items()
        }
        last_run: dict[str, datetime] = {}
        while True:
            for name, entry in settings.CELERY_BEAT_SCHEDULE.items():
                due = once or name not in last_run or schedule[name].is_due(last_run[name]).is_due
                if not due:
                    continue
                last_run[name] = timezone.now()
                try:
                    app.tasks[entry["task"]].apply(args=entry.get("args", ()), throw=True)
                except Exception:  # noqa: BLE001 - one failing run must not stop the others
                    logger.exception("periodic task %s failed", name)
            if once:
                return
            time.sleep(1)
            # A long-lived process: drop a connection the database closed (a restart) before it is used.
            close_old_connections()
