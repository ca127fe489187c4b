"""Notification integrations: one module per ``Channel.kind``.

Every kind module exposes the same functions:

- ``build_request(channel, event) -> OutgoingRequest | OutgoingEmail``: the HTTP
  POST (or, for ``email``, the message) that
  notifies ``channel`` of ``event`` (an ``IncidentEvent`` of a kind in
  :data:`NOTIFY_EVENT_KINDS`: opened, escalated, renotified, acknowledged,
  resolved, stable, or channel_removed, a resolve for that one channel; any other
  kind raises ``ValueError``). Pure: no I/O besides reading the event's incident,
  monitor and project.
- ``build_notice(channel, event) -> OutgoingRequest | OutgoingEmail``: the
  notification of a notice of no incident (an ``IncidentEvent`` with
  ``incident`` null, see :mod:`alerts.notices`): ``outage.summary`` (slots of the
  channel's project recorded ``unknown`` while CronRadar was unreachable; facts
  in ``event.detail``), ``test`` (the channel's test notification) or
  ``channel.failing`` / ``channel.recovered`` (another channel of the project
  broke or works again: :mod:`alerts.health`; never pages); any other kind
  raises ``ValueError``. Reads ``event.project``.
  PagerDuty and Opsgenie also have ``build_test_close(channel, event)``: what
  closes the alert a ``test`` notice opened.
- ``validate_config(config, previous=None) -> dict``: checks a channel
  ``config`` submitted to the API and returns the normalized dict to store;
  ``previous`` is the stored config on a change (a secret left out is kept).
  Raises ``ValueError("<field>: <message>")`` on the first problem found
  (unknown fields are rejected too).
- ``CONFIG_SCHEMA``: the config's JSON Schema (in the OpenAPI schema, and the
  dashboard's setup page for the kind: property ``description`` as the label,
  ``readOnly`` not asked for, ``format: "password"`` a secret), and ``HELP``:
  where to get the URL, key or token in that service (plain text with its URL).
- Optionally ``shown_config(config) -> dict``: the config as the API shows it,
  to admins too (Pushover and Matrix hide their tokens there).

A kind module with ``TAKES_DELIVERY = True`` (Matrix, Pushover) gets the
:class:`~alerts.models.Delivery` being sent as ``delivery=`` from the delivery
engine (``None`` for a test notification, which has no delivery row); one with
``receipt(answer: bytes) -> str`` (Pushover) has the start of each 2xx answer
read into ``Delivery.receipt``.

:data:`KINDS` maps ``Channel.kind`` to its module.
"""
from alerts.integrations import (
    discord,
    email,
    googlechat,
    matrix,
    mattermost,
    ntfy,
    opsgenie,
    pagerduty,
    pushover,
    slack,
    teams,
    telegram,
    webhook,
)
from alerts.integrations.common import NOTIFY_EVENT_KINDS, OutgoingEmail, OutgoingRequest

KINDS = {"webhook": webhook, "slack": slack, "pagerduty": pagerduty, "email": email,
         "teams": teams, "discord": discord, "opsgenie": opsgenie, "ntfy": ntfy,
         "telegram": telegram, "googlechat": googlechat, "mattermost": mattermost,
         "pushover": pushover, "matrix": matrix}
__all__ = ["KINDS", "NOTIFY_EVENT_KINDS", "OutgoingEmail", "OutgoingRequest"]
