"""cronradar_sdk.django: a management command decorated with @monitored reports
each run (pings recorded; and against a live `manage.py serve`), with settings
from the arguments, the Django settings or the environment."""
import pytest
from cronradar_sdk import django as crd
from cronradar_sdk import pings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from tests.live import Service


class NightlyReport(BaseCommand):
    def add_arguments(self, parser):
        parser.add_argument("--fail", action="store_true")

    def handle(self, *args, **options):
        if options["fail"]:
            raise CommandError("no rows")
        self.stdout.write("done")
        return "report"


MODULE = NightlyReport.__module__ = "shop.management.commands.nightly_report"


@pytest.fixture
def sent(monkeypatch):
    calls = []

    def send(settings, slug, state, rid=None, slot=None, body=b"", params=None):
        calls.append((settings.url, settings.ping_key, slug, state, rid, body.decode()))
        return True

    monkeypatch.setattr(pings, "send", send)
    return calls


def test_the_slug_is_the_commands_name():
    assert crd.command_slug(NightlyReport) == "nightly_report"


def test_each_run_of_the_command_is_a_start_and_its_end(sent, settings, monkeypatch):
    settings.CRONRADAR_URL = "http://cronradar.test"
    monkeypatch.setenv("CRONRADAR_PING_KEY", "envkey")
    monkeypatch.setattr("cronradar_sdk.runs._clock", iter([10.0, 10.25, 20.0, 20.5]).__next__)
    command = crd.monitored(type("Command", (NightlyReport,), {"__module__": MODULE}))
    call_command(command())
    with pytest.raises(CommandError, match="no rows"):
        call_command(command(), "--fail")
    rids = [c[4] for c in sent]
    assert rids[0] == rids[1] != rids[2] == rids[3]
    assert [c[:4] + c[5:] for c in sent] == [
        ("http://cronradar.test", "envkey", "nightly_report", "start", ""),
        ("http://cronradar.test", "envkey", "nightly_report", "success", "duration: 0.250 s"),
        ("http://cronradar.test", "envkey", "nightly_report", "start", ""),
        ("http://cronradar.test", "envkey", "nightly_report", "fail",
         "django.core.management.base.CommandError: no rows\nduration: 0.500 s"),
    ]


def test_arguments_come_before_the_django_settings(sent, settings):
    settings.CRONRADAR_URL = "http://from-settings.test"
    settings.CRONRADAR_PING_KEY = "settingskey"

    @crd.monitored(slug="report", url="http://given.test")
    class Command(NightlyReport):
        pass

    assert Command().handle(fail=False) == "report"
    assert [c[:4] for c in sent] == [("http://given.test", "settingskey", "report", "start"),
                                     ("http://given.test", "settingskey", "report", "success")]


def test_a_bad_grace_fails_when_the_command_is_defined():
    with pytest.raises(ValueError, match="grace"):
        crd.monitored(grace=0)(NightlyReport)


@pytest.mark.live
def test_a_monitored_command_creates_its_monitor_and_reports_to_a_live_server(tmp_path,
                                                                             settings):
    service = Service(tmp_path)
    try:
        api = service.api
        settings.CRONRADAR_URL = service.url
        settings.CRONRADAR_PING_KEY = api.get("/projects/").json()[0]["ping_key"]

        command = crd.monitored(type("Command", (NightlyReport,), {"__module__": MODULE}),
                                schedule="0 3 * * *", tz="Europe/Berlin", grace=600)
        call_command(command())
        with pytest.raises(CommandError):
            call_command(command(), "--fail")
        m = api.get("/monitors/by-slug/nightly_report/").json()
        assert (m["kind"], m["schedule"], m["timezone"], m["grace"]) == (
            "cron", "0 3 * * *", "Europe/Berlin", 600)
        runs = list(reversed(api.get(f"/monitors/{m['id']}/runs/").json()))
        assert [r["outcome"] for r in runs] == ["succeeded", "failed"]
        assert all(r["started_at"] and r["ended_at"] and r["rid"] for r in runs)
        fail = api.get(f"/monitors/{m['id']}/pings/").json()[0]
        assert fail["kind"] == "fail"
        assert fail["body"].startswith("django.core.management.base.CommandError: no rows\n")
    finally:
        service.stop()
