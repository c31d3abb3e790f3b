"""Keeping an environment's Terraform state: each accepted state becomes the current one, older ones stay as history."""

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from policies_app import access
from policies_app.choices import Capability
from policies_app.errors import Conflict, Invalid
from policies_app.iac.state_view import StateFormatError, normalise_state, state_identity, tfstate_view
from policies_app.models import Deployment, Environment, EnvironmentState


def upload_state(
    user: AbstractBaseUser, environment: Environment, document: Any, *, force: bool = False
) -> EnvironmentState:
    """A deployer uploads the environment's state (raw v4 file or ``terraform show -json`` output)."""
    access.require(
        user, Capability.DEPLOY, environment.project, "Only deployers of the project may upload its state."
    )
    return store_state(environment, document, user=user, force=force)


def store_state(
    environment: Environment,
    document: Any,
    *,
    user: AbstractBaseUser | None = None,
    deployment: Deployment | None = None,
    force: bool = False,
) -> EnvironmentState:
    """Accept a state unless it would go backwards (an older serial, another lineage) without ``force``."""
    if not isinstance(document, dict):
        raise Invalid({"state": ["The state must be a JSON object."]})
    try:
        # Validated and identified through the normalised form; kept as uploaded, so it can be handed back.
        normalised = normalise_state(document)
        serial, lineage = state_identity(normalised)
        # Every later evaluation shows policies this view: a state it cannot be made from is refused now,
        # not discovered at each deployment.
        tfstate_view(normalised)
    except StateFormatError as problem:
        raise Invalid({"state": [str(problem)]}) from None
    with transaction.atomic():
        # Lock the environment so two uploads cannot both pass the check against the same current state.
        Environment.objects.select_for_update().filter(pk=environment.pk).first()
        current = environment.states.order_by("-created_at", "-id").first()
        if current is not None and not force:
            if lineage and current.lineage and lineage != current.lineage:
                raise Conflict(
                    f"The state's lineage {lineage} is not the current state's lineage {current.lineage}.",
                    code="state_conflict",
                )
            if serial is not None and current.serial is not None and serial < current.serial:
                raise Conflict(
                    f"The state's serial {serial} is older than the current serial {current.serial}.",
                    code="state_conflict",
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
