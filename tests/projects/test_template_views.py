"""A template's configuration views are computed when its files change, by a worker, before any
deployment needs them; a trigger that finds one missing computes it once, however many wait for it."""

import io
import tarfile
import threading
from datetime import timedelta

import pytest
from django.db import connection, connections
from django.utils import timezone

from policies_app.models import ConfigurationView, Template
from policies_app.projects import configuration_cache, template_views
from tests.builders import make_policy

CONFIGURATION = """
variable "replicas" {
  type    = number
  default = 1
}

resource "terraform_data" "web" {
  count = var.replicas
  input = "web-${count.index}"
}

output "replicas" {
  value = var.replicas
}
"""

SHOWS_REPLICAS = """
package env0

deny contains sprintf("replicas output %v", [input.configuration.outputs.replicas.value]) if true
"""


def archive_of(files: dict[str, str]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in files.items():
            member = tarfile.TarInfo(name)
            member.size = len(text.encode())
            archive.addfile(member, io.BytesIO(text.encode()))
    buffer.seek(0)
    buffer.name = "web.tar.gz"
    return buffer


@pytest.fixture
def template_dirs(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.TEMPLATE_CHECKOUT_DIR = str(tmp_path / "checkouts")
    settings.IAC_PARSE_CACHE_DIR = str(tmp_path / "parse-cache")


@pytest.mark.django_db
@pytest.mark.usefixtures("commits_run_on_commit_callbacks", "template_dirs")
def test_an_archive_upload_computes_the_view_the_first_trigger_then_reads(world, api):
    world.environment.terraform_variables = {"replicas": 2}
    world.environment.save()
    world.template.path = "web"
    world.template.save()

    uploaded = api(world.admin).post(
        f"/api/v1/templates/{world.template.pk}/archive/",
        {"archive": archive_of({"web/main.tf": CONFIGURATION})},
        format="multipart",
    )
    assert uploaded.status_code == 200, uploaded.content
    # The worker (run on commit here) computed the environment's view and the work is no longer due.
    kept = ConfigurationView.objects.get()
    assert kept.document["outputs"]["replicas"]["value"] == 2
    assert Template.objects.get(pk=world.template.pk).views_due_at is None

    # The first trigger reads that view, not a new computation: what is kept is what it shows.
    kept.document = {**kept.document, "outputs": {"replicas": {"value": "kept"}}}
    kept.save()
    world.platform.approval_policies.add(make_policy("replicas", SHOWS_REPLICAS))
    response = api(world.bob).post(
        f"/api/v1/environments/{world.environment.pk}/deployments/", {}, format="json"
    )
    assert response.status_code in (200, 201), response.content
    body = api(world.bob).get(f"/api/v1/deployments/{response.json()['id']}/").json()
    assert body["messages"]["deny"] == ["replicas output kept"]
    assert ConfigurationView.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.usefixtures("commits_run_on_commit_callbacks", "template_dirs")
def test_a_new_environment_and_new_variables_make_the_views_due(world, api):
    world.template.path = "web"
    world.template.save()
    api(world.admin).post(
        f"/api/v1/templates/{world.template.pk}/archive/",
        {"archive": archive_of({"web/main.tf": CONFIGURATION})},
        format="multipart",
    )
    assert ConfigurationView.objects.count() == 1
    changed = api(world.admin).patch(
        f"/api/v1/environments/{world.environment.pk}/",
        {"terraform_variables": {"replicas": 3}},
        format="json",
    )
    assert changed.status_code == 200, changed.content
    assert sorted(v.document["outputs"]["replicas"]["value"] for v in ConfigurationView.objects.all()) == [
        1,
        3,
    ]


@pytest.mark.django_db
@pytest.mark.usefixtures("commits_run_on_commit_callbacks", "template_dirs")
def test_views_still_due_long_after_are_sent_again_by_the_sweeper(
    world, api, settings, django_capture_on_commit_callbacks
):
    world.template.path = "web"
    world.template.save()
    api(world.admin).post(
        f"/api/v1/templates/{world.template.pk}/archive/",
        {"archive": archive_of({"web/main.tf": CONFIGURATION})},
        format="multipart",
    )
    # As if the upload's wake-up had been lost: only the row says the work is due.
    ConfigurationView.objects.all().delete()
    long_ago = timezone.now() - timedelta(seconds=settings.EVALUATION_RESEND_AFTER_SECONDS + 1)
    Template.objects.filter(pk=world.template.pk).update(views_due_at=long_ago, views_enqueued_at=long_ago)
    recent = Template.objects.create(name="recent", type=world.template.type, views_due_at=timezone.now())
    Template.objects.filter(pk=recent.pk).update(views_enqueued_at=timezone.now())

    with django_capture_on_commit_callbacks(execute=True):
        assert template_views.resend_due_template_views() == [world.template.pk]
    assert ConfigurationView.objects.count() == 1  # the resent task ran (on commit) and computed it
    assert Template.objects.get(pk=world.template.pk).views_due_at is None
    assert template_views.resend_due_template_views() == []


class _Stripe:
    """One stripe for every key, that fails instead of waiting for ever when it is taken twice."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __enter__(self) -> None:
        assert self.lock.acquire(timeout=5), "the view's computation waited for a stripe it holds itself"

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


@pytest.mark.django_db
@pytest.mark.usefixtures("commits_run_on_commit_callbacks", "template_dirs")
def test_a_view_computed_by_a_callback_of_the_commit_that_publishes_another_does_not_wait_for_itself(
    tmp_path, monkeypatch
):
    """In the embedded mode a commit's callbacks run whole tasks in the committing thread: the template's
    views, due after the evaluation saw a new commit, are computed as the evaluation's own view is
    published. CI hung there when both keys fell on one stripe."""
    from django.db import transaction

    directory = tmp_path / "checkouts" / "web"
    directory.mkdir(parents=True)
    (directory / "main.tf").write_text(CONFIGURATION)
    stripe = _Stripe()
    monkeypatch.setattr(configuration_cache, "_stripe", lambda key: stripe)

    def view(replicas: int) -> dict:
        return configuration_cache.configuration_view(
            str(directory), {"replicas": replicas}, source_root=str(directory), provider_schema=None
        )

    real = configuration_cache.evaluate_configuration_isolated
    later, computed = [], []

    def computing_and_due_another(*args, **kwargs):
        computed.append(kwargs["variables"])
        if len(computed) == 1:
            transaction.on_commit(lambda: later.append(view(3)))
        return real(*args, **kwargs)

    monkeypatch.setattr(configuration_cache, "evaluate_configuration_isolated", computing_and_due_another)
    assert view(2)["outputs"]["replicas"]["value"] == 2
    assert [document["outputs"]["replicas"]["value"] for document in later] == [3]
    assert computed == [{"replicas": 2}, {"replicas": 3}]
    assert ConfigurationView.objects.count() == 2


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("template_dirs")
def test_concurrent_triggers_on_postgresql_wait_for_one_computation(settings, tmp_path, monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: set DATABASE_URL=postgres://...")
    directory = tmp_path / "checkouts" / "web"
    directory.mkdir(parents=True)
    (directory / "main.tf").write_text(CONFIGURATION)
    computations = []
    real = configuration_cache.evaluate_configuration_isolated

    def counted(*args, **kwargs):
        computations.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(configuration_cache, "evaluate_configuration_isolated", counted)
    # Stripes are per process: with them out of the way, the threads meet only at PostgreSQL's lock,
    # as triggers served by different processes would.
    monkeypatch.setattr(configuration_cache, "_stripe", lambda key: threading.Lock())
    start = threading.Barrier(4)
    views, errors = [], []

    def trigger() -> None:
        try:
            start.wait()
            views.append(
                configuration_cache.configuration_view(
                    str(directory),
                    {"replicas": 2},
                    source_root=str(directory),
                    provider_schema=None,
                )
            )
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=trigger) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert len(computations) == 1
    assert len(views) == 4 and all(view == views[0] for view in views)
    assert views[0]["outputs"]["replicas"]["value"] == 2
    assert ConfigurationView.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.usefixtures("commits_run_on_commit_callbacks", "template_dirs")
def test_a_new_commit_on_the_revision_is_computed_ahead_by_the_template_sync(
    world, api, settings, tmp_path, django_capture_on_commit_callbacks
):
    import subprocess

    from policies_app.projects.iac_templates import save_template
    from tests.deployments.test_policy_input import git_repository

    settings.LOCAL_REPOSITORY_ROOTS = [str(tmp_path)]
    repository = git_repository(tmp_path / "repo", {"web/main.tf": CONFIGURATION})
    world.environment.terraform_variables = {"replicas": 2}
    world.environment.save()
    save_template(world.admin, world.template, repository=repository, path="web", revision="main")
    assert [v.document["outputs"]["replicas"]["value"] for v in ConfigurationView.objects.all()] == [2]
    first = Template.objects.get(pk=world.template.pk).views_commit
    assert first

    with django_capture_on_commit_callbacks(execute=True):
        assert template_views.sync_template_views() == []  # nothing new
    (tmp_path / "repo" / "web" / "main.tf").write_text(CONFIGURATION.replace("default = 1", "default = 5"))
    git = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@x",
        "GIT_COMMITTER_NAME": "t",
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(
        ["git", "commit", "-qam", "second"],
        cwd=tmp_path / "repo",
        check=True,
        env={**git, "GIT_COMMITTER_EMAIL": "t@x"},
    )

    with django_capture_on_commit_callbacks(execute=True):
        assert template_views.sync_template_views() == [world.template.pk]
    assert ConfigurationView.objects.count() == 2  # the new commit's view, before any deployment
    assert Template.objects.get(pk=world.template.pk).views_commit not in ("", first)
