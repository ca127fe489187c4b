"""accounts.firstrun: the first account of an empty installation, owner of a new
organisation or of the one createapikey made, and the production setup token
that migrate prints."""
import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from accounts import firstrun
from accounts.models import Membership, Organisation, Profile, Project, SetupToken
from tests.helpers import person

pytestmark = pytest.mark.django_db
PASSWORD = "a long pass phrase 9"


def test_the_first_account_owns_a_new_organisation_with_a_first_project():
    user = firstrun.create_first_account("op@example.com", PASSWORD, " Acme ")
    membership = Membership.objects.select_related("organisation").get(user=user)
    assert (user.username, user.email, user.is_staff, user.is_superuser) == (
        "op@example.com", "op@example.com", True, True)
    assert (membership.organisation.name, membership.role) == ("Acme", "owner")
    assert list(membership.organisation.projects.values_list("name", flat=True)) == ["default"]
    assert Profile.objects.get(user=user).email_verified_at is not None
    with pytest.raises(firstrun.Refused) as again:
        firstrun.create_first_account("late@example.com", PASSWORD, "Other")
    assert again.value.reason == firstrun.Refusal.TAKEN
    assert get_user_model().objects.count() == 1


def test_the_first_account_adopts_the_organisation_createapikey_made():
    call_command("createapikey", "--project", "ops", verbosity=0)
    (org,) = Organisation.objects.all()
    user = firstrun.create_first_account("op@example.com", PASSWORD, "ignored")
    assert list(Membership.objects.values_list("organisation", "user", "role")) == [
        (org.pk, user.pk, "owner")]
    assert list(Project.objects.values_list("name", flat=True)) == ["ops"]
    assert not Organisation.objects.filter(name="ignored").exists()


def test_with_several_organisations_the_first_account_makes_its_own():
    Organisation.objects.create(name="a")
    Organisation.objects.create(name="b")
    assert firstrun.adoptable() is None
    with pytest.raises(firstrun.Refused) as taken:
        firstrun.create_first_account("op@example.com", PASSWORD, "a")
    assert taken.value.reason == firstrun.Refusal.NAME
    firstrun.create_first_account("op@example.com", PASSWORD, "c")
    assert Membership.objects.get().organisation.name == "c"


def test_a_superuser_counts_as_a_person(project):
    get_user_model().objects.create_superuser("root", "root@example.com", PASSWORD)
    assert not firstrun.nobody_yet()
    with pytest.raises(firstrun.Refused):
        firstrun.create_first_account("op@example.com", PASSWORD, "x")


def test_production_needs_the_setup_token_that_migrate_prints(settings, capsys):
    settings.PRODUCTION = True
    settings.CRONRADAR_BASE_URL = "https://cron.example.org"
    call_command("migrate", verbosity=1, stdout=io.StringIO())
    printed = capsys.readouterr().out
    token = SetupToken.objects.get().token
    assert f"No account exists yet: open https://cron.example.org/ to create the first one, " \
           f"with the setup token {token}\n" in printed
    assert firstrun.setup_lines() == [printed.strip().splitlines()[-1]]  # the same one again
    for wrong in ("", token + "x"):
        with pytest.raises(firstrun.Refused) as refused:
            firstrun.create_first_account("op@example.com", PASSWORD, "Acme", token=wrong)
        assert refused.value.reason == firstrun.Refusal.TOKEN
    firstrun.create_first_account("op@example.com", PASSWORD, "Acme", token=f" {token} ")
    assert (SetupToken.objects.count(), firstrun.setup_lines()) == (0, [])
    person("x", Organisation.objects.get(), "member")
    with pytest.raises(firstrun.Refused) as later:  # no token works once someone exists
        firstrun.create_first_account("b@example.com", PASSWORD, "B", token=token)
    assert later.value.reason == firstrun.Refusal.TAKEN


def test_outside_production_nothing_is_printed(capsys):
    call_command("migrate", verbosity=1, stdout=io.StringIO())
    assert "setup token" not in capsys.readouterr().out
    assert firstrun.setup_lines() == []


def test_the_first_accounts_address_is_lower_cased_and_signs_in_in_any_case(client):
    user = firstrun.create_first_account("Op.Erator@Example.COM", PASSWORD, "Acme")
    assert (user.username, user.email) == ("op.erator@example.com", "op.erator@example.com")
    assert client.login(username="Op.Erator@Example.COM", password=PASSWORD)
