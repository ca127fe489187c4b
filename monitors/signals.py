"""Signals the monitors side sends for others to act on (Django signals; the
``alerts`` app connects to them in its ``AppConfig.ready``). Detections about a
monitor go through :mod:`monitors.detections` instead.

- ``outage_settled(impact)``: slots of ``impact.project`` were recorded
  ``unknown`` during ``impact.outage``, which has ended and settled; sent once
  per impact, inside the evaluator's transaction.
- ``purge_requested(monitor)``: a deleted monitor is about to be removed; a
  receiver that still needs it (notifications to send) returns False and the
  evaluator asks again later.
- ``tick(now)``: every evaluator tick, after the monitors due (work that is due
  at a time, as escalation steps, runs on it).
- ``tick_done(now)``: an evaluator tick that caught up with every due monitor
  (housekeeping may run).
- ``prune(now)``: a retention step (:mod:`monitors.retention`) ran: receivers
  delete what of theirs has aged out.
"""
from django.dispatch import Signal

outage_settled = Signal()
purge_requested = Signal()
tick = Signal()
tick_done = Signal()
prune = Signal()
