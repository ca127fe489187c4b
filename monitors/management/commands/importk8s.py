"""``manage.py importk8s FILE --project P [--organisation O] [--dry-run]``: create
or update one monitor per Kubernetes CronJob of a manifest file (multi-document
YAML; see :mod:`monitors.imports` for the mapping) and print what was created,
updated, left unchanged, reported and not mapped."""
from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from accounts.management.common import database_line, find_project
from monitors import schedule
from monitors.imports import apply, k8s, spec


def run_import(out, file: str, project: str, organisation: str | None, dry_run: bool,
               parse: Callable[[str], spec.Parsed]) -> tuple[spec.Parsed, apply.Outcome]:
    """What both import commands do: print the database line to ``out``, find the
    project, read ``file`` ('-': stdin) with ``parse``, apply (or compare) and print
    the report (the operator's import: no plan limit). Returns (parsed, outcome);
    raises CommandError for an unknown project, a file that cannot be read or
    imported, or a conflict."""
    out.write(database_line())
    proj, _ = find_project(project, organisation)
    out.write(f"project '{proj.name}' in organisation '{proj.organisation.name}'")
    try:
        parsed = parse(spec.read_file(file))
        outcome = apply.apply(proj, parsed.specs, dry_run, timezone.now(), quota=False)
    except (spec.ImportFailed, schedule.ScheduleError) as e:
        raise CommandError(f"{file}: {e}") from None
    for line in apply.report_lines(outcome.as_dict(parsed)):
        out.write(line)
    return parsed, outcome


def add_import_arguments(parser, what: str) -> None:
    """The arguments both import commands take: FILE (``what`` it is), --project,
    --organisation, --dry-run."""
    parser.add_argument("file", help=f"{what} ('-': standard input)")
    parser.add_argument("--project", required=True, help="project name")
    parser.add_argument("--organisation", help="organisation name (when several projects "
                        "have that name)")
    parser.add_argument("--dry-run", action="store_true",
                        help="only say what would change; change nothing")


class Command(BaseCommand):
    help = "Create or update one monitor per Kubernetes CronJob of a manifest file."

    def add_arguments(self, parser):
        add_import_arguments(parser, "the manifests, YAML")

    def handle(self, *args, file: str, project: str, organisation: str | None, dry_run: bool,
               **options):
        run_import(self.stdout, file, project, organisation, dry_run, k8s.parse_k8s)
