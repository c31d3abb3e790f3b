"""What the policy editor runs on text not saved yet: the check as one types and "Try it" on the editor's
text. Both are for those who may edit the policy (authoring.require_editor); the text is compiled under
the same capability list as a save (rego/prepare.py prepares every source) on the dry-run pool, and a
try-it reads only deployments its requester can see, as they see them (sensitive values masked before the
text runs: it could spell them past any scrubbing of its answer), its answer masked as the saved try-it's is."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from policies_app.models import ApprovalPolicy
from policies_app.policies import engine, replay
from policies_app.policies.authoring import require_editor
from policies_app.policies.content import validated_content


def check_unsaved(
    user: AbstractBaseUser, policy: ApprovalPolicy | None, rego_version: Any, modules: Any, data: Any
) -> list[dict[str, Any]]:
    """The editor's problems (file, line, column, message): empty when the text compiles."""
    require_editor(user, policy)
    return engine.syntax_problems(rego_version, modules, data)


def try_unsaved(
    user: AbstractBaseUser,
    policy: ApprovalPolicy,
    *,
    rego_version: Any,
    modules: Any,
    data: Any,
    enforcement: Any,
    deployment_id: Any = None,
    pasted_input: Any = None,
    explain: bool = False,
) -> dict[str, Any]:
    """The editor's text of ``policy`` evaluated on an input, stored nowhere: the answer of the saved
    try-it (decision, messages, error[, fired])."""
    require_editor(user, policy)
    content = validated_content(rego_version, modules, data, enforcement)
    input_json, secrets = replay.input_to_try_unsaved(user, deployment_id, pasted_input)
    return engine.try_content(policy, content, input_json, explain=explain, secrets=secrets)
