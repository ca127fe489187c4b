"""``manage.py createuser USERNAME --organisation ORG [--role ROLE] [--email E]
[--password-stdin]``: a person who can sign in, as a member of an organisation.

The organisation is created if needed. The first person added to an
organisation without an owner (a new one, or one ``createapikey --project`` made)
becomes its ``owner``; ``--role`` below owner is refused there. An existing user
is added to the organisation, or given the new role. The password comes from standard input with
``--password-stdin``, else from ``CRONRADAR_PASSWORD``, else it is asked for on a
terminal; a new user without any of them is refused.
"""
import getpass
import os
import sys

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.management.common import check_name, database_line
from accounts.models import Membership, Organisation
from accounts.plans import UnknownPlan


class Command(BaseCommand):
    help = "Create a person (or change their role) in an organisation."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--organisation", required=True, help="organisation name")
        parser.add_argument("--role", choices=Membership.Role.values,
                            help="default: owner of an organisation without one, else member")
        parser.add_argument("--email", default="")
        parser.add_argument("--password-stdin", action="store_true",
                            help="read the password from standard input")

    def handle(self, *args, username: str, organisation: str, role: str | None, email: str,
               password_stdin: bool, **options):
        self.stdout.write(database_line())
        users = get_user_model()
        try:
            users.username_validator(username)
            if not 0 < len(username) <= users._meta.get_field("username").max_length:
                raise ValidationError("150 characters or fewer")
        except ValidationError as e:
            raise CommandError(f"username refused: {' '.join(e.messages)}") from None
        check_name(organisation, "organisation")
        user = users.objects.filter(username=username).first()
        password = self._password(user is None, password_stdin)
        if password is not None:
            try:
                validate_password(password, user)
            except ValidationError as e:
                raise CommandError("password refused: " + " ".join(e.messages)) from None
        with transaction.atomic():
            try:
                org, new_org = Organisation.objects.get_or_create(name=organisation)
            except UnknownPlan as e:  # a new organisation needs CRONRADAR_DEFAULT_PLAN's plan
                raise CommandError(str(e)) from None
            if user is None:
                user = users.objects.create_user(username=username, email=email)
            elif email:
                user.email = email
            if password is not None:
                user.set_password(password)
            user.save()
            # An organisation without an owner (new, or made by createapikey) could
            # never be run from the dashboard: its first person takes the role.
            ownerless = not Membership.objects.filter(organisation=org,
                                                      role=Membership.Role.OWNER).exists()
            if ownerless and role not in (None, Membership.Role.OWNER):
                what = "a new organisation" if new_org else "an organisation without an owner"
                raise CommandError(f"'{organisation}' is {what}: its first person is its "
                                   "owner (leave out --role, or add them as owner first)")
            role = role or (Membership.Role.OWNER if ownerless else Membership.Role.MEMBER)
            current = Membership.objects.filter(organisation=org, user=user).first()
            if current is not None and current.role == Membership.Role.OWNER and \
                    role != Membership.Role.OWNER and not Membership.objects.filter(
                        organisation=org, role=Membership.Role.OWNER).exclude(
                        pk=current.pk).exists():
                raise CommandError(f"{username} is the only owner of '{organisation}': "
                                   "make another owner first")
            Membership.objects.update_or_create(organisation=org, user=user,
                                                defaults={"role": role})
        if not org.projects.exists():
            self.stdout.write(f"'{org.name}' has no project yet: sign in to the dashboard and "
                              "create one, or run manage.py createapikey --project NAME "
                              f"--organisation '{org.name}'")
        self.stdout.write(f"{user.username} is {role} of organisation '{org.name}'"
                          + (" (new)" if new_org else
                             " (it had no owner: its first person is its owner)"
                             if ownerless else ""))

    def _password(self, required: bool, from_stdin: bool) -> str | None:
        if from_stdin:
            return sys.stdin.readline().rstrip("\n")
        if os.environ.get("CRONRADAR_PASSWORD"):
            return os.environ["CRONRADAR_PASSWORD"]
        if sys.stdin.isatty():
            first = getpass.getpass("Password: ")
            if first != getpass.getpass("Password (again): "):
                raise CommandError("the passwords differ")
            return first
        if required:
            raise CommandError("a new user needs a password: --password-stdin, "
                               "CRONRADAR_PASSWORD, or run it on a terminal")
        return None
