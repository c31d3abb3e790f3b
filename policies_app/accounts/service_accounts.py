"""Service accounts: machine identities owned by a project, for pipelines and the gate.

An account acts through a user of its own, which holds no role and has no password: it can only call
the API, with one of its tokens. Every token is scoped (access.TokenScope): to capabilities (read,
deploy; approve only once an admin of the project has allowed it explicitly, ``may_approve``) and to a
subtree of the account's project, and it expires (accounts/tokens.py). A token reads what its account
reads (the account's project and below) and acts only in its subtree: elsewhere it is refused with 403.

Rotation without downtime: an account holds at most two live tokens; a new one is made beside the old,
the pipeline switches, then the old one is revoked. Only admins of the account's project manage it.
"""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from policies_app import access, audit
from policies_app.accounts.tokens import expiry, key_hash, key_prefix, new_key
from policies_app.choices import Capability
from policies_app.errors import Conflict, Forbidden, Invalid
from policies_app.models import ApiToken, Project, ServiceAccount

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
MAX_LIVE_TOKENS = 2  # the old and the new one, while a pipeline switches
GRANTABLE = frozenset({Capability.READ, Capability.DEPLOY, Capability.APPROVE})


def require_may_manage(user: AbstractBaseUser, project: Project) -> None:
    access.require(
        user, Capability.ADMINISTER, project, "Only admins of this project may manage its service accounts."
    )


def visible_service_accounts(user: AbstractBaseUser) -> QuerySet[ServiceAccount]:
    """The accounts of projects the user administers."""
    accounts = ServiceAccount.objects.select_related("project", "user")
    condition = access.grants(user).capability_filter(Capability.ADMINISTER, "project__")
    return accounts if condition is None else accounts.filter(condition)


def account_username(project: Project, name: str) -> str:
    return f"sa-{project.pk}-{name}"


def create_service_account(
    user: AbstractBaseUser, project: Project, name: str, *, description: str = "", may_approve: bool = False
) -> ServiceAccount:
    require_may_manage(user, project)
    name = (name or "").strip()
    if not NAME.match(name):
        raise Invalid({"name": ["Lower-case letters, digits and dashes, at most 63 characters."]})
    User = get_user_model()
    username = account_username(project, name)
    if ServiceAccount.objects.filter(project=project, name=name).exists() or (
        User.objects.filter(username=username).exists()
    ):
        raise Invalid({"name": ["This project already has a service account of this name."]})
    with transaction.atomic():
        machine = User(username=username, first_name=name[:150])
        machine.set_unusable_password()
        machine.save()
        account = ServiceAccount.objects.create(
            project=project,
            name=name,
            description=description,
            user=machine,
            may_approve=may_approve,
            created_by=user,
        )
        audit.record(
            user,
            "service_account.created",
            account,
            after={"name": name, "may_approve": may_approve},
            project=project,
        )
    return account


def change_service_account(
    user: AbstractBaseUser,
    account: ServiceAccount,
    *,
    description: str | None = None,
    may_approve: bool | None = None,
) -> ServiceAccount:
    """Allowing an account to approve is this explicit change (or the flag at creation), by an admin of its
    project; taking it away also narrows its tokens (their approve capability is no longer held)."""
    require_may_manage(user, account.project)
    before = {"description": account.description, "may_approve": account.may_approve}
    if description is not None:
        account.description = description
    if may_approve is not None:
        account.may_approve = may_approve
    with transaction.atomic():
        account.save(update_fields=["description", "may_approve"])
        after = {"description": account.description, "may_approve": account.may_approve}
        audit.record(
            user, "service_account.changed", account, before=before, after=after, project=account.project
        )
    return account


def delete_service_account(user: AbstractBaseUser, account: ServiceAccount) -> None:
    """Its tokens go with it; its user stays, deactivated, as the deployer of what it triggered."""
    require_may_manage(user, account.project)
    with transaction.atomic():
        audit.record(
            user, "service_account.deleted", account, before={"name": account.name}, project=account.project
        )
        machine = account.user
        account.delete()
        machine.is_active = False
        machine.save(update_fields=["is_active"])


def live_tokens(account: ServiceAccount) -> QuerySet[ApiToken]:
    return account.tokens.filter(expires_at__gt=timezone.now())


def refusal_to_scope(
    account: ServiceAccount, capabilities: list[str], project: Project
) -> tuple[str, str] | None:
    """Why a token of ``account`` may not hold ``capabilities`` on ``project``'s subtree: (field, reason),
    or None."""
    unknown = sorted(set(capabilities) - GRANTABLE)
    if unknown:
        return "capabilities", f"Not grantable to a machine: {', '.join(unknown)} (read, deploy, approve)."
    if Capability.APPROVE in capabilities and not account.may_approve:
        return "capabilities", (
            "This service account may not approve: an admin of its project must allow it explicitly first."
        )
    if project.pk != account.project_id and account.project_id not in project.ancestor_ids:
        return "project", f"The token's project must be {account.project} or one of its sub-projects."
    return None


def create_account_token(
    user: AbstractBaseUser,
    account: ServiceAccount,
    *,
    capabilities: list[str] | None = None,
    project: Project | None = None,
    name: str = "",
    expires_in_days: int | None = None,
) -> tuple[ApiToken, str]:
    """A new token for ``account`` (read and deploy on its whole project unless narrower); returns it and
    its key, shown this once. Refused while the account already holds two live tokens."""
    require_may_manage(user, account.project)
    capabilities = sorted(set(capabilities or [Capability.READ, Capability.DEPLOY]))
    project = project or account.project
    refusal = refusal_to_scope(account, capabilities, project)
    if refusal is not None:
        field, reason = refusal
        if field == "capabilities" and Capability.APPROVE in capabilities:
            raise Forbidden(reason, code="approve_not_allowed")
        raise Invalid({field: [reason]})
    expires_at = expiry(expires_in_days)
    with transaction.atomic():
        # The account's row is locked so that two rotations at once cannot both pass the count.
        ServiceAccount.objects.select_for_update().filter(pk=account.pk).first()
        if live_tokens(account).count() >= MAX_LIVE_TOKENS:
            raise Conflict(
                f"A service account holds at most {MAX_LIVE_TOKENS} live tokens: revoke the old one first.",
                code="too_many_tokens",
            )
        key = new_key()
        name = (name or "").strip() or f"key {key_prefix(key)}"
        if ApiToken.objects.filter(user=account.user, name=name).exists():
            raise Invalid({"name": ["This service account already has a token of this name."]})
        token = ApiToken.objects.create(
            user=account.user,
            service_account=account,
            name=name,
            prefix=key_prefix(key),
            key_hash=key_hash(key),
            expires_at=expires_at,
            capabilities=capabilities,
            scope_project=project,
        )
        audit.record(
            user,
            "service_account.token_created",
            account,
            after={
                "name": name,
                "prefix": token.prefix,
                "capabilities": capabilities,
                "project": project.pk,
                "expires_at": expires_at.isoformat(),
            },
            project=account.project,
        )
    return token, key


def rotate_token(
    user: AbstractBaseUser, token: ApiToken, expires_in_days: int | None = None
) -> tuple[ApiToken, str]:
    """A new token with the scope of ``token``, which keeps working until it is revoked (or expires)."""
    account = token.service_account
    return create_account_token(
        user,
        account,
        capabilities=list(token.capabilities),
        project=token.scope_project,
        expires_in_days=expires_in_days,
    )


def revoke_account_token(user: AbstractBaseUser, token: ApiToken) -> None:
    account = token.service_account
    require_may_manage(user, account.project)
    with transaction.atomic():
        audit.record(
            user,
            "service_account.token_revoked",
            account,
            before={"name": token.name, "prefix": token.prefix},
            project=account.project,
        )
        token.delete()
