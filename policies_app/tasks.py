"""Celery tasks: thin wrappers that take ids and call one service function.

Nothing in policies_app imports this module but apps.py (which registers the tasks): services wake a
worker by a task's name through wakeups.py."""

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError

from policies_app.accounts import audit_chain, audit_stream, users
from policies_app.deployments.explanations import explain_evaluation, resend_due_explanations
from policies_app.deployments.sweeps import resend_lost_evaluations, sweep_waiting_deployments
from policies_app.deployments.verdicts import evaluate_deployment
from policies_app.models import ApprovalPolicy
from policies_app.notifications import approval_emails, slack, webhooks
from policies_app.policies.git.branch_checks import resend_lost_branch_checks, run_branch_check
from policies_app.policies.git.sources import (
    record_unfinished_sync,
    sync_all_repository_policies,
    sync_policy,
)
from policies_app.policies.replay import resend_lost_replays, run_replay
from policies_app.projects.template_views import (
    compute_template_views,
    resend_due_template_views,
    sync_template_views,
)


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=8)
def evaluate_deployment_task(deployment_id: int, resume: bool = False) -> None:
    evaluate_deployment(deployment_id, resume=resume)


@shared_task
def resend_lost_evaluations_task() -> list[int]:
    return resend_lost_evaluations()


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=8)
def explain_evaluation_task(evaluation_id: int) -> bool:
    return explain_evaluation(evaluation_id)


@shared_task
def resend_due_explanations_task() -> list[int]:
    return resend_due_explanations()


@shared_task(
    acks_late=True,
    autoretry_for=(DatabaseError,),
    retry_backoff=True,
    max_retries=8,
    # The soft limit interrupts the sync wherever it is (its transaction rolls back); the hard limit ends
    # a worker process stuck where Python cannot interrupt it.
    soft_time_limit=settings.POLICY_SYNC_TIME_LIMIT_SECONDS,
    time_limit=settings.POLICY_SYNC_TIME_LIMIT_SECONDS + 30,
)
def sync_policy_task(policy_id: int) -> None:
    policy = ApprovalPolicy.objects.filter(pk=policy_id, repository__isnull=False).first()
    if policy is None:
        return
    try:
        sync_policy(policy)
    except SoftTimeLimitExceeded:
        record_unfinished_sync(policy_id)


@shared_task
def sync_policy_repositories_task() -> int:
    return len(sync_all_repository_policies())


@shared_task(
    acks_late=True,
    autoretry_for=(DatabaseError,),
    retry_backoff=True,
    max_retries=8,
    soft_time_limit=settings.POLICY_SYNC_TIME_LIMIT_SECONDS * 2,
    time_limit=settings.POLICY_SYNC_TIME_LIMIT_SECONDS * 2 + 30,
)
def branch_check_task(check_id: int) -> None:
    run_branch_check(check_id)


@shared_task
def resend_lost_branch_checks_task() -> list[int]:
    return resend_lost_branch_checks()


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=8)
def replay_task(replay_id: int) -> None:
    run_replay(replay_id)


@shared_task
def resend_lost_replays_task() -> list[int]:
    return resend_lost_replays()


@shared_task
def sweep_waiting_deployments_task() -> dict[str, list[int]]:
    return sweep_waiting_deployments()


@shared_task(acks_late=True)
def send_approval_emails_task(deployment_id: int) -> int:
    return approval_emails.send_approval_emails(deployment_id)


@shared_task(bind=True, acks_late=True, max_retries=None)
def deliver_webhook_task(self, delivery_id: int) -> None:
    """One attempt; a failed one is retried by Celery after the delivery's backoff (without a broker,
    tasks run in-process and the periodic sweep makes the retries instead)."""
    retry_in = webhooks.attempt_delivery(delivery_id)
    if retry_in is not None and not self.request.is_eager:
        raise self.retry(countdown=retry_in)


@shared_task(acks_late=True)
def post_slack_message_task(message_id: int) -> bool:
    return slack.post_message(message_id)


@shared_task(acks_late=True)
def update_slack_message_task(message_id: int) -> bool:
    return slack.show_outcome(message_id)


@shared_task
def resend_lost_notifications_task() -> dict[str, int]:
    return {
        "emails": approval_emails.send_approval_emails(),
        "webhooks": len(webhooks.resend_due_deliveries()),
        "slack": len(slack.resend_due_messages()),
        "invitations": users.send_invitations(),
        "audit_stream": sum(audit_stream.stream_due().values()),
    }


@shared_task(acks_late=True)
def stream_audit_task() -> dict[str, int]:
    return audit_stream.stream_due()


@shared_task(acks_late=True)
def send_invitations_task(user_id: int) -> int:
    return users.send_invitations(user_id)


@shared_task
def send_daily_digests_task() -> int:
    return approval_emails.send_daily_digests()


@shared_task
def write_audit_checkpoint_task() -> int | None:
    checkpoint = audit_chain.write_checkpoint()
    return checkpoint.sequence if checkpoint is not None else None


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=8)
def compute_template_views_task(template_id: int) -> int:
    return compute_template_views(template_id)


@shared_task
def resend_due_template_views_task() -> list[int]:
    return resend_due_template_views()


@shared_task
def sync_template_views_task() -> list[int]:
    return sync_template_views()
