"""Sign-in lockout (issue 16, finding 8): wrong passwords count against the user name as authentication
resolves it, so spellings that sign in as the same user (a trailing space, full-width letters) share one
allowance of guesses. Tried against the real server, as an unauthenticated caller."""

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher

from tests.accounts.live import sign_in
from tests.processes import gunicorn

LOCKED = "Too many failed sign-ins"


@pytest.mark.django_db(transaction=True)
def test_spellings_that_sign_in_as_sam_share_sams_lockout(world, tmp_path):
    # Hashed with one of the server's hashers (the tests' fast one is not among them), at few iterations:
    # the server checks a password with the iterations written in its hash.
    hasher = PBKDF2PasswordHasher()
    for user in (world.alice, world.bob, world.sam):
        user.password = hasher.encode("pw", hasher.salt(), iterations=1000)
        user.save(update_fields=["password"])
    with gunicorn(tmp_path, LOGIN_FAILURE_LIMIT="4") as base:
        # The premise: the form resolves such spellings to the user (here Alice, whose count stays clean).
        assert sign_in(base, "ａlice ", "pw")[0] == 302

        for spelling in ("sam ", "ｓam", " sam", "ｓａｍ "):
            status, page = sign_in(base, spelling, "wrong")
            assert status == 200 and LOCKED not in page, spelling
        status, page = sign_in(base, "sam", "pw")
        assert status == 200 and LOCKED in page, "four wrong guesses, however spelt, lock sam out"
        assert LOCKED in sign_in(base, "ｓam", "pw")[1]
        assert sign_in(base, "bob", "pw")[0] == 302, "another user is not locked out"
