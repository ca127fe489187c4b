"""alerts.integrations.email: the exact message, and no header injection."""
import pytest
from django.core import mail

from alerts.delivery import transmit
from alerts.integrations import email
from tests.alerts.integrations.conftest import (
    BROKEN_FACTS,
    FAILING_TEXT,
    FAILING_TITLE,
    ack_link,
    channel,
)

pytestmark = pytest.mark.django_db


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


def test_email_channel_notice(project, failing):
    message = email.build_notice(channel(project, "email", to=["ops@example.com"]), failing)
    assert (message.to, message.subject) == (("ops@example.com",), f"[INFO] {FAILING_TITLE}")
    assert message.text == "\n".join([FAILING_TEXT, "", *(f"{k}: {v}" for k, v in BROKEN_FACTS)])
    assert message.html == (f"<p>{FAILING_TEXT}</p><table>" + "".join(
        f"<tr><th align=left>{k}</th><td>{v}</td></tr>" for k, v in BROKEN_FACTS) + "</table>")
