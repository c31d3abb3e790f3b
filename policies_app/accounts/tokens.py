"""A user's API tokens: several per user (one per pipeline), each named, with its last use, revocable.

Only the SHA-256 of a key is stored; the key itself is shown once, when it is made. Tokens of the older
kind, one per user (Django REST framework's, made before named tokens existed), were moved to hashes too
(``LegacyApiToken``) and are still accepted until revoked.

A key is looked up by its first characters (shown on the user's page anyway); its hash is then compared
in constant time, so how long an answer takes tells nothing about how much of a guessed key was right."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from policies_app import audit
from policies_app.errors import Forbidden, Invalid
from policies_app.models import ApiToken, LegacyApiToken

KEY_PREFIX = "pp_"
PREFIX_LENGTH = 10  # "pp_" and 7 characters of the key
LEGACY_PREFIX_LENGTH = 6  # of 40 hexadecimal characters
# Recording every use would write on every API call; once a minute says "last used" well enough.
LAST_USE_PRECISION = timedelta(minutes=1)


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_prefix(key: str) -> str:
    """The first characters of a key, kept to find its token and to let its owner recognise it."""
    return key[:PREFIX_LENGTH] if key.startswith(KEY_PREFIX) else key[:LEGACY_PREFIX_LENGTH]


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
        token = ApiToken.objects.create(user=user, name=name, prefix=key_prefix(key), key_hash=key_hash(key))
        audit.record(user, "token.created", user, after={"name": name, "prefix": token.prefix})
    return token, key


def revoke_token(user: AbstractBaseUser, token: ApiToken) -> None:
    if token.user_id != user.pk:
        raise Forbidden("You may revoke only your own tokens.")
    with transaction.atomic():
        audit.record(user, "token.revoked", user, before={"name": token.name, "prefix": token.prefix})
        token.delete()


def user_for_key(key: str) -> AbstractBaseUser | None:
    """The active user a key belongs to (None: no such token, or its user is deactivated), noting the
    use of a named token."""
    if not key:
        return None
    digest = key_hash(key)
    kind = ApiToken if key.startswith(KEY_PREFIX) else LegacyApiToken
    token = None
    for candidate in kind.objects.select_related("user").filter(prefix=key_prefix(key)):
        if hmac.compare_digest(candidate.key_hash, digest):
            token = candidate
    if token is None or not token.user.is_active:
        return None
    if isinstance(token, ApiToken):
        now = timezone.now()
        if token.last_used_at is None or token.last_used_at < now - LAST_USE_PRECISION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


def revoke_legacy_token(user: AbstractBaseUser) -> None:
    """Revoke the user's token of the older, one-per-user kind."""
    with transaction.atomic():
        revoked = list(LegacyApiToken.objects.filter(user=user))
        if revoked:
            LegacyApiToken.objects.filter(pk__in=[token.pk for token in revoked]).delete()
            audit.record(
                user,
                "token.revoked",
                user,
                before={"name": "(older token)", "prefix": revoked[0].prefix},
            )
