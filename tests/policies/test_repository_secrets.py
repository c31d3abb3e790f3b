"""A policy repository's secrets at rest and on their way to git (issue 16, finding 13): stored
encrypted (the database holds Fernet tokens, never the password, key or webhook secret), existing
plaintext migrated, re-encrypted by ``rotate_secret_keys``; and never on git's command line or in a URL
it is given, where ``ps`` would show them to every user of the machine."""

import importlib
import os
import shutil
import stat
from types import SimpleNamespace

import pytest
from cryptography.fernet import Fernet
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import override_settings

from policies_app.guards import encryption
from policies_app.models import PolicyRepository
from policies_app.policies.git import repositories, sources
from tests.git_http import GitHttpServer
from tests.git_repos import GitRepo
from tests.policies.test_sync import DATA, MAIN

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("loopback_allowed")]

TOKEN = "s3cr3t-t0ken-value"
SECRETS = {
    "password": TOKEN,
    "ssh_private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----",
    "ssh_known_hosts": "git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE",
    "webhook_secret": "push-hook-secret",
}


def stored(repository: PolicyRepository) -> dict[str, str]:
    """The columns as the database holds them, read past the model."""
    columns = ", ".join(SECRETS)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {columns} FROM policies_app_policyrepository WHERE id = %s", [repository.pk])
        return dict(zip(SECRETS, cursor.fetchone(), strict=True))


def store_plaintext(repository: PolicyRepository) -> None:
    """As rows were before encryption existed."""
    assignments = ", ".join(f"{name} = %s" for name in SECRETS)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE policies_app_policyrepository SET {assignments} WHERE id = %s",
            [*SECRETS.values(), repository.pk],
        )


def make_repository(world) -> PolicyRepository:
    return repositories.save_repository(
        None, world.admin, name="infra", url="https://127.0.0.1:9/infra.git", username="bot", **SECRETS
    )


def test_the_secrets_are_stored_encrypted_and_read_back_as_they_were(world):
    repository = make_repository(world)
    raw = stored(repository)
    for name, secret in SECRETS.items():
        assert secret not in raw[name] and encryption.decrypt(raw[name]) == secret
    reloaded = PolicyRepository.objects.get(pk=repository.pk)
    assert {name: getattr(reloaded, name) for name in SECRETS} == SECRETS
    repositories.save_repository(reloaded, world.admin, password="")
    assert stored(reloaded)["password"] == "", "no secret stays no secret"


def test_plaintext_stored_before_is_encrypted_by_the_migration_and_decrypted_going_back(world):
    repository = make_repository(world)
    store_plaintext(repository)
    migration = importlib.import_module("policies_app.migrations.0011_secrets_encrypted_tokens_hashed")
    # The data steps use only the schema editor's connection (its SQL runs in the test's transaction).
    editor = SimpleNamespace(connection=connection)
    migration.encrypt_repository_secrets(apps, editor)
    migration.encrypt_repository_secrets(apps, editor)  # a second run leaves encrypted values alone
    raw = stored(repository)
    assert all(encryption.decrypt(raw[name]) == secret for name, secret in SECRETS.items())
    assert PolicyRepository.objects.get(pk=repository.pk).password == TOKEN
    migration.decrypt_repository_secrets(apps, editor)
    assert stored(repository) == SECRETS


def test_rotation_re_encrypts_every_secret_with_the_first_key(world):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    with override_settings(SECRET_ENCRYPTION_KEYS=[old]):
        repository = make_repository(world)
    with override_settings(SECRET_ENCRYPTION_KEYS=[new, old]):
        call_command("rotate_secret_keys", batch_size=1)
    raw = stored(repository)
    only_new = Fernet(new)
    assert {name: only_new.decrypt(raw[name].encode()).decode() for name in SECRETS} == SECRETS
    with override_settings(SECRET_ENCRYPTION_KEYS=[new]):
        assert PolicyRepository.objects.get(pk=repository.pk).password == TOKEN


def test_a_secret_no_key_decrypts_is_an_error_naming_the_field_not_a_silent_value(world):
    make_repository(world)
    with override_settings(SECRET_ENCRYPTION_KEYS=[Fernet.generate_key().decode()]):
        with pytest.raises(encryption.UnreadableSecret, match="PolicyRepository.password"):
            PolicyRepository.objects.get(name="infra")
        with pytest.raises(CommandError, match="Put every key still in use back"):
            call_command("rotate_secret_keys")


@pytest.mark.usefixtures("repository_cache")
def test_git_never_gets_the_password_on_its_command_line_or_in_a_url(world, tmp_path, monkeypatch):
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"main.rego": MAIN, "data.json": DATA})
    # Every git the platform starts goes through this wrapper, which writes down its arguments.
    wrapper, calls = tmp_path / "bin" / "git", tmp_path / "git-calls"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {calls}\nexec {shutil.which("git")} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    server = GitHttpServer(tmp_path / "repo", "deploy-bot", TOKEN)
    with server.serving() as base:
        repository = repositories.save_repository(
            None, world.admin, name="r", url=f"{base}/origin.git", username="deploy-bot", password=TOKEN
        )
        policy = sources.create_synced_policy(name="p", repository=repository, user=world.admin)
    assert policy.latest_revision.commit == repo.head(), "git reached the server with the password"
    command_lines = calls.read_text()
    assert "ls-remote" in command_lines and "fetch" in command_lines
    assert TOKEN not in command_lines and "deploy-bot" not in command_lines
