"""The dashboard's routes (namespace ``dashboard``) and Django's auth views for
sign out and password reset (sign in is :class:`signup.Login`)."""
from django.contrib.auth import views as auth
from django.urls import path, re_path, reverse_lazy

from accounts.people import ResetForm, SetForm
from cronradar.dashboard import (
    account,
    audit,
    badges,
    docs,
    events,
    icon,
    imports,
    incidents,
    monitors,
    monitorsfile,
    organisation,
    setup,
    signup,
)

app_name = "dashboard"
DONE = reverse_lazy("dashboard:password_reset_done")

urlpatterns = [
    # the monitors; "Create the first account" while nobody exists
    path("", signup.home, name="monitors"),
    path("welcome/", signup.welcome, name="welcome"),
    path("welcome/<int:pk>/test-ping/", signup.test_ping, name="test_ping"),
    path("welcome/<int:pk>/pings.json", signup.recent_pings, name="recent_pings"),
    path("signup/", signup.signup_page, name="signup"),
    path("signup/verify/<uidb64>/<token>/", signup.signup_verify, name="signup_verify"),
    path("invitations/<str:token>/", signup.invitation, name="invitation"),
    path("monitors/new/", monitors.monitor_edit, name="monitor_new"),
    path("monitors/file/", monitorsfile.monitors_file, name="monitors_file"),
    re_path(r"^monitors/file/export\.(?P<fmt>json|yaml)$", monitorsfile.monitors_file_export,
            name="monitors_file_export"),
    path("monitors/<int:pk>/", monitors.monitor_detail, name="monitor"),
    path("monitors/<int:pk>/edit/", monitors.monitor_edit, name="monitor_edit"),
    path("monitors/<int:pk>/pause/", monitors.monitor_pause, name="monitor_pause"),
    path("monitors/<int:pk>/delete/", monitors.monitor_delete, name="monitor_delete"),
    path("monitors/<int:pk>/events/", events.event_log, name="monitor_events"),
    path("monitors/<int:pk>/pings/<int:ping_pk>/body/", events.ping_body, name="ping_body"),
    path("import/healthchecks/", imports.import_healthchecks, name="import_healthchecks"),
    path("import/crontab/", imports.import_manifest, {"kind": "crontab"}, name="import_crontab"),
    path("import/k8s/", imports.import_manifest, {"kind": "k8s"}, name="import_k8s"),
    path("incidents/", incidents.incident_list, name="incidents"),
    path("incidents/<int:pk>/", incidents.incident_detail, name="incident"),
    path("incidents/<int:pk>/<str:action>/", incidents.incident_act, name="incident_act"),
    path("channels/", setup.channels, name="channels"),
    path("channels/new/<str:kind>/", setup.channel_new, name="channel_new"),
    path("channels/<int:pk>/", setup.channel, name="channel"),
    path("channels/<int:pk>/test/", setup.channel_test, name="channel_test"),
    path("channels/<int:pk>/delete/", setup.channel_delete, name="channel_delete"),
    path("policies/", setup.policies, name="policies"),
    path("policies/<int:pk>/", setup.policies, name="policy"),
    path("policies/<int:pk>/delete/", setup.policy_delete, name="policy_delete"),
    path("maintenance/", setup.windows, name="windows"),
    path("maintenance/<int:pk>/", setup.windows, name="window"),
    path("maintenance/<int:pk>/delete/", setup.window_delete, name="window_delete"),
    path("keys/", setup.keys, name="keys"),
    path("keys/<int:pk>/revoke/", setup.key_revoke, name="key_revoke"),
    path("keys/badge/", setup.badge_key_renew, name="badge_key"),
    path("members/", setup.members, name="members"),
    path("usage/", setup.usage_page, name="usage"),
    path("members/<int:pk>/remove/", setup.member_remove, name="member_remove"),
    path("audit-log/", audit.audit_log, name="audit_log"),
    path("switch/", account.switch, name="switch"),
    path("projects/new/", account.project_new, name="project_new"),
    path("account/", account.profile, name="profile"),
    path("account/delete/", organisation.delete_account, name="account_delete"),
    path("organisation/export/", organisation.export, name="organisation_export"),
    path("organisation/delete/", organisation.delete, name="organisation_delete"),
    # the manual (docs/*.md): no sign-in; a name not among its pages is a 404
    path("docs/", docs.docs_page, name="docs"),
    path("docs/screenshots/<slug:name>.png", docs.screenshot, name="docs_screenshot"),
    path("docs/<slug:name>/", docs.docs_page, name="docs_page"),
    # any slug or tag, URL-quoted in the link (Django routes the decoded path)
    path("favicon.ico", icon.favicon, name="favicon"),
    re_path(r"^badge/(?P<key>[-\w]+)/(?P<name>.+)\.(?P<fmt>svg|json)$", badges.badge,
            name="badge"),
    path("login/", signup.Login.as_view(), name="login"),
    path("logout/", auth.LogoutView.as_view(), name="logout"),
    # ResetForm: the link is on CRONRADAR_BASE_URL, never on the request's Host header;
    # SetForm: a completed reset verifies the address
    path("password-reset/", auth.PasswordResetView.as_view(
        form_class=ResetForm, template_name="dashboard/password_reset.html", success_url=DONE,
        email_template_name="dashboard/password_reset_email.txt"), name="password_reset"),
    path("password-reset/sent/", auth.PasswordResetDoneView.as_view(
        template_name="dashboard/password_reset_done.html"), name="password_reset_done"),
    path("password-reset/<uidb64>/<token>/", auth.PasswordResetConfirmView.as_view(
        template_name="dashboard/password_reset_confirm.html", form_class=SetForm,
        success_url=reverse_lazy("dashboard:login")), name="password_reset_confirm"),
]
