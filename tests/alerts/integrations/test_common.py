"""alerts.integrations.common: event kinds that do not notify are refused by every
kind, and every kind tells the newer causes."""
import html
from urllib.parse import parse_qs

import pytest

from alerts.integrations import KINDS
from alerts.models import IncidentEvent
from tests.alerts.integrations.conftest import OPENED, SECRET, channel

NOTIFYING = {  # kind -> a valid config
    "webhook": {"url": "https://x.test/hook", "secret": SECRET},
    "slack": {"url": "https://hooks.slack.com/services/T/B/X"},
    "pagerduty": {"routing_key": "R" * 32},
    "email": {"to": ["ops@example.com"]},
    "teams": {"url": "https://x.test/teams"},
    "discord": {"url": "https://discord.com/api/webhooks/1/x"},
    "opsgenie": {"api_key": "k", "region": "eu"},
    "ntfy": {"url": "https://ntfy.sh/backups"},
    "telegram": {"bot_token": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw",
                 "chat_id": "-1001234567890"},
    "googlechat": {"url": "https://chat.googleapis.com/v1/spaces/A/messages?key=k&token=t"},
    "mattermost": {"url": "https://mattermost.example.com/hooks/xq9b3k7rjpgmtfz1"},
    "pushover": {"token": "a" * 30, "user": "u" * 30},
    "matrix": {"homeserver": "https://matrix.example.org", "room_id": "!room:example.org",
               "access_token": "syt_token"},
}


def test_notifying_has_every_kind():
    assert set(NOTIFYING) == set(KINDS)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(NOTIFYING))
def test_non_notifying_event_kinds_are_refused(project, incident, kind):
    event = IncidentEvent.objects.create(incident=incident, kind="missed", at=OPENED)
    ch = channel(project, kind, **NOTIFYING[kind])
    with pytest.raises(ValueError, match="event kind 'missed' does not notify"):
        KINDS[kind].build_request(ch, event)


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(NOTIFYING))
@pytest.mark.parametrize("cause,summary", [
    ("skipped", "Nightly backup: the 13:00 run was skipped: the run that started at 12:00:01 "
                "was still running (Europe/Berlin time)"),
    ("double_launch", "Nightly backup: run 2 of the 13:00 slot started although the slot's "
                      "run succeeded at 13:00:04 (Europe/Berlin time)")])
def test_every_kind_tells_the_new_causes_with_their_summary(project, monitor, kind, cause,
                                                           summary):
    from alerts.integrations import common
    from alerts.models import Incident

    incident = Incident.objects.create(monitor=monitor, cause=cause, summary=summary,
                                       severity="warning", opened_at=OPENED)
    event = IncidentEvent.objects.create(incident=incident, kind="opened", at=OPENED,
                                         message=summary.split(": ", 1)[1])
    assert common.describe(event) == ("Incident opened: Nightly backup", summary)
    assert common.facts(event)[1:3] == [("Cause", cause), ("Severity", "warning")]
    built = KINDS[kind].build_request(channel(project, kind, **NOTIFYING[kind]), event)
    assert summary in shown(kind, built)


def shown(kind, built) -> str:
    """The text a kind's built notification carries: an email's plain part,
    Pushover's ``message`` field as its HTML reads, else the body."""
    if kind == "email":
        return built.text
    if kind == "pushover":
        return html.unescape(parse_qs(built.body.decode())["message"][0])
    return built.body.decode()
