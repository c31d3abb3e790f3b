from django.urls import path

from . import deployment_views, policy_editor_views, policy_views, project_views

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
    path("policies/new/", policy_editor_views.policy_edit, name="policy-new"),
    path("policies/catalog/", policy_editor_views.policy_catalog, name="policy-catalog"),
    path("policies/<int:pk>/", policy_views.policy_detail, name="policy-detail"),
    path("policies/<int:pk>/edit/", policy_editor_views.policy_edit, name="policy-edit"),
    path("policies/<int:pk>/revisions/<int:number>/", policy_views.policy_revision, name="policy-revision"),
    path("policies/<int:pk>/diff/", policy_views.policy_diff, name="policy-diff"),
    path("policies/<int:pk>/sync/", policy_views.policy_sync, name="policy-sync"),
    path("policies/<int:pk>/publish/", policy_views.policy_publish, name="policy-publish"),
    path("policies/<int:pk>/replays/", policy_views.policy_replay_start, name="policy-replay-start"),
    path("policies/<int:pk>/replays/<int:replay_pk>/", policy_views.policy_replay, name="policy-replay"),
]
