"""Celery tasks: thin wrappers that take ids and call one service function."""

from celery import shared_task
from django.db import DatabaseError

from .deployments import evaluate_deployment, resend_lost_evaluations
from .models import ApprovalPolicy, Deployment
from .policy_sources import sync_all_repository_policies, sync_policy
from .replay import run_replay


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=8)
def evaluate_deployment_task(deployment_id: int, resume: bool = False) -> None:
    if not Deployment.objects.filter(pk=deployment_id).exists():
        return
    evaluate_deployment(deployment_id, resume=resume)


@shared_task
def resend_lost_evaluations_task() -> list[int]:
    return resend_lost_evaluations()


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=8)
def sync_policy_task(policy_id: int) -> None:
    policy = ApprovalPolicy.objects.filter(pk=policy_id, repository__isnull=False).first()
    if policy is None:
        return
    sync_policy(policy)


@shared_task
def sync_policy_repositories_task() -> int:
    return len(sync_all_repository_policies())


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=8)
def replay_task(replay_id: int) -> None:
    run_replay(replay_id)
