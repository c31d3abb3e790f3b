from django.db import models

from policies_app.choices import ReviewApi
from policies_app.guards.encryption import EncryptedTextField


class PolicyRepository(models.Model):
    """A git repository that policies are synced from, with the secrets that reach it.

    The secrets are write-only: the API and the pages say whether one is set, never what it is; they are
    encrypted at rest (guards/encryption.py).
    ``webhook_secret`` checks push webhooks: GitHub signs the body with it (X-Hub-Signature-256),
    GitLab sends it as a token (X-Gitlab-Token).
    ``review_*`` say where a push to another branch is reported (a commit status and a comment on its pull
    or merge request, policies/git/review_reports.py); ``review_token`` is the API token that may post them."""

    name = models.CharField(max_length=200, unique=True)
    url = models.CharField(
        max_length=1000, help_text="https://…, ssh://…, git@host:owner/repo.git, or a local path."
    )
    username = models.CharField(max_length=200, blank=True, help_text="For https; with the password.")
    password = EncryptedTextField(blank=True, help_text="An https password or access token.")
    ssh_private_key = EncryptedTextField(blank=True)
    ssh_known_hosts = EncryptedTextField(
        blank=True, help_text="The server's host keys; empty: the key seen first is kept and required."
    )
    webhook_secret = EncryptedTextField(blank=True)
    review_api = models.CharField(
        max_length=10,
        choices=ReviewApi.choices,
        blank=True,
        default=ReviewApi.NONE,
        help_text="Report checks of pushes to other branches to GitHub or GitLab (empty: not checked).",
    )
    review_api_url = models.CharField(
        max_length=500,
        blank=True,
        help_text="The REST API's root: https://api.github.com, https://gitlab.example.com/api/v4.",
    )
    review_project = models.CharField(
        max_length=300, blank=True, help_text="GitHub: owner/repository. GitLab: the project's id or path."
    )
    review_token = EncryptedTextField(
        blank=True, help_text="A token that may post commit statuses and pull request comments."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "policy repositories"

    def __str__(self) -> str:
        return self.name
