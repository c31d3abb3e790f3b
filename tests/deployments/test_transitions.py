"""The status diagram, stated here a second time on purpose: a move added to choices.ALLOWED_TRANSITIONS by
mistake (approved -> pending_approval would let an approved plan be decided again) fails here, and
move_deployment refuses every move the diagram does not draw, changing nothing."""

import pytest

from policies_app.choices import ALLOWED_TRANSITIONS, DeploymentStatus
from policies_app.deployments.lifecycle import move_deployment
from policies_app.models import Deployment, DeploymentEvent

pytestmark = pytest.mark.django_db

S = DeploymentStatus
# The diagram as the README and choices.py's comment draw it.
DIAGRAM = {
    S.QUEUED: {S.EVALUATING, S.CANCELLED, S.SUPERSEDED},
    S.EVALUATING: {S.PENDING_APPROVAL, S.APPROVED, S.DENIED, S.ERROR, S.CANCELLED, S.SUPERSEDED},
    S.PENDING_APPROVAL: {
        S.APPROVED,
        S.DENIED,
        S.REJECTED,
        S.CANCELLED,
        S.ERROR,
        S.EXPIRED,
        S.SUPERSEDED,
    },
    S.APPROVED: {S.SUCCEEDED, S.FAILED, S.CANCELLED, S.EXPIRED},
}
FORBIDDEN = [
    (source, target) for source in S.values for target in S.values if target not in DIAGRAM.get(source, set())
]


def test_the_transition_table_is_the_diagram():
    assert {source: set(targets) for source, targets in ALLOWED_TRANSITIONS.items() if targets} == DIAGRAM
    assert {source for source, targets in ALLOWED_TRANSITIONS.items() if not targets} == set(S.values) - set(
        DIAGRAM
    )


def test_every_forbidden_move_is_refused_and_changes_nothing(world):
    allowed_by_mistake = []
    for source, target in FORBIDDEN:
        deployment = Deployment.objects.create(
            environment=world.environment, deployer=world.bob, status=source
        )
        try:
            moved = move_deployment(deployment.pk, source, target)
        except ValueError as refusal:
            assert str(refusal) == f"a deployment cannot go from {source} to {target}"
        else:
            allowed_by_mistake.append((source, target, moved))
        assert Deployment.objects.get(pk=deployment.pk).status == source
    assert allowed_by_mistake == []
    assert not DeploymentEvent.objects.exists()


def test_approved_cannot_go_back_to_pending_approval(world):
    approved = Deployment.objects.create(environment=world.environment, deployer=world.bob, status="approved")
    with pytest.raises(ValueError):
        move_deployment(approved.pk, S.APPROVED, S.PENDING_APPROVAL)
    approved.refresh_from_db()
    assert (approved.status, approved.pending_since, approved.expires_at) == ("approved", None, None)


@pytest.mark.parametrize(
    ("source", "target"), [(source, target) for source, targets in DIAGRAM.items() for target in targets]
)
def test_every_drawn_move_is_made_once_and_only_from_its_status(world, source, target):
    deployment = Deployment.objects.create(environment=world.environment, deployer=world.bob, status=source)
    assert move_deployment(deployment.pk, source, target) is True
    assert Deployment.objects.get(pk=deployment.pk).status == target
    # The same move again finds the deployment no longer in its source status: nothing changes.
    assert move_deployment(deployment.pk, source, target) is False
    assert Deployment.objects.get(pk=deployment.pk).status == target
