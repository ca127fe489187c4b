"""``manage.py setplan ORG PLAN``: put the organisation ``ORG`` (its name, or its
id) on the plan ``PLAN`` (``none``: no plan, no limits), recorded in the audit
log as ``plan_change``; prints the plan's limits."""
from django.core.management.base import BaseCommand, CommandError

from accounts import audit, plans
from accounts.management.commands.plan import limit_lines
from accounts.management.common import database_line
from accounts.models import Organisation, Plan

ACTOR = audit.Actor("manage.py setplan")  # the operator, in the audit entry


def find_organisation(given: str) -> Organisation:
    """The organisation called ``given``, else the one whose id it is; CommandError
    when neither exists."""
    found = Organisation.objects.select_related("plan").filter(name=given).first()
    if found is None and given.isascii() and given.isdigit():
        found = Organisation.objects.select_related("plan").filter(pk=int(given)).first()
    if found is None:
        raise CommandError(f"no organisation called '{given}' or with id {given}"
                           if given.isdigit() else f"no organisation called '{given}'")
    return found


class Command(BaseCommand):
    help = "Put an organisation on a plan ('none': no plan, no limits)."

    def add_arguments(self, parser):
        parser.add_argument("organisation", help="the organisation's name or id")
        parser.add_argument("plan", help="the plan's name (manage.py plan), or 'none'")

    def handle(self, *args, organisation: str, plan: str, **options):
        self.stdout.write(database_line())
        org = find_organisation(organisation)
        new = None
        if plan.lower() != "none":
            new = Plan.objects.filter(name=plan).first()
            if new is None:
                names = ", ".join(Plan.objects.order_by("name").values_list("name", flat=True))
                raise CommandError(f"no plan '{plan}' (plans: {names or 'none yet'}; "
                                   "manage.py plan NAME makes one)")
        old = org.plan.name if org.plan_id is not None else "none"
        with audit.acting(ACTOR):
            changed = plans.set_plan(org, new)
        if not changed:
            self.stdout.write(f"organisation '{org.name}' is already on plan '{old}'")
        else:
            self.stdout.write(f"organisation '{org.name}' is now on plan "
                              f"'{new.name if new else 'none'}' (was '{old}')")
        if new is None:
            self.stdout.write("  no limits")
        else:
            for line in limit_lines(new):
                self.stdout.write(line)
