"""Notification integrations: one module per ``Channel.kind``.

Every kind module exposes the same four functions:

- ``build_request(channel, event) -> OutgoingRequest | OutgoingEmail``: the HTTP
  POST (or, for ``email``, the message) that
  notifies ``channel`` of ``event`` (an ``IncidentEvent`` of kind ``opened``,
  ``resolved`` or ``channel_removed``, the last being a resolve for that one
  channel; any other kind raises ``ValueError``). Pure: no I/O besides reading
  the event's incident, monitor and project.
- ``build_outage(channel, impact) -> OutgoingRequest``: the ``outage.summary``
  notification of a :class:`monitors.models.OutageImpact` (slots of the
  channel's project recorded ``unknown`` while CronRadar was unreachable).
- ``build_notice(channel, event) -> OutgoingRequest | OutgoingEmail``: a notice
  of no incident (an ``IncidentEvent`` without ``incident``, :mod:`alerts.notices`):
  ``channel.failing`` / ``channel.recovered`` (:mod:`alerts.health`), sent as
  information that never pages. Raises ``ValueError`` for another kind.
- ``validate_config(config, previous=None) -> dict``: checks a channel
  ``config`` submitted to the API and returns the normalized dict to store;
  ``previous`` is the stored config on a change (a secret left out is kept).
  Raises ``ValueError("<field>: <message>")`` on the first problem found
  (unknown fields are rejected too).

:data:`KINDS` maps ``Channel.kind`` to its module.
"""
from alerts.integrations import discord, email, ntfy, opsgenie, pagerduty, slack, teams, webhook
from alerts.integrations.common import NOTIFY_EVENT_KINDS, OutgoingEmail, OutgoingRequest

KINDS = {"webhook": webhook, "slack": slack, "pagerduty": pagerduty, "email": email,
         "teams": teams, "discord": discord, "opsgenie": opsgenie, "ntfy": ntfy}
__all__ = ["KINDS", "NOTIFY_EVENT_KINDS", "OutgoingEmail", "OutgoingRequest"]
