"""The administrators' console (Django admin), one module per domain. Deployments and their trail, audit
entries and revisions are read-only here (they change only through the use cases in deployments/ and
policies/); a policy is edited through policies/authoring.py so that every save is checked by the engine
and becomes revision N+1.

Django imports this package to find the registrations: each module registers its domain's models.
"""

from policies_app.admin import accounts, deployments, policies, projects

__all__ = ["accounts", "deployments", "policies", "projects"]
