"""accounts/0003_email_verified: every person who exists when it runs is verified
(a profile is made for those without one), so nobody is locked out by sign-up's
verification."""
import json
import subprocess
import sys

import pytest

from tests.live import ROOT

pytestmark = pytest.mark.live

UPGRADE = r"""
import json, django
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
django.setup()

BEFORE = [("accounts", "0002_content_types")]
call_command("migrate", verbosity=0)
call_command("migrate", "accounts", "0002_content_types", verbosity=0)
old = MigrationExecutor(connection).loader.project_state(BEFORE).apps
User, Profile = old.get_model("auth", "User"), old.get_model("accounts", "Profile")
with_profile = User.objects.create(username="ana", email="ana@example.com")
Profile.objects.create(user=with_profile, timezone="Europe/Berlin")
User.objects.create(username="root", is_staff=True, is_superuser=True)
call_command("migrate", verbosity=0)
from accounts.models import Profile as NewProfile
print(json.dumps(sorted([p.user.username, p.timezone, p.email_verified_at is not None]
                        for p in NewProfile.objects.all())))
"""


def test_every_existing_person_is_verified(tmp_path):
    env = {"CRONRADAR_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "cronradar.settings",
           "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-c", UPGRADE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [
        ["ana", "Europe/Berlin", True], ["root", "", True]]
