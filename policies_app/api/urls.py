from django.urls import path
from rest_framework.routers import DefaultRouter

from policies_app.api.views import (
    accounts,
    audit,
    deployments,
    environments,
    policies,
    projects,
    service_accounts,
    templates,
    waivers,
    webhooks,
)

router = DefaultRouter()
# First: a URL is matched against the patterns in order, and waiting pipelines poll their deployments
# (with the patterns of every resource before them, resolving a poll cost a tenth of its CPU).
router.register("deployments", deployments.DeploymentViewSet, basename="deployment")
router.register("projects", projects.ProjectViewSet, basename="project")
router.register("templates", templates.TemplateViewSet, basename="template")
router.register("environments", environments.EnvironmentViewSet, basename="environment")
router.register("policies", policies.PolicyViewSet, basename="policy")
router.register("policy-repositories", policies.PolicyRepositoryViewSet, basename="policy-repository")
router.register("teams", projects.TeamViewSet, basename="team")
router.register("group-mappings", projects.GroupTeamMappingViewSet, basename="group-mapping")
router.register("webhooks", webhooks.WebhookViewSet, basename="webhook")
router.register("users", accounts.AccountViewSet, basename="user")
router.register("tokens", accounts.ApiTokenViewSet, basename="token")
router.register("service-accounts", service_accounts.ServiceAccountViewSet, basename="service-account")
router.register("audit", audit.AuditEntryViewSet, basename="audit")
router.register("waivers", waivers.WaiverViewSet, basename="waiver")

# The route every waiting pipeline polls comes first of all (before the API root and the deployments'
# list, detail and other actions with their format-suffixed twins: twenty patterns tried per poll).
routes = router.urls
polled = [
    route for route in routes if route.name == "deployment-status" and "format" not in str(route.pattern)
]
urlpatterns = [
    *polled,
    path("me/", accounts.MeView.as_view(), name="me"),
    *[route for route in routes if route not in polled],
    # Triggering by path (project/environment, "/" included): ids and one-segment keys take the route above.
    path(
        "environments/<path:pk>/deployments/",
        environments.EnvironmentViewSet.as_view({"get": "deployments", "post": "deployments"}),
        name="environment-deployments-by-path",
    ),
]
