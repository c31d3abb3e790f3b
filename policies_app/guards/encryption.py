"""Secrets at rest: the one way the platform keeps a secret it must read back (a policy repository's
password, SSH key and push-webhook secret; a project webhook's signing secret is to be kept the same way).

Values are encrypted with Fernet (AES-128-CBC with an HMAC-SHA256, from ``cryptography``) through
``MultiFernet`` over ``settings.SECRET_ENCRYPTION_KEYS``: the first key encrypts, every key decrypts, so a
new key is put first, ``manage.py rotate_secret_keys`` re-encrypts every stored secret with it, and only
then is the old key removed. A stolen database (a backup, a file read through some other hole) holds no
readable secret without the keys, which live in the environment, not in the database.

Two ways in, whichever keeps a call site simplest:

- ``EncryptedTextField`` on a model: reading the attribute gives the plaintext, saving stores a Fernet
  token; ``""`` stays ``""`` (no secret set). Filtering on such a field matches nothing (every encryption
  differs), which is as it should be for a secret. ``rotate_secret_keys`` finds every such field itself.
- ``encrypt(text)`` / ``decrypt(token)`` for a value kept anywhere else.

A data migration that turns an existing plaintext column into an ``EncryptedTextField`` alters the field
first, then calls ``encrypt_plaintext_column`` (and ``decrypt_to_plaintext_column`` to go back).

A secret that no key decrypts is an error naming the model and field, never silently passed on: it means
a key was removed before rotation finished, or the database came from another installation.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.apps import apps
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.db import models, transaction

KEYS_SETTING = "SECRET_ENCRYPTION_KEYS"
MAKE_A_KEY = 'python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"'
ROTATION_BATCH = 500


class UnreadableSecret(ValueError):
    """A stored value that none of the keys decrypts."""


def key_problems(keys: list[str]) -> list[str]:
    """What is wrong with a list of keys (empty: nothing); never repeats a key in a message."""
    if not keys:
        return [f"{KEYS_SETTING} is not set: secrets stored in the database cannot be encrypted."]
    problems = []
    for position, key in enumerate(keys, start=1):
        try:
            Fernet(key)
        except (ValueError, TypeError):
            problems.append(
                f"{KEYS_SETTING}: key {position} of {len(keys)} is not a Fernet key "
                "(32 bytes in URL-safe base64, 44 characters)."
            )
    return problems


@lru_cache(maxsize=4)
def _fernet_for(keys: tuple[str, ...]) -> MultiFernet:
    problems = key_problems(list(keys))
    if problems:
        raise ImproperlyConfigured(" ".join(problems) + f" Make a key with: {MAKE_A_KEY}")
    return MultiFernet([Fernet(key) for key in keys])


def _fernet() -> MultiFernet:
    return _fernet_for(tuple(settings.SECRET_ENCRYPTION_KEYS))


def encrypt(plaintext: str) -> str:
    """A Fernet token (ASCII) holding ``plaintext``, made with the first key."""
    return _fernet().encrypt(plaintext.encode()).decode("ascii")


def decrypt(token: str) -> str:
    """The plaintext of a token made by ``encrypt`` with any of the keys; UnreadableSecret otherwise."""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except (InvalidToken, UnicodeError):
        raise UnreadableSecret(
            f"a stored secret cannot be decrypted with any key of {KEYS_SETTING}"
        ) from None


def is_encrypted(value: str) -> bool:
    """Whether ``value`` is a token one of the keys decrypts (a plaintext never is, in practice)."""
    try:
        decrypt(value)
    except UnreadableSecret:
        return False
    return True


class EncryptedTextField(models.TextField):
    """A text column holding a Fernet token; the model attribute holds the plaintext."""

    description = "Text encrypted at rest (Fernet)"

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if not value:
            return value
        try:
            return decrypt(value)
        except UnreadableSecret as problem:
            raise UnreadableSecret(
                f"{self.model._meta.label}.{self.name}: {problem}; was a key removed before "
                "`manage.py rotate_secret_keys` re-encrypted everything with the first one?"
            ) from None

    def get_prep_value(self, value: Any) -> Any:
        value = super().get_prep_value(value)
        if not value:
            return value
        return encrypt(value)


# ------------------------------------------------------------------------------------------ rotation


def encrypted_fields() -> Iterator[tuple[type[models.Model], list[str]]]:
    """Every installed model with encrypted fields, and their names."""
    for model in apps.get_models():
        names = [f.name for f in model._meta.concrete_fields if isinstance(f, EncryptedTextField)]
        if names:
            yield model, names


def rotate_stored_secrets(batch_size: int = ROTATION_BATCH) -> dict[str, int]:
    """Re-encrypt every stored secret with the first key, ``batch_size`` rows per transaction; returns
    the rows rewritten per model. Reading decrypts with whichever key made a value, saving encrypts with
    the first, so the command can be run again safely (after a crash half-way, too)."""
    rewritten: dict[str, int] = {}
    for model, names in encrypted_fields():
        manager = model._default_manager
        rows = 0
        last = None
        while True:
            page = manager.order_by("pk")
            if last is not None:
                page = page.filter(pk__gt=last)
            keys = list(page.values_list("pk", flat=True)[:batch_size])
            if not keys:
                break
            with transaction.atomic():
                batch = list(manager.select_for_update().filter(pk__in=keys).only("pk", *names))
                manager.bulk_update(batch, names)
            rows += len(batch)
            last = keys[-1]
        rewritten[model._meta.label] = rows
    return rewritten


# -------------------------------------------------------------------------------- data migrations


def _rewrite_column(model: type[models.Model], field_name: str, schema_editor: Any, change: Any) -> None:
    """Rewrite one column row by row with raw SQL: a historical model's field may already be (or not yet
    be) an EncryptedTextField, and the ORM would then decrypt or encrypt on its own."""
    connection = schema_editor.connection
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    pk = quote(model._meta.pk.column)
    column = quote(model._meta.get_field(field_name).column)
    with connection.cursor() as reading:
        reading.execute(f"SELECT {pk}, {column} FROM {table} WHERE {column} <> ''")
        rows = reading.fetchall()  # a few secrets per repository or webhook: small enough to hold
    with connection.cursor() as writing:
        for key, value in rows:
            new = change(value)
            if new != value:
                writing.execute(f"UPDATE {table} SET {column} = %s WHERE {pk} = %s", [new, key])


def encrypt_plaintext_column(model: type[models.Model], field_name: str, schema_editor: Any) -> None:
    """In a data migration: encrypt every plaintext value of a column (values already encrypted are
    left alone, so the migration may run over a half-migrated table)."""
    _rewrite_column(
        model, field_name, schema_editor, lambda value: value if is_encrypted(value) else encrypt(value)
    )


def decrypt_to_plaintext_column(model: type[models.Model], field_name: str, schema_editor: Any) -> None:
    """The reverse of ``encrypt_plaintext_column``, for migrating backwards."""
    _rewrite_column(
        model, field_name, schema_editor, lambda value: decrypt(value) if is_encrypted(value) else value
    )


# ------------------------------------------------------------------------------------------- checks


def check_keys(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """A system check (run by migrate, runserver and check): no platform starts without usable keys."""
    return [
        checks.Error(problem, hint=f"Make a key with: {MAKE_A_KEY}", id="policies_app.E001")
        for problem in key_problems(list(settings.SECRET_ENCRYPTION_KEYS))
    ]
