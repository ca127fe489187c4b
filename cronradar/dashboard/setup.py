"""Dashboard pages that set a project up: channels (with "send test"),
escalation policies (tiers in order), maintenance windows, API keys and members;
each a list with a create form, an edit form and delete with confirmation.

Every form is checked by the API's serializer for that object (so the rules and
messages are the API's) with the signed-in person as the caller: roles are
enforced there and here (viewers get no buttons, and a POST above their role is
a 403)."""
from __future__ import annotations

from datetime import datetime

from django.db.models.functions import Lower
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from accounts import audit, plans
from accounts.api import ApiKeySerializer, MemberSerializer, MemberViewSet, revoke_key
from accounts.models import ApiKey, Invitation, Membership, _badge_key
from alerts import escalation
from alerts.api import (
    ChannelSerializer,
    EscalationPolicySerializer,
    MaintenanceWindowSerializer,
    delete_policy,
    delete_window,
)
from alerts.channels import delete_channel, send_test, send_test_config
from alerts.integrations import KINDS
from alerts.models import Channel, EscalationPolicy, MaintenanceWindow
from cronradar import usage
from cronradar.dashboard import channel_form, forms
from cronradar.dashboard.common import (
    ROLE,
    can,
    duration,
    flat_errors,
    form_id,
    form_ids,
    local,
    page,
    require,
)
from monitors import schedule
from monitors.models import Monitor

TIERS = 5  # tier rows on the policy form


def _errors(serializer) -> dict[str, str]:
    return flat_errors(serializer.errors)


def _save(request, serializer_class, instance, data):
    """Validate ``data`` with the API's serializer and save; (saved object or None,
    errors by field: the plan's refusal under :data:`PLAN`)."""
    serializer = serializer_class(instance, data={**data, "project": request.project.pk},
                                  partial=instance is not None, context={"request": request})
    if serializer.is_valid():
        return _saved(serializer)
    return None, _errors(serializer)


PLAN = "plan"  # the errors' key of a plan's refusal (shown where the create button is)


def _saved(serializer) -> tuple:
    """``serializer.save()`` and no errors, or None and the plan's refusal."""
    try:
        return serializer.save(), {}
    except plans.PlanLimit as e:
        return None, {PLAN: str(e.detail)}


def _plan_limit(request, errors: dict, what: str) -> str:
    """The sentence shown instead of the create button: a POST's refusal (taken
    out of ``errors``), else the plan's limit of ``what`` when it is reached."""
    return errors.pop(PLAN, "") or plans.refusal(request.project.organisation, what)


def _status(refused: bool, errors: dict) -> int:
    """403 for a plan's refusal, 400 for other errors, else 200."""
    return 403 if refused else 400 if errors else 200


def _confirm(request, title: str, text: str, back: str, blocked: bool = False):
    """The confirmation page of a deletion (``blocked``: it cannot be done; say why)."""
    return render(request, "dashboard/confirm.html", {
        "title": title, "action": title.rstrip("?"), "text": text, "back": back,
        "blocked": blocked}, status=409 if blocked and request.method == "POST" else 200)


def _detail(exc) -> str:
    detail = exc.detail
    if isinstance(detail, dict):
        return " ".join(" ".join(map(str, v)) if isinstance(v, list) else str(v)
                        for v in detail.values())
    return str(detail)


# --- channels ---------------------------------------------------------------------------

def _channel(request, pk: int) -> Channel:
    """The project's live channel ``pk`` (404 otherwise)."""
    return get_object_or_404(Channel, pk=pk, project=request.project, deleted_at__isnull=True)


@page
@require_GET
def channels(request):
    """``/channels/``: the project's channels (each with "send test") and the kind
    chooser, one link per kind to its setup page."""
    result = request.session.pop("channel_test", None)
    rows = [{"c": c, "config": ChannelSerializer(c, context={"request": request}).data["config"]}
            for c in Channel.objects.filter(project=request.project, deleted_at__isnull=True)
            .order_by("name", "pk")]
    return render(request, "dashboard/channels.html", {
        "rows": rows, "kinds": [(k, channel_form.summary(m)) for k, m in KINDS.items()],
        "can_admin": can(request, ROLE.ADMIN), "can_test": can(request, ROLE.MEMBER),
        "test_result": result, "plan_limit": plans.refusal(request.project.organisation,
                                                           "channels")})


@page
def channel_new(request, kind: str):
    """``/channels/new/<kind>/``: the setup page of a new channel of ``kind`` (admins):
    only its fields, where to get them, "send test" before saving, then create."""
    require(request, ROLE.ADMIN)
    if kind not in KINDS:
        raise Http404("no such kind of channel")
    return _channel_setup(request, kind, None)


@page
def channel(request, pk: int):
    """``/channels/<id>/``: a channel's page (the links of its notifications come
    here): its state, and for admins the setup form of its kind."""
    return _channel_setup(request, None, _channel(request, pk))


def _channel_setup(request, kind: str | None, instance: Channel | None):
    """The setup page of a new channel of ``kind`` or of ``instance``. A POST with
    ``action=test`` sends the entered config's test notification (nothing stored);
    any other POST saves through the API's serializer (plan limits included)."""
    kind = kind or instance.kind
    module = KINDS[kind]
    asked = channel_form.fields(module)
    previous = instance.config if instance is not None else None
    errors, result = {}, None
    values = {"name": instance.name, **channel_form.values_of(instance.config, asked)} \
        if instance is not None else {}
    if request.method == "POST":
        require(request, ROLE.ADMIN)
        values = request.POST
        config = channel_form.config_from(request.POST, asked, previous)
        name = request.POST.get("name", "").strip()
        if request.POST.get("action") == "test":
            try:
                status, error = send_test_config(request.project, kind, config,
                                                 timezone.now(), name=name, previous=previous)
                result = {"channel": name or f"the new {kind} channel", "ok": error == "",
                          "status": status, "error": error}
            except ValueError as e:
                errors = {"config": str(e)}
        else:
            data = {"name": name, "config": config}
            if instance is None:
                data["kind"] = kind
            saved, errors = _save(request, ChannelSerializer, instance, data)
            if saved is not None:
                return redirect("dashboard:channels")
    refused = PLAN in errors
    plan_limit = _plan_limit(request, errors, "channels") if instance is None else ""
    shown = ChannelSerializer(instance, context={"request": request}).data \
        if instance is not None else None
    return render(request, "dashboard/channel.html", {
        "kind": kind, "summary": channel_form.summary(module),
        "help": getattr(module, "HELP", ""), "fields": asked, "instance": instance,
        "shown": shown, "values": values, "errors": errors, "test_result": result,
        "plan_limit": plan_limit, "can_admin": can(request, ROLE.ADMIN),
        "can_test": can(request, ROLE.MEMBER),
    }, status=_status(refused, errors))


@page
@require_POST
def channel_test(request, pk: int):
    """POST ``/channels/<id>/test/``: send a test notification; the list shows the
    answer."""
    require(request, ROLE.MEMBER)
    channel = _channel(request, pk)
    status, error = send_test(channel, timezone.now())
    request.session["channel_test"] = {"channel": channel.name or f"#{channel.pk}",
                                       "ok": error == "", "status": status, "error": error}
    return redirect("dashboard:channels")


@page
def channel_delete(request, pk: int):
    require(request, ROLE.ADMIN)
    channel = _channel(request, pk)
    sole = escalation.tiers_only_on(channel)
    if request.method == "POST" and not sole:
        delete_channel(channel, timezone.now())
        return redirect("dashboard:channels")
    text = (f"It is the only channel of {sole[0]}: change the policy first." if sole else
            "Open incidents it was notified of get a resolve first.")
    return _confirm(request, f"Delete channel {channel.name or channel.kind}?", text,
                    reverse("dashboard:channels"), blocked=bool(sole))


# --- escalation policies ----------------------------------------------------------------

@page
def policies(request, pk: int | None = None):
    """``/policies/`` and ``/policies/<id>/``: tiers in order, each a delay and its
    channels. A tier's delay is ``tier<n>_delay``, a number of
    ``tier<n>_delay_unit`` (days, hours, minutes, seconds; seconds when left out,
    as older forms sent it), stored as seconds."""
    instance = None
    if pk is not None:
        instance = get_object_or_404(EscalationPolicy, pk=pk, project=request.project)
    errors = {}
    if request.method == "POST":
        require(request, ROLE.ADMIN)
        tiers, bad = [], []
        for i in range(TIERS):
            chans, wrong = form_ids(request.POST.getlist(f"tier{i}_channels"))
            bad += wrong
            if chans:
                delay, problem = forms.join_seconds(
                    request.POST.get(f"tier{i}_delay", ""),
                    request.POST.get(f"tier{i}_delay_unit", "seconds"))
                if problem:
                    errors[_delay_field(i)] = problem
                tiers.append({"delay": 0 if delay is None else delay, "channels": chans})
        data = {"name": request.POST.get("name", ""), "repeat": request.POST.get("repeat") or 0,
                "tiers": tiers}
        if bad:
            errors["tiers"] = f"not a channel id: {', '.join(map(repr, bad))}"
        if not errors:
            saved, errors = _save(request, EscalationPolicySerializer, instance, data)
            if saved is not None:
                return redirect("dashboard:policies")
    listed = EscalationPolicy.objects.filter(project=request.project).prefetch_related(
        "tiers__channels", "monitors__monitor").order_by("name")
    return render(request, "dashboard/policies.html", {
        "policies": [{"p": p, "tiers": [
            {"after": f"after {duration(t.delay)}" if t.delay else "at once",
             "channels": t.channels.all()} for t in p.tiers.all()]} for p in listed],
        "instance": instance, "errors": errors, "units": list(forms.UNITS),
        "values": ({f: request.POST.get(f, "") for f in ("name", "repeat")}
                   if request.method == "POST" else  # as typed; else as stored
                   {"name": getattr(instance, "name", ""),
                    "repeat": getattr(instance, "repeat", 0)}),
        "tiers": _tier_rows(request, instance, errors),
        "channels": Channel.objects.filter(project=request.project, deleted_at__isnull=True),
        "can_admin": can(request, ROLE.ADMIN),
    }, status=400 if errors else 200)


def _delay_field(i: int) -> str:
    """How the form's errors name tier ``i``'s delay (0-based: "tier 1 delay")."""
    return f"tier {i + 1} delay"


def _tier_rows(request, instance, errors) -> list[dict]:
    """The form's :data:`TIERS` rows: ``name`` (the delay's field), ``delay``
    (number, unit) and ``channels`` (ids) as posted, or else as stored (the
    delay in its largest whole unit), blank after the policy's tiers; ``hint``
    what the delay counts from; ``err`` the delay's problem."""
    post = request.POST if request.method == "POST" else None
    stored = list(instance.tiers.order_by("position")) if instance and post is None else []
    rows = []
    for i in range(TIERS):
        name = f"tier{i}_delay"
        if post is not None:
            delay = (post.get(name, ""), post.get(f"{name}_unit", "seconds"))
            channels = form_ids(post.getlist(f"tier{i}_channels"))[0]
        elif i < len(stored):
            delay = forms.split_seconds(int(stored[i].delay.total_seconds()))
            channels = [c.pk for c in stored[i].channels.all()]
        else:
            delay, channels = forms.split_seconds(None), []
        rows.append({"name": name, "delay": delay, "channels": channels,
                     "hint": "after the previous tier" if i else "after the incident opens",
                     "err": errors.get(_delay_field(i), "")})
    return rows


@page
def policy_delete(request, pk: int):
    require(request, ROLE.ADMIN)
    policy = get_object_or_404(EscalationPolicy, pk=pk, project=request.project)
    users = sorted(a.monitor.name for a in policy.monitors.select_related("monitor")
                   if a.monitor.deleted_at is None)  # a deleted one waits to be purged
    if request.method == "POST" and not users:
        delete_policy(policy)
        return redirect("dashboard:policies")
    text = (f"In use by {', '.join(users)}: give them another policy first." if users
            else "Monitors no longer use it.")
    return _confirm(request, f"Delete escalation policy {policy.name}?", text,
                    reverse("dashboard:policies"), blocked=bool(users))


# --- maintenance windows ----------------------------------------------------------------

WINDOW_FIELDS = ["name", "monitor", "tag", "starts_at", "ends_at", "schedule", "timezone",
                 "duration"]


@page
def windows(request, pk: int | None = None):
    """``/maintenance/`` and ``/maintenance/<id>/``."""
    instance = None
    if pk is not None:
        instance = get_object_or_404(MaintenanceWindow, pk=pk, project=request.project)
    errors = {}
    if request.method == "POST":
        require(request, ROLE.MEMBER)
        data = {f: (request.POST.get(f, "").strip() or None) for f in WINDOW_FIELDS}
        data["name"] = data["name"] or ""
        data["tag"] = data["tag"] or ""
        data["schedule"] = data["schedule"] or ""
        data["timezone"] = data["timezone"] or request.zone.key
        data["duration"], problem = forms.join_seconds(data["duration"] or "",
                                                       request.POST.get("duration_unit", "seconds"))
        if problem:
            errors["duration"] = problem
        try:  # a one-off's start and end are read in the window's zone
            zone = schedule.validate_timezone(data["timezone"])
        except schedule.ScheduleError as e:
            errors["timezone"] = str(e)
        # a time left as the form showed it (in the same zone) stays as stored
        unchanged_zone = instance is not None and data["timezone"] == instance.timezone
        for field in ("starts_at", "ends_at"):
            if "timezone" in errors:
                break
            shown = getattr(instance, field) if unchanged_zone else None
            data[field], problem = _moment(data[field], zone, shown)
            if problem:
                errors[field] = problem
        if not errors:
            saved, errors = _save(request, MaintenanceWindowSerializer, instance, data)
            if saved is not None:
                return redirect("dashboard:windows")
    listed = []
    for w in MaintenanceWindow.objects.filter(project=request.project).order_by("pk"):
        until = MaintenanceWindowSerializer(w, context={"request": request}).data[
            "active_until"]
        listed.append({"w": w, "starts": local(w.starts_at, request.zone),
                       "ends": local(w.ends_at, request.zone),
                       "duration": duration(w.duration),
                       "until": local(datetime.fromisoformat(until), request.zone)
                       if until else None})
    values = request.POST
    typed_duration = (values.get("duration", ""), values.get("duration_unit", "seconds"))
    if request.method != "POST":
        values = MaintenanceWindowSerializer(instance, context={"request": request}).data \
            if instance else {"timezone": request.zone.key}
        typed_duration = forms.split_seconds(values.get("duration"))
        if instance:  # shown as entered: wall times in the window's zone
            zone = schedule.validate_timezone(instance.timezone or "UTC")
            values = {**values, **{f: forms.local_input(getattr(instance, f), zone)
                                   for f in ("starts_at", "ends_at") if getattr(instance, f)}}
    return render(request, "dashboard/windows.html", {
        "rows": listed, "instance": instance, "errors": errors, "values": values,
        "zone": request.zone.key, "zones": forms.zone_names(), "units": list(forms.UNITS),
        "duration": typed_duration,
        "monitors": Monitor.objects.filter(project=request.project, deleted_at__isnull=True
                                           ).order_by(Lower("name"), "pk").only("pk", "name"),
        "can_edit": can(request, ROLE.MEMBER),
    }, status=400 if errors else 200)


FIRST_YEAR, LAST_YEAR = 2000, 2100


def _moment(value: str | None, zone, shown) -> tuple[str | None, str]:
    """A start or end as typed (a ``datetime-local`` value, or ISO 8601 with an
    offset) read in ``zone`` (the window's) by :func:`forms.read_local` when it has
    no offset, ``shown`` the stored time the form showed (or None): (value for the
    serializer, a problem or ""). A value that does not parse goes to the
    serializer, whose message says what it takes."""
    if not value:
        return value, ""
    moment = forms.read_local(value, zone, shown)
    if moment is None:
        return value, ""
    if not FIRST_YEAR <= moment.year <= LAST_YEAR:
        return value, f"the year must be {FIRST_YEAR} to {LAST_YEAR}"
    return moment.isoformat(), ""


@page
def window_delete(request, pk: int):
    require(request, ROLE.MEMBER)
    window = get_object_or_404(MaintenanceWindow, pk=pk, project=request.project)
    if request.method == "POST":
        delete_window(window)
        return redirect("dashboard:windows")
    return _confirm(request, f"Delete maintenance window {window.name}?",
                    "Notifications it holds back are sent if their incidents are still open.",
                    reverse("dashboard:windows"))


# --- API keys ---------------------------------------------------------------------------

@page
def keys(request):
    """``/keys/``: the project's keys; a new key is shown once, on this page."""
    errors, new_key = {}, None
    if request.method == "POST":
        require(request, ROLE.ADMIN)
        saved, errors = _save(request, ApiKeySerializer, None, {
            "name": request.POST.get("name", ""), "read_only": bool(request.POST.get(
                "read_only"))})
        if saved is not None:
            new_key = saved.plaintext
    refused = PLAN in errors
    plan_limit = _plan_limit(request, errors, "api_keys")
    rows = [{"k": k, "created": local(k.created_at, request.zone),
             "used": local(k.last_used_at, request.zone) if k.last_used_at else "never",
             "revoked": local(k.revoked_at, request.zone) if k.revoked_at else ""}
            for k in ApiKey.objects.filter(project=request.project).order_by("-pk")]
    return render(request, "dashboard/keys.html", {
        "rows": rows, "errors": errors, "new_key": new_key,
        "can_admin": can(request, ROLE.ADMIN),
        "ping_key": request.project.ping_key if can(request, ROLE.MEMBER) else None,
        "badge_key": request.project.badge_key, "plan_limit": plan_limit,
    }, status=_status(refused, errors))


@page
def key_revoke(request, pk: int):
    require(request, ROLE.ADMIN)
    key = get_object_or_404(ApiKey, pk=pk, project=request.project)
    if request.method == "POST":
        revoke_key(key, timezone.now())
        return redirect("dashboard:keys")
    return _confirm(request, f"Revoke API key {key.prefix}…?",
                    "Scripts using it get 401 from then on.", reverse("dashboard:keys"))


@page
@require_POST
def badge_key_renew(request):
    """POST ``/keys/badge/``: a new badge key; every badge URL with the old one 404s."""
    require(request, ROLE.ADMIN)
    old, request.project.badge_key = request.project.badge_key, _badge_key()
    request.project.save(update_fields=["badge_key"])
    audit.record_update(request.project.organisation, request.project, {"badge_key": old},
                        {"badge_key": request.project.badge_key}, secret={"badge_key"})
    return redirect("dashboard:keys")


# --- usage ------------------------------------------------------------------------------

USAGE_ROWS = (("monitors", "Monitors"), ("channels", "Channels"), ("members", "Members"),
              ("api_keys", "API keys"))


@page
def usage_page(request):
    """``/usage/``: the organisation's counts against its plan and its pings this
    month (members and above: what ``GET /api/v1/usage/`` answers)."""
    require(request, ROLE.MEMBER)
    org = request.project.organisation
    got = usage.usage(org, timezone.now())
    return render(request, "dashboard/usage.html", {
        "org": org, "usage": got,
        "rows": [(label, got[name]["used"], got[name]["limit"]) for name, label in USAGE_ROWS]})


# --- members ----------------------------------------------------------------------------

@page
def members(request):
    """``/members/``: the organisation's people and roles, and the invitations
    waiting; admins add, invite, change, remove."""
    org = request.project.organisation
    errors = {}
    if request.method == "POST":
        require(request, ROLE.ADMIN)
        target = request.POST.get("member")
        instance = (Membership.objects.filter(pk=form_id(target), organisation=org).first()
                    if form_id(target) is not None else None)
        data = {"role": request.POST.get("role", "member"), "organisation": org.pk}
        if instance is None:
            for field in ("username", "email"):
                if value := request.POST.get(field, "").strip():
                    data[field] = value
            if who := request.POST.get("who", "").strip():  # one box: a name or an email
                data["email" if "@" in who else "username"] = who
        if target is not None and instance is None:
            errors = {"member": "no such member of this organisation"}
        else:
            serializer = MemberSerializer(instance, data=data, partial=instance is not None,
                                          context={"request": request})
            if serializer.is_valid():
                saved, errors = _saved(serializer)
                if saved is not None:
                    return redirect("dashboard:members")
            else:
                errors = _errors(serializer)
    refused = PLAN in errors
    plan_limit = _plan_limit(request, errors, "members")
    rows = Membership.objects.filter(organisation=org).select_related("user").order_by(
        "user__username")
    waiting = Invitation.objects.filter(organisation=org, accepted_at__isnull=True).order_by(
        "email")
    return render(request, "dashboard/members.html", {
        "rows": rows, "errors": errors, "roles": Membership.Role.values, "org": org,
        "invitations": waiting,
        "values": request.POST if errors or refused else {}, "plan_limit": plan_limit,
        "can_admin": can(request, ROLE.ADMIN), "is_owner": can(request, ROLE.OWNER)},
        status=_status(refused, errors))


@page
def member_remove(request, pk: int):
    from rest_framework import exceptions, serializers

    require(request, ROLE.ADMIN)
    membership = get_object_or_404(Membership.objects.select_related("user"), pk=pk,
                                   organisation=request.project.organisation)
    if request.method == "POST":
        view = MemberViewSet(request=request)
        try:
            view.perform_destroy(membership)
        except (exceptions.PermissionDenied, serializers.ValidationError) as e:
            return _confirm(request, f"Remove {membership.user.username}?",
                            f"Not possible: {_detail(e)}", reverse("dashboard:members"),
                            blocked=True)
        return redirect("dashboard:members")
    return _confirm(request, f"Remove {membership.user.username}?",
                    "They lose access to every project of the organisation.",
                    reverse("dashboard:members"))
