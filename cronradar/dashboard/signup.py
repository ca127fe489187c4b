"""The ways in: the first account of a fresh installation (at ``/`` while nobody
exists), sign-up at ``/signup/`` with its verification link, accepting an
invitation, and the onboarding page (``/welcome/``) that walks a new owner to a
first channel, a first monitor and its ping line, with a test ping shown
arriving live. The rules are :mod:`accounts.firstrun`, :mod:`accounts.signup`
and :mod:`accounts.invitations`; these views only read forms and answer."""
from __future__ import annotations

import logging

from django.contrib.auth import login
from django.contrib.auth import views as auth
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts import firstrun, invitations, plans, signup, throttle
from accounts.tenancy import at_least
from alerts.models import Channel
from core.edge import client_address
from cronradar.dashboard import monitorlist, snippets
from cronradar.dashboard.common import ROLE, page
from monitors import history
from monitors.models import Monitor
from monitors.pings import PingInput, ingest

BACKEND = "django.contrib.auth.backends.ModelBackend"
TEST_PING_AGENT = "CronRadar test ping (dashboard)"
FIRST_RUN_REFUSALS = {
    firstrun.Refusal.TAKEN: ("form", "Someone created the first account meanwhile: sign in."),
    firstrun.Refusal.TOKEN: ("token", "The setup token is wrong: use the one migrate and "
                                      "serve print."),
    firstrun.Refusal.NAME: ("organisation", "Give an organisation name of 1 to 100 characters "
                                            "that no organisation has."),
}

log = logging.getLogger(__name__)


def _account_errors(email: str, password: str) -> dict:
    """The form's errors for an email and a password (Django's validators)."""
    errors = {}
    try:
        validate_email(email)
    except ValidationError:
        errors["email"] = "Enter a valid email address."
    if len(email) > 150:
        errors["email"] = "An email address of at most 150 characters."
    if problems := signup.check_password(email, password):
        errors["password"] = " ".join(problems)
    return errors


def home(request):
    """``/``: "Create the first account" while nobody exists, else the monitors."""
    if not request.user.is_authenticated and firstrun.nobody_yet():
        return first_run(request)
    return monitorlist.monitor_list(request)


def first_run(request):
    """The first account's form (email, password, organisation name, and the
    setup token under production); made, they are signed in and welcomed."""
    errors, values = {}, {}
    if request.method == "POST":
        values = request.POST
        email = request.POST.get("email", "").strip()
        password = request.POST.get("password", "")
        errors = _account_errors(email, password)
        if not errors:
            try:
                user = firstrun.create_first_account(
                    email, password, request.POST.get("organisation", ""),
                    token=request.POST.get("token", ""))
            except firstrun.Refused as e:
                field, message = FIRST_RUN_REFUSALS[e.reason]
                errors = {field: message}
            else:
                login(request, user, backend=BACKEND)
                return redirect("dashboard:welcome")
    return render(request, "dashboard/first_run.html", {
        "errors": errors, "values": values, "token_needed": firstrun.token_needed(),
        "adopt": firstrun.adoptable()}, status=400 if errors else 200)


def signup_page(request):
    """``/signup/``: email and password (open or domain mode; closed: 404 with a
    page saying so; while nobody exists, the first-account page at ``/``). The
    same answer page whether the address is new or taken; over a rate limit 429."""
    mode = signup.mode()
    if firstrun.nobody_yet():  # the operator's first account comes before anyone's
        return redirect("dashboard:monitors")
    if not mode.is_open:
        return render(request, "dashboard/error.html", {
            "title": "Sign-up is closed", "text": "This installation takes new people by "
            "invitation only: ask an admin of your organisation to invite you."}, status=404)
    errors, values = {}, {}
    if request.method == "POST":
        values = request.POST
        email = request.POST.get("email", "").strip()
        errors = _account_errors(email, request.POST.get("password", ""))
        if not errors:
            try:
                outcome = signup.sign_up(email, request.POST["password"],
                                         client_address(request.META) or "")
            except plans.UnknownPlan:
                log.exception("sign-up refused")  # the operator's error: the log says which
                return render(request, "dashboard/error.html", {
                    "title": "Sign-up is not available", "text": "New organisations cannot "
                    "be made right now (the installation's default plan is missing): try "
                    "again later."}, status=503)
            if outcome == signup.Outcome.SENT:
                return render(request, "dashboard/signup_sent.html", {"email": email})
            if outcome == signup.Outcome.RATE_LIMITED:
                return render(request, "dashboard/error.html", {
                    "title": "Too many attempts", "text": "Too many sign-up attempts for "
                    "this address or from your network: try again in an hour."}, status=429)
            errors = {"email": "Sign-up takes addresses of " + ", ".join(mode.domains)
                      + " only."}
    return render(request, "dashboard/signup.html", {
        "errors": errors, "values": values, "mode": mode}, status=400 if errors else 200)


def signup_verify(request, uidb64: str, token: str):
    """``/signup/verify/<uidb64>/<token>/``: the one-time link. A GET only shows
    the confirm button (mail scanners that open links confirm nothing); its POST
    verifies, signs the person in and welcomes them. A used or expired link is a
    400 page."""
    if request.method == "POST":
        user = signup.verify(uidb64, token)
    else:
        user = signup.link_owner(uidb64, token)
    if user is None:
        return render(request, "dashboard/error.html", {
            "title": "Link not valid", "text": "This link has expired or was used already. "
            "Sign in if you confirmed your address; else sign up again with the same address "
            "for a new link."}, status=400)
    if request.method != "POST":
        return render(request, "dashboard/signup_verify.html", {"email": user.email})
    login(request, user, backend=BACKEND)
    return redirect("dashboard:welcome")


class Login(auth.LoginView):
    """Django's sign-in, refusing unverified addresses, with the sign-up link when
    sign-up is open (and a hint to the first-run page while nobody exists)."""

    template_name = "dashboard/login.html"
    redirect_authenticated_user = True
    authentication_form = signup.LoginForm

    def form_invalid(self, form):
        """The form again; ``429`` with ``Retry-After`` while the sign-in cools off."""
        return throttle.refused(super().form_invalid(form), form)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        refused = {e.code: e.messages[0] for e in context["form"].non_field_errors().as_data()}
        return {**context, "signup_open": signup.mode().is_open,
                "nobody_yet": firstrun.nobody_yet(),
                "unverified": refused.get("unverified", ""),
                "throttled": refused.get("throttled", "")}


def invitation(request, token: str):
    """``/invitations/<token>/``: the invitee's page. With an account: sign in as
    the invited address, then join (an account not verified yet: its password
    here, which verifies it); someone new: choose a username and password."""
    found = invitations.find(token)
    if found is None:
        return render(request, "dashboard/error.html", {
            "title": "Invitation not valid", "text": "This invitation has expired, was "
            "used, or was replaced by a newer one: ask the admin who invited you."},
            status=404)
    try:
        return _invitation(request, found)
    except plans.PlanLimit as e:  # the plan was lowered since the invitation was sent
        return render(request, "dashboard/error.html", {
            "title": "The organisation has no room", "text": f"{e.detail}: ask the admin "
            "who invited you."}, status=403)


def _invitation(request, found):
    user = request.user if request.user.is_authenticated else None
    errors, values = {}, {"username": found.username or found.email.lower()}
    if request.method == "POST":
        now = timezone.now()
        if user is not None and invitations.is_for(found, user):
            invitations.accept(found, user, now)
            _look_at(request, found)
            return redirect("dashboard:monitors")
        pending = invitations.unverified_account(found) if user is None else None
        if pending is not None:
            if invitations.accept_unverified(found, pending, request.POST.get("password", ""),
                                             now) is not None:
                login(request, pending, backend=BACKEND)
                _look_at(request, found)
                return redirect("dashboard:monitors")
            errors = {"password": "This is not the account's password: try again, or "
                                  "reset it with Forgot your password?"}
        elif user is None and not invitations.has_account(found):
            values = request.POST
            username = request.POST.get("username", "").strip()
            errors = {k: " ".join(v) for k, v in (
                ("username", invitations.check_username(username)),
                ("password", signup.check_password(found.email,
                                                   request.POST.get("password", "")))) if v}
            if not errors:
                made = invitations.accept_new(found, username, request.POST["password"], now)
                if made is not None:
                    login(request, made, backend=BACKEND)
                    return redirect("dashboard:welcome")
                raise Http404
    return render(request, "dashboard/invitation.html", {
        "invitation": found, "errors": errors, "values": values,
        "has_account": invitations.has_account(found),
        "unverified": user is None and invitations.unverified_account(found) is not None,
        "is_for_me": user is not None and invitations.is_for(found, user),
        "login": f"{reverse('dashboard:login')}?next={request.path}"},
        status=400 if errors else 200)


def _look_at(request, invitation) -> None:
    """Show the organisation just joined: its first project becomes the session's."""
    first = invitation.organisation.projects.order_by("name").first()
    if first is not None:
        request.session["project_id"] = first.pk


def _first_monitor(request) -> Monitor | None:
    return (Monitor.objects.filter(project=request.project, deleted_at__isnull=True)
            .order_by("pk").first())


@page
def welcome(request):
    """``/welcome/``: the steps to a first channel, a first monitor and its ping
    line, with the test ping button (works without JavaScript: it reloads)."""
    monitor = _first_monitor(request)
    return render(request, "dashboard/welcome.html", {
        "has_channel": Channel.objects.filter(project=request.project).exists(),
        "monitor": monitor, "pings": _recent(monitor) if monitor else [],
        "ping_line": f"{snippets.CURL} {monitor.ping_url}" if monitor else "",
        "can_edit": at_least(request.role, ROLE.MEMBER)})


def _recent(monitor: Monitor) -> list[dict]:
    """The monitor's newest five pings, newest first, as the live list shows them."""
    return [{"at": p.received_at.isoformat(), "kind": p.kind, "method": p.method,
             "user_agent": p.user_agent}
            for p in history.newest_pings(monitor, 5)]


def _project_monitor(request, pk: int) -> Monitor:
    return get_object_or_404(Monitor, pk=pk, project=request.project, deleted_at__isnull=True)


@page
@require_POST
def test_ping(request, pk: int):
    """POST ``/welcome/<monitor id>/test-ping/``: a success ping through the ping
    path (:func:`monitors.pings.ingest`), as a job would send it; JSON
    ``{"pings": [...]}`` for the page's script, else back to the page."""
    monitor = _project_monitor(request, pk)
    if not at_least(request.role, ROLE.MEMBER):
        return JsonResponse({"detail": "viewers cannot ping"}, status=403)
    ingest(monitor.pk, PingInput("success", method="POST", user_agent=TEST_PING_AGENT),
           timezone.now())
    if request.headers.get("Accept") == "application/json":
        return JsonResponse({"pings": _recent(monitor)})
    return redirect("dashboard:welcome")


@page
def recent_pings(request, pk: int):
    """``/welcome/<monitor id>/pings.json``: ``{"pings": [...]}``, the newest five
    (the page polls it, so a ping a job sends shows too)."""
    return JsonResponse({"pings": _recent(_project_monitor(request, pk))})
