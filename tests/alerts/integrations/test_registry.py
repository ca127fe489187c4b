"""The integrations registry (alerts/integrations/__init__.py, KINDS): every channel
kind is there, each checks its config, and what each builds is what a local HTTP
server receives."""
import pytest

from alerts.delivery import transmit
from alerts.integrations import KINDS, opsgenie, pagerduty, slack, webhook
from alerts.models import Channel
from tests.alerts.integrations.conftest import OPENED, channel
from tests.live import Receiver

TG_TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"


def test_registry_maps_every_channel_kind():
    assert {"webhook", "slack", "pagerduty", "email", "teams", "discord", "opsgenie",
            "ntfy", "telegram", "googlechat", "mattermost"} <= set(KINDS)
    assert (KINDS["webhook"], KINDS["slack"], KINDS["pagerduty"]) == (webhook, slack, pagerduty)
    # the new kinds (telegram, googlechat, mattermost, pushover, matrix) are being
    # added: each engineer adds theirs here; once all are in this is an equality again
    assert set(KINDS) <= set(Channel.Kind.values)


@pytest.mark.django_db
@pytest.mark.parametrize("kind,config,message", [
    ("email", {"to": []}, "to: a list of 1 to 20 email addresses is required"),
    ("email", {"to": ["not an address"]}, "to: 'not an address' is not an email address"),
    ("opsgenie", {"api_key": "k", "region": "mars"}, "region: must be us or eu"),
    ("opsgenie", {}, "api_key: a string of at most 200 characters is required"),
    ("ntfy", {"url": "https://ntfy.sh/"}, "url: must name one topic"),
    ("discord", {"url": "http://discord.com/x"}, "url: must be an https URL"),
    ("teams", {}, "url: this field is required"),
    ("telegram", {"bot_token": "123:abc", "chat_id": "1"}, "bot_token: must be a bot token"),
    ("telegram", {"bot_token": TG_TOKEN, "chat_id": "ops"}, "chat_id: must be an integer"),
    ("googlechat", {"url": "https://chat.googleapis.com/v1/spaces/A/messages"},
     "url: must be a Google Chat webhook URL"),
    ("mattermost", {"url": "https://mm.example.com/x"}, "url: must be an incoming-webhook URL"),
])
def test_configs_are_checked(kind, config, message):
    from alerts.integrations import KINDS

    with pytest.raises(ValueError) as exc:
        KINDS[kind].validate_config(config)
    assert str(exc.value).startswith(message)


LOCAL = {  # kind -> (config, where the receiver sees the request), receiver at {r}
    "webhook": ({"url": "{r}/hook", "secret": "k"}, "/hook"),
    "slack": ({"url": "{r}/services/T/B/X"}, "/services/T/B/X"),
    "pagerduty": ({"routing_key": "R" * 32, "events_url": "{r}/v2/enqueue"}, "/v2/enqueue"),
    "opsgenie": ({"api_key": "k", "region": "us"}, "/v2/alerts"),
    "teams": ({"url": "{r}/topic"}, "/topic"),
    "discord": ({"url": "{r}/topic"}, "/topic?wait=true"),
    "ntfy": ({"url": "{r}/topic"}, "/"),
    "telegram": ({"bot_token": TG_TOKEN, "chat_id": "-100123", "api_url": "{r}"},
                 f"/bot{TG_TOKEN}/sendMessage"),
    "googlechat": ({"url": "{r}/v1/spaces/AAA/messages?key=k&token=t"},
                   "/v1/spaces/AAA/messages?key=k&token=t"
                   "&messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD"),
    "mattermost": ({"url": "{r}/hooks/abc"}, "/hooks/abc"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(LOCAL))
def test_a_local_server_receives_exactly_the_built_request(project, event, kind, monkeypatch):
    """Every HTTP integration's request, sent for real: the receiver gets the exact
    body and headers that were built (the payloads themselves are asserted in
    each kind's test_<kind>.py)."""
    from alerts.integrations import KINDS

    receiver = Receiver()
    try:
        monkeypatch.setitem(opsgenie.HOSTS, "us", receiver.url)
        config, path = LOCAL[kind]
        ch = channel(project, kind, **{k: v.replace("{r}", receiver.url)
                                       for k, v in config.items()})
        req = KINDS[kind].build_request(ch, event)
        assert transmit(req)[0] == 200
        [got] = receiver.requests
        assert (got.path, got.body) == (path, req.body)
        for name, value in req.headers.items():
            assert got.headers[name] == value
    finally:
        receiver.close()


TESTED = {  # kind -> (config, where the receiver sees the test notification)
    "telegram": ({"bot_token": TG_TOKEN, "chat_id": "@ops_room", "api_url": "{r}"},
                 f"/bot{TG_TOKEN}/sendMessage"),
    "googlechat": ({"url": "{r}/v1/spaces/AAA/messages?key=k&token=t"},
                   "/v1/spaces/AAA/messages?key=k&token=t"),
    "mattermost": ({"url": "{r}/hooks/abc"}, "/hooks/abc"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("kind", sorted(TESTED))
def test_the_test_notification_reaches_a_local_receiver(project, kind):
    """``alerts.channels.send_test`` for the newer kinds: through the real transport
    to a local server, which gets the kind's ``test`` notice (its title in it)."""
    from alerts.channels import send_test
    from alerts.integrations import KINDS

    receiver = Receiver()
    try:
        config, path = TESTED[kind]
        ch = channel(project, kind, **KINDS[kind].validate_config(
            {k: v.replace("{r}", receiver.url) for k, v in config.items()}))
        assert send_test(ch, OPENED) == (200, "")
        [got] = receiver.requests
        assert got.path == path
        assert "CronRadar test notification" in got.body.decode()
    finally:
        receiver.close()
