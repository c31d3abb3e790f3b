"""A user's API tokens: several per user (one per pipeline), each named, with its last use, revocable.

Only the SHA-256 of a key is stored; the key itself is shown once, when it is made. Tokens of the older
kind, one per user (Django REST framework's, made before named tokens existed), were moved to hashes too
(``LegacyApiToken``) and are still accepted until revoked.

Every named token expires (``API_TOKEN_DEFAULT_DAYS`` unless asked otherwise, at most
``API_TOKEN_MAX_DAYS``); an expired key is refused as unauthenticated (401, code ``token_expired``). A token
may carry a scope (capabilities and a project subtree, access.TokenScope): a service account's always does
(accounts/service_accounts.py).

A key is looked up by its first characters (shown on the user's page anyway); its hash is then compared
in constant time, so how long an answer takes tells nothing about how much of a guessed key was right."""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from policies_app import audit
from policies_app.access import TokenScope, service_account_capabilities
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


class TokenExpired(Exception):
    """The key names a token whose expiry has passed."""


def expiry(days: int | None) -> datetime:
    """When a token made now with a lifetime of ``days`` (None: the default) expires; more than the
    operator's maximum is refused."""
    if days is None:
        days = settings.API_TOKEN_DEFAULT_DAYS
    if days < 1 or days > settings.API_TOKEN_MAX_DAYS:
        raise Invalid({"expires_in_days": [f"Between 1 and {settings.API_TOKEN_MAX_DAYS} days."]})
    return timezone.now() + timedelta(days=days)


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def create_token(
    user: AbstractBaseUser, name: str, expires_in_days: int | None = None
) -> tuple[ApiToken, str]:
    """Make a token for ``user`` (only for themselves); returns it and its key, shown this once."""
    name = (name or "").strip()
    if not name:
        raise Invalid({"name": ["Name the token after what uses it, e.g. the pipeline."]})
    if len(name) > 100:
        raise Invalid({"name": ["At most 100 characters."]})
    if getattr(user, "token_scope", None) is not None:
        # A token bounded to a scope must not mint one without bounds (a service account's are made by
        # its project's admins).
        raise Forbidden("A scoped token may not make tokens.")
    if ApiToken.objects.filter(user=user, name=name).exists():
        raise Invalid({"name": ["You already have a token of this name."]})
    expires_at = expiry(expires_in_days)
    key = new_key()
    with transaction.atomic():
        token = ApiToken.objects.create(
            user=user, name=name, prefix=key_prefix(key), key_hash=key_hash(key), expires_at=expires_at
        )
        audit.record(
            user,
            "token.created",
            user,
            after={"name": name, "prefix": token.prefix, "expires_at": expires_at.isoformat()},
        )
    return token, key


def revoke_token(user: AbstractBaseUser, token: ApiToken) -> None:
    if token.user_id != user.pk:
        raise Forbidden("You may revoke only your own tokens.")
    with transaction.atomic():
        audit.record(user, "token.revoked", user, before={"name": token.name, "prefix": token.prefix})
        token.delete()


NO_PREFIX = "\x00no prefix"  # the placeholder of the prepared lookups' prefix
# What is read of each kind of token beside its user: a token's own limits (expiry, scope) only for the
# named tokens that have them.
_TOKEN_FIELDS = {
    ApiToken: (
        "pk",
        "key_hash",
        "last_used_at",
        "expires_at",
        "service_account_id",
        "scope_project_id",
        "capabilities",
    ),
    LegacyApiToken: ("pk", "key_hash"),
}


@functools.cache
def _user_columns() -> tuple[str, ...]:
    return tuple(field.attname for field in get_user_model()._meta.concrete_fields)


def candidates(kind: type, prefix: str) -> QuerySet:
    """The tokens of ``kind`` whose key starts with ``prefix``: the token's fields, then its user's
    columns (``user_among`` reads them; a query may add columns after them)."""
    return (
        kind.objects.filter(prefix=prefix)
        .order_by()  # a key's hash matches one at most: no order to keep
        .values_list(*_TOKEN_FIELDS[kind], *(f"user__{column}" for column in _user_columns()))
    )


def candidate_width(kind: type) -> int:
    """How many columns of a ``candidates`` row are the token's and its user's."""
    return len(_TOKEN_FIELDS[kind]) + len(_user_columns())


def _candidates(kind: type) -> PreparedQuery:
    """The tokens of a prefix with their users, compiled once: every API request and every pipeline's
    poll asks, and compiling the query costs more than running it (policies_app/prepared.py)."""
    return PreparedQuery(lambda prefix: candidates(kind, prefix), NO_PREFIX)


CANDIDATES = {ApiToken: _candidates(ApiToken), LegacyApiToken: _candidates(LegacyApiToken)}


def kind_of(key: str) -> type:
    return ApiToken if key.startswith(KEY_PREFIX) else LegacyApiToken


def user_for_key(key: str) -> AbstractBaseUser | None:
    """The active user a key belongs to (None: no such token, or its user is deactivated), noting the
    use of a named token. A scoped token's user carries its scope (``token_scope``), which access.Grants
    applies to every question asked of that user in this request. Raises TokenExpired."""
    if not key:
        return None
    kind = kind_of(key)
    return user_among(kind, key, CANDIDATES[kind].rows(key_prefix(key)))[0]


def user_among(
    kind: type, key: str, rows: Iterable[Sequence[Any]]
) -> tuple[AbstractBaseUser | None, Sequence[Any] | None]:
    """The active user of the token among ``rows`` (``candidates`` rows of the key's prefix, possibly
    with more columns) whose hash is the key's, and that row; (None, None): none, or its user is
    deactivated. Notes the use of a named token and gives a scoped token's user its ``token_scope``.
    Raises TokenExpired."""
    digest = key_hash(key)
    found = None
    for candidate in rows:
        if hmac.compare_digest(candidate[1], digest):
            found = candidate
    if found is None:
        return None, None
    fields = _TOKEN_FIELDS[kind]
    token_values = dict(zip(fields, found, strict=False))
    user = get_user_model().from_db("default", _user_columns(), found[len(fields) : candidate_width(kind)])
    if not user.is_active:
        return None, None
    if kind is ApiToken:
        now = timezone.now()
        expires_at = token_values["expires_at"]
        if expires_at is not None and expires_at <= now:
            raise TokenExpired
        last_used_at = token_values["last_used_at"]
        if last_used_at is None or last_used_at < now - LAST_USE_PRECISION:
            ApiToken.objects.filter(pk=token_values["pk"]).update(last_used_at=now)
        scoped = (
            token_values["service_account_id"]
            or token_values["scope_project_id"]
            or token_values["capabilities"]
        )
        # Only a scoped token (a service account's, mostly) costs a second query, for its projects.
        user.token_scope = (
            scope_of(
                ApiToken.objects.select_related("scope_project", "service_account__project").get(
                    pk=token_values["pk"]
                )
            )
            if scoped
            else None
        )
    return user, found


def scope_of(token: ApiToken) -> TokenScope | None:
    """What a token is bounded to; None: everything its user may do."""
    account = token.service_account
    if account is None and not token.capabilities and token.scope_project_id is None:
        return None
    return TokenScope(
        capabilities=frozenset(token.capabilities),
        project=token.scope_project,
        account_project=account.project if account else None,
        account_capabilities=service_account_capabilities(account) if account else frozenset(),
    )


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
