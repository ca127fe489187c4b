"""``manage.py prune [--all]``: delete what has aged out, now (see
:mod:`monitors.retention` and :mod:`alerts.retention`)."""
from django.core.management.base import BaseCommand
from django.utils import timezone

from monitors import retention, signals


class Command(BaseCommand):
    help = ("Delete old pings, runs, incidents and audit log entries as the retention "
            "settings say: the "
            "monitors that wrote since the last step, or with --all every monitor.")

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", dest="everything",
                            help="look at every monitor, not only those that wrote lately")

    def handle(self, *args, everything, **options):
        now = timezone.now()
        total = retention.Pruned()
        while True:  # until a step finds nothing left
            step = retention.prune(now, everything=everything)
            total.pings, total.runs = total.pings + step.pings, total.runs + step.runs
            total.monitors, total.audit = total.monitors + step.monitors, total.audit + step.audit
            # --all: until a pass deletes nothing; else until no new rows are left
            if not (step.pings or step.runs or step.audit or (step.monitors and not everything)):
                break
        incidents = sum(n or 0 for _, n in signals.prune.send(sender=None, now=now))
        self.stdout.write(f"deleted {total.pings} pings, {total.runs} runs and {incidents} "
                          f"incidents/outages ({total.monitors} monitor looks), "
                          f"{total.audit} audit log entries")
