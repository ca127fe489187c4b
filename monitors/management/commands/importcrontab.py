"""``manage.py importcrontab FILE --project P [--organisation O] [--dry-run]
[--wrap curl|exec] [--system] [--timezone TZ]``: create or update one monitor per
job of a crontab (see :mod:`monitors.imports`), then print the crontab back with
each job wrapped to ping its monitor.

The report (the database line first, then what was created, updated, left
unchanged and reported) goes to stderr and the wrapped crontab to stdout, so
``importcrontab crontab.txt --project P > crontab.new`` leaves a file ready for
``crontab crontab.new``. A dry run prints the report only.
"""
from django.conf import settings
from django.core.management.base import BaseCommand

from monitors.imports import crontab, spec
from monitors.management.commands.importk8s import add_import_arguments, run_import


class Command(BaseCommand):
    help = ("Create or update one monitor per crontab job; print the crontab with each job "
            "wrapped to ping its monitor (report on stderr, crontab on stdout).")

    def add_arguments(self, parser):
        add_import_arguments(parser, "the crontab")
        parser.add_argument("--wrap", choices=["curl", "exec"], default="curl",
                            help="curl lines (default; nothing to install) or cronradar exec")
        parser.add_argument("--system", action="store_true", help="a system crontab: the 6th "
                            "field is the user (default for /etc/crontab and /etc/cron.d/*)")
        parser.add_argument("--timezone", default="UTC", help="the host's time zone, for jobs "
                            "with no CRON_TZ=/TZ= line before them (default UTC)")

    def handle(self, *args, file: str, project: str, organisation: str | None, dry_run: bool,
               wrap: str, system: bool, timezone: str, **options):
        self.stderr.style_func = None
        by_path = not system and crontab.is_system_crontab(file)

        def parse(text: str) -> spec.Parsed:
            parsed = crontab.parse_crontab(text, system or by_path, timezone, wrap)
            if by_path:
                parsed.notes.insert(0, spec.Remark("", f"{file} is a system crontab: the 6th "
                                                      "field is the user"))
            return parsed

        parsed, outcome = run_import(self.stderr, file, project, organisation, dry_run, parse)
        self.stderr.write(f"ping URLs start with CRONRADAR_BASE_URL={settings.CRONRADAR_BASE_URL}"
                          " (set it to the server's public URL)")
        if not dry_run:
            urls = {slug: m.ping_url for slug, m in outcome.monitors.items()}
            self.stdout.write(crontab.wrap_crontab(parsed, urls, wrap), ending="")
