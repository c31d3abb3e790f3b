"""Keeping an environment's Terraform state: each accepted state becomes the current one, older ones stay as history."""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from .iac.state_view import StateFormatError, normalise_state, state_identity
from .models import Deployment, Environment, EnvironmentState

__all__ = ["StateConflictError", "StateFormatError", "store_state"]


class StateConflictError(Exception):
    """The new state is older than, or unrelated to, the current one."""


def store_state(
    environment: Environment,
    document: Any,
    *,
    user: AbstractBaseUser | None = None,
    deployment: Deployment | None = None,
    force: bool = False,
) -> EnvironmentState:
    """Accept a state (raw v4 file or ``terraform show -json`` output) unless it would go backwards."""
    # Validated and identified through the normalised form; kept as uploaded, so it can be handed back.
    serial, lineage = state_identity(normalise_state(document))
    with transaction.atomic():
        # Lock the environment so two uploads cannot both pass the check against the same current state.
        Environment.objects.select_for_update().filter(pk=environment.pk).first()
        current = environment.states.order_by("-created_at", "-id").first()
        if current is not None and not force:
            if lineage and current.lineage and lineage != current.lineage:
                raise StateConflictError(
                    f"The state's lineage {lineage} is not the current state's lineage {current.lineage}."
                )
            if serial is not None and current.serial is not None and serial < current.serial:
                raise StateConflictError(
                    f"The state's serial {serial} is older than the current serial {current.serial}."
                )
        return EnvironmentState.objects.create(
            environment=environment,
            document=document,
            serial=serial,
            lineage=lineage or "",
            deployment=deployment,
            uploaded_by=user if user is not None and user.is_authenticated else None,
            forced=force,
        )
