"""``manage.py createapikey --project NAME [--organisation ORG] [--name WHO]
[--read-only]``: create the project if needed and print a new API key as the last
line of output (the first line says which database it went to)."""
from django.core.management.base import BaseCommand

from accounts.management.common import database_line, find_project
from accounts.models import ApiKey, Membership


class Command(BaseCommand):
    help = "Create a project API key (creating the project if needed); prints the key last."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--organisation", help="organisation name (default: the one the "
                            "project is in; a new project gets an organisation of its name)")
        parser.add_argument("--name", default="",
                            help="whose key it is (signs the acknowledgements made with it)")
        parser.add_argument("--read-only", action="store_true",
                            help="a key that can read everything and change nothing")

    def handle(self, *args, project: str, organisation: str | None, name: str,
               read_only: bool, **options):
        self.stdout.write(database_line())
        proj, created = find_project(project, organisation, create=True)
        row, key = ApiKey.issue(proj, name[:100], read_only=read_only)
        if not Membership.objects.filter(organisation=proj.organisation,
                                         role=Membership.Role.OWNER).exists():
            self.stdout.write(f"organisation '{proj.organisation.name}' has no owner yet: "
                              f"manage.py createuser NAME --organisation "
                              f"'{proj.organisation.name}' makes its first person the owner")
        self.stdout.write(f"{'Created' if created else 'Using'} project '{proj.name}' in "
                          f"organisation '{proj.organisation.name}' (ping key {proj.ping_key}); "
                          f"new {'read-only' if read_only else 'read-write'} API key "
                          f"{row.prefix}… (shown once):")
        self.stdout.write(key)
