from rest_framework.routers import DefaultRouter

from .views import deployments, environments, policies, projects, templates

router = DefaultRouter()
router.register("projects", projects.ProjectViewSet, basename="project")
router.register("templates", templates.TemplateViewSet, basename="template")
router.register("environments", environments.EnvironmentViewSet, basename="environment")
router.register("policies", policies.PolicyViewSet, basename="policy")
router.register("policy-repositories", policies.PolicyRepositoryViewSet, basename="policy-repository")
router.register("teams", projects.TeamViewSet, basename="team")
router.register("deployments", deployments.DeploymentViewSet, basename="deployment")

urlpatterns = router.urls
