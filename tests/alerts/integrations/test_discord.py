"""alerts.integrations.discord: the exact message and Discord's limits."""
import json

import pytest

from alerts.integrations import discord
from monitors.models import Ping
from tests.alerts.integrations.conftest import (
    BROKEN_FACTS,
    BROKEN_PAGE,
    FACTS,
    OPENED,
    OUTAGE_TEXT,
    RECOVERED_TEXT,
    TEST_TEXT,
    channel,
    channel_page,
    page_links,
)

pytestmark = pytest.mark.django_db


def test_discord_message_exactly(project, event):
    req = discord.build_request(channel(project, "discord",
                                        url="https://discord.com/api/webhooks/1/abc"), event)
    links = " · ".join(f"[{label}]({url})" for label, url in page_links(event.incident))
    assert json.loads(req.body) == {
        "content": "Incident opened: Nightly backup", "allowed_mentions": {"parse": []},
        "embeds": [{
            "title": "Incident opened: Nightly backup", "color": 0xE8590C,
            "description": ("Nightly backup: run failed (exit status 2)\n\n"
                            "**Last ping body**\n```\ndisk full\n```\n\n" + links),
            "fields": [{"name": k, "value": v, "inline": True} for k, v in FACTS],
            "footer": {"text": "CronRadar"}}]}


def test_discord_carries_the_tail_of_a_long_body_and_cuts_the_text_first(project, event):
    Ping.objects.create(monitor=event.incident.monitor, received_at=OPENED, kind="log",
                        method="POST", body=b"a" * 1000 + b"the end")
    event.incident.summary = "s" * 5000
    embed = json.loads(discord.build_request(channel(project, "discord", url="https://d.test/w"),
                                             event).body)["embeds"][0]
    text, rest = embed["description"].split("\n\n**Last ping body**\n```\n")
    assert rest.startswith("…" + ("a" * 1000 + "the end")[-499:] + "\n```\n\n[Acknowledge](")
    assert text.startswith("sss") and text.endswith("s…") and len(embed["description"]) == 4096


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
    assert [(f["name"], f["value"]) for f in embed["fields"]] == FACTS
    event.incident.monitor.name = "n" * 3000
    big = json.loads(discord.build_request(channel(project, "discord", url="https://d.test/w"),
                                           event).body)
    assert len(big["content"]) == 2000 and len(big["embeds"][0]["title"]) == 256
    embed = big["embeds"][0]
    assert len(embed["title"]) + len(embed["description"]) + sum(
        len(f["name"]) + len(f["value"]) for f in embed["fields"]) + len("CronRadar") <= 6000


def test_discord_test_notification(test_notice):
    ch, notice = test_notice("discord", url="https://d.test/w")
    assert json.loads(discord.build_notice(ch, notice).body) == {
        "content": "CronRadar test notification", "allowed_mentions": {"parse": []},
        "embeds": [{"title": "CronRadar test notification", "color": 0x2E7D32,
                    "description": f"{TEST_TEXT}\n\n[Channel]({channel_page(ch)})",
                    "fields": [], "footer": {"text": "CronRadar"}}]}


def test_discord_outage_summary(project, outage_notice):
    assert json.loads(discord.build_notice(channel(project, "discord", url="https://d.test/w"),
                                           outage_notice).body)["embeds"] == [{
        "title": "CronRadar was unreachable", "description": OUTAGE_TEXT, "color": 0x4A90D9,
        "fields": [], "footer": {"text": "CronRadar"}}]


def test_discord_channel_notice(project, recovered):
    req = discord.build_notice(channel(project, "discord", url="https://discord.test/api/w"),
                               recovered)
    assert json.loads(req.body) == {
        "content": "Channel recovered: Ops hook", "allowed_mentions": {"parse": []},
        "embeds": [{"title": "Channel recovered: Ops hook",
                    "description": f"{RECOVERED_TEXT}\n\n[Channel]({BROKEN_PAGE})",
                    "color": discord.RESOLVED_COLOUR, "footer": {"text": "CronRadar"},
                    "fields": [{"name": k, "value": v, "inline": True}
                               for k, v in BROKEN_FACTS]}]}
