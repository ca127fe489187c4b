"""``manage.py createapikey --project NAME``: create the project if needed and
print a new API key as the last line of output."""
from django.core.management.base import BaseCommand

from monitors.models import ApiKey, Project


class Command(BaseCommand):
    help = "Create a project API key (creating the project if needed); prints the key last."

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--name", default="",
                            help="whose key it is (signs the acknowledgements made with it)")

    def handle(self, *args, project: str, name: str, **options):
        proj, created = Project.objects.get_or_create(name=project)
        _, key = ApiKey.issue(proj, name[:100])
        self.stdout.write(f"{'Created' if created else 'Using'} project '{proj.name}' "
                          f"(ping key {proj.ping_key}); new API key:")
        self.stdout.write(key)
