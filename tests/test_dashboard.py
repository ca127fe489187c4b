"""The web dashboard, through Django's test client (the browser path is
tests/test_browser.py): every page renders for each role, forms go through the
API's rules, viewers get no buttons and a 403 on POST, another tenant's pages are
404s, the monitors list takes a bounded number of queries, badges."""
import re
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import ApiKey, Membership, Profile
from alerts.models import Channel, EscalationPolicy, EscalationTier, Incident, MaintenanceWindow
from monitors.models import Monitor, Run
from monitors.pings import PingInput, ingest
from tests.conftest import new_project

pytestmark = pytest.mark.django_db
S = timedelta(seconds=1)


def signed_in(project, role="admin", name=None) -> Client:
    name = name or role
    user = get_user_model().objects.create_user(name, f"{name}@example.com", "pw-" + name)
    Membership.objects.create(organisation=project.organisation, user=user, role=role)
    Profile.objects.create(user=user, timezone="Europe/Berlin")
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def admin(project):
    return signed_in(project)


@pytest.fixture
def world(project, make_monitor):
    """A monitor that failed (an open incident, a delivery), a channel, a policy."""
    hook = Channel.objects.create(project=project, kind="webhook", name="ops-hook",
                                  config={"url": "https://hook.test/h", "secret": "s3cret"})
    now = timezone.now()
    m = make_monitor(name="nightly-backup", kind="cron", schedule="0 3 * * *",
                     timezone="Europe/Berlin", grace=600 * S, max_runtime=3600 * S,
                     created=now - timedelta(days=2), channels=[hook], tags=["db"])
    ingest(m.pk, PingInput("start"), now - 100 * S)
    ingest(m.pk, PingInput("fail", exit_status=3, body=b"disk full"), now - 40 * S)
    policy = EscalationPolicy.objects.create(project=project, name="on-call")
    EscalationTier.objects.create(policy=policy, position=0, delay=0 * S).channels.set([hook])
    return {"monitor": m, "hook": hook, "policy": policy,
            "incident": Incident.objects.get(monitor=m)}


def text(resp) -> str:
    return re.sub(r"\s+", " ", resp.content.decode())


def test_sign_in_is_required_and_works(project):
    get_user_model().objects.create_user("ana", "ana@example.com", "a long passphrase 42")
    assert Client().get("/").url == "/login/?next=/"
    client = Client()
    resp = client.post("/login/", {"username": "ana", "password": "a long passphrase 42"})
    assert resp.status_code == 302
    nothing = client.get("/")  # a person in no organisation: a page that says so
    assert nothing.status_code == 200
    assert "You are not in any organisation yet" in text(nothing) and "Sign out" in text(nothing)
    Membership.objects.create(organisation=project.organisation,
                              user=get_user_model().objects.get(username="ana"))
    assert "Monitors" in text(client.get("/"))
    assert client.post("/logout/").status_code == 302
    assert client.get("/").status_code == 302


def test_the_monitors_list(admin, world):
    page = text(admin.get("/"))
    assert '<span class="status status-down">down</span>' in page
    assert "nightly-backup" in page and "#db" in page
    assert "At 03:00 (Europe/Berlin)" in page
    assert re.search(r'<time title="\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CE[S]?T">40 s ago</time>',
                     page)
    assert 'aria-label="last runs: failed"' in page
    assert "New monitor" in page
    assert "nightly-backup" not in text(admin.get("/?status=up"))
    assert "nightly-backup" in text(admin.get("/?tag=db&q=NIGHT"))
    rows = admin.get("/?fragment=rows")
    assert rows.content.decode().lstrip().startswith("<tr>")


def test_the_monitor_page(admin, world):
    m = world["monitor"]
    page = text(admin.get(f"/monitors/{m.pk}/"))
    assert f'value="{m.ping_url}"' in page
    assert f"/ping/{m.project.ping_key}/nightly-backup" in page
    assert "cronradar exec --url" in page and "kind: CronJob" in page and "ExecStopPost" in page
    assert "<svg" in page and "max_runtime 60 min" in page and "✕" not in page.split("<svg")[0]
    assert "disk full" in page and "exit_status" not in page
    assert f'href="/incidents/{world["incident"].pk}/"' in page
    assert admin.get(f"/monitors/{m.pk + 1000}/").status_code == 404


def test_create_edit_pause_delete_a_monitor(admin, project):
    bad = admin.post("/monitors/new/", {"name": "job", "kind": "cron", "schedule": "61 * * * *",
                                        "timezone": "UTC", "grace": "60", "all_channels": "1"})
    assert bad.status_code == 400
    assert "bad minute field &#x27;61&#x27;" in bad.content.decode()
    made = admin.post("/monitors/new/", {"name": "job", "kind": "interval", "period": "300",
                                         "grace": "60", "tags": "a, b", "all_channels": "1",
                                         "timezone": "UTC", "concurrency": "forbid",
                                         "max_attempts": "1", "urgency": "high"})
    m = Monitor.objects.get(name="job")
    assert made.url == f"/monitors/{m.pk}/"
    assert (m.period, m.grace, m.tags, m.concurrency) == (300 * S, 60 * S, ["a", "b"], "forbid")
    admin.post(f"/monitors/{m.pk}/edit/", {"name": "job", "kind": "interval", "period": "600",
                                           "grace": "60", "timezone": "UTC",
                                           "all_channels": "1", "max_runtime": ""})
    m.refresh_from_db()
    assert m.period == 600 * S
    admin.post(f"/monitors/{m.pk}/pause/")
    assert Monitor.objects.get(pk=m.pk).paused is True
    admin.post(f"/monitors/{m.pk}/pause/", {"paused": "0"})
    assert Monitor.objects.get(pk=m.pk).paused is False
    assert "Delete monitor job?" in text(admin.get(f"/monitors/{m.pk}/delete/"))
    admin.post(f"/monitors/{m.pk}/delete/")
    assert Monitor.objects.get(pk=m.pk).deleted_at is not None


def test_acknowledge_and_resolve_from_the_incident_page(admin, world):
    i = world["incident"]
    page = text(admin.get(f"/incidents/{i.pk}/"))
    assert "opened" in page and "ops-hook" in page and "Acknowledge" in page
    admin.post(f"/incidents/{i.pk}/ack/", {"note": "on it"})
    i.refresh_from_db()
    assert (i.acknowledged_by, i.resolved_at) == ("admin", None)
    admin.post(f"/incidents/{i.pk}/resolve/")
    i.refresh_from_db()
    assert i.resolution and i.resolved_at is not None
    listed = text(admin.get("/incidents/"))
    assert '<span class="status status-resolved">resolved</span>' in listed


def test_setup_pages_create_through_the_api_rules(admin, world, project):
    assert admin.post("/channels/", {"kind": "slack", "name": "x", "url": "ftp://no"}
                      ).status_code == 400
    admin.post("/channels/", {"kind": "email", "name": "mail", "to": "a@example.com, "
                                                                     "b@example.com"})
    assert Channel.objects.get(name="mail").config == {"to": ["a@example.com",
                                                              "b@example.com"]}
    hook = world["hook"]
    admin.post("/policies/", {"name": "two", "repeat": "1", "tier0_delay": "0",
                              "tier0_channels": [hook.pk], "tier1_delay": "600",
                              "tier1_channels": [hook.pk]})
    two = EscalationPolicy.objects.get(name="two")
    assert [int(t.delay.total_seconds()) for t in two.tiers.order_by("position")] == [0, 600]
    admin.post("/maintenance/", {"name": "upgrade", "tag": "db",
                                 "starts_at": "2030-01-01T00:00:00Z",
                                 "ends_at": "2030-01-01T01:00:00Z"})
    assert MaintenanceWindow.objects.get(name="upgrade").tag == "db"
    made = admin.post("/keys/", {"name": "ci", "read_only": "1"})
    key = re.search(r'id="new-key" type="text" readonly value="(cr_[^"]+)"',
                    made.content.decode()).group(1)
    assert ApiKey.find(key).read_only is True
    assert key not in admin.get("/keys/").content.decode()  # shown once
    assert "Delete channel ops-hook?" in text(admin.get(f"/channels/{hook.pk}/delete/"))
    assert "only channel of tier 1" in text(admin.get(f"/channels/{hook.pk}/delete/"))
    for url in ("/channels/", "/policies/", "/maintenance/", "/keys/", "/members/",
                "/account/", "/incidents/"):
        assert admin.get(url).status_code == 200, url


def test_viewers_see_no_buttons_and_cannot_post(project, world):
    viewer = signed_in(project, "viewer")
    m = world["monitor"]
    page = text(viewer.get(f"/monitors/{m.pk}/"))
    assert "Edit" not in page and "Pause" not in page and m.ping_url not in page
    assert "s3cret" not in text(viewer.get("/channels/"))
    for url in (f"/monitors/{m.pk}/pause/", f"/incidents/{world['incident'].pk}/ack/",
                "/channels/", "/keys/", "/monitors/new/", f"/monitors/{m.pk}/delete/"):
        assert viewer.post(url, {"name": "x"}).status_code == 403, url
    assert Monitor.objects.get(pk=m.pk).paused is False


def test_another_tenants_pages_are_404(admin, project):
    other = new_project("bravo")
    m = Monitor.objects.create(project=other, name="theirs", slug="theirs", period=60 * S,
                               grace=S)
    ingest(m.pk, PingInput("fail"), timezone.now())
    incident = Incident.objects.get(monitor=m)
    ch = Channel.objects.create(project=other, kind="webhook", config={"url": "https://b.test"})
    for method, url in [("get", f"/monitors/{m.pk}/"), ("get", f"/monitors/{m.pk}/edit/"),
                        ("post", f"/monitors/{m.pk}/pause/"),
                        ("post", f"/monitors/{m.pk}/delete/"),
                        ("get", f"/incidents/{incident.pk}/"),
                        ("post", f"/incidents/{incident.pk}/ack/"),
                        ("get", f"/channels/{ch.pk}/"), ("post", f"/channels/{ch.pk}/test/"),
                        ("post", f"/channels/{ch.pk}/delete/")]:
        assert getattr(admin, method)(url).status_code == 404, (method, url)
    assert admin.post("/switch/", {"project": other.pk}).status_code == 404
    assert "theirs" not in text(admin.get("/")) and "theirs" not in text(admin.get("/incidents/"))
    assert Monitor.objects.get(pk=m.pk).paused is False


def test_another_tenants_setup_pages_are_404(admin, project):
    """The isolation matrix, continued: policies, maintenance windows, API keys and
    members of another organisation are 404 to read and to change, and stay."""
    other = new_project("charlie")
    policy = EscalationPolicy.objects.create(project=other, name="their policy")
    now = timezone.now()
    window = MaintenanceWindow.objects.create(project=other, name="their window", tag="db",
                                              starts_at=now, ends_at=now + 3600 * S)
    key, _ = ApiKey.issue(other)
    stranger = get_user_model().objects.create_user("stranger", "s@example.com", "pw")
    member = Membership.objects.create(organisation=other.organisation, user=stranger)
    for method, url in [("get", f"/policies/{policy.pk}/"),
                        ("post", f"/policies/{policy.pk}/"),
                        ("post", f"/policies/{policy.pk}/delete/"),
                        ("get", f"/maintenance/{window.pk}/"),
                        ("post", f"/maintenance/{window.pk}/"),
                        ("post", f"/maintenance/{window.pk}/delete/"),
                        ("post", f"/keys/{key.pk}/revoke/"),
                        ("post", f"/members/{member.pk}/remove/")]:
        assert getattr(admin, method)(url, {"name": "mine"}).status_code == 404, (method, url)
    for page in ("/policies/", "/maintenance/", "/keys/", "/members/"):
        body = text(admin.get(page))
        assert "their policy" not in body and "their window" not in body
        assert key.prefix not in body and "stranger" not in body
    assert EscalationPolicy.objects.get(pk=policy.pk).name == "their policy"
    assert MaintenanceWindow.objects.filter(pk=window.pk).exists()
    assert ApiKey.objects.get(pk=key.pk).revoked_at is None
    assert Membership.objects.filter(pk=member.pk).exists()


def test_the_monitors_list_takes_a_bounded_number_of_queries(admin, project):
    now = timezone.now()
    monitors = Monitor.objects.bulk_create(
        Monitor(project=project, name=f"job-{i:04}", slug=f"job-{i:04}", period=60 * S,
                grace=S, last_ping_at=now, next_expected_at=now + 60 * S) for i in range(1000))
    Run.objects.bulk_create(Run(monitor=m, slot_at=now - k * 60 * S, started_at=now,
                                ended_at=now, outcome="succeeded")
                            for m in monitors[:200] for k in range(25))
    with CaptureQueriesContext(connection) as queries:
        resp = admin.get("/")
    assert resp.status_code == 200 and resp.content.decode().count("<tr>") == 1001
    assert len(queries) <= 12, [q["sql"][:80] for q in queries.captured_queries]


def test_badges(client, project, world, make_monitor):
    key = project.badge_key
    make_monitor(name="fine", tags=["db"], period=3600 * S, grace=60 * S,
                 created=timezone.now())
    one = client.get(f"/badge/{key}/nightly-backup.svg")
    assert one["Content-Type"] == "image/svg+xml" and 'aria-label="nightly-backup: down"' in (
        one.content.decode())
    assert client.get(f"/badge/{key}/db.json").json() == {
        "name": "db", "status": "down", "total": 2, "down": 1, "late": 0}
    assert client.get(f"/badge/{key}/fine.json").json()["status"] == "up"
    assert client.get(f"/badge/{key}/nothing.svg").status_code == 404
    assert client.get("/badge/wrong-key/db.svg").status_code == 404
    admin = signed_in(project, "admin", "boss")
    admin.post("/keys/badge/")
    assert client.get(f"/badge/{key}/db.svg").status_code == 404  # the old key is revoked


def test_times_are_in_the_persons_zone(admin, world):
    page = text(admin.get(f"/incidents/{world['incident'].pk}/"))
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T", page)
    admin.post("/account/", {"timezone": "Asia/Tokyo"})
    assert " JST" in text(admin.get(f"/incidents/{world['incident'].pk}/"))
    assert admin.post("/account/", {"timezone": "Mars/Olympus"}).status_code == 400


# --- getting started: organisations without owner or project, people without either ---

def test_a_person_in_no_organisation_gets_a_page_not_a_bare_404(db):
    staff = get_user_model().objects.create_user("root", "r@example.com", "pw", is_staff=True)
    client = Client()
    client.force_login(staff)
    page = client.get("/")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    assert 'href="/admin/"' in text(page) and "Sign out" in text(page)
    assert "createuser root --organisation NAME" in text(page)
    other = client.get("/channels/")
    assert other.status_code == 404 and "You are not in any organisation yet" in text(other)


def test_an_organisation_without_a_project_offers_to_create_one(db):
    from accounts.models import Organisation, Project

    org = Organisation.objects.create(name="acme")
    ana = get_user_model().objects.create_user("ana", "ana@example.com", "pw")
    Membership.objects.create(organisation=org, user=ana, role="owner")
    client = Client()
    client.force_login(ana)
    page = client.get("/")
    assert page.status_code == 200 and "No project yet" in text(page)
    assert 'action="/projects/new/"' in text(page)
    assert client.post("/projects/new/", {"organisation": org.pk, "name": ""}
                       ).status_code == 400
    made = client.post("/projects/new/", {"organisation": org.pk, "name": "production"})
    assert made.status_code == 302 and made.url == "/"
    assert Project.objects.get(organisation=org).name == "production"
    assert "Monitors" in text(client.get("/")) and "acme / production" in text(client.get("/"))
    assert 'href="/projects/new/"' in text(client.get("/"))  # the switcher offers another


def test_only_admins_create_projects(project):
    member = signed_in(project, "member")
    assert 'href="/projects/new/"' not in text(member.get("/"))
    assert member.post("/projects/new/", {"organisation": project.organisation_id,
                                          "name": "mine"}).status_code == 403
    assert not project.organisation.projects.filter(name="mine").exists()
    viewer_only = get_user_model().objects.create_user("vic", "v@example.com", "pw")
    from accounts.models import Organisation

    Membership.objects.create(organisation=Organisation.objects.create(name="lone"),
                              user=viewer_only, role="viewer")
    client = Client()
    client.force_login(viewer_only)
    page = text(client.get("/"))
    assert "No project yet" in page and "Ask an admin or owner" in page
    assert 'action="/projects/new/"' not in page


def test_the_404_page_is_html_with_navigation(admin):
    missing = admin.get("/monitors/99999/")
    assert missing.status_code == 404 and missing["Content-Type"].startswith("text/html")
    assert "<h1>Not found</h1>" in text(missing) and 'href="/incidents/"' in text(missing)
    nowhere = admin.get("/no/such/page/")
    assert nowhere.status_code == 404 and 'href="/incidents/"' in text(nowhere)
    assert Client().get("/cli/nothing").content == b"not found\n"  # machines: plain text


@pytest.mark.parametrize("back, lands", [
    ("/monitors/3/", "/"), ("/monitors/3/edit/", "/"), ("/incidents/5/", "/incidents/"),
    ("/channels/4/", "/channels/"), ("/maintenance/2/", "/maintenance/"),
    ("/policies/7/", "/policies/"), ("/incidents/", "/incidents/"), ("/", "/"),
    ("/account/", "/account/"), ("https://evil.example/", "/")])
def test_switching_project_from_an_object_page_lands_on_its_list(admin, project, back, lands):
    other = project.organisation.projects.create(name="staging")
    resp = admin.post("/switch/", {"project": other.pk, "next": back})
    assert (resp.status_code, resp.url) == (302, lands)


def test_a_refusal_is_a_403_page_logged_in_one_line(project, world, caplog):
    viewer = signed_in(project, "viewer")
    with caplog.at_level("INFO"):
        resp = viewer.post("/channels/", {"name": "x"})
    assert resp.status_code == 403 and "this needs the admin role" in text(resp)
    assert 'href="/incidents/"' in text(resp)  # a page with the navigation
    refusals = [r for r in caplog.records if "Forbidden" in r.getMessage()]
    assert len(refusals) == 1 and refusals[0].exc_info is None
    assert all(r.exc_info is None for r in caplog.records)


# --- crafted posts, password links, adding people -----------------------------------

@pytest.mark.parametrize("url, form", [
    ("/monitors/new/", {"name": "x", "kind": "interval", "period": "60", "grace": "60",
                        "timezone": "UTC", "channels": "²"}),
    ("EDIT", {"name": "x", "kind": "interval", "period": "60", "grace": "60",
              "timezone": "UTC", "channels": "١٢"}),
    ("/policies/", {"name": "p", "tier0_delay": "0", "tier0_channels": "²"}),
    ("/switch/", {"project": "²"}),
    ("/switch/", {"project": "abc"}),
    ("/members/", {"member": "²", "role": "viewer"}),
    ("/members/", {"member": "abc", "role": "viewer"}),
    ("/members/", {"member": "99999999999999999999999", "role": "viewer"}),
])
def test_crafted_ids_are_form_errors_not_500s(admin, world, url, form):
    if url == "EDIT":
        url = f"/monitors/{world['monitor'].pk}/edit/"
    resp = admin.post(url, form)
    assert 400 <= resp.status_code < 500, resp.status_code
    if url != "/switch/":
        assert 'class="alert"' in text(resp) or 'class="error"' in text(resp)


def test_the_reset_link_is_on_the_base_url_whatever_the_host(project, mailoutbox, settings):
    settings.CRONRADAR_BASE_URL = "https://cron.example.org"
    get_user_model().objects.create_user("ana", "ana@example.com", "pw-ana")
    resp = Client().post("/password-reset/", {"email": "ana@example.com"},
                         HTTP_HOST="evil.example")
    assert resp.status_code == 302
    (mail,) = mailoutbox
    assert "https://cron.example.org/password-reset/" in mail.body
    assert "evil.example" not in mail.body and "evil.example" not in mail.subject


def test_members_page_adds_only_known_people_and_creates_new_ones(project, mailoutbox,
                                                                  settings):
    settings.CRONRADAR_BASE_URL = "https://cron.example.org"
    admin = signed_in(project, "admin", "alice")
    from accounts.models import Organisation

    get_user_model().objects.create_user("stranger", "s@example.com", "pw")
    Membership.objects.create(organisation=Organisation.objects.create(name="theirs"),
                              user=get_user_model().objects.get(username="stranger"))
    answers = [admin.post("/members/", {"username": who, "role": "member"})
               for who in ("stranger", "nobody")]
    answers += [admin.post("/members/", {"email": who, "role": "member"})
                for who in ("s@example.com", "n@example.com")]
    bodies = [(a.status_code, re.sub(r"stranger|nobody|s@example\.com|n@example\.com|"
                                     r'name="csrfmiddlewaretoken" value="[^"]+"', "?",
                                     text(a))) for a in answers]
    # an account elsewhere and no account answer the same: nothing to learn from
    assert bodies[0] == bodies[1] and bodies[2] == bodies[3] and bodies[0][0] == 400
    assert "no such person in your organisations; to add someone new, give a new username " \
           "and email" in text(answers[0])
    assert not Membership.objects.filter(user__username="stranger",
                                         organisation=project.organisation).exists()
    taken = admin.post("/members/", {"username": "newbie", "email": "bad", "role": "member"})
    assert taken.status_code == 400 and "valid email" in text(taken)
    made = admin.post("/members/", {"username": "newbie", "email": "nb@example.com",
                                    "role": "viewer"})
    assert made.status_code == 302
    newbie = Membership.objects.get(user__username="newbie")
    assert (newbie.role, newbie.organisation, newbie.user.has_usable_password()) == (
        "viewer", project.organisation, False)
    (mail,) = mailoutbox
    assert mail.to == ["nb@example.com"] and "Your username is newbie" in mail.body
    link = re.search(r"https://cron\.example\.org(/password-reset/\S+/)", mail.body).group(1)
    chosen = Client().get(link, follow=True)
    assert "Choose a new password" in text(chosen)


# --- the monitor page's snippets ---------------------------------------------------------

def _m(**kw):
    from types import SimpleNamespace

    base = {"kind": "cron", "schedule": "0 3 * * *", "timezone": "UTC", "period": None,
            "grace": 300 * S, "max_runtime": None, "concurrency": "allow", "max_attempts": 1,
            "slug": "nightly-backup"}
    return SimpleNamespace(**{**base, **kw})


URL = "https://cr.example/ping/UUID"


def test_the_cronjob_exits_with_the_jobs_status_and_has_the_monitors_limits():
    from cronradar.dashboard.snippets import cronjob

    text_ = cronjob(_m(timezone="Europe/Berlin", concurrency="forbid", max_attempts=3,
                       max_runtime=3600 * S, grace=600 * S, slug="Nightly_Backup.v2"), URL)
    assert "metadata: {name: nightly-backup-v2}" in text_
    assert '  schedule: "0 3 * * *"\n  timeZone: Europe/Berlin\n' in text_
    assert "  concurrencyPolicy: Forbid\n  startingDeadlineSeconds: 600\n" in text_
    assert "      activeDeadlineSeconds: 3600\n      backoffLimit: 2\n" in text_
    assert ('                  /path/to/job; code=$?\n'
            '                  curl -fsS -m 10 --retry 5 -o /dev/null "$PING/$code?rid=$RID"\n'
            '                  exit $code\n') in text_
    plain = cronjob(_m(concurrency="replace", slug="x" * 80), URL)
    assert "timeZone" not in plain and "activeDeadlineSeconds" not in plain
    assert "concurrencyPolicy: Replace" in plain and "backoffLimit: 0" in plain
    assert f"metadata: {{name: {'x' * 52}}}" in plain
    import yaml

    doc = yaml.safe_load(text_)
    assert doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0][
        "args"][0].rstrip().endswith("exit $code")


def test_a_cronjob_snippet_run_by_sh_exits_with_the_jobs_status(tmp_path):
    """The container's script, run by sh with curl failing: the job's status wins."""
    import subprocess

    from cronradar.dashboard.snippets import cronjob

    script = cronjob(_m(), URL).split("- |\n")[1]
    script = "\n".join(line.strip() for line in script.splitlines())
    script = script.replace("/path/to/job", "sh -c 'exit 7'").replace("curl ", "false ")
    assert subprocess.run(["sh", "-c", script]).returncode == 7


@pytest.mark.parametrize("seconds, line", [
    (60, "* * * * *"), (300, "*/5 * * * *"), (900, "*/15 * * * *"), (3600, "0 * * * *"),
    (7200, "0 */2 * * *"), (21600, "0 */6 * * *"), (86400, "0 0 * * *"),
    (420, None), (90, None), (5 * 3600, None), (2 * 86400, None), (30, None)])
def test_interval_snippets_claim_a_cron_line_only_when_it_is_exact(seconds, line):
    from cronradar.dashboard.snippets import cron_for_period, crontab

    assert cron_for_period(seconds) == line
    text_ = crontab(_m(kind="interval", schedule="", period=seconds * S), URL)
    if line:
        assert text_.startswith(line + "  RID=")
    else:
        assert text_.startswith("# SCHEDULE is a placeholder") and "\nSCHEDULE  RID=" in text_
        assert "*/5" not in text_


def test_zoned_cron_lines_get_cron_tz_and_systemd_handles_signals():
    from cronradar.dashboard.snippets import cronradar_exec, crontab, systemd

    zoned = _m(timezone="America/New_York")
    assert "\nCRON_TZ=America/New_York\n0 3 * * *  RID=" in crontab(zoned, URL)
    assert "Vixie cron and cronie honour it" in crontab(zoned, URL)
    assert cronradar_exec(zoned, URL).endswith(
        "CRON_TZ=America/New_York\n0 3 * * *  cronradar exec --url " + URL + " -- "
        "/path/to/job.sh")
    assert "CRON_TZ" not in crontab(_m(), URL)
    assert ('\nExecStopPost=-/bin/sh -c \'if [ "$$EXIT_CODE" = exited ]; then '
            's=$$EXIT_STATUS; else s=fail; fi; curl -fsS -m 10 --retry 5 -o /dev/null '
            '"$$PING/$$s"\'\n') in systemd(_m(), URL)
    assert f"Environment=PING={URL}\nExecStartPre=-/usr/bin/curl" in systemd(_m(), URL)


def test_the_snippets_agree_with_the_readme():
    from pathlib import Path

    from cronradar.dashboard.snippets import cronjob, crontab, systemd

    readme = Path(__file__).resolve().parent.parent.joinpath("docs", "pinging.md").read_text()
    readme_url = "https://cronradar.example.com/ping/UUID"
    line = next(x for x in readme.splitlines() if x.startswith("0 3 * * *  RID="))
    assert crontab(_m(), readme_url) == line.replace("/usr/local/bin/backup.sh",
                                                     "/path/to/job.sh")
    stop = next(x for x in readme.splitlines() if x.startswith("ExecStopPost="))
    assert f"\n{stop}\n" in systemd(_m(), readme_url)
    for readme_line in ('curl -fsS -m 10 --retry 5 -o /dev/null "$PING/start?rid=$RID"',
                        'curl -fsS -m 10 --retry 5 -o /dev/null "$PING/$code?rid=$RID"',
                        "exit $code", "restartPolicy: Never"):
        assert readme_line in readme and readme_line in cronjob(_m(), readme_url)


def test_copy_buttons_are_hidden_until_javascript_shows_them(admin, world):
    page = admin.get(f"/monitors/{world['monitor'].pk}/").content.decode()
    buttons = re.findall(r"<button[^>]*data-copy[^>]*>", page)
    assert len(buttons) == 6 and all(" hidden" in b for b in buttons)
    assert "document.execCommand(\"copy\")" in page and "Select and copy" in page


def test_the_refreshed_rows_say_when_in_the_persons_zone(admin, world):
    page = text(admin.get("/"))
    assert re.search(r'As of <span id="as-of">\d\d:\d\d:\d\d Europe/Berlin</span>', page)
    rows = admin.get("/?fragment=rows")
    assert re.fullmatch(r"\d\d:\d\d:\d\d Europe/Berlin", rows["X-As-Of"])
    assert "toLocaleTimeString" not in page
    signed_out = Client().get("/?fragment=rows")  # what the refresh gets after the session
    assert signed_out.status_code == 302 and "X-As-Of" not in signed_out


@pytest.mark.parametrize("field, value", [
    ("kind", "weekly"), ("concurrency", "sometimes"), ("severity", "apocalyptic"),
    ("urgency", "whenever"), ("cron_semantics", "bsd")])
def test_every_monitor_form_error_is_shown(admin, field, value):
    form = {"name": "job", "kind": "cron", "schedule": "0 3 * * *", "timezone": "UTC",
            "grace": "60", "all_channels": "1", field: value}
    resp = admin.post("/monitors/new/", form)
    assert resp.status_code == 400
    page = text(resp)
    assert f"&quot;{value}&quot; is not a valid choice." in page
    assert page.count(f"&quot;{value}&quot; is not a valid choice.") == 2  # the list, the field


def test_nested_errors_read_as_text(admin):
    resp = admin.post("/monitors/new/", {"name": "job", "kind": "interval", "period": "60",
                                         "grace": "60", "timezone": "UTC", "all_channels": "1",
                                         "tags": "ok, " + "x" * 51})
    assert resp.status_code == 400
    page = text(resp)
    assert "Tags: item 2: Ensure this field has no more than 50 characters." in page
    assert "ErrorDetail" not in page and "{" not in page.split("<main")[1].split("<form")[0]


def test_maintenance_windows_are_in_the_persons_zone(admin, project):
    admin.post("/account/", {"timezone": "America/Los_Angeles"})
    made = admin.post("/maintenance/", {"name": "upgrade", "tag": "db",
                                        "starts_at": "2030-01-01 00:00",
                                        "ends_at": "2030-01-01T10:00:00Z"})
    assert made.status_code == 302
    w = MaintenanceWindow.objects.get(name="upgrade")
    assert w.starts_at.isoformat() == "2030-01-01T08:00:00+00:00"  # read in Los Angeles
    page = text(admin.get("/maintenance/"))
    assert "2030-01-01 00:00:00 PST → 2030-01-01 02:00:00 PST" in page
    assert "Times in America/Los_Angeles" in page and "2030-01-01T00:00:00Z" not in page
    assert "in your time zone, America/Los_Angeles" in page
    edit = text(admin.get(f"/maintenance/{w.pk}/"))
    assert 'value="2030-01-01T00:00:00-08:00"' in edit
    for bad in ("1999-12-31T00:00:00Z", "2101-01-01 00:00", "0001-01-01 00:00"):
        resp = admin.post("/maintenance/", {"name": "odd", "tag": "db", "starts_at": bad,
                                            "ends_at": "2030-01-01T10:00:00Z"})
        assert resp.status_code == 400 and "the year must be 2000 to 2100" in text(resp)
    assert not MaintenanceWindow.objects.filter(name="odd").exists()


# --- display ----------------------------------------------------------------------------

@pytest.mark.parametrize("schedule, words", [
    ("@daily", "At 00:00 (UTC)"), ("@hourly", "Every hour (UTC)"),
    ("@weekly", "At 00:00, only on Sunday (UTC)"),
    ("@monthly", "At 00:00, on day 1 of the month (UTC)"),
    ("0 0 * * 0-7", "At 00:00 (UTC)"), ("0 0 * * 1-7", "At 00:00 (UTC)"),
    ("0 0 * * 0,7", "At 00:00, only on Sunday (UTC)"),
    ("0 0 * * 5-7", "At 00:00, Friday through Sunday (UTC)")])
def test_schedules_in_words(schedule, words):
    from cronradar.dashboard.common import schedule_words

    assert schedule_words("cron", schedule, None, "UTC") == words


def test_the_zone_is_named_on_every_page(admin, world):
    admin.post("/account/", {"timezone": "Asia/Dubai"})
    for url in ("/", f"/monitors/{world['monitor'].pk}/", f"/incidents/{world['incident'].pk}/"):
        page = text(admin.get(url))
        assert "times in Asia/Dubai" in page and "+04" in page, url


def test_the_list_keeps_every_column_on_a_phone(admin, world):
    page = admin.get("/").content.decode()
    assert "hide-narrow" not in page.split('<table id="monitors"')[1]
    assert 'class="cards"' in page and 'data-label="Next expected"' in page
    assert "table.cards td[data-label]::before" in page


def test_badges_for_tags_with_any_character(client, project, make_monitor, admin):
    m = make_monitor(name="odd", tags=["team a:db", "x/y"], period=3600 * S, grace=60 * S,
                     created=timezone.now())
    page = text(admin.get(f"/monitors/{m.pk}/"))
    key = project.badge_key
    assert f"/badge/{key}/team%20a%3Adb.svg" in page and f"/badge/{key}/x%2Fy.svg" in page
    assert client.get(f"/badge/{key}/team%20a%3Adb.json").json() == {
        "name": "team a:db", "status": "up", "total": 1, "down": 0, "late": 0}
    assert client.get(f"/badge/{key}/x%2Fy.json").json()["total"] == 1
    assert 'aria-label="team a:db: up"' in client.get(
        f"/badge/{key}/team%20a%3Adb.svg").content.decode()


def test_a_note_over_the_limit_is_refused_not_cut(admin, world):
    i = world["incident"]
    resp = admin.post(f"/incidents/{i.pk}/ack/", {"note": "n" * 501})
    assert resp.status_code == 400
    assert "The note is 501 characters; the limit is 500." in text(resp)
    i.refresh_from_db()
    assert i.acknowledged_at is None
    admin.post(f"/incidents/{i.pk}/ack/", {"note": "n" * 500})
    i.refresh_from_db()
    assert i.acknowledged_at is not None
