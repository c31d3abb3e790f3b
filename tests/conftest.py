"""Personas and builders shared by the Django tests.

Alice approves, Bob deploys, Charlie is an outsider, Vera only views, Sam approves for the security team;
Admin is a superuser. All of them hold their roles on the root project "Platform"."""

from pathlib import Path

import pytest

ENGINE_TESTS = Path(__file__).parent / "engine"


@pytest.fixture(autouse=True)
def fast_password_hashing(request):
    # Each test creates several users; the default PBKDF2 hasher would dominate the run time.
    # The engine tests run without Django, so they are left alone.
    if ENGINE_TESTS in Path(str(request.node.path)).parents:
        return
    request.getfixturevalue("settings").PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def empty_cache():
    """Throttles and sign-in lockouts count in the cache; each test starts with none."""
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture
def world(db):
    from tests.builders import World

    return World.create()


@pytest.fixture
def api(world):
    from tests.builders import api_client_for

    return lambda user: api_client_for(user)


@pytest.fixture
def gated(world):
    """The world with a policy on the Platform project that waits for one approval."""
    from tests.builders import ONE_APPROVER, make_policy

    world.platform.approval_policies.add(make_policy("one approver", ONE_APPROVER))
    return world


@pytest.fixture
def run(django_capture_on_commit_callbacks):
    """Runs a use case and what it sends on commit (the evaluations), as a worker would."""

    def call(function, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return function(*args, **kwargs)

    return call


@pytest.fixture
def commits_run_on_commit_callbacks(monkeypatch):
    """Inside a test's own transaction, run on-commit callbacks when the outermost atomic block of the code
    under test exits cleanly, as the real commit would: a deployment is evaluated right after it is
    triggered, as in production's embedded mode, without ``transaction=True`` and its database flush."""
    from django.db import transaction

    original_exit = transaction.Atomic.__exit__

    def exit_and_commit(self, exc_type, exc_value, traceback):
        result = original_exit(self, exc_type, exc_value, traceback)
        connection = transaction.get_connection(self.using)
        only_the_tests_blocks_left = connection.atomic_blocks and all(
            getattr(block, "_from_testcase", False) for block in connection.atomic_blocks
        )
        if exc_type is None and not self._from_testcase and only_the_tests_blocks_left:
            callbacks, connection.run_on_commit = connection.run_on_commit, []
            for _, callback, _robust in callbacks:
                callback()
        return result

    monkeypatch.setattr(transaction.Atomic, "__exit__", exit_and_commit)


@pytest.fixture
def repository_cache(settings, tmp_path):
    """The cache of policy repositories, in the test's own folder."""
    settings.POLICY_REPOSITORY_CACHE_DIR = str(tmp_path / "cache")
    return Path(settings.POLICY_REPOSITORY_CACHE_DIR)


@pytest.fixture
def loopback_allowed(settings):
    """The egress guard refuses loopback; the receivers and git servers of these tests listen there, so
    the operator's setting allows exactly 127.0.0.1 (every other internal address stays refused)."""
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    return settings.EGRESS_ALLOWED_NETWORKS


@pytest.fixture
def local_repositories_allowed(settings, tmp_path):
    """Local repositories are refused unless under an operator-listed root: these tests' bare
    repositories live in the test's own folder, which is listed (nothing else is)."""
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path)]
    return settings.LOCAL_REPOSITORY_ROOTS


@pytest.fixture
def org(world):
    """The world with controls set above a project admin (tests/builders.py, with_controls)."""
    from tests.builders import with_controls

    return with_controls(world)


@pytest.fixture
def trigger(api, django_capture_on_commit_callbacks):
    """In the ``org`` world: trigger as Bob over the API and return the deployment once its evaluation
    (run on commit) is recorded."""

    def trigger(org, **body):
        with django_capture_on_commit_callbacks(execute=True):
            response = api(org.bob).post(
                f"/api/v1/environments/{org.environment.pk}/deployments/", body, format="json"
            )
        assert response.status_code in (200, 201), response.json()
        return api(org.bob).get(f"/api/v1/deployments/{response.json()['id']}/").json()

    return trigger
