"""Celery tasks: thin wrappers that take ids and call one service function."""

from celery import shared_task
from django.db import DatabaseError

from .deployments import evaluate_deployment, resend_lost_evaluations
from .models import Deployment


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=8)
def evaluate_deployment_task(deployment_id: int, resume: bool = False) -> None:
    if not Deployment.objects.filter(pk=deployment_id).exists():
        return
    evaluate_deployment(deployment_id, resume=resume)


@shared_task
def resend_lost_evaluations_task() -> list[int]:
    return resend_lost_evaluations()
