"""API tokens at rest (issue 16, finding 13): the older one-per-user tokens (Django REST framework's,
stored with their keys in plaintext) are migrated to hashes and keep working, tried against the real
server; every key is found by its shown prefix and compared by hash in constant time."""

import importlib

import pytest
from django.apps import apps
from django.db import connection
from django.urls import reverse
from django.utils import timezone

from policies_app.accounts import tokens
from policies_app.models import ApiToken, AuditEntry, LegacyApiToken
from tests.accounts.live import api_call
from tests.builders import api_key_for
from tests.processes import gunicorn

pytestmark = pytest.mark.django_db

OLD_KEY = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"  # the shape of DRF's keys: 40 hexadecimal digits


def create_drf_token_table(user) -> None:
    """The table and row Django REST framework's authtoken app left in an existing database."""
    moment = "timestamp with time zone" if connection.vendor == "postgresql" else "datetime"
    with connection.cursor() as cursor:
        cursor.execute(
            f'CREATE TABLE authtoken_token ("key" varchar(40) PRIMARY KEY, created {moment} NOT NULL, '
            "user_id integer NOT NULL UNIQUE)"
        )
        cursor.execute(
            'INSERT INTO authtoken_token ("key", created, user_id) VALUES (%s, %s, %s)',
            [OLD_KEY, timezone.now(), user.pk],
        )


@pytest.mark.django_db(transaction=True)
def test_an_older_token_is_migrated_to_a_hash_and_still_signs_its_user_in(world, tmp_path):
    create_drf_token_table(world.bob)
    migration = importlib.import_module("policies_app.migrations.0011_secrets_encrypted_tokens_hashed")
    with connection.schema_editor() as editor:
        migration.hash_drf_tokens(apps, editor)
    assert "authtoken_token" not in connection.introspection.table_names(), "the plaintext keys are gone"
    [migrated] = LegacyApiToken.objects.all()
    assert (migrated.user, migrated.prefix) == (world.bob, OLD_KEY[:6])
    assert OLD_KEY not in migrated.key_hash
    with gunicorn(tmp_path) as base:
        assert api_call(base, OLD_KEY, "GET", "/api/v1/me/") == (
            200,
            {"username": "bob", "email": "bob@example.com", "email_notifications": "immediately"},
        )
        assert api_call(base, OLD_KEY[:-1] + "0", "GET", "/api/v1/me/")[0] == 401


def test_keys_sharing_a_prefix_each_find_their_own_user_and_a_near_miss_finds_none(world):
    for user, key in ((world.alice, "abcdef" + "1" * 34), (world.bob, "abcdef" + "2" * 34)):
        LegacyApiToken.objects.create(
            user=user, prefix=tokens.key_prefix(key), key_hash=tokens.key_hash(key), created_at=timezone.now()
        )
    assert tokens.user_for_key("abcdef" + "1" * 34) == world.alice
    assert tokens.user_for_key("abcdef" + "2" * 34) == world.bob
    assert tokens.user_for_key("abcdef" + "3" * 34) is None
    assert tokens.user_for_key("") is None


def test_no_table_holds_a_key_only_its_hash_and_a_prefix(world):
    _, key = tokens.create_token(world.bob, "pipeline")
    legacy = api_key_for(world.alice)
    for model in (ApiToken, LegacyApiToken):
        for row in model.objects.values():
            assert key not in str(row) and legacy not in str(row)
    assert ApiToken.objects.get(name="pipeline").prefix == key[:10]


def test_an_older_token_is_listed_on_its_users_page_by_prefix_and_revoked_there(client, world):
    key = api_key_for(world.bob)
    client.force_login(world.bob)
    page = client.get(reverse("web:account")).content.decode()
    assert f"{key[:6]}…" in page and key not in page
    client.post(reverse("web:account"), {"action": "revoke_legacy_token"})
    assert tokens.user_for_key(key) is None
    assert AuditEntry.objects.get(action="token.revoked").before == {
        "name": "(older token)",
        "prefix": key[:6],
    }
