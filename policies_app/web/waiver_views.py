"""Granting a waiver from an environment's page and revoking one (deployments/waivers.py holds every
rule); a refusal shows the environment's page again with why, answered with the refusal's status."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_POST

from policies_app import access
from policies_app.deployments import waivers
from policies_app.errors import Invalid
from policies_app.web.common import act
from policies_app.web.environment_views import render_environment


def _hours(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise Invalid({"hours": ["A number of hours."]}) from None


@login_required
@require_POST
def environment_waiver_grant(request: HttpRequest, pk: int) -> HttpResponse:
    environment = get_object_or_404(access.visible_environments(request.user), pk=pk)
    policy = access.visible_policies(request.user).filter(pk=request.POST.get("policy") or 0).first()

    def grant() -> object:
        if policy is None:
            raise Invalid({"policy": ["Choose a policy."]})
        scope = (
            {"project": environment.project}
            if request.POST.get("scope") == "project"
            else {"environment": environment}
        )
        return waivers.grant_waiver(
            request.user,
            policy,
            reason=request.POST.get("reason", ""),
            hours=_hours(request.POST.get("hours", "")),
            **scope,
        )

    return act(
        request,
        grant,
        done=lambda waiver: (
            f"Policy {waiver.policy.name} is waived until {waivers.until_text(waiver.expires_at)}."
        ),
        then=reverse("web:environment-detail", args=[environment.pk]),
        page=lambda error="", errors=None, status=200: render_environment(
            request,
            environment.pk,
            " ".join([error, *(p for problems in (errors or {}).values() for p in problems)]).strip(),
            status,
        ),
    )


@login_required
@require_POST
def waiver_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    waiver = get_object_or_404(waivers.visible_waivers(request.user), pk=pk)
    environment_pk = int(request.POST.get("environment") or 0)
    back = (
        reverse("web:environment-detail", args=[environment_pk])
        if environment_pk
        else reverse("web:policy-detail", args=[waiver.policy_id])
    )
    return act(
        request,
        lambda: waivers.revoke_waiver(request.user, waiver),
        done=f"The waiver of policy {waiver.policy.name} is revoked.",
        then=back,
        page=lambda error="", errors=None, status=200: (
            render_environment(request, environment_pk, error, status)
            if environment_pk
            else HttpResponse(error, status=status, content_type="text/plain")
        ),
    )
