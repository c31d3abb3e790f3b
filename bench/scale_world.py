"""The organisation of bench_scale.py: 5,000 projects up to 8 levels deep, 20,000 environments and
1,000,000 deployments with their evaluations, approvals, events and pinned revisions, written to
PostgreSQL with COPY.

Everything is built the way the platform itself would have left it: ``Project.lineage`` is each
project's materialised path of ancestors (``/1/5/``), a deployment pins the revisions of its
environment's effective policies (the template's, then the project chain's), a deployment that waited
for approvers has its approvals and a resume evaluation per approval, ids and timestamps grow together.
Policies go through the policies use case, so each is compiled by OPA like any saved policy.

Besides the bulk, the world holds what bench_scale.py measures with:
  - a chain of 8 projects ("Bench" at the root) whose leaf environment has exactly 10 effective
    policies (2 from its template, 8 from the chain), its template read from a local git repository;
  - ``bench-approver``: approver through a team on one of the large roots and directly on 20 scattered
    projects (what many real approvers look like); ``bench-admin``: a superuser (sees everything);
    ``bench-deployer``: deployer on the Bench chain.
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

PROJECTS = 5_000
ROOTS = 40
MAX_DEPTH = 8
ENVIRONMENTS = 20_000
TEMPLATES = 200
USERS = 400
TEAMS = 40
GENERIC_POLICIES = 30
BENCH_CHAIN = 8  # projects 1..8: the Bench chain, one per level
SPAN = timedelta(days=730)  # deployments were made over the last two years
PENDING_SHARE_OF_RECENT = 0.5  # of the last 2% of deployments, this share still waits for approvers


def shrink_for_smoke() -> None:
    """An organisation of a few hundred rows, generated in seconds: proves the generation still runs
    against the current schema (bench_scale.py --smoke)."""
    global PROJECTS, ROOTS, ENVIRONMENTS, TEMPLATES, USERS, TEAMS, GENERIC_POLICIES
    PROJECTS, ROOTS, ENVIRONMENTS, TEMPLATES, USERS, TEAMS, GENERIC_POLICIES = 120, 6, 200, 10, 40, 8, 2


TRIGGER_POLICIES = [
    # (name, rego): ten env0-style policies that a small plan passes (one warns): the measured leaf's.
    ("bench cost ceiling", 'deny contains "over 5000/month" if input.costEstimation.totalMonthlyCost > 5000'),
    (
        "bench cost jump",
        'pending contains "cost jump" if input.costEstimation.monthlyCostDiff > 1000',
    ),
    (
        "bench no database deletes",
        'deny contains sprintf("%s would be deleted", [rc.address]) if {\n'
        "\tsome rc in input.plan.resource_changes\n"
        '\trc.type == "aws_db_instance"\n'
        '\t"delete" in rc.change.actions\n}',
    ),
    (
        "bench destroy",
        'pending contains "destroys need an approver" if input.deploymentRequest.type == "destroy"',
    ),
    (
        "bench tagged",
        'warn contains sprintf("%s has no tags", [rc.address]) if {\n'
        "\tsome rc in input.plan.resource_changes\n"
        '\t"create" in rc.change.actions\n'
        "\tnot rc.change.after.tags\n}",
    ),
    (
        "bench regions",
        'deny contains "region not allowed" if {\n'
        "\tregion := input.variables.terraform.region\n"
        '\tnot region in {"eu-west-1", "eu-central-1"}\n}',
    ),
    (
        "bench small plans",
        'allow contains "small plan" if count(input.plan.resource_changes) <= 20',
    ),
    (
        "bench known deployer",
        'deny contains "unknown deployer" if input.deployerUser.email == ""',
    ),
    (
        "bench configuration errors",
        'deny contains d.summary if {\n\tsome d in input.configuration.diagnostics\n\td.severity == "error"\n}',
    ),
    (
        "bench resume",
        'allow contains "approved" if {\n'
        '\tinput.deploymentRequest.type == "deployResume"\n\tcount(input.approvers) >= 1\n}',
    ),
]


def generic_policy(number: int) -> tuple[str, str]:
    """Thirty policies of the kinds organisations write: cost, destroys, deletes, approvers."""
    kind = number % 5
    if kind == 0:
        rego = f'pending contains "costs over {500 + number * 100}" if input.costEstimation.monthlyCostDiff > {500 + number * 100}'
    elif kind == 1:
        rego = 'pending contains "destroy" if input.deploymentRequest.type == "destroy"'
    elif kind == 2:
        rego = (
            "deny contains rc.address if {\n\tsome rc in input.plan.resource_changes\n"
            f'\trc.type == "aws_s3_bucket_{number}"\n\t"delete" in rc.change.actions\n}}'
        )
    elif kind == 3:
        rego = (
            'allow contains "two approvers" if count(input.approvers) >= 2\n'
            'pending contains "needs two approvers" if count(input.approvers) < 2'
        )
    else:
        rego = 'warn contains "weekend deploy" if input.deploymentRequest.triggerName == "scheduled"'
    return f"org policy {number:02d}", rego


SMALL_PLAN = {
    "format_version": "1.2",
    "terraform_version": "1.11.4",
    "resource_changes": [
        {
            "address": f"aws_instance.web[{i}]",
            "type": "aws_instance",
            "name": "web",
            "provider_name": "registry.terraform.io/hashicorp/aws",
            "change": {
                "actions": ["update"],
                "before": {"tags": {"team": "a"}},
                "after": {"tags": {"team": "b"}},
            },
        }
        for i in range(3)
    ],
}

TEMPLATE_FILES = {
    "main.tf": (
        'variable "region" {\n  type    = string\n  default = "eu-west-1"\n}\n\n'
        'variable "instances" {\n  type    = number\n  default = 3\n}\n\n'
        'resource "terraform_data" "web" {\n  count = var.instances\n'
        "  input = { region = var.region, index = count.index }\n}\n\n"
        'output "names" {\n  value = [for i in range(var.instances) : "web-${i}"]\n}\n'
    ),
}


# --- COPY ---------------------------------------------------------------------------------------------


def _text(value: object) -> str:
    """One value in PostgreSQL's COPY text format."""
    if value is None:
        return "\\N"
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (dict, list)):
        value = json.dumps(value, separators=(",", ":"))
    text = str(value)
    if "\\" in text or "\t" in text or "\n" in text or "\r" in text:
        text = text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")
    return text


class Copier:
    """Rows for one table, spooled to a file while generating and loaded with one COPY at the end."""

    def __init__(self, directory: Path, table: str, columns: list[str]) -> None:
        self.table, self.columns = table, columns
        self.path = directory / f"{table}.tsv"
        self.file = open(self.path, "w", buffering=1 << 20)
        self.count = 0

    def add(self, *values: object) -> None:
        self.file.write("\t".join(_text(value) for value in values) + "\n")
        self.count += 1

    def load(self, cursor) -> None:
        self.file.close()
        with (
            open(self.path, "rb") as spooled,
            cursor.copy(f"COPY {self.table} ({', '.join(self.columns)}) FROM STDIN") as copy,
        ):
            while chunk := spooled.read(1 << 20):
                copy.write(chunk)
        self.path.unlink()


# --- the world ----------------------------------------------------------------------------------------


@dataclass
class Tree:
    parent: dict[int, int | None] = field(default_factory=dict)
    lineage: dict[int, str] = field(default_factory=dict)

    def depth(self, pk: int) -> int:
        return self.lineage[pk].count("/")  # "/" is depth 1, "/1/" depth 2, ...

    def chain(self, pk: int) -> list[int]:
        """The project, then its ancestors up to the root."""
        return [pk, *(int(part) for part in reversed(self.lineage[pk].strip("/").split("/")) if part)]


def build_tree(rng: random.Random) -> Tree:
    """Projects 1..8 are the Bench chain; then 40 roots and a random tree capped at 8 levels."""
    tree = Tree()
    for pk in range(1, BENCH_CHAIN + 1):
        parent = pk - 1 or None
        tree.parent[pk] = parent
        tree.lineage[pk] = "/" if parent is None else f"{tree.lineage[parent]}{parent}/"
    open_parents: list[int] = []  # projects that may still get children (depth < 8)
    for pk in range(BENCH_CHAIN + 1, PROJECTS + 1):
        if pk <= BENCH_CHAIN + ROOTS or not open_parents:
            parent = None
        else:
            parent = rng.choice(open_parents)
        tree.parent[pk] = parent
        tree.lineage[pk] = "/" if parent is None else f"{tree.lineage[parent]}{parent}/"
        if tree.depth(pk) < MAX_DEPTH:
            open_parents.append(pk)
    return tree


def ensure_template_repository(directory: Path) -> Path:
    """A local git repository holding the measured template (a branch read like any remote's)."""
    repository = directory / "bench-template"
    if (repository / ".git").is_dir():
        return repository
    (repository / "network").mkdir(parents=True, exist_ok=True)
    for name, content in TEMPLATE_FILES.items():
        (repository / "network" / name).write_text(content)
    env = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com"}
    env |= {
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "PATH": "/usr/bin:/bin",
    }
    for command in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "."],
        ["git", "commit", "-qm", "bench"],
    ):
        subprocess.run(command, cwd=repository, env=env, check=True)
    return repository


def generate(deployments: int, template_repository: Path, seed: int = 8) -> None:
    """Fill the (empty, migrated) database."""
    from django.contrib.auth.hashers import make_password
    from django.db import connection, transaction

    from policies_app.deployments.stored_inputs import store_plan
    from policies_app.models import ApprovalPolicy, PolicyRevision
    from policies_app.policies import authoring

    rng = random.Random(seed)
    started = time.perf_counter()
    spool = Path(template_repository).parent / "spool"
    spool.mkdir(exist_ok=True)

    # Policies first, through the use case: OPA compiles each one, as on any save.
    for name, rego in [*TRIGGER_POLICIES, *map(generic_policy, range(GENERIC_POLICIES))]:
        authoring.create_policy(
            name=name,
            rego_version="v1",
            modules=[{"filename": "main.rego", "source": f"package env0\n\n{rego}\n"}],
        )
    policy_ids = dict(ApprovalPolicy.objects.values_list("name", "pk"))
    revision_of = dict(PolicyRevision.objects.values_list("policy_id", "pk"))
    trigger_ids = [policy_ids[name] for name, _ in TRIGGER_POLICIES]
    generic_ids = [pk for name, pk in policy_ids.items() if name.startswith("org policy")]
    print(
        f"  policies compiled and saved: {len(policy_ids)} ({time.perf_counter() - started:.0f} s)",
        flush=True,
    )

    now = datetime.now(UTC)
    password = make_password("bench-password")
    tree = build_tree(rng)
    depth_counts: dict[int, int] = {}
    for pk in tree.lineage:
        depth_counts[tree.depth(pk)] = depth_counts.get(tree.depth(pk), 0) + 1

    tables = {
        "user": (
            "auth_user",
            [
                "id",
                "password",
                "is_superuser",
                "username",
                "first_name",
                "last_name",
                "email",
                "is_staff",
                "is_active",
                "date_joined",
            ],
        ),
        "team": ("policies_app_team", ["id", "name", "description"]),
        "team_member": (
            "policies_app_teammembership",
            ["team_id", "user_id", "source", "source_group", "added_at"],
        ),
        "template": (
            "policies_app_template",
            ["id", "name", "type", "repository", "path", "revision", "archive", "views_commit", "created_at"],
        ),
        "template_policy": ("policies_app_template_approval_policies", ["template_id", "approvalpolicy_id"]),
        "project": (
            "policies_app_project",
            ["id", "name", "description", "parent_id", "lineage", "allow_self_approval", "created_at"],
        ),
        "attachment": (
            "policies_app_project_approval_policies",
            ["project_id", "approvalpolicy_id", "authority_id", "attached_by_id", "attached_at"],
        ),
        "membership": ("policies_app_projectmembership", ["project_id", "user_id", "team_id", "role"]),
        "environment": (
            "policies_app_environment",
            [
                "id",
                "name",
                "project_id",
                "template_id",
                "approve_plans_automatically",
                "environment_variables",
                "terraform_variables",
                "sensitive_variables",
                "created_at",
            ],
        ),
        "deployment": (
            "policies_app_deployment",
            [
                "id",
                "environment_id",
                "type",
                "trigger_name",
                "revision",
                "template_commit",
                "commit_sha",
                "pull_request_url",
                "ci_run_url",
                "plan_document_id",
                "total_monthly_cost",
                "monthly_cost_diff",
                "variables",
                "policy_data",
                "deployer_id",
                "idempotency_key",
                "status",
                "decision",
                "messages",
                "error",
                "policies_pinned",
                "created_at",
                "updated_at",
                "evaluation_due_at",
                "evaluation_enqueued_at",
                "evaluation_started_at",
                "pending_since",
                "released_at",
                "completed_at",
            ],
        ),
        "deployment_revision": (
            "policies_app_deployment_policy_revisions",
            ["deployment_id", "policyrevision_id"],
        ),
        "evaluation": (
            "policies_app_evaluation",
            [
                "id",
                "deployment_id",
                "request_type",
                "input_json",
                "decision",
                "messages",
                "outcomes",
                "error",
                "engine",
                "sensitive_variables",
                "sensitive_paths",
                "duration_ms",
                "created_at",
            ],
        ),
        "evaluation_revision": (
            "policies_app_evaluation_policy_revisions",
            ["evaluation_id", "policyrevision_id"],
        ),
        "approval": (
            "policies_app_approval",
            ["id", "deployment_id", "user_id", "decision", "comment", "created_at"],
        ),
        "event": (
            "policies_app_deploymentevent",
            ["deployment_id", "kind", "actor_id", "detail", "created_at"],
        ),
    }
    out = {key: Copier(spool, table, columns) for key, (table, columns) in tables.items()}

    # Users: 1 bench-admin, 2 bench-approver, 3 bench-deployer, then the organisation.
    user_names = {1: "bench-admin", 2: "bench-approver", 3: "bench-deployer"}
    user_names |= {pk: f"user{pk:04d}" for pk in range(4, USERS + 1)}
    for pk, username in user_names.items():
        out["user"].add(
            pk,
            password,
            pk == 1,
            username,
            username.title(),
            "",
            f"{username}@example.com",
            pk == 1,
            True,
            now - SPAN,
        )
    # Teams: one approvers team and one deployers team per root, members drawn from the organisation.
    # Roots by the size of their subtree, largest first: bench-approver approves on the largest.
    size: dict[int, int] = {}
    for pk in tree.lineage:
        size[tree.chain(pk)[-1]] = size.get(tree.chain(pk)[-1], 0) + 1
    roots = sorted((pk for pk in size if pk > BENCH_CHAIN), key=lambda pk: -size[pk])
    team_pk = 0
    for root in roots[: TEAMS // 2]:
        for role in ("approver", "deployer"):
            team_pk += 1
            out["team"].add(team_pk, f"{role}s of project {root}", "")
            members = set(rng.sample(range(4, USERS + 1), 10))
            if root == roots[0] and role == "approver":
                members.add(2)  # bench-approver approves on the first large root through a team
            for user in sorted(members):
                out["team_member"].add(team_pk, user, "manual", "", now - SPAN)
            out["membership"].add(root, None, team_pk, role)
    # Individual roles: bench-approver on 20 scattered projects, 1,500 others across the tree.
    scattered = rng.sample(range(BENCH_CHAIN + ROOTS + 1, PROJECTS + 1), 20)
    given = {(project, 2) for project in scattered}
    for project in scattered:
        out["membership"].add(project, 2, None, "approver")
    out["membership"].add(1, 3, None, "deployer")
    out["membership"].add(1, 2, None, "approver")
    given |= {(1, 3), (1, 2)}
    while len(given) < 1_522:
        project, user = rng.randint(BENCH_CHAIN + 1, PROJECTS), rng.randint(4, USERS)
        if (project, user) not in given:
            given.add((project, user))
            out["membership"].add(
                project, user, None, rng.choice(["viewer", "deployer", "approver", "admin"])
            )

    # Templates: 1 is the measured one (a local git repository, 2 policies); a third of the rest have one.
    template_policies: dict[int, list[int]] = {1: trigger_ids[:2]}
    out["template"].add(
        1, "bench network", "terraform", template_repository.as_uri(), "network", "main", "", "", now - SPAN
    )
    for pk in range(2, TEMPLATES + 1):
        # No repository: the bench reaches no network (their evaluations have no configuration view).
        out["template"].add(
            pk,
            f"template {pk:03d}",
            rng.choice(["terraform", "opentofu", "terragrunt", "k8s"]),
            "",
            f"stacks/{pk}",
            "main",
            "",
            "",
            now - SPAN,
        )
        template_policies[pk] = rng.sample(generic_ids, 1) if rng.random() < 0.33 else []
    for template, attached in template_policies.items():
        for policy in attached:
            out["template_policy"].add(template, policy)

    # Projects and attachments: the Bench chain carries the other 8 measured policies, one per level;
    # every large root 1-2 organisation policies, one project in ten one more.
    attachments: dict[int, list[int]] = {}
    for pk, parent in tree.parent.items():
        name = f"Bench level {pk}" if pk <= BENCH_CHAIN else f"project {pk:04d}"
        out["project"].add(pk, name, "", parent, tree.lineage[pk], False, now - SPAN)
        if pk <= BENCH_CHAIN:
            attachments[pk] = [trigger_ids[1 + pk]]
        elif parent is None:
            attachments[pk] = rng.sample(generic_ids, rng.randint(1, 2))
        elif rng.random() < 0.1:
            attachments[pk] = rng.sample(generic_ids, 1)
    for project, attached in attachments.items():
        root = tree.chain(project)[-1]
        for policy in attached:
            out["attachment"].add(project, policy, root, 1, now - SPAN)

    # Environments: the measured leaf first, then spread over the tree.
    effective: dict[int, list[int]] = {}  # environment -> pinned revision ids
    environment_project: dict[int, int] = {}
    for pk in range(1, ENVIRONMENTS + 1):
        if pk == 1:
            project, template = BENCH_CHAIN, 1
        else:
            project, template = rng.randint(BENCH_CHAIN + 1, PROJECTS), rng.randint(2, TEMPLATES)
        environment_project[pk] = project
        policies_in_force = list(
            dict.fromkeys(
                template_policies[template]
                + [p for node in tree.chain(project) for p in attachments.get(node, [])]
            )
        )
        effective[pk] = [revision_of[p] for p in policies_in_force]
        variables = (
            {"region": "eu-west-1"}
            if pk == 1
            else {"region": rng.choice(["eu-west-1", "us-east-1"]), "size": "m5.large"}
        )
        out["environment"].add(
            pk, f"environment {pk:05d}", project, template, False, {}, variables, {}, now - SPAN
        )
    print(
        f"  tree: {PROJECTS} projects by depth {dict(sorted(depth_counts.items()))}; {ENVIRONMENTS} environments",
        flush=True,
    )

    # Deployments, oldest first, each with what its history left behind.
    evaluation_pk = approval_pk = 0
    approvers_pool = list(range(4, USERS + 1))
    recent_from = int(deployments * 0.98)
    step = SPAN / deployments
    first = now - SPAN
    plan = {
        "format_version": "1.2",
        "resource_changes": [
            {"address": "aws_instance.app", "type": "aws_instance", "change": {"actions": ["update"]}}
        ],
    }
    plan_key = store_plan(plan)  # one stored document, shared by every deployment (as identical plans are)
    for pk in range(1, deployments + 1):
        environment = rng.randint(2, ENVIRONMENTS)
        created = first + step * pk
        deployer = rng.choice(approvers_pool)
        kind = "destroy" if rng.random() < 0.03 else "deploy"
        cost = round(rng.uniform(10, 3000), 2)
        diff = round(rng.uniform(-200, 1500), 2)
        revisions = effective[environment]
        roll = rng.random()
        if pk >= recent_from and rng.random() < PENDING_SHARE_OF_RECENT:
            status, waited, approvals = "pending_approval", True, rng.choice([0, 0, 1])
        elif pk >= recent_from and roll < 0.2:
            status, waited, approvals = "approved", roll < 0.1, 1
        elif roll < 0.80:
            status, waited, approvals = rng.choice(["succeeded"] * 19 + ["failed"]), roll < 0.25, 2
        elif roll < 0.88:
            status, waited, approvals = "denied", False, 0
        elif roll < 0.93:
            status, waited, approvals = "rejected", True, 1
        elif roll < 0.97:
            status, waited, approvals = "cancelled", True, 0
        else:
            status, waited, approvals = "error", False, 0
        if not waited and status in ("succeeded", "failed", "approved"):
            approvals = 0
        request = "destroy" if kind == "destroy" else "deploy"
        resume = "destroyResume" if kind == "destroy" else "deployResume"
        moment = created + timedelta(seconds=0.3)
        first_decision = {
            "pending_approval": "pending",
            "rejected": "pending",
            "cancelled": "pending",
            "denied": "deny",
            "error": "error",
        }.get(status, "pending" if waited else "allow")
        history = [(request, first_decision, moment)]
        approvers = rng.sample(approvers_pool, approvals) if approvals else []
        approval_rows = []
        for position, approver in enumerate(approvers):
            moment += timedelta(minutes=rng.randint(2, 240))
            rejects = status == "rejected"
            approval_rows.append((approver, "reject" if rejects else "approve", moment))
            if not rejects:
                last = position == len(approvers) - 1
                released = status in ("succeeded", "failed", "approved")
                history.append(
                    (resume, "allow" if last and released else "pending", moment + timedelta(seconds=0.3))
                )
        decision = history[-1][1] if status not in ("rejected", "cancelled") else "pending"
        messages = {
            "deny": ["over budget"] if decision == "deny" else [],
            "pending": ["needs two approvers"] if decision == "pending" else [],
            "warn": [],
            "allow": ["two approvers"] if decision == "allow" else [],
        }
        released_at = history[-1][2] if status in ("succeeded", "failed", "approved") else None
        completed_at = (
            released_at + timedelta(minutes=rng.randint(1, 30)) if status in ("succeeded", "failed") else None
        )
        pending_since = history[0][2] if waited else None
        updated = completed_at or released_at or history[-1][2]
        error = "The evaluation failed: EngineTimeout: over 10 s" if status == "error" else ""
        out["deployment"].add(
            pk,
            environment,
            kind,
            rng.choice(["cd", "user", "scheduled"]),
            f"{pk:x}",
            "",  # template_commit: its template has no repository
            "",  # commit_sha, pull_request_url, ci_run_url: not sent by these pipelines
            "",
            "",
            plan_key,
            cost,
            diff,
            {"terraform": {"region": "eu-west-1"}},
            None,
            deployer,
            f"pipeline-{pk}",
            status,
            decision,
            messages,
            error,
            True,
            created,
            updated,
            None,
            created,
            history[-1][2],
            pending_since,
            released_at,
            completed_at,
        )
        out["event"].add(pk, "triggered", deployer, f"{kind} triggered by cd", created)
        for revision in revisions:
            out["deployment_revision"].add(pk, revision)
        for request_type, verdict, at in history:
            evaluation_pk += 1
            input_json = json.dumps(
                {
                    "deploymentRequest": {"type": request_type, "triggerName": "cd", "revision": f"{pk:x}"},
                    "template": {
                        "id": "2",
                        "name": "template",
                        "type": "terraform",
                        "repository": "https://git.example.com/infra",
                        "path": "stacks",
                    },
                    "costEstimation": {"totalMonthlyCost": cost, "monthlyCostDiff": diff},
                    "plan": plan,
                    "deployerUser": {
                        "name": f"User{deployer}",
                        "email": f"user{deployer}@example.com",
                        "teams": [],
                    },
                    "approvers": [],
                    "variables": {
                        "environment": {},
                        "terraform": {"region": "eu-west-1"},
                        "env0": {"ENV0_ENVIRONMENT_ID": str(environment), "ENV0_DEPLOYMENT_ID": str(pk)},
                    },
                    "state": None,
                    "configuration": None,
                },
                separators=(",", ":"),
            )
            outcomes = [
                {
                    "policy_id": None,
                    "policy": "org policy",
                    "revision": 1,
                    "decision": verdict,
                    "deny": [],
                    "pending": [],
                    "warn": [],
                    "allow": [],
                    "error": None,
                }
            ]
            out["evaluation"].add(
                evaluation_pk,
                pk,
                request_type,
                input_json,
                verdict,
                messages,
                outcomes,
                error,
                "regorus",
                {},
                [],
                round(rng.uniform(2, 40), 2),
                at,
            )
            for revision in revisions:
                out["evaluation_revision"].add(evaluation_pk, revision)
            out["event"].add(
                pk, "evaluated" if verdict != "error" else "error", None, f"{request_type}: {verdict}", at
            )
        for approver, verdict, at in approval_rows:
            approval_pk += 1
            out["approval"].add(approval_pk, pk, approver, verdict, "", at)
            out["event"].add(pk, "approved" if verdict == "approve" else "rejected", approver, "", at)
        if released_at:
            out["event"].add(pk, "released", None, "", released_at)
        if completed_at:
            out["event"].add(pk, "completed", deployer, status, completed_at)
        if pk % 100_000 == 0:
            print(f"  {pk:,} deployments generated ({time.perf_counter() - started:.0f} s)", flush=True)

    with connection.cursor() as django_cursor:
        raw = django_cursor.connection
        with transaction.atomic():
            with raw.cursor() as cursor:
                # Generated consistent by construction: skip the per-row foreign key triggers while loading.
                cursor.execute("SET LOCAL session_replication_role = replica")
                for copier in out.values():
                    loading = time.perf_counter()
                    copier.load(cursor)
                    print(
                        f"  {copier.table}: {copier.count:,} rows in {time.perf_counter() - loading:.0f} s",
                        flush=True,
                    )
                for table in (
                    "auth_user",
                    "policies_app_team",
                    "policies_app_template",
                    "policies_app_project",
                    "policies_app_environment",
                    "policies_app_deployment",
                    "policies_app_evaluation",
                    "policies_app_approval",
                ):
                    cursor.execute(
                        f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))"
                    )
        with raw.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    _check_consistency()
    print(f"  generated in {time.perf_counter() - started:.0f} s", flush=True)


ORPHAN_CHECKS = {
    "deployments of missing environments": "SELECT count(*) FROM policies_app_deployment d LEFT JOIN policies_app_environment e ON e.id = d.environment_id WHERE e.id IS NULL",
    "evaluations of missing deployments": "SELECT count(*) FROM policies_app_evaluation v LEFT JOIN policies_app_deployment d ON d.id = v.deployment_id WHERE d.id IS NULL",
    "approvals of missing deployments": "SELECT count(*) FROM policies_app_approval a LEFT JOIN policies_app_deployment d ON d.id = a.deployment_id WHERE d.id IS NULL",
    "projects whose lineage is not their parent's path": (
        "SELECT count(*) FROM policies_app_project c LEFT JOIN policies_app_project p ON p.id = c.parent_id "
        "WHERE (c.parent_id IS NULL AND c.lineage <> '/') OR (c.parent_id IS NOT NULL AND c.lineage <> p.lineage || p.id || '/')"
    ),
}


def _check_consistency() -> None:
    """The foreign keys were not checked while loading: check what they would have, and the lineage."""
    from django.db import connection

    with connection.cursor() as cursor:
        for what, query in ORPHAN_CHECKS.items():
            cursor.execute(query)
            (count,) = cursor.fetchone()
            if count:
                raise SystemExit(f"generated data is inconsistent: {count} {what}")
