"""``manage.py importhealthchecks (--url URL --api-key KEY | --from-json FILE)
[--ping-key KEY] [--project P] [--organisation O] [--dry-run]``: create or update one monitor per
check of a Healthchecks project, with the check's UUID (so its ping URLs keep
working), and print what was created, updated, left unchanged, reported and not
mapped (the work is :mod:`monitors.imports.healthchecks`). Only those report
lines are printed: httpx's own request log (INFO) is silenced while it runs."""

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from accounts.management.common import database_line, find_project
from accounts.models import Project
from monitors.imports import apply, healthchecks, spec


class Command(BaseCommand):
    help = ("Create or update one monitor per check of a Healthchecks project, keeping "
            "each check's UUID.")

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--url", help="the Healthchecks site, https://healthchecks.example."
                            "com (its checks are read from /api/v3/checks/)")
        source.add_argument("--from-json", metavar="FILE", help="the answer of GET "
                            "/api/v3/checks/ saved to a file ('-': standard input)")
        parser.add_argument("--api-key", help="the Healthchecks project's read-write API key "
                            "(with --url)")
        parser.add_argument("--ping-key", help="the Healthchecks project's ping key (its "
                            "Project Settings), made the CronRadar project's, so slug URLs "
                            "/ping/<ping key>/<slug> keep working (sign-up closed only)")
        parser.add_argument("--project", help="the CronRadar project's name (default: the "
                            "installation's only project)")
        parser.add_argument("--organisation", help="organisation name (when several projects "
                            "have that name)")
        parser.add_argument("--dry-run", action="store_true",
                            help="only say what would change; change nothing")

    def handle(self, *args, url, from_json, api_key, ping_key, project, organisation, dry_run,
               **options):
        if url and not api_key:
            raise CommandError("--url needs --api-key (the Healthchecks project's read-write "
                               "API key)")
        if from_json and api_key:
            raise CommandError("--api-key goes with --url; a file needs none")
        self.stdout.write(database_line())
        target = _project(project, organisation)
        self.stdout.write(f"project '{target.name}' in organisation "
                          f"'{target.organisation.name}'")
        source = url or from_json
        try:
            if url:
                checks = healthchecks.fetch_checks(url, api_key)
            else:
                checks = healthchecks.read_checks(spec.read_file(from_json), from_json)
            parsed, outcome = healthchecks.import_checks(
                target, checks, proven=bool(url), dry_run=dry_run, now=timezone.now(),
                ping_key=ping_key, quota=False)  # the operator is above the plan
        except spec.ImportFailed as e:
            raise CommandError(f"{source}: {e}") from None
        for line in apply.report_lines(outcome.as_dict(parsed)):
            self.stdout.write(line)


def _project(name: str | None, organisation: str | None) -> Project:
    """The project named (:func:`find_project`), else the installation's only one."""
    if name is not None:
        return find_project(name, organisation)[0]
    found = list(Project.objects.select_related("organisation")[:2])
    if len(found) != 1:
        raise CommandError("--project is required: " + ("there is no project yet" if not found
                           else "this installation has several projects"))
    return found[0]
