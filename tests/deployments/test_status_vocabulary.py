"""One status vocabulary: the derived sets of choices.py cover every status, the gate's standard-library
copy agrees with them, and every status has a colour in the UI."""

from policies_app import choices
from policies_app.choices import DeploymentStatus
from policies_app.templatetags.platform_tags import tone
from policy_gate import gate


def test_every_status_is_either_waiting_released_or_stopped_and_only_one_of_them():
    every = set(DeploymentStatus.values)
    groups = [
        choices.WAITING_STATUSES,
        choices.RELEASED_STATUSES - choices.FINAL_STATUSES,
        choices.FINAL_STATUSES,
    ]
    assert set().union(*groups) == every
    assert sum(len(group) for group in groups) == len(every)


def test_every_status_has_transitions_and_a_tone():
    assert set(choices.ALLOWED_TRANSITIONS) == set(DeploymentStatus.values)
    assert set(choices.STATUS_TONES) == set(DeploymentStatus.values)
    assert {tone(status) for status in DeploymentStatus.values} <= {"bad", "waiting", "good", "neutral"}


def test_the_gates_copy_of_the_statuses_agrees_with_the_platforms():
    assert gate.RELEASED == choices.RELEASED_STATUSES
    assert gate.UNDECIDED == choices.WAITING_STATUSES
    # The gate tells an evaluation that failed closed (exit 2) from a stop (exit 1).
    assert gate.STOPPED | {DeploymentStatus.ERROR} == choices.STOPPED_STATUSES
    assert gate.NOT_YET_EVALUATED < gate.UNDECIDED


def test_waiting_deployments_and_unfinished_releases_can_be_cancelled():
    assert choices.CANCELLABLE_STATUSES == choices.WAITING_STATUSES | choices.UNFINISHED_RELEASE_STATUSES


def test_what_a_newer_deployment_supersedes_is_what_still_waits():
    assert choices.SUPERSEDABLE_STATUSES == choices.WAITING_STATUSES
    assert {"expired", "superseded"} <= choices.FINAL_STATUSES - choices.RELEASED_STATUSES


def test_the_api_offers_every_status_to_filter_on():
    from policies_app.api.views.deployments import DeploymentFilter

    offered = {value for value, _ in DeploymentFilter.base_filters["status"].extra["choices"]}
    assert offered == set(DeploymentStatus.values)
