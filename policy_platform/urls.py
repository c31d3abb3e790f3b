from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from policies_app.signin import ThrottledAdminAuthenticationForm, ThrottledAuthenticationForm

admin.site.login_form = ThrottledAdminAuthenticationForm


def healthz(request: HttpRequest) -> HttpResponse:
    """Liveness: the web process answers. It asks nothing of the database, so a database outage does
    not make the orchestrator restart every web process (the API answers 503 meanwhile)."""
    return HttpResponse("ok", content_type="text/plain")


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("policies_app.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(authentication_form=ThrottledAuthenticationForm),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("policies_app.web.urls")),
]
