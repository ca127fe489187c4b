"""alerts.integrations.discord: the exact message and Discord's limits."""
import json

import pytest

from alerts.integrations import discord
from tests.alerts.integrations.conftest import (
    BROKEN_FACTS,
    FACTS,
    RECOVERED_TEXT,
    ack_link,
    channel,
)

pytestmark = pytest.mark.django_db


def test_discord_message_and_limits(project, event):
    req = discord.build_request(channel(project, "discord",
                                        url="https://discord.com/api/webhooks/1/abc"), event)
    assert req.url == "https://discord.com/api/webhooks/1/abc?wait=true"
    threaded = discord.build_request(channel(
        project, "discord", url="https://discord.com/api/webhooks/1/abc?thread_id=7&wait=false"),
        event)
    assert threaded.url == "https://discord.com/api/webhooks/1/abc?thread_id=7&wait=true"
    body = json.loads(req.body)
    assert body["content"] == "Incident opened: Nightly backup"
    assert body["allowed_mentions"] == {"parse": []}
    [embed] = body["embeds"]
    assert (embed["title"], embed["color"]) == ("Incident opened: Nightly backup", 0xE8590C)
    assert embed["description"].startswith("Nightly backup: run failed (exit status 2)\n\n"
                                           f"[Acknowledge]({ack_link(event)})")
    assert [(f["name"], f["value"]) for f in embed["fields"]] == FACTS
    event.incident.monitor.name = "n" * 3000
    big = json.loads(discord.build_request(channel(project, "discord", url="https://d.test/w"),
                                           event).body)
    assert len(big["content"]) == 2000 and len(big["embeds"][0]["title"]) == 256
    embed = big["embeds"][0]
    assert len(embed["title"]) + len(embed["description"]) + sum(
        len(f["name"]) + len(f["value"]) for f in embed["fields"]) + len("CronRadar") <= 6000


def test_discord_channel_notice(project, recovered):
    req = discord.build_notice(channel(project, "discord", url="https://discord.test/api/w"),
                               recovered)
    assert json.loads(req.body) == {
        "content": "Channel recovered: Ops hook", "allowed_mentions": {"parse": []},
        "embeds": [{"title": "Channel recovered: Ops hook", "description": RECOVERED_TEXT,
                    "color": discord.RESOLVED_COLOUR, "footer": {"text": "CronRadar"},
                    "fields": [{"name": k, "value": v, "inline": True}
                               for k, v in BROKEN_FACTS]}]}
