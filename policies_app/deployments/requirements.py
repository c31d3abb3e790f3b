"""What clears a waiting deployment: the requirements its policies declare, and how far each one is met.

A policy declares its requirements in OPA's own METADATA annotation, on its package, in the ``custom``
field OPA leaves to tools (docs/policies-as-code.md, "Requirements")::

    # METADATA
    # title: Production changes
    # custom:
    #   approvals: 2            # two approvals by anyone who may approve
    #   team: security          # and one by a member of the team "security"
    package env0

or a list, ``custom.requirements: [{approvals: 2, team: security, title: ...}, {users: [...]}]``.

The Rego still decides: a declaration only says what to show. A policy's requirements are shown once
the policy has said "pending" in an evaluation of the deployment (a policy that waits only on deletes
shows nothing for a plan without any), and each is measured against the approvals recorded: met when
enough of its approvers approved. Who may still satisfy it are the people who may still approve
(``approvers_still_to_act``) among those it names.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import yaml

from policies_app.guards.yaml_limits import load_bounded_yaml
from policies_app.models import Team

logger = logging.getLogger(__name__)

_METADATA = re.compile(r"^\s*#\s*METADATA\s*$")
_PACKAGE = re.compile(r"^\s*package\s")
MAX_REQUIREMENTS = 20
# The fields of ``custom`` read here; any other is another tool's and left alone.
_DIRECT_FIELDS = (
    "approvals",
    "team",
    "team_approvals",
    "users",
)  # a declaration is shown on every page of the deployment: kept short


class RequirementDeclarationError(ValueError):
    """A METADATA ``custom`` requirement that cannot be understood; the message names the field."""


def _package_annotation(source: str) -> dict[str, Any] | None:
    """The METADATA block written right above the module's ``package`` line, as YAML, else None."""
    lines = source.splitlines()
    for index, line in enumerate(lines):
        if not _METADATA.match(line):
            continue
        block: list[str] = []
        end = index + 1
        while end < len(lines) and lines[end].lstrip().startswith("#"):
            block.append(lines[end].lstrip()[1:])
            end += 1
        if end < len(lines) and _PACKAGE.match(lines[end]):
            try:
                annotation = load_bounded_yaml("\n".join(block))
            except (yaml.YAMLError, RecursionError) as problem:
                raise RequirementDeclarationError(f"METADATA is not YAML: {problem}") from None
            return annotation if isinstance(annotation, dict) else None
    return None


def _resolved(value: Any, field: str, data: Any) -> Any:
    """A value, or what ``data.x.y`` names in the policy's data (a catalog policy's parameters)."""
    if not (isinstance(value, str) and value.startswith("data.")):
        return value
    found = data
    for key in value.split(".")[1:]:
        if not isinstance(found, dict) or key not in found:
            raise RequirementDeclarationError(f"custom.{field}: {value} is not in the policy's data")
        found = found[key]
    return found


def _count(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100:
        raise RequirementDeclarationError(f"custom.{field} must be a whole number from 1 to 100")
    return value


def _names(value: Any, field: str) -> list[str]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
        raise RequirementDeclarationError(f"custom.{field} must be a name or a list of names")
    return [v.strip() for v in value]


def _one(raw: Any, field: str, data: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise RequirementDeclarationError(f"custom.{field} must be a mapping")
    raw = {key: _resolved(value, f"{field}.{key}", data) for key, value in raw.items()}
    unknown = sorted(set(raw) - {"approvals", "team", "users", "title"})
    if unknown:
        raise RequirementDeclarationError(f"custom.{field}: unknown field {', '.join(map(str, unknown))}")
    requirement: dict[str, Any] = {"approvals": _count(raw.get("approvals", 1), f"{field}.approvals")}
    if "team" in raw:
        requirement["team"] = _names(raw["team"], f"{field}.team")[0]
    if "users" in raw:
        requirement["users"] = _names(raw["users"], f"{field}.users")
    if "title" in raw:
        if not isinstance(raw["title"], str):
            raise RequirementDeclarationError(f"custom.{field}.title must be text")
        requirement["title"] = raw["title"][:200]
    return requirement


def declared_requirements(modules: Iterable[tuple[str, str]], data: Any = None) -> list[dict[str, Any]]:
    """The requirements declared by a policy's modules (filename, source); tests are not looked at. A
    value written ``data.policyData.count`` is read from the policy's ``data``.

    Raises RequirementDeclarationError, naming the file, for a declaration that cannot be understood."""
    found: list[dict[str, Any]] = []
    for filename, source in modules:
        if filename.endswith("_test.rego"):
            continue
        try:
            annotation = _package_annotation(source)
            custom = annotation.get("custom") if annotation else None
            if not isinstance(custom, dict):
                continue
            custom = {
                key: _resolved(value, key, data) if key in _DIRECT_FIELDS else value
                for key, value in custom.items()
            }
            if "requirements" in custom:
                listed = custom["requirements"]
                if not isinstance(listed, list):
                    raise RequirementDeclarationError("custom.requirements must be a list")
                found += [_one(raw, f"requirements[{i}]", data) for i, raw in enumerate(listed)]
            if "approvals" in custom:
                found.append({"approvals": _count(custom["approvals"], "approvals")})
            if "team" in custom:
                for team in _names(custom["team"], "team"):
                    found.append(
                        {"approvals": _count(custom.get("team_approvals", 1), "team_approvals"), "team": team}
                    )
            if "users" in custom:
                found.append({"approvals": 1, "users": _names(custom["users"], "users")})
        except RequirementDeclarationError as problem:
            raise RequirementDeclarationError(f"{filename}: {problem}") from None
    if len(found) > MAX_REQUIREMENTS:
        raise RequirementDeclarationError(f"at most {MAX_REQUIREMENTS} requirements per policy")
    return found


def requirements_of_revision(revision: Any) -> list[dict[str, Any]]:
    """What a revision declares, for its evaluation's outcome. A declaration that cannot be understood
    is not a reason to stop a deployment (the Rego decides): it is logged and nothing is shown."""
    try:
        return declared_requirements(((m.filename, m.source) for m in revision.modules.all()), revision.data)
    except RequirementDeclarationError:
        logger.warning("policy revision %s declares requirements that cannot be read", revision.pk)
        return []


def label(requirement: dict[str, Any]) -> str:
    """What a requirement asks, in a few words: "2 approvals", "security team", "one of alice, sam"."""
    if requirement.get("title"):
        return requirement["title"]
    count = requirement["approvals"]
    if requirement.get("team"):
        team = requirement["team"]
        name = team if "team" in team.lower() else f"{team} team"
        return name if count == 1 else f"{count} from {name}"
    if requirement.get("users"):
        people = ", ".join(requirement["users"])
        return f"one of {people}" if count == 1 else f"{count} of {people}"
    return f"{count} approval{'s' if count != 1 else ''}"


@dataclass(frozen=True)
class Progress:
    """One requirement of one policy, measured against the approvals recorded."""

    policy: str
    label: str
    required: int
    approved_by: list[str]
    may_satisfy: list[str]
    team: str | None
    users: list[str]
    titled: bool = False

    @property
    def met(self) -> bool:
        return len(self.approved_by) >= self.required

    @property
    def summary(self) -> str:
        """ "2/2 approvals ✓", "security team 0/1 ✗": how env0 and Spacelift users read progress."""
        done = f"{min(len(self.approved_by), self.required)}/{self.required}"
        mark = "✓" if self.met else "✗"
        if not (self.team or self.users or self.titled):
            return f"{done} approval{'s' if self.required != 1 else ''} {mark}"
        return f"{self.label} {done} {mark}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "requirement": self.label,
            "team": self.team,
            "users": self.users,
            "required": self.required,
            "approved": len(self.approved_by),
            "approved_by": self.approved_by,
            "met": self.met,
            "may_satisfy": self.may_satisfy,
            "summary": self.summary,
        }


def applying_requirements(evaluations: Iterable[Any]) -> list[tuple[str, dict[str, Any]]]:
    """(policy name, requirement) of every policy that said pending in one of the evaluations (unless a
    later one waived it), as its latest evaluation declares them; ``evaluations`` oldest first (their
    ``outcomes``)."""
    waited: set[Any] = set()
    declared: dict[Any, tuple[str, list[dict[str, Any]]]] = {}
    for evaluation in evaluations:
        for outcome in evaluation.outcomes or []:
            key = outcome.get("policy_id") or outcome.get("policy")
            if outcome.get("decision") == "pending":
                waited.add(key)
            elif outcome.get("waiver_id"):
                waited.discard(key)  # set aside by a waiver (deployments/waivers.py): nothing to clear
            if "requirements" in outcome:
                declared[key] = (str(outcome.get("policy")), outcome["requirements"])
    return [
        (name, requirement)
        for key, (name, requirements) in declared.items()
        if key in waited
        for requirement in requirements
    ]


def teams_of(user_ids: set[int]) -> dict[int, set[str]]:
    """The teams of each user (lower-cased names), in one query."""
    return _teams_of(user_ids)


def _teams_of(user_ids: set[int]) -> dict[int, set[str]]:
    teams: dict[int, set[str]] = {}
    through = Team.members.through.objects.filter(user_id__in=user_ids).values_list("user_id", "team__name")
    for user_id, name in through:
        teams.setdefault(user_id, set()).add(name.lower())
    return teams


def _counts_for(requirement: dict[str, Any], user: Any, teams: dict[int, set[str]]) -> bool:
    if requirement.get("team") and requirement["team"].lower() not in teams.get(user.pk, set()):
        return False
    if requirement.get("users"):
        names = {name.lower() for name in requirement["users"]}
        return user.get_username().lower() in names or bool(user.email and user.email.lower() in names)
    return True


def requirement_progress(
    evaluations: Iterable[Any],
    approvers: list[Any],
    candidates: list[Any],
    teams: dict[int, set[str]] | None = None,
) -> list[Progress]:
    """Each applying requirement with who approved towards it and who may still satisfy it.

    ``approvers``: the users who approved (rejections clear nothing); ``candidates``: who may still
    approve now (empty once the deployment is decided). One query, for the teams, unless ``teams`` (user
    id: lower-cased team names, ``teams_of``) are given, read once for many deployments."""
    applying = applying_requirements(evaluations)
    if not applying:
        return []
    teams = (
        teams
        if teams is not None
        else (
            _teams_of({user.pk for user in [*approvers, *candidates]})
            if any(r.get("team") for _, r in applying)
            else {}
        )
    )
    progress = []
    for policy, requirement in applying:
        approved_by = [u.get_username() for u in approvers if _counts_for(requirement, u, teams)]
        met = len(approved_by) >= requirement["approvals"]
        progress.append(
            Progress(
                policy=policy,
                label=label(requirement),
                required=requirement["approvals"],
                approved_by=approved_by,
                may_satisfy=[]
                if met
                else [u.get_username() for u in candidates if _counts_for(requirement, u, teams)],
                team=requirement.get("team"),
                users=requirement.get("users", []),
                titled=bool(requirement.get("title")),
            )
        )
    return progress


def progress_for(
    evaluations: Iterable[Any], approvals: Iterable[Any], candidates: list[Any]
) -> list[Progress]:
    """``requirement_progress`` from a deployment's evaluations and its Approval rows (with their users)."""
    approvers = [approval.user for approval in approvals if approval.decision == "approve"]
    return requirement_progress(evaluations, approvers, candidates)
