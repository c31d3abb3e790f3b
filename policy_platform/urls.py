from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from policies_app.accounts import signin
from policies_app.accounts.signin import ThrottledAdminAuthenticationForm
from policies_app.ops import metrics_view, readiness

admin.site.login_form = ThrottledAdminAuthenticationForm


def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness: the web process answers. It asks nothing of the database, so a database outage does
    not make the orchestrator restart every web process (the API answers 503 meanwhile)."""
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # Second: waiting pipelines poll here (policies_app/api/urls.py puts their route first within).
    path("api/v1/", include("policies_app.api.urls")),
    # Readiness: the database, the broker and an engine worker answer (policies_app/ops/readiness.py).
    path("readyz", readiness.readyz, name="readyz"),
    path("metrics", metrics_view.metrics, name="metrics"),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("accounts/login/", signin.SignInView.as_view(), name="login"),
    path("accounts/logout/", signin.SignOutView.as_view(), name="logout"),
    # Single sign-on (policies_app/accounts/sso.py): 404 unless OIDC_ISSUER and OIDC_CLIENT_ID are set.
    path("oidc/", include("mozilla_django_oidc.urls")),
    # SCIM 2.0 provisioning (policies_app/accounts/scim.py): 404 unless SCIM_BEARER_TOKEN is set.
    path("scim/v2/", include("django_scim.urls")),
    # An invited user (users.create_user without a password) chooses a password here.
    path(
        "accounts/reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(success_url="/accounts/reset/done/"),
        name="password_reset_confirm",
    ),
    path(
        "accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"
    ),
    path("", include("policies_app.web.urls")),
]
