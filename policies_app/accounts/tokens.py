"""A user's API tokens: several per user (one per pipeline), each named, with its last use, revocable.

Only the SHA-256 of a key is stored; the key itself is shown once, when it is made. Tokens of the older
kind, one per user (Django REST framework's, made before named tokens existed), were moved to hashes too
(``LegacyApiToken``) and are still accepted until revoked.

A key is looked up by its first characters (shown on the user's page anyway); its hash is then compared
in constant time, so how long an answer takes tells nothing about how much of a guessed key was right."""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from policies_app import audit
from policies_app.errors import Forbidden, Invalid
from policies_app.models import ApiToken, LegacyApiToken
from policies_app.prepared import PreparedQuery

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


NO_PREFIX = "\x00no prefix"  # the placeholder of the prepared lookups' prefix


@functools.cache
def _user_columns() -> tuple[str, ...]:
    return tuple(field.attname for field in get_user_model()._meta.concrete_fields)


def _candidates(kind: type) -> PreparedQuery:
    """The tokens of a prefix with their users, compiled once (every API request asks)."""
    return PreparedQuery(
        lambda prefix: kind.objects.filter(prefix=prefix).values_list(
            "pk",
            "key_hash",
            "last_used_at" if kind is ApiToken else "created_at",
            *(f"user__{column}" for column in _user_columns()),
        ),
        NO_PREFIX,
    )


CANDIDATES = {ApiToken: _candidates(ApiToken), LegacyApiToken: _candidates(LegacyApiToken)}


def user_for_key(key: str) -> AbstractBaseUser | None:
    """The active user a key belongs to (None: no such token, or its user is deactivated), noting the
    use of a named token."""
    if not key:
        return None
    digest = key_hash(key)
    kind = ApiToken if key.startswith(KEY_PREFIX) else LegacyApiToken
    found = None
    for candidate in CANDIDATES[kind].rows(key_prefix(key)):
        if hmac.compare_digest(candidate[1], digest):
            found = candidate
    if found is None:
        return None
    token_id, _, last_used_at, *user_values = found
    user = get_user_model().from_db("default", _user_columns(), user_values)
    if not user.is_active:
        return None
    if kind is ApiToken:
        now = timezone.now()
        if last_used_at is None or last_used_at < now - LAST_USE_PRECISION:
            ApiToken.objects.filter(pk=token_id).update(last_used_at=now)
    return user


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
