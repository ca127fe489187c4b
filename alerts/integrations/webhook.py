"""Generic signed JSON webhook (CronRadar's own format).

Channel config: ``{"url": "http(s)://...", "secret": "<hex>"}`` (a new channel's
secret: 32 random bytes, hex).

Request: ``POST <url>`` with headers

- ``Content-Type: application/json``
- ``User-Agent: CronRadar/0.1``
- ``X-CronRadar-Event: incident.opened`` | ``incident.resolved`` |
  ``incident.channel_removed`` | ``outage.summary`` | ``test`` |
  ``channel.failing`` | ``channel.recovered``
- ``X-CronRadar-Signature: sha256=<hex>``: HMAC-SHA256 of the raw request body
  bytes keyed with the channel secret (UTF-8). Verify it on the bytes you
  received, before parsing, with a constant-time comparison.
- Standard Webhooks (github.com/standard-webhooks): ``webhook-id`` (the
  ``event_id``, as a string: the receiver's idempotency key),
  ``webhook-timestamp`` (Unix seconds when this attempt started) and
  ``webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">``,
  keyed with the secret's UTF-8 bytes (the channel's ``signing_secret``,
  ``whsec_`` + base64 of them, is that key in the standard's form). Timestamp and
  signature are made for each attempt, so a retry is never stale; receivers
  reject timestamps more than 5 minutes old (docs/examples/verify_webhook.*).

Body (schema ``cronradar.incident.v1``; compact JSON, keys sorted, UTF-8)::

    {
      "schema": "cronradar.incident.v1",
      "event": "incident.opened",           // or "incident.resolved", "incident.channel_removed"
      "event_id": 42,                       // unique per event; retries repeat it
      "occurred_at": "2025-01-01T12:00:05Z",
      "incident": {
        "id": 7,
        "cause": "missed",                  // missed|stuck|deadline|failed|overlap|too_fast|slow
                                            // |skipped|double_launch
        "summary": "Nightly backup: no ping within 60s + 5s grace",
        "opened_at": "2025-01-01T12:00:05Z",
        "resolved_at": null,                // ISO-8601 once resolved
        "resolution": "",                   // why it resolved ("" while open)
        "missed_count": 1,
        "failure_count": 0,
        "dedup_key": "1d1f4c1e-..."         // stable for the incident's lifetime
      },
      "monitor": {
        "id": 3,
        "uuid": "5a6b...",
        "name": "Nightly backup",
        "slug": "nightly-backup",
        "project": "acme",                  // project name
        "tags": ["db", "prod"]
      }
    }

``incident.channel_removed``: this channel no longer follows the monitor while
the incident is open; close whatever ``incident.opened`` made (the incident's
own ``incident.resolved`` will not come here).

``outage.summary`` (schema ``cronradar.outage.v2``): CronRadar's ping endpoint
was unreachable; slots of the project whose grace ended then were recorded
``unknown`` instead of alerting one by one::

    {"schema": "cronradar.outage.v2", "event": "outage.summary",
     "event_id": 43,                       // an integer, from the same sequence as every event
     "occurred_at": "...",                 // when the summary was made
     "outage": {"started_at": "...", "ended_at": "...", "unknown_slots": 7},
     "project": "acme"}

``test`` (schema ``cronradar.test.v1``, header ``X-CronRadar-Event: test``): a
test notification sent from the channel's page or the API; ``incident`` is null::

    {"schema": "cronradar.test.v1", "event": "test", "event_id": 44,
     "occurred_at": "...", "incident": null, "message": "This is a test ...",
     "channel": {"id": 5, "name": "ops hook", "kind": "webhook"}, "project": "acme",
     "links": {"channel_page": "https://cron.example.com/channels/5/"}}

``channel.failing`` / ``channel.recovered`` (schema ``cronradar.channel.v1``):
another channel of the project keeps failing, or delivers again
(``alerts.health``)::

    {"schema": "cronradar.channel.v1", "event": "channel.failing",  // or "channel.recovered"
     "event_id": 43,                       // from the same sequence as incident events
     "occurred_at": "...",                 // when it was announced
     "channel": {"id": 5, "name": "Ops hook", "kind": "webhook",
                 "failing_since": "...",   // the first failed attempt of this failure
                 "last_error": "HTTP 500",
                 "held": 3},               // its notifications pending or being sent
     "project": "acme",
     "links": {"channel_page": "https://cron.example.com/channels/5/"}}  // its dashboard page

Timestamps are ISO-8601 UTC with a ``Z`` suffix. ``incident`` is the incident
as it is when the request is built, so a late-delivered ``incident.opened`` may
already carry ``resolved_at``. Fields may be added within ``v1``; removing or
changing one bumps the schema version. A receiver should dedupe on ``event_id``.
"""
from __future__ import annotations

import base64
import hashlib
import hmac

from alerts.integrations import common
from alerts.models import Channel, IncidentEvent

SCHEMA = "cronradar.incident.v1"
OUTAGE_SCHEMA = "cronradar.outage.v2"
TEST_SCHEMA = "cronradar.test.v1"
CHANNEL_SCHEMA = "cronradar.channel.v1"


def build_request(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The signed ``cronradar.incident.v1`` POST for ``event`` (see module docstring).

    Raises ``ValueError`` for an event kind that does not notify, ``KeyError`` if
    the channel config lacks ``url`` or ``secret``.
    """
    common.check_notifiable(event)
    incident = event.incident
    monitor = incident.monitor
    name = f"incident.{event.kind}"
    body = common.encode_json({
        "schema": SCHEMA,
        "event": name,
        "event_id": event.pk,
        "occurred_at": common.isoformat(event.at),
        "incident": {
            "id": incident.pk,
            "cause": incident.cause,
            "summary": incident.summary,
            "opened_at": common.isoformat(incident.opened_at),
            "resolved_at": common.isoformat(incident.resolved_at),
            "resolution": incident.resolution,
            "missed_count": incident.missed_count,
            "failure_count": incident.failure_count,
            "dedup_key": str(incident.dedup_key),
            "severity": incident.severity,
            "acknowledged_at": common.isoformat(incident.acknowledged_at),
            "acknowledged_by": incident.acknowledged_by,
        },
        "message": event.message,
        "context": common.context(incident),
        "monitor": {
            "id": monitor.pk,
            "uuid": str(monitor.uuid),
            "name": monitor.name,
            "slug": monitor.slug,
            "project": monitor.project.name,
            "tags": monitor.tags,
        },
    })
    return _signed(channel, name, event.pk, body)


def build_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The signed POST of a notice of no incident (module docstring):
    ``outage.summary`` (schema ``cronradar.outage.v2``) or ``test`` (schema
    ``cronradar.test.v1``). Raises ``ValueError`` for another kind.
    ``channel.failing`` / ``channel.recovered``: :func:`_channel_notice`."""
    if event.kind in common.CHANNEL_TITLES:
        return _channel_notice(channel, event)
    if event.kind == "outage.summary":
        d = event.detail
        document = {
            "schema": OUTAGE_SCHEMA,
            "event": "outage.summary",
            "event_id": event.pk,
            "occurred_at": common.isoformat(event.at),
            "outage": {"started_at": d["started_at"], "ended_at": d["ended_at"],
                       "unknown_slots": d["unknown_slots"]},
            "project": event.project.name,
        }
    elif event.kind == "test":
        document = {
            "schema": TEST_SCHEMA,
            "event": "test",
            "event_id": event.pk,
            "occurred_at": common.isoformat(event.at),
            "incident": None,
            "message": common.testing_text(channel),
            "channel": {"id": channel.pk, "name": channel.name, "kind": channel.kind},
            "project": event.project.name,
            "links": {"channel_page": common.channel_page(channel)},
        }
    else:
        raise common.unknown_notice(event)
    return _signed(channel, event.kind, event.pk, common.encode_json(document))


def _channel_notice(channel: Channel, event: IncidentEvent) -> common.OutgoingRequest:
    """The signed POST of a ``channel.failing`` / ``channel.recovered`` notice
    (schema ``cronradar.channel.v1``, module docstring)."""
    body = common.encode_json({
        "schema": CHANNEL_SCHEMA,
        "event": event.kind,
        "event_id": event.pk,
        "occurred_at": common.isoformat(event.at),
        "channel": common.channel_facts(event),
        "project": event.project.name,
        "links": {"channel_page": common.broken_channel_page(event)},
    })
    return _signed(channel, event.kind, event.pk, body)


def _signed(channel: Channel, name: str, event_id: int, body: bytes
            ) -> common.OutgoingRequest:
    """The POST of ``body``, signed both ways: ``X-CronRadar-Signature`` now, the
    Standard Webhooks headers (``webhook-id`` now, timestamp and signature when
    each attempt starts: :meth:`~alerts.integrations.common.OutgoingRequest.stamped`)."""
    url, secret = channel.config["url"], channel.config["secret"]
    return common.OutgoingRequest(
        url=url,
        body=body,
        headers={
            "Content-Type": "application/json",
            "User-Agent": common.USER_AGENT,
            "X-CronRadar-Event": name,
            "X-CronRadar-Signature": "sha256=" + sign(secret, body),
            "webhook-id": str(event_id),
        },
        signing_key=secret.encode(),
    )


def sign(secret: str, body: bytes) -> str:
    """Hex HMAC-SHA256 of ``body`` keyed with ``secret`` (UTF-8)."""
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signing_secret(secret: str) -> str:
    """The Standard Webhooks form of a channel ``secret``: ``whsec_`` and the
    base64 of its UTF-8 bytes (the key of both signatures)."""
    return "whsec_" + base64.b64encode(secret.encode()).decode()


def shown_config(config: dict) -> dict:
    """``config`` as the API shows it: with the read-only ``signing_secret``."""
    if "secret" not in config:
        return config
    return {**config, "signing_secret": signing_secret(config["secret"])}


HELP = ("Any HTTP endpoint of yours that accepts a POST; verify the signatures as "
        "https://github.com/standard-webhooks/standard-webhooks describes (examples in "
        "CronRadar's docs/integrations.md).")
CONFIG_SCHEMA = {"type": "object", "title": "webhook", "required": ["url"],
                 "additionalProperties": False, "properties": {
                     "url": {"type": "string", "format": "uri",
                             "description": "URL the JSON is POSTed to (http or https)"},
                     "secret": {"type": "string", "format": "password", "description":
                                "signing secret, the HMAC key of both signatures (left "
                                "out: 32 random bytes, hex)"},
                     "signing_secret": {"type": "string", "readOnly": True, "description":
                                        "the secret in Standard Webhooks' form: whsec_ and "
                                        "base64 of its UTF-8 bytes (ignored when sent)"}}}


def validate_config(config: dict, previous: dict | None = None) -> dict:
    """``{"url", "secret"?}`` -> ``{"url", "secret"}``; a ``signing_secret`` sent
    back (read-only, from :func:`shown_config`) is ignored.

    A missing secret is kept from ``previous`` (the stored config, on a change),
    or generated for a new channel. Raises ``ValueError("<field>: <message>")``.
    """
    if isinstance(config, dict):
        config = {k: v for k, v in config.items() if k != "signing_secret"}
    common.check_fields(config, {"url", "secret"})
    url = common.validate_url(config, "url")
    secret = config.get("secret")
    if secret is None:
        secret = (previous or {}).get("secret") or Channel.new_secret()
    elif not isinstance(secret, str) or not secret or len(secret) > 256:
        raise ValueError("secret: must be a string of 1 to 256 characters")
    return {"url": url, "secret": secret}
