"""SCIM 2.0 provisioning, with the requests Okta and Azure AD send as their documentation shows them
(Okta: "SCIM 2.0 protocol reference"; Microsoft Entra: "Tutorial: develop and plan provisioning for a
SCIM endpoint", the request/response examples): users created, changed and deactivated (sessions and
tokens revoked), groups whose membership becomes team membership with source SCIM, and the bearer token."""

import json

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from policies_app.models import ApiToken, GroupTeamMapping, ScimUser, TeamMembership
from tests.builders import api_key_for

TOKEN = "scim-test-token-0123456789"
SCIM = "application/scim+json"
PATCH_OP = "urn:ietf:params:scim:api:messages:2.0:PatchOp"


@pytest.fixture
def scim(settings, world):
    settings.SCIM_BEARER_TOKEN = TOKEN
    client = Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    def call(method: str, path: str, body: dict | None = None):
        send = getattr(client, method.lower())
        kwargs = {"data": json.dumps(body), "content_type": SCIM} if body is not None else {}
        answer = send(f"/scim/v2/{path}", **kwargs)
        return answer.status_code, (json.loads(answer.content) if answer.content else None)

    return call


def okta_user(user_name: str) -> dict:
    return {
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
        "userName": user_name,
        "name": {"givenName": "Ada", "familyName": "Lovelace"},
        "emails": [{"primary": True, "value": user_name, "type": "work"}],
        "displayName": "Ada Lovelace",
        "locale": "en-US",
        "externalId": "00ujl29u0le5T6Aj10h7",
        "groups": [],
        "password": "1mz050nq",
        "active": True,
    }


def test_okta_creates_a_user_groups_it_and_deactivates_it(world, scim, client):
    GroupTeamMapping.objects.create(group="Platform Approvers", team=world.security)
    status, found = scim("GET", "Users?filter=userName%20eq%20%22ada%40example.com%22&startIndex=1&count=100")
    assert (status, found["totalResults"]) == (200, 0)
    status, created = scim("POST", "Users", okta_user("ada@example.com"))
    assert status == 201, created
    ada = ScimUser.objects.get(scim_id=created["id"]).user
    assert (ada.username, ada.email, ada.first_name, ada.has_usable_password()) == (
        "ada@example.com",
        "ada@example.com",
        "Ada",
        False,
    ), "the password Okta sends is not kept: people sign in through SSO"
    status, found = scim("GET", "Users?filter=userName%20eq%20%22ada%40example.com%22&startIndex=1&count=100")
    assert found["Resources"][0]["id"] == created["id"]

    status, group = scim(
        "POST",
        "Groups",
        {
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"],
            "displayName": "Platform Approvers",
            "members": [],
        },
    )
    assert status == 201, group
    add = {"op": "add", "path": "members", "value": [{"value": created["id"], "display": "ada@example.com"}]}
    status, _ = scim("PATCH", f"Groups/{group['id']}", {"schemas": [PATCH_OP], "Operations": [add]})
    assert status == 200
    membership = TeamMembership.objects.get(user=ada)
    assert (membership.team, membership.source, membership.source_group) == (
        world.security,
        "scim",
        "Platform Approvers",
    )
    rename = {"op": "replace", "value": {"id": group["id"], "displayName": "Platform Approvers"}}
    assert scim("PATCH", f"Groups/{group['id']}", {"schemas": [PATCH_OP], "Operations": [rename]})[0] == 200

    # Ada is signed in and holds an API token; Okta deactivates her: both stop working at once.
    client.force_login(ada)
    key = api_key_for(ada)
    assert Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/projects/").status_code == 200
    deactivate = {"schemas": [PATCH_OP], "Operations": [{"op": "replace", "value": {"active": False}}]}
    status, answer = scim("PATCH", f"Users/{created['id']}", deactivate)
    assert (status, answer["active"]) == (200, False)
    assert not Session.objects.exists() and not ApiToken.objects.filter(user=ada).exists()
    assert Client(HTTP_AUTHORIZATION=f"Token {key}").get("/api/v1/projects/").status_code == 401
    assert "/accounts/login/" in client.get("/").url

    remove = {"op": "remove", "path": f'members[value eq "{created["id"]}"]'}
    assert scim("PATCH", f"Groups/{group['id']}", {"schemas": [PATCH_OP], "Operations": [remove]})[0] == 200
    assert not TeamMembership.objects.filter(user=ada).exists()


def test_azure_ad_creates_updates_disables_and_deletes_a_user_and_drives_a_group(world, scim):
    GroupTeamMapping.objects.create(group="displayName", team=world.security)
    user = {
        "schemas": [
            "urn:ietf:params:scim:schemas:core:2.0:User",
            "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User",
        ],
        "externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
        "userName": "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1",
        "active": True,
        "emails": [{"primary": True, "type": "work", "value": "Test_User_fd0ea19b@testuser.com"}],
        "meta": {"resourceType": "User"},
        "name": {"formatted": "givenName familyName", "familyName": "familyName", "givenName": "givenName"},
        "roles": [],
    }
    status, created = scim("POST", "Users", user)
    assert status == 201, created
    status, found = scim(
        "GET", "Users?filter=userName+eq+%22Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1%22"
    )
    assert found["totalResults"] == 1
    update = {
        "schemas": [PATCH_OP],
        "Operations": [
            {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "updatedEmail@microsoft.com"},
            {"op": "Replace", "path": "name.familyName", "value": "updatedFamilyName"},
        ],
    }
    status, changed = scim("PATCH", f"Users/{created['id']}", update)
    assert status == 200, changed
    account = ScimUser.objects.get(scim_id=created["id"]).user
    assert (account.email, account.last_name) == ("updatedEmail@microsoft.com", "updatedFamilyName")

    group = {
        "schemas": [
            "urn:ietf:params:scim:schemas:core:2.0:Group",
            "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group",
        ],
        "externalId": "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159",
        "displayName": "displayName",
        "meta": {"resourceType": "Group"},
    }
    status, made = scim("POST", "Groups", group)
    assert status == 201, made
    status, found = scim("GET", "Groups?filter=displayName+eq+%22displayName%22&excludedAttributes=members")
    assert found["Resources"][0]["id"] == made["id"]
    add = {"op": "Add", "path": "members", "value": [{"$ref": None, "value": created["id"]}]}
    assert scim("PATCH", f"Groups/{made['id']}", {"schemas": [PATCH_OP], "Operations": [add]})[0] == 200
    assert TeamMembership.objects.get(user=account).source == "scim"
    remove = {"op": "Remove", "path": "members", "value": [{"$ref": None, "value": created["id"]}]}
    assert scim("PATCH", f"Groups/{made['id']}", {"schemas": [PATCH_OP], "Operations": [remove]})[0] == 200
    assert not TeamMembership.objects.filter(user=account).exists()

    disable = {"schemas": [PATCH_OP], "Operations": [{"op": "Replace", "path": "active", "value": "False"}]}
    status, disabled = scim("PATCH", f"Users/{created['id']}", disable)
    assert (status, disabled["active"]) == (200, False)
    assert scim("DELETE", f"Users/{created['id']}")[0] == 204
    account.refresh_from_db()
    assert not account.is_active and not ScimUser.objects.exists()


def test_scim_never_takes_over_a_superuser_and_leaves_manual_members_alone(world, scim):
    status, created = scim(
        "POST", "Users", {**okta_user("admin"), "emails": [{"value": "admin@example.com"}]}
    )
    assert status == 201
    assert ScimUser.objects.get(scim_id=created["id"]).user != world.admin, "a new account, not the superuser"
    # An ordinary account is linked by user name: sam keeps his manual membership when SCIM groups change.
    status, sam = scim("POST", "Users", okta_user("sam"))
    assert ScimUser.objects.get(scim_id=sam["id"]).user == world.sam
    GroupTeamMapping.objects.create(group="sec", team=world.security)
    status, group = scim("POST", "Groups", {"displayName": "sec", "members": [{"value": sam["id"]}]})
    assert status == 201
    assert scim("DELETE", f"Groups/{group['id']}")[0] == 204
    assert TeamMembership.objects.get(user=world.sam, team=world.security).source == "manual"


def test_the_bearer_token_is_required_and_scim_is_off_without_one(world, settings):
    settings.SCIM_BEARER_TOKEN = TOKEN
    assert Client().get("/scim/v2/Users").status_code == 401
    assert Client(HTTP_AUTHORIZATION="Bearer wrong").get("/scim/v2/Users").status_code == 401
    # An API token of the platform (even an organisation admin's) is no SCIM token.
    admin_key = api_key_for(world.admin)
    assert Client(HTTP_AUTHORIZATION=f"Token {admin_key}").get("/scim/v2/Users").status_code == 401
    assert Client(HTTP_AUTHORIZATION=f"Bearer {admin_key}").get("/scim/v2/Users").status_code == 401
    settings.SCIM_BEARER_TOKEN = ""
    assert Client(HTTP_AUTHORIZATION=f"Bearer {TOKEN}").get("/scim/v2/Users").status_code == 404
