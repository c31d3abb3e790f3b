from rest_framework.routers import DefaultRouter

from . import views

router = DefaultRouter()
router.register("projects", views.ProjectViewSet, basename="project")
router.register("templates", views.TemplateViewSet, basename="template")
router.register("environments", views.EnvironmentViewSet, basename="environment")
router.register("policies", views.PolicyViewSet, basename="policy")
router.register("teams", views.TeamViewSet, basename="team")
router.register("deployments", views.DeploymentViewSet, basename="deployment")

urlpatterns = router.urls
