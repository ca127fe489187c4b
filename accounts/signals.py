"""Signals the accounts floor sends for the floors above to act on (Django
signals; the site connects to them, ``cronradar/apps.py``): accounts knows
nothing of monitors or channels, so whatever deleting a tenant means for them is
done by the receivers.

- ``organisation_deleted(organisation, now)``: ``organisation`` was deleted by
  its owner at ``now`` and is hidden from that moment; sent inside the
  transaction that set ``Organisation.deleted_at``, so a receiver's writes (hiding
  its monitors) commit or roll back with it. Its rows are purged later
  (``cronradar/orgdata.py``).
- ``account_deleting(user, organisation)``: ``user``, the last owner of
  ``organisation``, asks to delete their account; a receiver returns True when
  the organisation still holds something of its (the site: monitors), which
  refuses the deletion (:func:`accounts.deletion.delete_account`).
"""
from django.dispatch import Signal

organisation_deleted = Signal()
account_deleting = Signal()
