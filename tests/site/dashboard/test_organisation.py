"""cronradar.dashboard.organisation: an owner exports and deletes the
organisation from its members page; a person deletes their own account."""
import json

import pytest

from accounts.models import AuditEntry, Organisation
from monitors.models import Monitor
from tests.site.dashboard.conftest import signed_in, text

pytestmark = pytest.mark.django_db


def test_owner_exports_from_the_members_page(project, world):
    owner = signed_in(project, "owner")
    page = text(owner.get("/members/"))
    assert 'href="/organisation/export/">Export acme</a>' in page
    assert 'href="/organisation/delete/">Delete acme…</a>' in page
    response = owner.get("/organisation/export/")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith('attachment; filename="cronradar-acme-')
    archive = json.loads(b"".join(response.streaming_content))
    assert archive["channels"][0]["config"] == {"url": "***", "secret": "***",
                                                "signing_secret": "***"}
    assert AuditEntry.objects.filter(action="export", organisation=project.organisation) \
        .count() == 1


def test_only_owners_see_and_reach_export_and_deletion(project, admin):
    assert "Export acme" not in text(admin.get("/members/"))
    assert admin.get("/organisation/export/").status_code == 403
    assert admin.post("/organisation/delete/", {"confirm": "acme"}).status_code == 403
    Organisation.objects.get(pk=project.organisation_id, deleted_at=None)


def test_deleting_needs_the_typed_name_then_hides_it(project, world):
    owner = signed_in(project, "owner")
    wrong = owner.post("/organisation/delete/", {"confirm": "ACME"})
    assert wrong.status_code == 400
    assert "type the organisation&#x27;s name (acme) to confirm" in text(wrong)
    done = owner.post("/organisation/delete/", {"confirm": "acme"})
    assert (done.status_code, "acme is deleted" in text(done)) == (202, True)
    assert Monitor.objects.get(pk=world["monitor"].pk).deleted_at is not None
    assert owner.get(f"/monitors/{world['monitor'].pk}/").status_code == 404


def test_deleting_ones_account(project, world):
    owner = signed_in(project, "owner")
    refused = owner.post("/account/delete/")
    assert refused.status_code == 409
    assert ("you are the last owner of acme: make someone else an owner or delete the "
            "organisation first") in text(refused)
    member = signed_in(project, "member")
    assert 'href="/account/delete/">Delete your account…</a>' in text(member.get("/account/"))
    assert member.post("/account/delete/").url == "/login/"
    assert member.get("/account/").status_code == 302  # signed out
    entry = AuditEntry.objects.get(action="account_delete")
    assert (entry.organisation_id, entry.target_repr) == (project.organisation_id, "member")
