"""Policies that follow a folder of a git repository: real repositories made in the test (commits,
branches, tags, a force-push), synced by the platform from a bare "origin" on disk."""

import json
import subprocess

import pytest

from policies_app.errors import Invalid
from policies_app.models import ApprovalPolicy, PolicyRepository
from policies_app.policies.git import repositories, sources
from policies_app.tasks import sync_policy_repositories_task
from tests.git_repos import GitRepo

pytestmark = [
    pytest.mark.django_db,
    # The repositories are bare ones in the test's folder, listed as the one local root allowed.
    pytest.mark.usefixtures("repository_cache", "local_repositories_allowed"),
]

MAIN = """package env0

import rego.v1

deny contains sprintf("cost rises by %v, over %v", [input.costEstimation.monthlyCostDiff, data.limits.cost]) if {
	input.costEstimation.monthlyCostDiff > data.limits.cost
}

allow contains "within limits" if input.costEstimation.monthlyCostDiff <= data.limits.cost
"""
MAIN_TEST = """package env0_test

import rego.v1

import data.env0

test_a_big_rise_is_denied if {
	count(env0.deny) == 1 with input as {"costEstimation": {"monthlyCostDiff": 500}}
}

test_a_small_rise_is_allowed if {
	count(env0.allow) == 1 with input as {"costEstimation": {"monthlyCostDiff": 5}}
}
"""
DATA = json.dumps({"limits": {"cost": 100}})


@pytest.fixture
def repo(tmp_path) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    repo.commit(
        {
            "policies/cost/main.rego": MAIN,
            "policies/cost/main_test.rego": MAIN_TEST,
            "policies/cost/data.json": DATA,
            "README.md": "policies\n",
        },
        "first",
    )
    return repo


def repository_for(repo: GitRepo, world, **secrets) -> PolicyRepository:
    return repositories.save_repository(None, world.admin, name="infra", url=repo.url, **secrets)


def follow(
    repo: GitRepo, world, name="cost", path="policies/cost", revision="main", **extra
) -> ApprovalPolicy:
    return sources.create_synced_policy(
        name=name,
        repository=repository_for(repo, world),
        path=path,
        revision=revision,
        user=world.admin,
        **extra,
    )


def modules_of(revision) -> dict[str, str]:
    return {module.filename: module.source for module in revision.modules.all()}


def test_a_policy_follows_a_folder_and_its_first_revision_records_the_commit(world, repo):
    policy = follow(repo, world)
    revision = policy.latest_revision
    assert policy.active_revision == revision
    assert (revision.number, revision.commit, policy.synced_commit) == (1, repo.head(), repo.head())
    assert modules_of(revision) == {"main.rego": MAIN, "main_test.rego": MAIN_TEST}
    assert revision.data == {"limits": {"cost": 100}}
    assert revision.tests_status == "passed"
    assert [r["outcome"] for r in revision.tests_report["results"]] == ["pass", "pass"]


def test_a_commit_that_changes_the_policy_makes_a_new_active_revision(world, repo):
    policy = follow(repo, world)
    commit = repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 50}})})
    [outcome] = sources.sync_policy(policy, user=world.admin)
    policy.refresh_from_db()
    assert (outcome.revision.number, outcome.revision.commit, outcome.activated) == (2, commit, True)
    assert policy.active_revision.data == {"limits": {"cost": 50}}


def test_a_commit_that_changes_nothing_of_the_policy_makes_no_revision(world, repo):
    policy = follow(repo, world)
    commit = repo.commit({"README.md": "more words\n", "policies/cost/notes.txt": "not rego\n"})
    [outcome] = sources.sync_policy(policy, user=world.admin)
    policy.refresh_from_db()
    assert outcome.revision is None
    assert (policy.revisions.count(), policy.synced_commit, policy.sync_error) == (1, commit, "")


def test_a_force_pushed_branch_is_followed_to_its_new_commit(world, repo):
    repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 70}})}, "to be rewritten")
    policy = follow(repo, world)
    old = policy.synced_commit
    new = repo.force_push_rewrite({"policies/cost/data.json": json.dumps({"limits": {"cost": 80}})})
    [outcome] = sources.sync_policy(policy, user=world.admin)
    ancestry = subprocess.run(
        ["git", "-C", str(repo.origin), "merge-base", "--is-ancestor", old, new], check=False
    )
    assert ancestry.returncode == 1, "the old commit is no longer in the branch's history"
    assert (outcome.revision.commit, outcome.revision.data) == (new, {"limits": {"cost": 80}})


def test_a_branch_is_synced_as_a_draft_that_does_not_replace_the_active_revision(world, repo):
    policy = follow(repo, world)
    repo.checkout("stricter", create=True)
    commit = repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 10}})})
    [outcome] = sources.sync_policy(policy, user=world.admin, revision="stricter")
    policy.refresh_from_db()
    assert (outcome.revision.number, outcome.revision.draft, outcome.revision.commit) == (2, True, commit)
    assert policy.active_revision.number == 1
    assert policy.repository_revision == "main"  # the policy still follows main


def test_an_annotated_tag_is_followed_to_the_commit_it_names(world, repo):
    tagged = repo.head()
    repo.tag("v1.0")
    repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 1}})})
    policy = follow(repo, world, revision="v1.0")
    assert (policy.latest_revision.commit, policy.latest_revision.data) == (tagged, {"limits": {"cost": 100}})


def test_a_commit_id_is_followed(world, repo):
    first = repo.head()
    repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 1}})})
    policy = follow(repo, world, revision=first[:12])
    assert policy.latest_revision.commit == first


def test_policies_hcl_declares_several_policies_in_one_folder_synced_together(world, repo):
    repo.commit(
        {
            "policies/cost/policies.hcl": """policy "cost" {
  description  = "Monthly cost limits"
  files        = ["main.rego"]
  enforcement  = "soft-mandatory"
}

policy "cost-lax" {
  files = ["main.rego"]
  data  = "lax.yaml"
}
""",
            "policies/cost/lax.yaml": "limits:\n  cost: 1000\n",
        }
    )
    strict = follow(repo, world, name="cost")
    lax = sources.create_synced_policy(
        name="lax",
        repository=strict.repository,
        path="policies/cost",
        revision="main",
        declared_name="cost-lax",
    )
    assert (strict.description, strict.latest_revision.enforcement) == (
        "Monthly cost limits",
        "soft-mandatory",
    )
    assert set(modules_of(strict.latest_revision)) == {"main.rego", "main_test.rego"}  # its tests come along
    assert (lax.latest_revision.data, lax.latest_revision.enforcement) == (
        {"limits": {"cost": 1000}},
        "hard-mandatory",
    )
    commit = repo.commit({"policies/cost/main.rego": MAIN + '\nwarn contains "watched" if true\n'})
    outcomes = sources.sync_policy(strict, user=world.admin)
    assert {(o.policy.name, o.revision.number, o.commit) for o in outcomes} == {
        ("cost", 2, commit),
        ("lax", 2, commit),
    }


def test_bad_hcl_is_recorded_with_file_and_line_and_the_active_revision_stays(world, repo):
    policy = follow(repo, world)
    repo.commit({"policies/cost/policies.hcl": 'policy "cost" {\n  files = ["main.rego"\n}\n'})
    [outcome] = sources.sync_policy(policy, user=world.admin)
    policy.refresh_from_db()
    assert "policies.hcl:3: syntax error" in outcome.errors["path"][0]
    assert "policies.hcl:3: syntax error" in policy.sync_error
    assert (policy.revisions.count(), policy.active_revision.number) == (1, 1)


def test_a_missing_file_in_policies_hcl_is_named_with_its_line(world, repo):
    policy = follow(repo, world)
    repo.commit(
        {
            "policies/cost/policies.hcl": 'policy "cost" {\n  description = "x"\n  files = ["main.rego", "lib/*.rego"]\n}\n'
        }
    )
    [outcome] = sources.sync_policy(policy, user=world.admin)
    assert outcome.errors == {"path": ["policies.hcl:3: files: 'lib/*.rego' matches no file"]}


def test_a_module_the_engine_refuses_is_recorded_with_its_position_and_changes_nothing(world, repo):
    policy = follow(repo, world)
    repo.commit({"policies/cost/main.rego": MAIN + "\ndeny contains x if {\n\tnosuch(1)\n}\n"})
    [outcome] = sources.sync_policy(policy, user=world.admin)
    policy.refresh_from_db()
    assert outcome.errors["modules"] == ["main.rego:12:2: undefined function nosuch"]
    assert "undefined function nosuch" in policy.sync_error
    assert (policy.revisions.count(), policy.active_revision.number) == (1, 1)


def test_a_failing_policy_test_records_the_revision_but_keeps_the_active_one(world, repo):
    policy = follow(repo, world)
    commit = repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 1000}})})
    [outcome] = sources.sync_policy(policy, user=world.admin)
    policy.refresh_from_db()
    revision = outcome.revision
    assert (revision.number, revision.commit, revision.tests_status) == (2, commit, "failed")
    assert policy.active_revision.number == 1
    failed = [r for r in revision.tests_report["results"] if r["outcome"] == "fail"]
    assert [(r["name"], r["file"], r["line"]) for r in failed] == [
        ("test_a_big_rise_is_denied", "main_test.rego", 7)
    ]


def test_an_unknown_revision_is_a_field_error_and_stores_nothing(world, repo):
    with pytest.raises(Invalid) as refused:
        follow(repo, world, revision="no-such-branch")
    assert list(refused.value.errors) == ["revision"]
    assert not ApprovalPolicy.objects.exists()


def test_a_missing_folder_is_a_field_error(world, repo):
    with pytest.raises(Invalid) as refused:
        follow(repo, world, path="policies/nothing-here")
    assert refused.value.errors == {
        "path": ["the folder 'policies/nothing-here' does not exist at commit " + repo.head()[:12]]
    }


def test_a_url_that_is_not_a_repository_is_refused_on_the_url_field(world, tmp_path):
    with pytest.raises(Invalid) as refused:
        repositories.save_repository(None, world.admin, name="bad", url="not a url")
    assert list(refused.value.errors) == ["url"]
    with pytest.raises(Invalid) as refused:
        repositories.save_repository(
            None, world.admin, name="bad", url="https://user:secret@example.com/x.git"
        )
    assert "password" in refused.value.errors["url"][0]


def test_an_unreachable_repository_is_a_field_error_on_creation(world, tmp_path):
    (tmp_path / "empty").mkdir()
    repository = repositories.save_repository(None, world.admin, name="nowhere", url=str(tmp_path / "empty"))
    with pytest.raises(Invalid) as refused:
        sources.create_synced_policy(name="p", repository=repository, revision="main", user=world.admin)
    assert list(refused.value.errors) == ["repository"]


def test_an_ssh_repository_that_cannot_be_reached_is_recorded_not_raised(world, repo):
    policy = follow(repo, world)
    PolicyRepository.objects.filter(pk=policy.repository_id).update(url="ssh://git@127.0.0.1:9/nowhere.git")
    policy.refresh_from_db()
    [outcome] = sources.sync_policy(policy, user=world.admin)
    policy.refresh_from_db()
    assert list(outcome.errors) == ["repository"]
    assert "127.0.0.1" in policy.sync_error and policy.active_revision.number == 1


def test_the_repository_is_cached_and_fetched_incrementally(world, repo, repository_cache):
    policy = follow(repo, world)
    [mirror] = repository_cache.glob("*.git")
    objects_before = {path.relative_to(mirror) for path in (mirror / "objects").rglob("*") if path.is_file()}
    assert objects_before, "the first sync fetched the repository into the cache"
    sources.sync_policy(policy, user=world.admin)
    fetched_at = (mirror / "FETCH_HEAD").stat().st_mtime_ns
    sources.sync_policy(policy, user=world.admin)
    assert (mirror / "FETCH_HEAD").stat().st_mtime_ns == fetched_at, "nothing new: no fetch at all"
    repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 60}})})
    sources.sync_policy(policy, user=world.admin)
    objects_after = {path.relative_to(mirror) for path in (mirror / "objects").rglob("*") if path.is_file()}
    assert objects_before < objects_after, "the old objects are kept; only the new ones were added"
    assert len(objects_after - objects_before) <= 6  # a commit, two trees... not the whole history again


def test_the_scheduled_sync_syncs_every_repository_policy(world, repo, settings):
    policy = follow(repo, world)
    commit = repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 90}})})
    assert settings.CELERY_BEAT_SCHEDULE["sync-policy-repositories"] == {
        "task": "policies_app.tasks.sync_policy_repositories_task",
        "schedule": settings.POLICY_SYNC_INTERVAL_SECONDS,
    }
    assert sync_policy_repositories_task.apply().get() == 1
    policy.refresh_from_db()
    assert (policy.active_revision.commit, policy.active_revision.number) == (commit, 2)


def test_an_inline_edit_of_a_repository_policy_is_refused(world, repo):
    from policies_app.policies.authoring import revise_policy

    policy = follow(repo, world)
    with pytest.raises(Invalid) as refused:
        revise_policy(policy, modules=[{"filename": "main.rego", "source": MAIN}], user=world.admin)
    assert "synced from the repository infra" in refused.value.errors["modules"][0]


def test_the_page_syncs_now_or_a_branch_as_a_draft(client, world, repo):
    policy = follow(repo, world)
    repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 40}})})
    client.force_login(world.admin)
    assert client.post(f"/policies/{policy.pk}/sync/").status_code == 302
    repo.checkout("try", create=True)
    repo.commit({"policies/cost/data.json": json.dumps({"limits": {"cost": 30}})})
    assert client.post(f"/policies/{policy.pk}/sync/", {"revision": "try"}).status_code == 302
    missing = client.post(f"/policies/{policy.pk}/sync/", {"revision": "gone"})
    assert missing.status_code == 400 and "Syncing gone failed: revision:" in missing.content.decode()
    policy.refresh_from_db()
    assert [(r.number, r.draft) for r in policy.revisions.order_by("number")] == [
        (1, False),
        (2, False),
        (3, True),
    ]
    assert policy.active_revision.number == 2
