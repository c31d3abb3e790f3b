"""Celery tasks: thin wrappers that take ids and call one service function."""

from celery import shared_task
from django.db import DatabaseError

from .deployments import evaluate_deployment
from .models import Deployment


@shared_task(acks_late=True, autoretry_for=(DatabaseError,), retry_backoff=True, max_retries=5)
def evaluate_deployment_task(deployment_id: int, resume: bool = False) -> None:
    if not Deployment.objects.filter(pk=deployment_id).exists():
        return
    evaluate_deployment(deployment_id, resume=resume)
