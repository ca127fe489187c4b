"""``manage.py revokeapikey KEY``: revoke an API key given by its id, its prefix
(as ``listapikeys`` shows it) or the whole key. Revoking twice changes nothing."""
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from accounts.management.common import database_line
from accounts.models import ApiKey


class Command(BaseCommand):
    help = "Revoke an API key (by id, prefix or the key itself)."

    def add_arguments(self, parser):
        parser.add_argument("key", help="the key's id, its prefix (cr_…) or the whole key")

    def handle(self, *args, key: str, **options):
        self.stdout.write(database_line())
        given = key.rstrip("…")
        if given.isdigit():
            rows = list(ApiKey.objects.filter(pk=int(given)))
        elif len(given) > ApiKey.PREFIX:
            found = ApiKey.find(given)
            rows = [found] if found else []
        else:
            rows = list(ApiKey.objects.filter(prefix=given)[:2])
        if len(rows) != 1:
            raise CommandError(f"no API key '{key}'" if not rows else
                               f"several API keys start with '{given}': give the id")
        row = rows[0]
        if row.revoked_at is None:
            row.revoked_at = timezone.now()
            row.save(update_fields=["revoked_at"])
        self.stdout.write(f"revoked API key {row.pk} ({row.prefix}…, {row.name or 'no name'}) "
                          f"of project '{row.project.name}' at {row.revoked_at.isoformat()}")
