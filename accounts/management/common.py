"""What the account commands (createapikey, listapikeys, revokeapikey, createuser)
share: saying which database they use, and finding a project by name."""
import shlex

from django.core.management.base import CommandError
from django.db import connection

from accounts.models import Organisation, Project
from accounts.plans import UnknownPlan


def database_line() -> str:
    """``using database: <vendor> <where>``, so a key made in the wrong database
    (the embedded SQLite file instead of the server's ``DATABASE_URL``) shows."""
    s = connection.settings_dict
    if connection.vendor == "sqlite":
        where = s["NAME"]
    else:
        where = f"{s.get('USER') or ''}@{s.get('HOST') or 'localhost'}:{s.get('PORT') or ''}/" \
                f"{s['NAME']}"
    return f"using database: {connection.vendor} {where} (set DATABASE_URL as the server has it)"


def check_name(name: str, what: str) -> str:
    """``name`` of a project or organisation, or CommandError: 1-100 characters, not
    only spaces (the API's rule)."""
    if not name.strip() or len(name) > 100:
        raise CommandError(f"the {what} name must be 1 to 100 characters")
    return name


def find_project(name: str, organisation: str | None, create: bool = False
                 ) -> tuple[Project, bool]:
    """The project called ``name`` (in ``organisation``, when given): (project,
    created). With ``create``, a missing one is made, in ``organisation`` or in an
    organisation named after it (both made if needed). Raises CommandError when the
    name is ambiguous across organisations or (without ``create``) unknown."""
    check_name(name, "project")
    if organisation is not None:
        check_name(organisation, "organisation")
    found = Project.objects.filter(name=name).select_related("organisation")
    if organisation is not None:
        found = found.filter(organisation__name=organisation)
    found = list(found[:10])
    if len(found) > 1:
        orgs = [p.organisation.name for p in found]
        raise CommandError(f"several projects are called '{name}', in the organisations "
                           + ", ".join(f"'{o}'" for o in orgs) + ": say which with "
                           + " or ".join(f"--organisation {shlex.quote(o)}" for o in orgs))
    if found:
        return found[0], False
    if not create:
        raise CommandError(f"no project '{name}'" + (f" in organisation '{organisation}'"
                                                     if organisation else ""))
    try:
        org, _ = Organisation.objects.get_or_create(name=organisation or name)
    except UnknownPlan as e:  # a new organisation needs CRONRADAR_DEFAULT_PLAN's plan
        raise CommandError(str(e)) from None
    return Project.objects.create(organisation=org, name=name), True
