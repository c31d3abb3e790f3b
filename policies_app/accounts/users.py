"""Use cases of user accounts, for organisation admins: create or invite a user, deactivate or
reactivate one, give or take an organisation role. A user invited without a password gets an email with
a link to choose one.

The invitation owed is a row (``InvitationEmail``) written with the account; sending it is a task woken
after commit, and the periodic notification sweep sends whatever a lost task or a mail server that was
down left behind: an invited user never waits for an email that nobody will send."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import QuerySet
from django.forms import ValidationError
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from policies_app import access, audit, wakeups
from policies_app.access import Grants
from policies_app.choices import OrganisationRole
from policies_app.errors import Forbidden, Invalid, NotFound
from policies_app.models import ApiToken, InvitationEmail, LegacyApiToken, OrganisationMembership

logger = logging.getLogger(__name__)
User = get_user_model()
# An invitation still unsent this long after it was written lost its task: the sweep sends it.
INVITATION_RESEND_AFTER = timedelta(minutes=1)
WHO_MAY = "Only organisation admins may manage users."


def may_manage_users(user: AbstractBaseUser) -> bool:
    return Grants.of(user).is_organisation_admin


def require_user_manager(user: AbstractBaseUser) -> None:
    if not may_manage_users(user):
        raise Forbidden(WHO_MAY)


def visible_users(user: AbstractBaseUser) -> QuerySet:
    """Everyone for organisation roles; nobody else lists accounts."""
    if not Grants.of(user).sees_everything:
        return User.objects.none()
    return User.objects.select_related("organisation_role").order_by("username")


def _snapshot(account: Any) -> dict[str, Any]:
    role = OrganisationMembership.objects.filter(user=account).values_list("role", flat=True).first()
    return {
        "username": account.username,
        "email": account.email,
        "is_active": account.is_active,
        "organisation_role": role,
    }


def create_user(
    actor: AbstractBaseUser,
    *,
    username: str,
    email: str = "",
    first_name: str = "",
    last_name: str = "",
    password: str = "",
    organisation_role: str = "",
) -> tuple[Any, bool]:
    """Create an account; without a password, invite the user by email to choose one. Returns the user
    and whether an invitation was sent."""
    require_user_manager(actor)
    errors: dict[str, list[str]] = {}
    if not username or not User.username_validator.regex.match(username) or len(username) > 150:
        errors["username"] = ["Letters, digits and @/./+/-/_ only, at most 150 characters."]
    elif User.objects.filter(username=username).exists():
        errors["username"] = ["A user of this name already exists."]
    if email:
        try:
            validate_email(email)
        except ValidationError:
            errors["email"] = ["Enter a valid email address."]
    if not password and not email:
        errors["email"] = ["Give an email address to invite the user, or a password."]
    if password and len(password) < 8:
        errors["password"] = ["At least 8 characters."]
    if organisation_role and organisation_role not in OrganisationRole.values:
        errors["organisation_role"] = [f"Must be one of {', '.join(OrganisationRole.values)}."]
    if errors:
        raise Invalid(errors)
    with transaction.atomic():
        account = User.objects.create_user(
            username=username, email=email, first_name=first_name, last_name=last_name
        )
        if password:
            account.set_password(password)
        else:
            account.set_unusable_password()
        account.save()
        if organisation_role:
            OrganisationMembership.objects.create(user=account, role=organisation_role)
        audit.record(actor, "user.created", account, after=_snapshot(account))
        invited = not password
        if invited:
            InvitationEmail.objects.create(user=account)
            wakeups.wake("policies_app.tasks.send_invitations_task", account.pk)
    return account, invited


def send_invitations(user_id: int | None = None) -> int:
    """Send the invitations owed (one user's, or every one left behind); returns how many were sent."""
    rows = InvitationEmail.objects.filter(sent_at__isnull=True).select_related("user")
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    else:
        rows = rows.filter(created_at__lt=timezone.now() - INVITATION_RESEND_AFTER)
    sent = 0
    for row in rows[:500]:
        # Claimed first, so two senders (the task and the sweep) never both send it.
        if not InvitationEmail.objects.filter(pk=row.pk, sent_at__isnull=True).update(sent_at=timezone.now()):
            continue
        try:
            _send_invitation(row.user)
        except Exception:  # noqa: BLE001 - the mail server may be down: unclaim, the sweep retries
            logger.exception("could not send the invitation of user %s", row.user.get_username())
            InvitationEmail.objects.filter(pk=row.pk).update(sent_at=None)
            continue
        sent += 1
    return sent


def _send_invitation(account: Any) -> None:
    link = settings.PLATFORM_URL + reverse(
        "password_reset_confirm",
        kwargs={
            "uidb64": urlsafe_base64_encode(force_bytes(account.pk)),
            "token": default_token_generator.make_token(account),
        },
    )
    send_mail(
        "[Policy platform] Your account",
        f"An account named {account.username} was made for you on the policy platform.\n\n"
        f"Choose your password here: {link}\n",
        None,
        [account.email],
    )


def change_user(
    actor: AbstractBaseUser,
    account: Any,
    *,
    is_active: bool | None = None,
    organisation_role: str | None = None,
    email: str | None = None,
) -> Any:
    """Deactivate or reactivate an account, change its email, give or take its organisation role
    (``""`` takes it away). Nobody deactivates or demotes themselves, so the organisation keeps an admin;
    only a superuser changes a superuser (an organisation admin could otherwise lock out, or take over
    by re-emailing and resetting the password of, the accounts above them)."""
    require_user_manager(actor)
    if account.is_superuser and not actor.is_superuser:
        raise Forbidden("Only a superuser may change a superuser's account.", code="superuser")
    demotes = organisation_role is not None and organisation_role != OrganisationRole.ADMIN
    if account.pk == actor.pk and (is_active is False or (demotes and not actor.is_superuser)):
        raise Forbidden("You may not deactivate or demote yourself.", code="self")
    if organisation_role and organisation_role not in OrganisationRole.values:
        raise Invalid({"organisation_role": [f"Must be one of {', '.join(OrganisationRole.values)}."]})
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise Invalid({"email": ["Enter a valid email address."]}) from None
    with transaction.atomic():
        before = _snapshot(account)
        if is_active is not None:
            account.is_active = is_active
        if email is not None:
            account.email = email
        account.save()
        if before["is_active"] and not account.is_active:
            # As SCIM's deactivation does: a reactivated account starts with no session or token.
            revoke_access(account)
        if organisation_role is not None:
            OrganisationMembership.objects.filter(user=account).delete()
            if organisation_role:
                OrganisationMembership.objects.create(user=account, role=organisation_role)
            access.forget_cached_grants()
        after = _snapshot(account)
        if after != before:
            audit.record(actor, "user.changed", account, before=before, after=after)
    return account


def get_visible_user(actor: AbstractBaseUser, pk: int) -> Any:
    account = visible_users(actor).filter(pk=pk).first()
    if account is None:
        raise NotFound("No such user.")
    return account


def revoke_access(account: Any) -> None:
    """Everything that lets ``account`` in now stops: its sessions end and its API tokens are deleted
    (deactivation already refuses new sign-ins). Sessions are found by reading each one: deactivations
    are rare, sessions bounded by their age."""
    from django.contrib.sessions.models import Session

    ApiToken.objects.filter(user=account).delete()
    LegacyApiToken.objects.filter(user=account).delete()
    ended = [
        session.pk
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
        if session.get_decoded().get("_auth_user_id") == str(account.pk)
    ]
    Session.objects.filter(pk__in=ended).delete()
