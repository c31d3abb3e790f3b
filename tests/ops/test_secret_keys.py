"""The keys that encrypt secrets at rest (SECRET_ENCRYPTION_KEYS): production does not start without
usable ones (the system check stops ``migrate``), and a malformed key is named by its position, never
echoed."""

import subprocess
import sys

from cryptography.fernet import Fernet

from tests.processes import ROOT

PRODUCTION = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "DJANGO_DEBUG": "false", "DJANGO_SECRET_KEY": "x" * 50}


def check(**environment: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**PRODUCTION, **environment},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_refuses_to_start_without_keys_or_with_a_malformed_one():
    missing = check()
    assert missing.returncode != 0 and "SECRET_ENCRYPTION_KEYS is not set" in missing.stderr
    malformed = check(SECRET_ENCRYPTION_KEYS=f"{Fernet.generate_key().decode()},not-a-key-at-all")
    assert malformed.returncode != 0 and "key 2 of 2 is not a Fernet key" in malformed.stderr
    assert "not-a-key-at-all" not in malformed.stderr
    rotating = check(
        SECRET_ENCRYPTION_KEYS=f"{Fernet.generate_key().decode()}, {Fernet.generate_key().decode()}"
    )
    assert rotating.returncode == 0, rotating.stderr
