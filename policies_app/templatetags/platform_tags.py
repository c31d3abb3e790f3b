from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.text import capfirst
from django.utils.timesince import timesince, timeuntil

from policies_app.choices import APPROVAL_TONES, DECISION_TONES, STATUS_TONES
from policies_app.deployments.explanations import why_lines

register = template.Library()


@register.filter
def tone(value: str) -> str:
    """The colour of a status, a decision or an approval (choices.py holds the one mapping)."""
    return STATUS_TONES.get(value) or DECISION_TONES.get(value) or APPROVAL_TONES.get(value) or "neutral"


@register.simple_tag
def badge(status: str, label: str = "") -> str:
    """A coloured badge (what web/_status.html draws), cheap enough for every row of a long list."""
    return format_html('<span class="badge tone-{}">{}</span>', tone(status), label or status)


@register.simple_tag(takes_context=True)
def waiting_for_me_count(context: dict[str, Any]) -> int:
    """How many deployments the signed-in user may approve now (the navigation's count)."""
    from policies_app.deployments.inbox import count_waiting_for

    return count_waiting_for(context["request"].user)


@register.filter
def reads_audit_log(user: Any) -> bool:
    from policies_app.accounts.audit_log import may_read_audit_log

    return may_read_audit_log(user)


@register.filter
def manages_users(user: Any) -> bool:
    from policies_app.accounts.users import may_manage_users

    return may_manage_users(user)


@register.inclusion_tag("web/_policy_attach.html", takes_context=True)
def policy_attachments(context: dict[str, Any], policy: Any) -> dict[str, Any]:
    """For the policy page: where the policy is attached (that the user may see), and a form to attach
    it to a project or template the user may attach it to. ``{% policy_attachments policy %}``."""
    from policies_app.policies.attachments import attachment_choices

    request = context["request"]
    return {"request": request, "policy": policy, "choices": attachment_choices(request.user, policy)}


@register.filter
def when(moment: datetime | None, seconds: str = "") -> str:
    """A moment with its time zone and how long ago (or how soon) it is: "2026-12-02 16:20 UTC (5 minutes
    ago)", the exact instant in the element's ``datetime`` and title. ``|when:"s"`` shows seconds."""
    if moment is None:
        return ""
    local = timezone.localtime(moment)
    shown = date_format(local, "Y-m-d H:i:s T" if seconds else "Y-m-d H:i T")
    now = timezone.now()
    if abs((moment - now).total_seconds()) < 60:
        relative = "just now"
    elif moment <= now:
        relative = f"{timesince(moment, now, depth=1)} ago"
    else:
        relative = f"in {timeuntil(moment, now, depth=1)}"
    return format_html(
        '<time datetime="{}" title="{}">{}</time> <span class="muted small">({})</span>',
        moment.isoformat(),
        date_format(local, "Y-m-d H:i:s T"),
        shown,
        relative.replace("\xa0", " "),
    )


@register.filter
def evaluation_cause(request_type: str) -> str:
    """What caused an evaluation, in words; the Rego input's spelling (env0's ``deployResume``) is policy
    authors' vocabulary, found in the evaluation's input JSON."""
    from policies_app.deployments.verdicts import EVALUATION_CAUSES

    return capfirst(EVALUATION_CAUSES.get(request_type, request_type))


@register.filter
def waited(since: datetime | None) -> str:
    """How long something has waited, in one unit: "just now", "3 hours"."""
    if since is None:
        return ""
    now = timezone.now()
    if (now - since).total_seconds() < 60:
        return "just now"
    return timesince(since, now, depth=1).replace("\xa0", " ")


@register.filter
def why(explanation: list[dict[str, Any]] | None, message: str) -> list[str]:
    """Which rule gave a message and what it read (deployments/explanations.py), masked when stored."""
    return why_lines(explanation, message)
