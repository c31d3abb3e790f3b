"""Team members get a source (manual, SSO group, SCIM): Team.members goes through TeamMembership. The
existing members are copied as manual before the old table is dropped. Adds the single sign-on
identities, the group → team mapping and SCIM's users and groups."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import policies_app.models.identity


def copy_members_as_manual(apps, schema_editor):
    Team = apps.get_model("policies_app", "Team")
    TeamMembership = apps.get_model("policies_app", "TeamMembership")
    old = Team.members.through.objects.values_list("team_id", "user_id")
    TeamMembership.objects.bulk_create(
        [TeamMembership(team_id=team_id, user_id=user_id, source="manual") for team_id, user_id in old.iterator()],
        batch_size=1000,
    )


def copy_members_back(apps, schema_editor):
    Team = apps.get_model("policies_app", "Team")
    TeamMembership = apps.get_model("policies_app", "TeamMembership")
    Team.members.through.objects.bulk_create(
        [
            Team.members.through(team_id=team_id, user_id=user_id)
            for team_id, user_id in TeamMembership.objects.values_list("team_id", "user_id").iterator()
        ],
        batch_size=1000,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("policies_app", "0020_branch_checks"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="TeamMembership",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "source",
                    models.CharField(
                        choices=[("manual", "manual"), ("sso_group", "SSO group"), ("scim", "SCIM")],
                        default="manual",
                        max_length=20,
                    ),
                ),
                ("source_group", models.CharField(blank=True, max_length=255)),
                ("added_at", models.DateTimeField(auto_now_add=True)),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="team_memberships",
                        to="policies_app.team",
                    ),
                ),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="team_memberships",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "ordering": ["team", "user"],
                "constraints": [models.UniqueConstraint(fields=("team", "user"), name="team_membership_once")],
            },
        ),
        migrations.RunPython(copy_members_as_manual, copy_members_back),
        migrations.RemoveField(model_name="team", name="members"),
        migrations.AddField(
            model_name="team",
            name="members",
            field=models.ManyToManyField(
                blank=True,
                related_name="policy_teams",
                through="policies_app.TeamMembership",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.CreateModel(
            name="SsoIdentity",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("issuer", models.CharField(max_length=500)),
                ("subject", models.CharField(max_length=255)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("last_sign_in_at", models.DateTimeField(blank=True, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="sso_identities",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={
                "constraints": [models.UniqueConstraint(fields=("issuer", "subject"), name="sso_identity_once")]
            },
        ),
        migrations.CreateModel(
            name="GroupTeamMapping",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("group", models.CharField(max_length=255)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                (
                    "team",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="group_mappings",
                        to="policies_app.team",
                    ),
                ),
            ],
            options={
                "ordering": ["group", "team__name"],
                "constraints": [models.UniqueConstraint(fields=("group", "team"), name="group_team_mapping_once")],
            },
        ),
        migrations.CreateModel(
            name="ScimGroup",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "scim_id",
                    models.CharField(default=policies_app.models.identity._new_scim_id, max_length=64, unique=True),
                ),
                ("scim_external_id", models.CharField(blank=True, max_length=255)),
                ("name", models.CharField(max_length=255)),
                ("members", models.ManyToManyField(blank=True, related_name="scim_groups", to=settings.AUTH_USER_MODEL)),
            ],
            options={"ordering": ["name"]},
        ),
        migrations.CreateModel(
            name="ScimUser",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "scim_id",
                    models.CharField(default=policies_app.models.identity._new_scim_id, max_length=64, unique=True),
                ),
                ("scim_external_id", models.CharField(blank=True, max_length=255)),
                ("scim_username", models.CharField(max_length=255, unique=True)),
                (
                    "user",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE, related_name="scim", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
        ),
    ]
