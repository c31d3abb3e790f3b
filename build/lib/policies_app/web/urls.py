from django.urls import path

from . import account_views, admin_views, deployment_views, policy_views, project_views, webhook_views

app_name = "web"
urlpatterns = [
    path("", deployment_views.deployment_queue, name="deployment-queue"),
    path("deployments/<int:pk>/", deployment_views.deployment_detail, name="deployment-detail"),
    path("deployments/<int:pk>/live/", deployment_views.deployment_live, name="deployment-live"),
    path("deployments/<int:pk>/decide/", deployment_views.deployment_decide, name="deployment-decide"),
    path("deployments/<int:pk>/cancel/", deployment_views.deployment_cancel, name="deployment-cancel"),
    path(
        "deployments/<int:pk>/evaluations/<int:evaluation_pk>/input.json",
        deployment_views.evaluation_input,
        name="evaluation-input",
    ),
    path("projects/", project_views.project_tree, name="project-tree"),
    path("projects/new/", project_views.project_create, name="project-create"),
    path("projects/<int:pk>/", project_views.project_detail, name="project-detail"),
    path(
        "projects/<int:project_pk>/environments/new/",
        project_views.environment_create,
        name="environment-create",
    ),
    path("environments/<int:pk>/", project_views.environment_detail, name="environment-detail"),
    path("environments/<int:pk>/edit/", project_views.environment_edit, name="environment-edit"),
    path("webhooks/<int:pk>/", webhook_views.webhook_detail, name="webhook-detail"),
    path("templates/", admin_views.template_list, name="template-list"),
    path("templates/new/", admin_views.template_create, name="template-create"),
    path("templates/<int:pk>/", admin_views.template_detail, name="template-detail"),
    path("media/template-archives/<str:name>", admin_views.template_archive, name="template-archive"),
    path("policies/", policy_views.policy_list, name="policy-list"),
    path("policies/<int:pk>/", policy_views.policy_detail, name="policy-detail"),
    path("policies/<int:pk>/attachments/", admin_views.policy_attach, name="policy-attach"),
    path("users/", admin_views.user_list, name="user-list"),
    path("users/<int:pk>/", admin_views.user_change, name="user-change"),
    path("audit/", admin_views.audit_list, name="audit-log"),
    path("audit/export.<str:kind>", admin_views.audit_export, name="audit-export"),
    path("account/", account_views.account, name="account"),
]
