from django.urls import path

from . import views

app_name = "web"
urlpatterns = [
    path("", views.deployment_queue, name="deployment-queue"),
    path("deployments/<int:pk>/", views.deployment_detail, name="deployment-detail"),
    path("deployments/<int:pk>/decide/", views.deployment_decide, name="deployment-decide"),
    path("deployments/<int:pk>/cancel/", views.deployment_cancel, name="deployment-cancel"),
    path(
        "deployments/<int:pk>/evaluations/<int:evaluation_pk>/input.json",
        views.evaluation_input,
        name="evaluation-input",
    ),
    path("projects/", views.project_tree, name="project-tree"),
    path("environments/<int:pk>/", views.environment_detail, name="environment-detail"),
    path("policies/", views.policy_list, name="policy-list"),
    path("policies/<int:pk>/", views.policy_detail, name="policy-detail"),
]
