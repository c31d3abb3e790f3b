from django.db import models

from ..choices import TemplateType


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
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name
