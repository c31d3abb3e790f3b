"""Policy and template repositories go through the egress guard (issue 16, finding 10 and the network
half of git): a local path or file:// is a repository only under LOCAL_REPOSITORY_ROOTS, and the refusal
reads the same whether the path exists; a remote whose host is internal is a 400 naming the field when
saved and a recorded error at every fetch; git connects to the address the guard checked (the system
resolver here does not even know the names used), over http and over ssh."""

import json
import os
import socket
import threading

import pytest
from django.contrib.auth.models import Permission

from policies_app.errors import Invalid
from policies_app.guards.egress import REFUSED
from policies_app.iac.file_sandbox import LOCAL_SOURCE_REFUSED as LOCAL_REFUSED
from policies_app.models import ApprovalPolicy, PolicyRepository
from policies_app.policies.git import repositories, sources
from policies_app.projects import iac_templates
from tests.builders import make_user
from tests.git_http import GitHttpServer
from tests.git_repos import GitRepo
from tests.guards.servers import close_listener, resolving
from tests.policies.test_sync import DATA, MAIN
from tests.processes import ROOT, gunicorn

TOKEN = "s3cr3t-t0ken-value"


def author():
    """A policy author who is no organisation admin: the lowest role that may add a repository."""
    user = make_user("paula")
    user.user_permissions.add(Permission.objects.get(codename="change_approvalpolicy"))
    return user


def post_json(base: str, path: str, token: str, body: dict) -> tuple[int, dict]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as answer:
        return answer.code, json.loads(answer.read())


@pytest.mark.django_db(transaction=True)
def test_local_paths_and_internal_remotes_are_refused_alike_through_the_real_server(world, tmp_path):
    from policies_app.accounts import tokens

    _, key = tokens.create_token(author(), "ci")
    bare = GitRepo(tmp_path / "repo")
    bare.commit({"main.rego": MAIN})
    local = [
        "/",
        "/etc",
        str(ROOT),  # the platform's own checkout
        str(bare.origin),  # a real repository on the server
        "/no/such/directory/anywhere",
        "file:///etc",
        f"file://{bare.origin}",
        f"file://localhost{ROOT}",
    ]
    remote = [
        "http://127.0.0.1:9/origin.git",
        "https://169.254.169.254/org/repo.git",
        "ssh://git@[::1]/org/repo.git",
        "git@127.1:org/repo.git",
        "https://localhost/org/repo.git",
        "https://[::ffff:10.0.0.1]/org/repo.git",
    ]
    with gunicorn(tmp_path) as base:
        answers = {
            url: post_json(base, "/api/v1/policy-repositories/", key, {"name": "r", "url": url})
            for url in local + remote
        }
    for url in local:
        # One message for a path that exists, one that does not and a repository: the disk is not probed.
        assert answers[url] == (400, {"url": [LOCAL_REFUSED]}), url
    for url in remote:
        assert answers[url] == (400, {"url": [REFUSED]}), url
    assert not PolicyRepository.objects.exists()


@pytest.mark.django_db
def test_a_local_repository_is_allowed_only_under_a_listed_root(world, tmp_path, settings, repository_cache):
    repo = GitRepo(tmp_path / "allowed" / "repo")
    repo.commit({"policies/p/main.rego": MAIN, "policies/p/data.json": DATA})
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "allowed" / "link-out")
    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path / "allowed")]
    for outside in (
        str(tmp_path / "elsewhere"),
        str(tmp_path / "allowed" / "link-out"),
        str(tmp_path / "allowed" / ".." / "elsewhere"),
        str(tmp_path / "allowed-not"),
    ):
        with pytest.raises(Invalid) as refused:
            repositories.save_repository(None, world.admin, name="r", url=outside)
        assert refused.value.errors == {"url": [LOCAL_REFUSED]}, outside
    repository = repositories.save_repository(None, world.admin, name="r", url=f"file://{repo.origin}")
    policy = sources.create_synced_policy(
        name="p", repository=repository, path="policies/p", user=world.admin
    )
    assert policy.latest_revision.commit == repo.head()
    # The operator empties the list: the next sync is refused, and the active revision stays.
    settings.LOCAL_REPOSITORY_ROOTS = []
    [outcome] = sources.sync_policy(policy, user=world.admin)
    assert outcome.errors == {"repository": [LOCAL_REFUSED]}
    policy.refresh_from_db()
    assert policy.active_revision.number == 1 and LOCAL_REFUSED in policy.sync_error


@pytest.fixture
def served(tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.commit({"main.rego": MAIN, "data.json": DATA})
    server = GitHttpServer(tmp_path / "repo", "deploy-bot", TOKEN)
    with server.serving() as base:
        yield repo, server, int(base.rsplit(":", 1)[1])


@pytest.mark.django_db
def test_git_over_http_reaches_the_checked_address_and_is_checked_again_at_every_fetch(
    world, served, settings, monkeypatch, repository_cache
):
    repo, server, port = served
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    url = f"http://git.example.test:{port}/origin.git"
    # Only the guard's lookup knows this name: git itself could not resolve it. The sync works, so git
    # connected to the address the guard checked (curl's resolve list), not to an answer of its own.
    with resolving(monkeypatch, {"git.example.test": ["127.0.0.1"]}) as lookups:
        repository = repositories.save_repository(
            None, world.admin, name="r", url=url, username="deploy-bot", password=TOKEN
        )
        policy = sources.create_synced_policy(name="p", repository=repository, user=world.admin)
        assert policy.latest_revision.commit == repo.head()
        assert lookups["git.example.test"] >= 2, "checked when saved and again before git reached it"
    asked = len(server.requests)
    repo.commit({"data.json": json.dumps({"limits": {"cost": 1}})})
    # Now the name resolves inside (rebinding, or a changed record): the fetch is refused, git never runs.
    with resolving(monkeypatch, {"git.example.test": ["127.0.0.2"]}):
        [outcome] = sources.sync_policy(policy, user=world.admin)
    assert list(outcome.errors) == ["repository"] and REFUSED in outcome.errors["repository"][0]
    assert len(server.requests) == asked
    assert ApprovalPolicy.objects.get(pk=policy.pk).active_revision.number == 1


@pytest.mark.django_db
def test_git_over_ssh_connects_to_the_checked_address(world, settings, monkeypatch, repository_cache):
    settings.EGRESS_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    connections: list[str] = []

    def accept() -> None:
        try:
            connection, peer = listener.accept()
        except OSError:
            return
        connections.append(peer[0])
        connection.close()  # no ssh server here: that ssh arrived is the point

    threading.Thread(target=accept, daemon=True).start()
    try:
        with resolving(monkeypatch, {"ssh.example.test": ["127.0.0.1"]}):
            repository = repositories.save_repository(
                None,
                world.admin,
                name="r",
                url=f"ssh://git@ssh.example.test:{listener.getsockname()[1]}/org/repo.git",
            )
            with pytest.raises(Invalid) as unreachable:
                sources.create_synced_policy(name="p", repository=repository, user=world.admin)
    finally:
        close_listener(listener)
    assert connections == ["127.0.0.1"], "ssh reached the checked address though no resolver knows the name"
    assert list(unreachable.value.errors) == ["repository"]


@pytest.mark.django_db
def test_a_template_repository_on_an_internal_address_is_refused_when_saved_and_when_fetched(
    world, api, served, settings, tmp_path
):
    _, server, port = served
    manager = make_user("tess")
    manager.user_permissions.add(Permission.objects.get(codename="change_template"))
    for url in (
        f"http://127.0.0.1:{port}/origin.git",
        "https://169.254.169.254/x.git",
        "git@[::1]:org/x.git",
    ):
        answer = api(manager).patch(
            f"/api/v1/templates/{world.template.pk}/", {"repository": url}, format="json"
        )
        assert answer.status_code == 400 and answer.json() == {"repository": [REFUSED]}, url
        with pytest.raises(Invalid):
            iac_templates.save_template(manager, world.template, repository=url)
    # Stored some other way (the Django admin, an older version): every fetch asks the guard again.
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    world.template.repository = f"http://127.0.0.1:{port}/origin.git"
    world.template.path = ""
    world.template.save()
    from policies_app.deployments import lifecycle
    from policies_app.deployments.policy_input import build_policy_input

    deployment, _ = lifecycle.trigger_deployment(world.environment, world.bob)
    document = build_policy_input(deployment, "deploy").document
    [diagnostic] = document["configuration"]["diagnostics"] if "configuration" in document else [None]
    assert diagnostic is not None and REFUSED in diagnostic["detail"]
    assert server.requests == [], "git never reached the server"
