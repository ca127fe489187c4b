"""accounts.api: API keys shown once, stored keyed and revocable; members managed by
admins with an owner kept; projects and their ping keys."""
import hashlib

import pytest
from django.utils import timezone

from accounts.models import ApiKey, Membership
from tests.conftest import S, new_project
from tests.helpers import as_key, as_person, person

pytestmark = pytest.mark.django_db


def test_keys_are_shown_once_stored_keyed_and_revocable(api, project):
    made = api.post("/api/v1/api-keys/", {"name": "ci", "read_only": True}, format="json")
    assert made.status_code == 201
    body = made.json()
    key = body.pop("key")
    assert (body["name"], body["read_only"], body["prefix"], body["project"]) == (
        "ci", True, key[:12], project.pk)
    row = ApiKey.objects.get(pk=body["id"])
    assert key not in (row.key_hash, row.prefix + row.key_hash)
    assert row.key_hash != hashlib.sha256(key.encode()).hexdigest()  # keyed, not plain
    assert row.key_hash == ApiKey.keyed_hash(key)
    assert "key" not in api.get(f"/api/v1/api-keys/{row.pk}/").json()
    ci = as_key(key)
    assert ci.get("/api/v1/monitors/").status_code == 200
    row.refresh_from_db()
    assert row.last_used_at is not None and timezone.now() - row.last_used_at < 60 * S
    assert api.patch(f"/api/v1/api-keys/{row.pk}/", {"read_only": False},
                     format="json").status_code == 400
    assert api.delete(f"/api/v1/api-keys/{row.pk}/").status_code == 204
    assert ci.get("/api/v1/monitors/").json() == {"detail": "invalid or revoked API key"}
    revoked_at = ApiKey.objects.get(pk=row.pk).revoked_at
    assert api.delete(f"/api/v1/api-keys/{row.pk}/").status_code == 204  # twice: no change
    assert ApiKey.objects.get(pk=row.pk).revoked_at == revoked_at


def test_members_are_managed_by_admins_and_an_owner_stays(project):
    org = project.organisation
    olga, alice = person("olga", org, "owner"), person("alice", org, "admin")
    elsewhere = new_project("elsewhere").organisation
    person("dan", elsewhere, "viewer")  # dan shares "elsewhere" with alice: she can add him
    Membership.objects.create(organisation=elsewhere, user=alice, role="viewer")
    owner, admin = as_person(olga), as_person(alice)
    added = admin.post("/api/v1/members/", {"email": "DAN@example.com", "role": "viewer",
                                            "organisation": org.pk}, format="json")
    assert added.status_code == 201, added.json()
    assert {k: added.json()[k] for k in ("organisation", "username", "role")} == {
        "organisation": org.pk, "username": "dan", "role": "viewer"}
    assert admin.post("/api/v1/members/", {"username": "dan", "organisation": org.pk},
                      format="json").json() == {"username": ["dan is already a member"]}
    assert admin.post("/api/v1/members/", {"username": "nobody", "organisation": org.pk},
                      format="json").json() == {
        "username": ["no such person in your organisations; to invite someone, give their email"]}
    mine = olga.memberships.get()
    assert admin.patch(f"/api/v1/members/{mine.pk}/", {"role": "member"},
                       format="json").json() == {
        "detail": "only an owner can grant or change the owner role"}
    assert owner.patch(f"/api/v1/members/{mine.pk}/", {"role": "admin"},
                       format="json").json() == {
        "role": ["an organisation keeps at least one owner: make another owner first"]}
    assert owner.delete(f"/api/v1/members/{mine.pk}/").status_code == 400
    dan = added.json()["id"]
    assert admin.patch(f"/api/v1/members/{dan}/", {"role": "member"},
                       format="json").json()["role"] == "member"
    assert admin.delete(f"/api/v1/members/{dan}/").status_code == 204
    key = as_key(ApiKey.issue(project)[1])
    assert len(key.get("/api/v1/members/").json()) == 2
    assert key.post("/api/v1/members/", {"username": "dan"}, format="json").json() == {
        "detail": "members are managed by people with the admin role; API keys can only "
                  "list them"}


def test_projects_and_their_ping_keys(project):
    admin = as_person(person("alice", project.organisation, "admin"))
    made = admin.post("/api/v1/projects/", {"name": "staging"}, format="json")
    assert made.status_code == 201
    assert (made.json()["organisation"], len(made.json()["ping_key"])) == (
        project.organisation_id, 22)
    assert admin.post("/api/v1/projects/", {"name": "staging"}, format="json").json() == {
        "name": ["a project named 'staging' exists in this organisation"]}
    assert [p["name"] for p in admin.get("/api/v1/projects/").json()] == ["acme", "staging"]
    key = as_key(ApiKey.issue(project)[1])
    assert key.get("/api/v1/projects/").json()[0]["ping_key"] == project.ping_key
    assert key.post("/api/v1/projects/", {"name": "x"}, format="json").status_code == 403


@pytest.mark.parametrize("body,error", [
    ({"username": "u" * 151, "email": "new@example.com"},
     {"username": ["Ensure this field has no more than 150 characters."]}),
    ({"email": "e" * 243 + "@example.com"},
     {"email": ["Ensure this field has no more than 254 characters."]}),
    ({"username": 7}, {"username": ["must be a string"]}),
])
def test_a_members_username_and_email_have_the_schemas_bounds(project, body, error):
    admin = as_person(person("ana", project.organisation, "admin"))
    resp = admin.post("/api/v1/members/", {**body, "organisation": project.organisation.pk},
                      format="json")
    assert (resp.status_code, resp.json()) == (400, error)
    assert Membership.objects.count() == 1
