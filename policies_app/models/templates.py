from django.db import models

from policies_app.choices import TemplateType


class Template(models.Model):
    """What gets deployed: an IaC type and where its code lives."""

    name = models.CharField(max_length=200, unique=True)
    type = models.CharField(max_length=20, choices=TemplateType.choices)
    repository = models.CharField(max_length=500, blank=True, help_text="A git URL or a local path.")
    path = models.CharField(max_length=500, blank=True)
    revision = models.CharField(max_length=200, blank=True)
    archive = models.FileField(
        upload_to="template-archives/",
        blank=True,
        help_text="An uploaded .tar.gz or .zip instead of a repository.",
    )
    approval_policies = models.ManyToManyField("ApprovalPolicy", blank=True, related_name="templates")
    provider_schema = models.JSONField(
        null=True,
        blank=True,
        help_text="The output of `terraform providers schema -json`: which provider attributes are computed "
        "and their types (else a providers-schema.json in the template's files, else a rule without schema).",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Work owed (wakeups.py): the configuration views of the template's environments are to be computed
    # since this moment (its files changed); None once a worker computed them.
    views_due_at = models.DateTimeField(null=True, blank=True)
    views_enqueued_at = models.DateTimeField(null=True, blank=True)  # when a worker was last woken for them
    # The commit of the repository's revision the views were last computed at: another one seen (by the
    # periodic template sync or a deployment's evaluation) makes them due again.
    views_commit = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ConfigurationView(models.Model):
    """A template's configuration as evaluated for policies, kept by what it depends on (the template's
    files at one commit or archive, the variables, the evaluator's own code), so that it is computed
    once, not at every evaluation and resume."""

    key = models.CharField(max_length=64, unique=True)
    document = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"configuration view {self.key[:12]}"
