"""The administrators' console (Django admin), one module per domain. It cannot bypass a rule: every model
whose writes have rules is read-only here and links to the product's page that changes it (projects,
environments, templates, roles, teams, users' accounts; deployments and their trail, audit entries and
revisions change only through the use cases in deployments/ and policies/); a policy is edited through
policies/authoring.py so that every save is checked by the engine, becomes revision N+1 and is audited.
What no use case covers (a user's groups, permissions and password; groups) is a superuser's alone and
audited here. ``tests/ops/test_admin_cannot_bypass.py`` walks every registered admin.

Django imports this package to find the registrations: each module registers its domain's models.
"""

from policies_app.admin import accounts, deployments, policies, projects

__all__ = ["accounts", "deployments", "policies", "projects"]
