"""Slack's interactions endpoint: no session, no token, no CSRF token; trusted only for what Slack signs
(notifications/slack_interactions.py says what is verified and whom the click acts as)."""

import logging

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from policies_app.notifications import slack, slack_interactions

logger = logging.getLogger(__name__)


@csrf_exempt
@require_POST
def slack_interactions_endpoint(request: HttpRequest) -> HttpResponse:
    if not slack.enabled():
        return HttpResponse("Slack approvals are not configured.", status=404, content_type="text/plain")
    body = request.body
    if not slack_interactions.is_signed_by_slack(body, request.headers):
        return HttpResponse(
            "Not signed by Slack, or signed too long ago.", status=401, content_type="text/plain"
        )
    payload = slack_interactions.interaction_payload(body)
    if payload is None:
        return HttpResponse("No interaction payload.", status=400, content_type="text/plain")
    outcome = slack_interactions.handle_interaction(payload)
    logger.info("slack interaction: %s", outcome)
    # Slack wants an empty 200 within three seconds; what the clicker sees was sent through the Web API.
    return HttpResponse(status=200)
