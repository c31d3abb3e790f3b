"""How long one sync of a policy folder may run: POLICY_SYNC_TIME_LIMIT_SECONDS from its start.

Reading a repository is bounded step by step (git's own timeout, the folder's size limits, the engine's
time limits); the clock bounds the whole: sources.py asks it before each step, and gives git no more
than what is left. A Celery worker's soft time limit, the same number, interrupts a step that is
running (tasks.py); without a broker the clock is the only bound.
"""

from __future__ import annotations

import time

from django.conf import settings


class SyncTookTooLong(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def unfinished_sync_message(limit_s: float, step: str = "") -> str:
    return (
        f"the sync took longer than {limit_s:g} s (POLICY_SYNC_TIME_LIMIT_SECONDS)"
        + (f" before {step}" if step else "")
        + "; nothing was changed"
    )


class SyncClock:
    """The time one sync of a folder has left: POLICY_SYNC_TIME_LIMIT_SECONDS from its start."""

    def __init__(self) -> None:
        self.limit_s = settings.POLICY_SYNC_TIME_LIMIT_SECONDS
        self.deadline = time.monotonic() + self.limit_s

    def require_time(self, step: str) -> float:
        """The seconds left for ``step``; SyncTookTooLong when none are."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise SyncTookTooLong(unfinished_sync_message(self.limit_s, step))
        return left
