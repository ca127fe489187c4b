"""alerts.integrations.email: the exact message, and no header injection."""
import pytest
from django.core import mail

from alerts.delivery import transmit
from alerts.integrations import email
from tests.alerts.integrations.conftest import (
    BROKEN_FACTS,
    BROKEN_PAGE,
    FACTS,
    FAILING_TEXT,
    FAILING_TITLE,
    OUTAGE_TEXT,
    TEST_TEXT,
    ack_link,
    channel,
    channel_page,
    page_links,
)

pytestmark = pytest.mark.django_db


def test_email_message_exactly(project, event):
    message = email.build_request(channel(project, "email", to=["ops@example.com"]), event)
    links = page_links(event.incident)
    assert message.text == "\n".join([
        "Nightly backup: run failed (exit status 2)", "",
        *(f"{k}: {v}" for k, v in FACTS), "", "Last ping body:", "disk full", "",
        *(f"{label}: {url}" for label, url in links)])
    assert message.html == "".join([
        "<p>Nightly backup: run failed (exit status 2)</p><table>",
        *(f"<tr><th align=left>{k}</th><td>{v}</td></tr>" for k, v in FACTS),
        "</table><pre>disk full</pre><p>",
        " · ".join(f'<a href="{url.replace("&", "&amp;")}">{label}</a>'
                   for label, url in links), "</p>"])


def test_email_message(project, event):
    ch = channel(project, "email", to=["ops@example.com"])
    message = email.build_request(ch, event)
    assert message.to == ("ops@example.com",)
    assert message.subject == "[ERROR] Incident opened: Nightly backup"
    assert message.text.splitlines()[:3] == ["Nightly backup: run failed (exit status 2)", "",
                                             "Monitor: Nightly backup (acme/nightly-backup)"]
    assert f"Acknowledge: {ack_link(event)}" in message.text
    assert "<pre>disk full</pre>" in message.html
    event.incident.monitor.name = "evil\r\nBcc: victim@example.com"
    assert "\n" not in email.build_request(ch, event).subject  # never a header injection
    assert transmit(message) == (250, "", False, None)
    [sent] = mail.outbox
    assert (sent.subject, sent.to, sent.alternatives[0].mimetype) == (
        "[ERROR] Incident opened: Nightly backup", ["ops@example.com"], "text/html")


def test_email_test_notification(test_notice):
    ch, notice = test_notice("email", to=["ops@example.com"])
    message = email.build_notice(ch, notice)
    assert (message.to, message.subject, message.text, message.html) == (
        ("ops@example.com",), "[TEST] CronRadar test notification",
        f"{TEST_TEXT}\n\nChannel: {channel_page(ch)}",
        f'<p>{TEST_TEXT}</p><p><a href="{channel_page(ch)}">Channel</a></p>')


def test_email_outage_summary(project, outage_notice):
    message = email.build_notice(channel(project, "email", to=["ops@example.com"]),
                                 outage_notice)
    assert (message.subject, message.text, message.html) == (
        "[INFO] CronRadar was unreachable", OUTAGE_TEXT, f"<p>{OUTAGE_TEXT}</p>")


def test_email_channel_notice(project, failing):
    message = email.build_notice(channel(project, "email", to=["ops@example.com"]), failing)
    assert (message.to, message.subject) == (("ops@example.com",), f"[INFO] {FAILING_TITLE}")
    assert message.text == "\n".join([FAILING_TEXT, "", *(f"{k}: {v}" for k, v in BROKEN_FACTS),
                                      "", f"Channel: {BROKEN_PAGE}"])
    assert message.html == (f"<p>{FAILING_TEXT}</p><table>" + "".join(
        f"<tr><th align=left>{k}</th><td>{v}</td></tr>" for k, v in BROKEN_FACTS) +
        f'</table><p><a href="{BROKEN_PAGE}">Channel</a></p>')
