from django.urls import path

from . import deployment_views, policy_views, project_views

app_name = "web"
urlpatterns = [
    path("", deployment_views.deployment_queue, name="deployment-queue"),
    path("deployments/<int:pk>/", deployment_views.deployment_detail, name="deployment-detail"),
    path("deployments/<int:pk>/decide/", deployment_views.deployment_decide, name="deployment-decide"),
    path("deployments/<int:pk>/cancel/", deployment_views.deployment_cancel, name="deployment-cancel"),
    path(
        "deployments/<int:pk>/evaluations/<int:evaluation_pk>/input.json",
        deployment_views.evaluation_input,
        name="evaluation-input",
    ),
    path("projects/", project_views.project_tree, name="project-tree"),
    path("environments/<int:pk>/", project_views.environment_detail, name="environment-detail"),
    path("policies/", policy_views.policy_list, name="policy-list"),
    path("policies/<int:pk>/", policy_views.policy_detail, name="policy-detail"),
]
