"""Settings from the environment (cronradar.settings): numbers and booleans are
read strictly, a bad value stops the start with one line naming the variable
(manage.py's "configuration error"), and production turns on the SSRF guard and
secure cookies."""
import os
import subprocess
import sys

import pytest

from tests.helpers import _settings_env
from tests.live import ROOT


def check(**env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CRONRADAR_")}
    clean.pop("DATABASE_URL", None)
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT,
                          env={**clean, **env}, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("name", "value", "message"), [
    ("CRONRADAR_INCIDENT_RETENTION_DAYS", "3e2x", "not a number"),
    ("CRONRADAR_RUN_RETENTION_DAYS", "nan", "not a finite number"),
    ("CRONRADAR_RUN_RETENTION_DAYS", "90d", "not a number"),
    ("CRONRADAR_KEEP_PINGS", "1.5", "not a whole number"),
    ("CRONRADAR_KEEP_PINGS", "abc", "not a whole number"),
    ("CRONRADAR_KEEP_PINGS", "", "not a whole number"),
    ("CRONRADAR_KEEP_PINGS", "٣", "not a whole number"),
    ("CRONRADAR_KEEP_PINGS", "0", "use 1 or more"),
    ("CRONRADAR_PRUNE_INTERVAL", "abc", "not a number"),
    ("CRONRADAR_TICK_SECONDS", "1.2.3", "not a number"),
])
def test_a_bad_number_stops_the_start_with_one_line(name, value, message, tmp_path):
    done = check(CRONRADAR_DATA_DIR=str(tmp_path), **{name: value})
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1].startswith(f"configuration error: {name}=")
    assert message in done.stderr and "Traceback" not in done.stderr


def test_numbers_are_read_whole(tmp_path):
    code = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
            "'cronradar.settings'); django.setup(); from django.conf import settings as s; "
            "print(s.CRONRADAR_INCIDENT_RETENTION_DAYS, s.CRONRADAR_RUN_RETENTION_DAYS, "
            "s.CRONRADAR_KEEP_PINGS)")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CRONRADAR_")}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**clean, "CRONRADAR_DATA_DIR": str(tmp_path),
             "CRONRADAR_INCIDENT_RETENTION_DAYS": "3e2", "CRONRADAR_RUN_RETENTION_DAYS": "1e-4",
             "CRONRADAR_KEEP_PINGS": " 250 "})
    assert done.stdout.split() == ["300.0", "0.0001", "250"], done.stderr


@pytest.mark.django_db
def test_booleans_are_read_strictly(tmp_path):
    rc, out = _settings_env(CRONRADAR_DATA_DIR=str(tmp_path),
                            CRONRADAR_BLOCK_PRIVATE_ADDRESSES="ture")
    assert rc != 0 and "CRONRADAR_BLOCK_PRIVATE_ADDRESSES='ture': use true or false" in out


@pytest.mark.django_db
def test_production_turns_on_the_guard_and_secure_cookies(settings):
    import importlib
    import os
    from unittest import mock

    with mock.patch.dict(os.environ, {"CRONRADAR_ENV": "production"}):
        import cronradar.settings as module

        fresh = importlib.reload(module)
        values = (fresh.CRONRADAR_BLOCK_PRIVATE_ADDRESSES, fresh.SESSION_COOKIE_SECURE,
                  fresh.CSRF_COOKIE_SECURE)
    importlib.reload(module)  # back to the test environment's values
    assert values == (True, True, True)


def test_the_signup_setting_is_a_trimmed_lowercase_string(tmp_path):
    code = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
            "'cronradar.settings'); django.setup(); from django.conf import settings as s; "
            "print(repr(s.CRONRADAR_SIGNUP))")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CRONRADAR_")}
    runs = [subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                           text=True, timeout=60,
                           env={**clean, "CRONRADAR_DATA_DIR": str(tmp_path), **extra})
            for extra in ({}, {"CRONRADAR_SIGNUP": " Closed "},
                          {"CRONRADAR_SIGNUP": "Domain:Example.com"})]
    assert [r.stdout.strip() for r in runs] == ["'closed'", "'closed'", "'domain:example.com'"]


@pytest.mark.parametrize(("value", "message"), [
    ("https://hc-ping.com", ": a host name, like hc-ping.com (no scheme, port or path)"),
    ("hc-ping.com:443", ": a host name, like hc-ping.com (no scheme, port or path)"),
    ("cronradar.example.com", " is the host of CRONRADAR_BASE_URL: it answers only pings, so "
                              "give it a name of its own"),
])
def test_a_bad_ping_host_stops_the_start_with_one_line(value, message, tmp_path):
    done = check(CRONRADAR_DATA_DIR=str(tmp_path), CRONRADAR_PING_HOST=value,
                 CRONRADAR_BASE_URL="https://cronradar.example.com")
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        f"configuration error: CRONRADAR_PING_HOST={value!r}{message}")


@pytest.mark.parametrize("value", ["notaurl", "hc-ping.com/abc", "ftp://example.com/x", "https://"])
def test_a_bad_watchdog_url_stops_the_start_with_one_line(value, tmp_path):
    done = check(CRONRADAR_DATA_DIR=str(tmp_path), CRONRADAR_WATCHDOG_URL=value)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == (
        f"configuration error: CRONRADAR_WATCHDOG_URL={value!r}: use an http:// or https:// "
        "ping URL, like https://hc-ping.com/<uuid> (empty: off)")
    assert check(CRONRADAR_DATA_DIR=str(tmp_path),
                 CRONRADAR_WATCHDOG_URL="https://hc-ping.com/x?rid=1").returncode == 0


def read_settings(expression: str, **env) -> str:
    """``expression`` (of ``s``, the settings) printed by a child process with ``env``."""
    code = ("import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', "
            f"'cronradar.settings'); django.setup(); from django.conf import settings as s; "
            f"print({expression})")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CRONRADAR_", "DATABASE"))}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={**clean, **env})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_postgresql_connections_give_up_after_5_s_unless_the_url_says(tmp_path):
    timeout = "s.DATABASES['default']['OPTIONS']['connect_timeout']"
    url = "postgres://u:p@127.0.0.1:5432/cronradar"
    assert read_settings(timeout, CRONRADAR_DATA_DIR=str(tmp_path), DATABASE_URL=url) == "5"
    assert read_settings(timeout, CRONRADAR_DATA_DIR=str(tmp_path),
                         DATABASE_URL=url + "?connect_timeout=2") == "2"


def test_the_ready_timeout_is_1_s_and_0_or_more(tmp_path):
    assert read_settings("s.CRONRADAR_READY_TIMEOUT", CRONRADAR_DATA_DIR=str(tmp_path)) == "1.0"
    done = check(CRONRADAR_DATA_DIR=str(tmp_path), CRONRADAR_READY_TIMEOUT="-1")
    assert done.stderr.strip().splitlines()[-1] == (
        "configuration error: CRONRADAR_READY_TIMEOUT=-1.0: use 0 or more")


def _deploy_check(tmp_path, **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CRONRADAR_", "DATABASE", "SECRET_KEY", "ALLOWED_HOSTS"))}
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={**clean, "CRONRADAR_DATA_DIR": str(tmp_path), "CRONRADAR_ENV": "production",
             "SECRET_KEY": "k3y-" + "x7Qp" * 16, "ALLOWED_HOSTS": "cron.example.com", **env})


def test_check_deploy_is_clean_with_an_https_base_url(tmp_path):
    done = _deploy_check(tmp_path, CRONRADAR_BASE_URL="https://cron.example.com")
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line for line in done.stderr.splitlines() if "(security." in line] == []
    assert "2 silenced" in done.stdout + done.stderr  # W005, W021: opt-in, off


def test_check_deploy_over_plain_http_says_what_is_missing(tmp_path):
    done = _deploy_check(tmp_path, CRONRADAR_BASE_URL="http://cron.example.com")
    assert {"security.W004", "security.W008"} <= set(
        line.partition("(")[2].partition(")")[0] for line in done.stderr.splitlines())


@pytest.mark.django_db
@pytest.mark.parametrize(("env", "expected"), [
    ({"CRONRADAR_BASE_URL": "https://cron.example.com"},
     (31536000, False, False, True, True, ["security.W005", "security.W021"])),
    ({"CRONRADAR_BASE_URL": "https://cron.example.com", "CRONRADAR_HSTS_PRELOAD": "true",
      "CRONRADAR_HSTS_INCLUDE_SUBDOMAINS": "true"}, (31536000, True, True, True, True, [])),
    ({"CRONRADAR_BASE_URL": "https://cron.example.com", "CRONRADAR_SSL_REDIRECT": "false"},
     (31536000, False, False, False, True, ["security.W005", "security.W021"])),
    ({"CRONRADAR_BASE_URL": "http://127.0.0.1:8000"}, (0, False, False, False, False, [])),
])
def test_an_https_base_url_turns_on_hsts_the_redirect_and_secure_cookies(env, expected):
    import importlib
    from unittest import mock

    with mock.patch.dict(os.environ, env):
        import cronradar.settings as module

        fresh = importlib.reload(module)
        values = (getattr(fresh, "SECURE_HSTS_SECONDS", 0),
                  getattr(fresh, "SECURE_HSTS_INCLUDE_SUBDOMAINS", False),
                  getattr(fresh, "SECURE_HSTS_PRELOAD", False), fresh.SECURE_SSL_REDIRECT,
                  fresh.SESSION_COOKIE_SECURE, getattr(fresh, "SILENCED_SYSTEM_CHECKS", []))
    importlib.reload(module)
    assert values == expected


@pytest.mark.django_db
def test_plain_http_is_redirected_except_pings_and_https_gets_hsts(settings, make_monitor):
    from django.test import Client

    settings.SECURE_SSL_REDIRECT, settings.SECURE_HSTS_SECONDS = True, 31536000
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    browser = Client()
    away = browser.get("/login/")
    assert (away.status_code, away["Location"]) == (301, "https://testserver/login/")
    m = make_monitor()
    assert browser.post(f"/ping/{m.uuid}", b"", content_type="text/plain").status_code == 200
    secure = browser.get("/login/", HTTP_X_FORWARDED_PROTO="https")
    assert (secure.status_code, secure["Strict-Transport-Security"]) == (200, "max-age=31536000")
