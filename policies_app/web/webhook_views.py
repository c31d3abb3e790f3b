"""A webhook's page: its settings, a test message, its delivery history; one delivery opened (the body
and headers sent, the answer) and sent again. For the project's admins."""

import json

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from policies_app import access
from policies_app.choices import Capability, DeliveryStatus
from policies_app.notifications import webhook_history, webhooks
from policies_app.web.admin_forms import WebhookForm
from policies_app.web.common import act

DELIVERIES_PAGE_SIZE = 25


@login_required
@require_http_methods(["GET", "POST"])
def webhook_detail(request: HttpRequest, pk: int) -> HttpResponse:
    webhook = get_object_or_404(webhooks.visible_webhooks(request.user), pk=pk)
    may_change = access.can(request.user, Capability.ADMINISTER, webhook.project)
    form = WebhookForm(
        request.POST if request.POST.get("action") == "settings" else None,
        initial={
            "name": webhook.name,
            "url": webhook.url,
            "format": webhook.format,
            "statuses": webhook.statuses,
            "active": webhook.active,
        },
    )

    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        for name, problems in (errors or {}).items():
            if name in form.fields:
                form.add_error(name, problems)
        deliveries = Paginator(webhook.deliveries.all(), DELIVERIES_PAGE_SIZE).get_page(
            request.GET.get("page")
        )
        context = {
            "webhook": webhook,
            "form": form,
            "deliveries": deliveries,
            "may_change": may_change,
            "error": error,
            "delivered": DeliveryStatus.DELIVERED,
        }
        return render(request, "web/webhook_detail.html", context, status=status)

    if request.method == "GET":
        return page()
    here = reverse("web:webhook-detail", args=[webhook.pk])
    action = request.POST.get("action")
    if action == "settings":
        if not form.is_valid():
            return page(status=400)
        return act(
            request,
            lambda: webhooks.update_webhook(request.user, webhook, **form.cleaned_data),
            done="The webhook is saved.",
            then=here,
            page=page,
        )
    if action == "test":
        return act(
            request,
            lambda: webhooks.send_test(request.user, webhook),
            done="The test message is on its way: its outcome appears in the deliveries below.",
            then=here,
            page=page,
        )
    if action == "delete":
        return act(
            request,
            lambda: webhooks.delete_webhook(request.user, webhook),
            done=f"Webhook {webhook.name} is removed.",
            then=reverse("web:project-detail", args=[webhook.project_id]),
            page=page,
        )
    return page(error="Unknown action.", status=400)


@login_required
@require_http_methods(["GET", "POST"])
def delivery_detail(request: HttpRequest, pk: int, delivery_pk: int) -> HttpResponse:
    webhook = get_object_or_404(webhooks.visible_webhooks(request.user), pk=pk)
    delivery = get_object_or_404(webhook.deliveries.select_related("webhook", "resent_from"), pk=delivery_pk)

    def page(error: str = "", errors: dict | None = None, status: int = 200) -> HttpResponse:
        try:
            body = json.dumps(json.loads(delivery.body), indent=2, sort_keys=True, ensure_ascii=False)
        except ValueError:
            body = delivery.body
        context = {
            "webhook": webhook,
            "delivery": delivery,
            "body": body,
            "headers": webhook_history.shown_request_headers(delivery),
            "resends": delivery.resends.order_by("-created_at", "-id"),
            "may_change": access.can(request.user, Capability.ADMINISTER, webhook.project),
            "error": error,
            "delivered": DeliveryStatus.DELIVERED,
        }
        return render(request, "web/webhook_delivery.html", context, status=status)

    if request.method == "GET":
        return page()
    if request.POST.get("action") != "resend":
        return page(error="Unknown action.", status=400)
    return act(
        request,
        lambda: webhook_history.resend_delivery(request.user, delivery),
        done=lambda again: f"Sent again as delivery #{again.pk}: its outcome appears below.",
        then=lambda again: reverse("web:webhook-delivery", args=[webhook.pk, again.pk]),
        page=page,
    )
