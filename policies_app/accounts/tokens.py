"""A user's API tokens: several per user (one per pipeline), each named, with its last use, revocable.

Only the SHA-256 of a key is stored; the key itself is shown once, when it is made. Tokens made before
these existed (Django REST framework's one token per user, ``drf_create_token``) are still accepted."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from policies_app import audit
from policies_app.errors import Forbidden, Invalid
from policies_app.models import ApiToken

KEY_PREFIX = "pp_"
# Recording every use would write on every API call; once a minute says "last used" well enough.
LAST_USE_PRECISION = timedelta(minutes=1)


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_token(user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """Make a token for ``user`` (only for themselves); returns it and its key, shown this once."""
    name = (name or "").strip()
    if not name:
        raise Invalid({"name": ["Name the token after what uses it, e.g. the pipeline."]})
    if len(name) > 100:
        raise Invalid({"name": ["At most 100 characters."]})
    if ApiToken.objects.filter(user=user, name=name).exists():
        raise Invalid({"name": ["You already have a token of this name."]})
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ApiToken.objects.create(user=user, name=name, prefix=key[:10], key_hash=_hash(key))
        audit.record(user, "token.created", user, after={"name": name, "prefix": token.prefix})
    return token, key


def revoke_token(user: AbstractBaseUser, token: ApiToken) -> None:
    if token.user_id != user.pk:
        raise Forbidden("You may revoke only your own tokens.")
    with transaction.atomic():
        audit.record(user, "token.revoked", user, before={"name": token.name, "prefix": token.prefix})
        token.delete()


def user_for_key(key: str) -> AbstractBaseUser | None:
    """The active user a key belongs to (None: no such token), noting the token's use."""
    if not key.startswith(KEY_PREFIX):
        return None
    token = ApiToken.objects.select_related("user").filter(key_hash=_hash(key)).first()
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or token.last_used_at < now - LAST_USE_PRECISION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


def revoke_legacy_token(user: AbstractBaseUser) -> None:
    """Revoke the user's older, one-per-user token (made by ``drf_create_token`` or the demo)."""
    from rest_framework.authtoken.models import Token

    with transaction.atomic():
        if Token.objects.filter(user=user).delete()[0]:
            audit.record(user, "token.revoked", user, before={"name": "(older token)"})
