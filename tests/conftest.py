"""Personas and builders shared by the Django tests.

Alice approves, Bob deploys, Charlie is an outsider, Vera only views, Sam approves for the security team;
Admin is a superuser. All of them hold their roles on the root project "Platform"."""

import pytest


@pytest.fixture
def world(db):
    from tests.builders import World

    return World.create()


@pytest.fixture
def api(world):
    from tests.builders import api_client_for

    return lambda user: api_client_for(user)
