"""``manage.py plan NAME [--max-monitors N] [--max-channels N] ...``: create the
plan ``NAME`` or change its limits, then print them. One flag per limit of
:attr:`accounts.models.Plan.LIMITS` (``--max-monitors``, ``--max-channels``,
``--max-members``, ``--max-api-keys``, ``--pings-kept``, ``--pings-per-minute``,
``--org-pings-per-minute``, ``--run-retention-days``,
``--incident-retention-days``), each a whole number or ``none`` (no limit); a
limit left out keeps its value (a new plan: no limit). docs/multi-tenant.md."""
import argparse

from django.core.management.base import BaseCommand, CommandError

from accounts.management.common import database_line
from accounts.models import Plan


def limit_value(raw: str) -> int | None:
    """A flag's value: a whole number from 0, or ``none`` (no limit: None)."""
    if raw.strip().lower() == "none":
        return None
    if raw.isascii() and raw.isdigit() and int(raw) <= 2**31 - 1:
        return int(raw)
    raise argparse.ArgumentTypeError(f"a whole number or 'none', not {raw!r}")


def limit_lines(plan: Plan) -> list[str]:
    """``  max_monitors: 20`` (or ``no limit``), one line per limit."""
    return [f"  {name}: {'no limit' if getattr(plan, name) is None else getattr(plan, name)}"
            for name in Plan.LIMITS]


class Command(BaseCommand):
    help = "Create a plan or change its limits (a whole number, or 'none' for no limit)."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the plan's name (1 to 50 characters)")
        for name in Plan.LIMITS:
            field = Plan._meta.get_field(name)
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=limit_value,
                                default=argparse.SUPPRESS, metavar="N|none",
                                help=field.help_text or name.replace("_", " "))

    def handle(self, *args, name: str, **options):
        self.stdout.write(database_line())
        if not name.strip() or len(name) > 50:
            raise CommandError("the plan name must be 1 to 50 characters")
        if name.lower() == "none":
            raise CommandError("'none' is not a plan name: manage.py setplan ORG none means "
                               "no plan")
        given = {k: options[k] for k in Plan.LIMITS if k in options}
        plan, created = Plan.objects.get_or_create(name=name, defaults=given)
        if not created and given:
            for field, value in given.items():
                setattr(plan, field, value)
            plan.save(update_fields=list(given))
        users = plan.organisations.count()
        what = "created" if created else "changed" if given else "unchanged"
        self.stdout.write(f"plan '{plan.name}' ({what}; {users} organisation"
                          f"{'' if users == 1 else 's'}):")
        for line in limit_lines(plan):
            self.stdout.write(line)
