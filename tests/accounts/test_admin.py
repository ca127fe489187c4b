"""accounts.admin: plans with their limits, an organisation's plan shown and
changed (recorded as plan_change)."""
import pytest
from django.test import Client

from accounts.models import AuditEntry, Organisation, Plan

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(django_user_model):
    user = django_user_model.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(user)
    return client


def test_the_admin_lists_plans_and_changes_an_organisations_plan(operator):
    free = Plan.objects.create(name="free", max_monitors=20)
    org = Organisation.objects.create(name="acme")
    listed = operator.get("/admin/accounts/plan/").content.decode()
    assert "free" in listed and "20" in listed
    assert operator.get(f"/admin/accounts/organisation/{org.pk}/change/").status_code == 200
    resp = operator.post(f"/admin/accounts/organisation/{org.pk}/change/",
                         {"name": "acme", "plan": free.pk})
    assert resp.status_code == 302
    org.refresh_from_db()
    assert org.plan == free
    # the actor is the signed-in operator (the request's), not "manage.py setplan"
    assert list(AuditEntry.objects.values_list("action", "actor", "actor_user__username",
                                               "changes")) == [
        ("plan_change", "root", "root", {"plan": [None, "free"]})]
    operator.post(f"/admin/accounts/organisation/{org.pk}/change/", {"name": "acme2",
                                                                     "plan": free.pk})
    assert AuditEntry.objects.count() == 1  # a rename is not a plan change
    assert Organisation.objects.get().name == "acme2"
    made = operator.post("/admin/accounts/plan/add/", {"name": "pro", "max_monitors": "500"})
    assert made.status_code == 302
    assert Plan.objects.get(name="pro").max_monitors == 500
