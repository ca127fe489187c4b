"""``manage.py listapikeys --project NAME [--organisation ORG]``: the project's
ping key and its API keys (prefix, name, access, created, last used, revoked)."""
from django.core.management.base import BaseCommand

from accounts.management.common import database_line, find_project


class Command(BaseCommand):
    help = "List a project's API keys (prefixes only: keys are shown once) and its ping key."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--organisation", help="organisation name, when ambiguous")

    def handle(self, *args, project: str, organisation: str | None, **options):
        self.stdout.write(database_line())
        proj, _ = find_project(project, organisation)
        self.stdout.write(f"project '{proj.name}' in organisation '{proj.organisation.name}': "
                          f"ping key {proj.ping_key}")
        for key in proj.api_keys.order_by("pk"):
            state = f"revoked {key.revoked_at:%Y-%m-%dT%H:%M:%SZ}" if key.revoked_at else "active"
            used = f"{key.last_used_at:%Y-%m-%dT%H:%M:%SZ}" if key.last_used_at else "never"
            self.stdout.write(f"{key.pk}\t{key.prefix}…\t{key.name or '-'}\t"
                              f"{'read-only' if key.read_only else 'read-write'}\t"
                              f"created {key.created_at:%Y-%m-%dT%H:%M:%SZ}\tlast used {used}"
                              f"\t{state}")
