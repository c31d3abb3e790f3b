"""An environment by its path, as a pipeline names it: ``project/environment``, the project written as
much of its path as makes it unique (``Payments EU/prod``, ``Platform/Payments/Payments EU/prod``).
A numeric id still works everywhere; a path is for people who would rather not look one up."""

from __future__ import annotations

import shlex

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from policies_app import access
from policies_app.errors import Invalid, NotFound
from policies_app.models import Environment
from policies_app.projects.tree import ProjectTree


def environment_path(tree: ProjectTree, environment: Environment) -> str:
    """The full path of an environment: every project from the root, then its name, joined by "/"."""
    projects = [node.name for node in reversed(tree.chain(environment.project))]
    return "/".join([*projects, environment.name])


def _splits(path: str) -> list[tuple[str, str]]:
    """(project part, environment name) for each place the path may be cut (a name may hold a "/")."""
    parts = [part.strip() for part in path.strip().strip("/").split("/")]
    return [("/".join(parts[:cut]), "/".join(parts[cut:])) for cut in range(1, len(parts))]


def find_environment(visible: QuerySet[Environment], path: str) -> Environment:
    """The one environment among ``visible`` whose path ends with ``path``.

    NotFound when none does (an environment the user may not see is not found either); Invalid, listing
    the full paths, when several do."""
    splits = _splits(path)
    if not splits:
        raise NotFound(f"No environment {path!r}: write project/environment, or the environment's id.")
    candidates = list(visible.filter(name__in={name for _, name in splits}))
    tree = ProjectTree.around([candidate.project for candidate in candidates], with_policies=False)
    matches = []
    for candidate in candidates:
        projects = "/".join(node.name for node in reversed(tree.chain(candidate.project)))
        for project_part, name in splits:
            if name == candidate.name and (projects == project_part or projects.endswith("/" + project_part)):
                matches.append(candidate)
                break
    if not matches:
        raise NotFound(f"No environment {path!r}: write project/environment, or the environment's id.")
    if len(matches) > 1:
        shown = ", ".join(sorted(environment_path(tree, match) for match in matches))
        raise Invalid(
            {"environment": [f"{path!r} names several environments ({shown}): write more of its path."]}
        )
    return matches[0]


def find_visible_environment(user: AbstractBaseUser, path: str) -> Environment:
    return find_environment(access.visible_environments(user), path)


def pipeline_snippets(path: str, platform_url: str) -> list[tuple[str, str]]:
    """Ready pipeline steps gating a deployment of the environment at ``path``: (CI name, YAML)."""
    environment = shlex.quote(path)
    gate = f"policy-gate deploy --environment {environment} --plan plan.json --wait"
    github = "\n".join(
        [
            "- name: Plan",
            "  run: terraform plan -out=tfplan && terraform show -json tfplan > plan.json",
            "- name: Wait for approval",
            "  env:",
            f"    PLATFORM_URL: {platform_url}",
            "    PLATFORM_TOKEN: ${{ secrets.PLATFORM_TOKEN }}",
            f'  run: {gate} --idempotency-key "$GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT"',
            "- name: Apply",
            "  run: terraform apply tfplan",
        ]
    )
    gitlab = "\n".join(
        [
            "deploy:",
            "  variables:",
            f"    PLATFORM_URL: {platform_url}",
            "    # PLATFORM_TOKEN: a masked CI/CD variable of the project",
            "  script:",
            "    - terraform plan -out=tfplan && terraform show -json tfplan > plan.json",
            f'    - {gate} --idempotency-key "$CI_PIPELINE_ID"',
            "    - terraform apply tfplan",
        ]
    )
    return [("GitHub Actions", github), ("GitLab CI", gitlab)]
