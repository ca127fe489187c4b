"""cronradar_sdk.declarative and the cronradar apply / export verbs: checking a file,
placeholders, the diff; a prune over a list of 150 monitors in pages (a local
stand-in for the API); and round trips against a live `manage.py serve` (export →
apply changes nothing, a change is an exact diff, --dry-run changes nothing,
--prune, credentials as placeholders, 150 monitors)."""
import json
import os
import subprocess
from pathlib import Path

import pytest
from cronradar_sdk import cli, declarative
from cronradar_sdk.declarative import FileError, State

from tests.live import ROOT
from tests.sdk.conftest import paged

# --- a file, checked -------------------------------------------------------------------

def test_check_lists_every_problem_with_where_it_is():
    doc = {"version": 2, "colour": "red",
           "channels": [{"name": "ops", "kind": "slack", "config": {}},
                        {"name": "ops", "kind": "slack", "config": {}},
                        {"name": " ", "kind": "slack", "config": {}}],
           "escalation_policies": {"name": "x"},
           "monitors": [{"name": "no slug"}, {"slug": "a", "grace": 1, "colour": 1}, "x"]}
    with pytest.raises(FileError) as e:
        declarative.check(doc)
    assert e.value.problems == [
        "colour: unknown field",
        "version: must be 1",
        "channels[1] (ops): a second channel with name 'ops': each name once",
        "channels[2]: name: must be a string that is not blank",
        "escalation_policies: must be a list",
        "monitors[0]: slug: required",
        "monitors[1] (a): colour: unknown field",
        "monitors[2]: must be an object",
    ]


def test_check_applies_the_whole_schema_in_jsonschema_s_words():
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(declarative.schema())
    docs = [
        {"version": 1, "monitors": [{"slug": "q", "period": 60, "grace": "soon"}]},
        {"version": 1, "escalation_policies": [{"name": "p", "tiers": "x"}]},
        {"version": 1, "escalation_policies": [{"name": "p", "tiers": [
            {"delay": 0, "channels": "ops"}]}]},
        {"version": 1, "monitors": [{"slug": "q", "period": 60, "grace": 6, "tags": "db",
                                     "channels": 5}]},
        {"version": 1, "channels": [{"name": "z", "kind": "slack", "config": "x"}]},
        {"version": 1, "channels": [{"name": "z", "kind": "slack",
                                     "config": {"url": 5, "x": 1}}]},
        {"version": 1, "channels": [{"name": "z", "kind": "nope", "config": {}}]},
        {"version": 1, "monitors": [{"slug": "bad slug!", "kind": "cron", "grace": -1,
                                     "concurrency": "x", "methods": "GET",
                                     "max_attempts": 0}]},
        {"version": 1, "monitors": [{"slug": "a", "kind": "interval",
                                     "schedule": "0 * * * *", "period": 0}]},
        {"version": 1, "channels": [{"name": "e", "kind": "email", "config": {"to": []}}]},
    ]
    for doc in docs:
        found = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.path])
        assert found, doc
        with pytest.raises(FileError) as e:
            declarative.check(doc)
        assert e.value.problems == [f"{err.json_path}: {err.message}" for err in found]
    with pytest.raises(FileError) as e:
        declarative.check(docs[0])
    assert e.value.problems == ["$.monitors[0].grace: 'soon' is not of type 'integer'"]
    assert declarative.schema_problems({"version": 1, "monitors": [
        {"slug": "q", "period": 60, "grace": 6}]}) == []


def test_what_the_api_would_refuse_to_create_is_an_error_before_anything_is_written():
    doc = {"version": 1,
           "channels": [{"name": "new", "kind": "slack", "config": {"url": "***"}}],
           "monitors": [{"slug": "fresh", "name": "f", "period": 60}]}
    with pytest.raises(FileError) as e:
        declarative.plan(doc, STATE)
    assert e.value.problems == [
        "channels[0] (new): config.url: '***' keeps a stored credential, and the project has "
        "no channel named 'new': give it",
        "monitors[0] (fresh): grace: required for a new monitor (seconds a run may start "
        "late)"]


def test_a_file_that_is_not_an_object_is_refused():
    with pytest.raises(FileError, match="the file must be an object"):
        declarative.check([1])


def test_parse_reads_json_and_yaml_and_says_when_it_is_neither():
    assert declarative.parse('{"version": 1}') == {"version": 1}
    assert declarative.parse("version: 1\nmonitors: [{slug: a}]\n") == {
        "version": 1, "monitors": [{"slug": "a"}]}
    with pytest.raises(FileError, match="^not JSON: "):
        declarative.parse("version: 1", "json")
    for text, fmt, message in (
            ("a: [1", None, "not JSON or YAML at line 1, column 6: expected ',' or ']', but "
                            "got '<stream end>'"),
            ("version: 1\nmonitors:\n  - slug: a\n   name: b\n", "yaml",
             "not YAML at line 4, column 4: expected <block end>, but found "
             "'<block mapping start>'"),
            ("url: ***", "yaml", "not YAML at line 1, column 7: expected alphabetic or numeric "
                                 "character, but found '*'")):
        with pytest.raises(FileError) as e:
            declarative.parse(text, fmt)
        assert e.value.problems == [message]
    assert (declarative.format_of("m.JSON"), declarative.format_of("m.yml"),
            declarative.format_of("m.txt")) == ("json", "yaml", None)


def test_dump_writes_what_parse_reads():
    doc = {"version": 1, "monitors": [{"slug": "ä", "tags": []}]}
    for fmt in ("json", "yaml"):
        assert declarative.parse(declarative.dump(doc, fmt), fmt) == doc


# --- placeholders ---------------------------------------------------------------------------

def test_expand_fills_placeholders_from_the_environment():
    doc = {"version": 1, "channels": [
        {"name": "ops", "kind": "webhook", "config": {"url": "https://${HOST}/h/${PART}"}},
        {"name": "mail", "kind": "email", "config": {"to": ["${WHO}@example.com"]}}],
        "monitors": [{"slug": "a", "name": "${HOST}"}]}
    out = declarative.expand(doc, {"HOST": "hooks.example.com", "PART": "x", "WHO": "ops"})
    assert out["channels"] == [
        {"name": "ops", "kind": "webhook", "config": {"url": "https://hooks.example.com/h/x"}},
        {"name": "mail", "kind": "email", "config": {"to": ["ops@example.com"]}}]
    assert out["monitors"] == [{"slug": "a", "name": "${HOST}"}]  # only channels' configs


def test_a_placeholder_without_its_variable_is_an_error_naming_it():
    doc = {"version": 1, "channels": [{"name": "ops", "kind": "opsgenie",
                                       "config": {"api_key": "${OPS_KEY}", "region": "eu"}}]}
    with pytest.raises(FileError) as e:
        declarative.expand(doc, {})
    assert e.value.problems == [
        "channels[0] (ops): config.api_key: ${OPS_KEY} is not set in the environment"]


def test_placeholders_replace_credentials_and_keep_what_is_not_one():
    doc = {"version": 1, "channels": [
        {"name": "ops pager", "kind": "opsgenie", "config": {"api_key": "k", "region": "eu"}},
        {"name": "ops-pager", "kind": "ntfy", "config": {"url": "https://n/t", "token": "***"}},
        {"name": "mail", "kind": "email", "config": {"to": ["a@example.com"]}}]}
    out, values = declarative.placeholders(doc)
    assert [c["config"] for c in out["channels"]] == [
        {"api_key": "${CRONRADAR_OPS_PAGER_API_KEY}", "region": "eu"},
        {"url": "${CRONRADAR_OPS_PAGER_URL}", "token": "***"},
        {"to": ["a@example.com"]}]
    # "***" (shown to a reader) stays "***": applied, it keeps the stored credential,
    # where a placeholder would ask for a variable nobody has the value of
    assert values == {"CRONRADAR_OPS_PAGER_API_KEY": "k", "CRONRADAR_OPS_PAGER_URL": "https://n/t"}
    twins = {"channels": [{"name": n, "kind": "slack", "config": {"url": n}}
                          for n in ("a b", "a-b", "A_B")]}
    assert list(declarative.placeholders(twins)[1]) == [
        "CRONRADAR_A_B_URL", "CRONRADAR_A_B_URL_2", "CRONRADAR_A_B_URL_3"]


# --- the diff ---------------------------------------------------------------------------

CH = {"id": 7, "name": "ops", "kind": "opsgenie", "config": {"api_key": "k1", "region": "eu"}}
POLICY = {"id": 3, "name": "night", "tiers": [{"delay": 0, "channels": [7]}], "repeat": 0,
          "monitors": [11]}
MON = {"id": 11, "slug": "nightly", "name": "Nightly", "kind": "cron", "schedule": "0 3 * * *",
       "period": None, "grace": 600, "tags": ["db"], "channels": [7], "escalation_policy": 3,
       "ping_url": "https://cr/ping/x", "status": "up"}
STATE = State([CH], [POLICY], [MON])


def test_the_project_as_a_file_names_what_the_api_gives_by_id():
    assert declarative.to_file(STATE) == {
        "version": 1,
        "channels": [{"name": "ops", "kind": "opsgenie",
                      "config": {"api_key": "k1", "region": "eu"}}],
        "escalation_policies": [{"name": "night", "tiers": [{"delay": 0, "channels": ["ops"]}],
                                 "repeat": 0}],
        "monitors": [{"slug": "nightly", "name": "Nightly", "kind": "cron",
                      "schedule": "0 3 * * *", "grace": 600, "tags": ["db"],
                      "channels": ["ops"], "escalation_policy": "night"}]}


def test_plan_says_created_changed_with_old_and_new_unchanged_and_pruned():
    doc = {"version": 1,
           "channels": [{"name": "ops", "kind": "opsgenie",
                         "config": {"api_key": "k2", "region": "us"}},
                        {"name": "new", "kind": "slack", "config": {"url": "https://s/h"}}],
           "monitors": [{"slug": "nightly", "grace": 900, "tags": ["db"],
                         "channels": ["ops", "new"]},
                        {"slug": "fresh", "name": "f", "period": 60, "grace": 5}]}
    changes = declarative.plan(doc, STATE, prune=True)
    assert [line for c in changes for line in c.lines()] == [
        "changed channel ops: config.api_key: *** → *** (a credential: not shown)",
        'changed channel ops: config.region: "eu" → "us"',
        "created channel new",
        'changed monitor nightly: grace: 600 → 900',
        'changed monitor nightly: channels: ["ops"] → ["ops", "new"]',
        "created monitor fresh",
    ]  # no escalation_policies section: the policy is not pruned
    assert declarative.summary(changes, dry_run=True) == (
        "2 created, 2 changed, 0 unchanged, 0 pruned (dry run: nothing changed)")


def test_masked_or_left_out_credentials_and_names_in_any_order_are_unchanged():
    doc = {"version": 1,
           "channels": [{"name": "ops", "kind": "opsgenie", "config": {"api_key": "***"}}],
           "escalation_policies": [{"name": "night", "tiers": [{"delay": 0,
                                                                "channels": ["ops"]}]}],
           "monitors": [{"slug": "nightly", "channels": ["ops"]}]}
    assert [c.action for c in declarative.plan(doc, STATE, prune=True)] == ["unchanged"] * 3


def test_a_schedule_written_as_an_alias_or_with_other_spacing_is_unchanged():
    for written in ("0  3 * * *", " 0 3 * * * "):
        doc = {"version": 1, "monitors": [{"slug": "nightly", "schedule": written}]}
        assert [c.action for c in declarative.plan(doc, STATE)] == ["unchanged"]
    daily = State([], [], [{**MON, "schedule": "0 0 * * *", "channels": "all",
                            "escalation_policy": None}])
    doc = {"version": 1, "monitors": [{"slug": "nightly", "schedule": "@Daily"}]}
    assert [c.action for c in declarative.plan(doc, daily)] == ["unchanged"]
    doc["monitors"][0]["schedule"] = "@hourly"
    assert declarative.plan(doc, daily)[0].lines() == [
        'changed monitor nightly: schedule: "0 0 * * *" → "@hourly"']


def test_prune_takes_each_kind_the_file_has_a_section_for_monitors_first():
    doc = {"version": 1, "channels": [], "escalation_policies": [], "monitors": []}
    changes = declarative.plan(doc, STATE, prune=True)
    assert [(c.action, c.kind.noun, c.key, c.current["id"]) for c in changes] == [
        ("pruned", "monitor", "nightly", 11), ("pruned", "escalation policy", "night", 3),
        ("pruned", "channel", "ops", 7)]
    assert declarative.plan(doc, STATE, prune=False) == []


def test_a_name_neither_in_the_file_nor_the_project_is_an_error():
    doc = {"version": 1,
           "escalation_policies": [{"name": "p", "tiers": [{"delay": 0, "channels": ["ghost"]}]}],
           "monitors": [{"slug": "a", "channels": ["ops", "nobody"], "escalation_policy": "q"}]}
    with pytest.raises(FileError) as e:
        declarative.plan(doc, STATE)
    assert e.value.problems == [
        "escalation_policies[0] (p): tiers[0].channels: no channel named 'ghost' in the file "
        "or the project",
        "monitors[0] (a): channels: no channel named 'nobody' in the file or the project",
        "monitors[0] (a): escalation_policy: no escalation policy named 'q' in the file or "
        "the project"]


# --- through the API: every page read before a prune -----------------------------------------

def test_prune_reads_every_page_of_150_monitors_and_deletes_only_those_it_read(stub):
    monitors = [{"id": i, "slug": f"m{i:03}", "name": f"m{i}"} for i in range(1, 151)]
    def delete(query, body, st):
        return 204, {}, None
    routes = {("GET", "/api/v1/monitors/"): paged(monitors, 100),
              ("GET", "/api/v1/channels/"): lambda q, b, st: (200, {}, []),
              ("GET", "/api/v1/escalation-policies/"): lambda q, b, st: (200, {}, [])}
    routes.update({("DELETE", f"/api/v1/monitors/{i}/"): delete for i in range(1, 151)})
    s = stub(routes)
    # the file keeps m001..m040 and m121..m150: both pages hold monitors to prune
    kept = [m for m in monitors if not 40 < m["id"] <= 120]
    doc = {"version": 1, "monitors": [{"slug": m["slug"]} for m in kept]}
    changes = declarative.apply(doc, declarative.HttpBackend(s.client()), prune=True)
    deleted = [path for method, path, _, _ in s.requests if method == "DELETE"]
    assert deleted == [f"/api/v1/monitors/{i}/" for i in range(41, 121)]
    assert declarative.summary(changes) == "0 created, 0 changed, 70 unchanged, 80 pruned"
    assert not any(method == "PUT" for method, *_ in s.requests)  # unchanged: not written


# --- the plan's limits: the whole file refused before anything is written ------------------

OVER = {"version": 1,
        "channels": [{"name": "ops", "kind": "webhook",
                      "config": {"url": "https://hooks.example.com/ops"}}],
        "monitors": [{"slug": f"job-{n}", "name": f"Job {n}", "period": 60, "grace": 30}
                     for n in range(1, 7)]}  # 1 new channel, 6 new monitors


def _usage(monitors=(0, None), channels=(0, None)) -> dict:
    """``GET /api/v1/usage/``'s answer (cronradar/usage.py) with (used, limit) each."""
    return {"organisation": 1, "plan": "pro", "month": "2026-12",
            **{name: {"used": used, "limit": limit} for name, (used, limit)
               in (("monitors", monitors), ("channels", channels))},
            "members": {"used": 1, "limit": None}, "api_keys": {"used": 1, "limit": None},
            "pings_this_month": 0, "pings_refused_this_month": 0}


@pytest.fixture
def empty(stub, tmp_path, monkeypatch, capsys):
    """``cronradar apply`` of OVER to an empty project whose ``/usage/`` answers
    (status, json): run(*args) answers (exit status, stdout, stderr, the PUTs' paths)."""
    def put(query, body, st):
        return 201, {}, {**json.loads(body), "id": len(st.requests)}
    path = tmp_path / "f.json"
    path.write_text(json.dumps(OVER))

    def run(usage, *args):
        routes = {("GET", f"/api/v1/{p}/"): lambda q, b, st: (200, {}, [])
                  for p in ("channels", "escalation-policies", "monitors")}
        routes[("GET", "/api/v1/usage/")] = lambda q, b, st: (*usage[:1], {}, usage[1])
        routes[("PUT", "/api/v1/channels/by-name/ops/")] = put
        routes.update({("PUT", f"/api/v1/monitors/by-slug/job-{n}/"): put
                       for n in range(1, 7)})
        s = stub(routes)
        monkeypatch.setenv("CRONRADAR_URL", s.url)
        monkeypatch.setenv("CRONRADAR_API_KEY", "cr_test")
        capsys.readouterr()
        status = cli.main(["apply", "-f", str(path), *args])
        out, err = capsys.readouterr()
        return status, out, err, [p for m, p, _, _ in s.requests if m != "GET"]
    return run


@pytest.mark.parametrize("dry_run", [["--dry-run"], []])
@pytest.mark.parametrize("usage, said", [
    (_usage(monitors=(0, 5)), "this organisation's plan (pro) allows 5 monitors"),
    (_usage(monitors=(3, 9), channels=(1, 1)),
     "this organisation's plan (pro) allows 1 channel"),
])
def test_apply_over_the_plan_is_refused_as_a_whole_dry_run_too(empty, usage, said, dry_run):
    assert empty((200, usage), *dry_run) == (1, "", f"cronradar apply: {said}\n", [])


@pytest.mark.parametrize("usage", [
    (200, _usage(monitors=(0, 6), channels=(4, 5))),  # exactly up to the limits
    (404, {"detail": "Not found."}),  # an older CronRadar: the API refuses per object
    (403, {"detail": "this API key is read-only"}),
])
def test_apply_within_the_plan_or_without_its_usage_applies(empty, usage):
    status, out, err, written = empty(usage)
    assert (status, out.splitlines()[-1], err) == (
        0, "7 created, 0 changed, 0 unchanged, 0 pruned", "")
    assert written == ["/api/v1/channels/by-name/ops/"] + [
        f"/api/v1/monitors/by-slug/job-{n}/" for n in range(1, 7)]


# --- against the real service ---------------------------------------------------------------

@pytest.fixture
def cr(service, request, monkeypatch, capsys):
    """Run ``cronradar <args>`` in this process as a new project's key: answers
    (exit status, stdout lines, stderr)."""
    key = service.manage("createapikey", "--project", request.node.name[:90]) \
        .strip().splitlines()[-1]
    monkeypatch.setenv("CRONRADAR_URL", service.url)
    monkeypatch.setenv("CRONRADAR_API_KEY", key)

    def run(*args):
        capsys.readouterr()
        status = cli.main(list(args))
        out, err = capsys.readouterr()
        return status, out.splitlines(), err
    run.api = service.project_api(request.node.name[:90])
    return run


FILE = """
version: 1
channels:
  - name: ops
    kind: webhook
    config: {url: "https://hooks.example.com/ops", secret: "${HOOK_SECRET}"}
  - name: pager
    kind: opsgenie
    config: {api_key: "og-key", region: eu}
escalation_policies:
  - name: night
    tiers: [{delay: 0, channels: [ops]}, {delay: 600, channels: [ops, pager]}]
monitors:
  - slug: nightly-backup
    name: Nightly backup
    kind: cron
    schedule: "0 3 * * *"
    timezone: Europe/Berlin
    grace: 600
    channels: [ops]
    escalation_policy: night
    tags: [db]
  - slug: heartbeat
    name: Heartbeat
    period: 60
    grace: 30
"""

CREATED = ["created channel ops", "created channel pager", "created escalation policy night",
           "created monitor nightly-backup", "created monitor heartbeat",
           "5 created, 0 changed, 0 unchanged, 0 pruned"]


@pytest.fixture
def applied(cr, tmp_path, monkeypatch):
    """FILE applied (HOOK_SECRET=hook-secret): answers (cr, the file's path)."""
    path = tmp_path / "monitors.yaml"
    path.write_text(FILE)
    monkeypatch.setenv("HOOK_SECRET", "hook-secret")
    assert cr("apply", "-f", str(path)) == (0, CREATED, "")
    return cr, path


def _state(api) -> dict:
    return {p: api.get(f"/{p}/").json() for p in ("channels", "escalation-policies", "monitors")}


@pytest.mark.live
def test_live_apply_creates_what_the_file_declares(applied):
    cr, path = applied
    state = _state(cr.api)
    ops, pager = state["channels"]
    assert (ops["name"], ops["config"]["url"], ops["config"]["secret"]) == (
        "ops", "https://hooks.example.com/ops", "hook-secret")
    assert pager["config"] == {"api_key": "og-key", "region": "eu"}
    [night] = state["escalation-policies"]
    assert night["tiers"] == [{"delay": 0, "channels": [ops["id"]]},
                              {"delay": 600, "channels": sorted([ops["id"], pager["id"]])}]
    nightly, heartbeat = state["monitors"]
    assert {k: nightly[k] for k in ("slug", "kind", "schedule", "timezone", "grace", "channels",
                                    "escalation_policy", "tags")} == {
        "slug": "nightly-backup", "kind": "cron", "schedule": "0 3 * * *",
        "timezone": "Europe/Berlin", "grace": 600, "channels": [ops["id"]],
        "escalation_policy": night["id"], "tags": ["db"]}
    assert (heartbeat["period"], heartbeat["channels"]) == (60, "all")
    assert night["monitors"] == [nightly["id"]]


@pytest.mark.live
def test_live_applying_again_changes_nothing(applied):
    cr, path = applied
    before = _state(cr.api)
    assert cr("apply", "-f", str(path)) == (0, [
        "unchanged channel ops", "unchanged channel pager", "unchanged escalation policy night",
        "unchanged monitor nightly-backup", "unchanged monitor heartbeat",
        "0 created, 0 changed, 5 unchanged, 0 pruned"], "")
    assert _state(cr.api) == before


@pytest.mark.live
def test_live_export_then_apply_changes_nothing(applied, tmp_path, monkeypatch):
    cr, _ = applied
    out = tmp_path / "export.json"
    status, lines, err = cr("export", "-o", str(out))
    assert (status, lines) == (0, [])
    assert err == ("the channels' credentials are placeholders: set CRONRADAR_OPS_SECRET, "
                   "CRONRADAR_OPS_URL, CRONRADAR_PAGER_API_KEY before applying the file (or "
                   "write '***' to keep the stored ones)\n")
    doc = json.loads(out.read_text())
    assert doc["channels"] == [
        {"name": "ops", "kind": "webhook", "config": {"url": "${CRONRADAR_OPS_URL}",
                                                      "secret": "${CRONRADAR_OPS_SECRET}"}},
        {"name": "pager", "kind": "opsgenie", "config": {"api_key": "${CRONRADAR_PAGER_API_KEY}",
                                                         "region": "eu"}}]
    assert doc["escalation_policies"] == [{"name": "night", "tiers": [
        {"delay": 0, "channels": ["ops"]}, {"delay": 600, "channels": ["ops", "pager"]}],
        "repeat": 0}]
    assert [m["slug"] for m in doc["monitors"]] == ["heartbeat", "nightly-backup"]
    assert doc["monitors"][1] == {
        "slug": "nightly-backup", "name": "Nightly backup", "kind": "cron",
        "schedule": "0 3 * * *", "timezone": "Europe/Berlin", "cron_semantics": "debian",
        "grace": 600, "max_runtime": None, "deadline": None, "min_runtime": None,
        "slow_factor": None, "concurrency": "allow", "max_attempts": 1, "tags": ["db"],
        "paused": False, "description": "", "methods": "", "channels": ["ops"],
        "escalation_policy": "night", "urgency": "high",
        "severity": None, "renotify": None, "failure_threshold": 1, "recovery_threshold": 1}
    before = _state(cr.api)
    for name, value in (("CRONRADAR_OPS_URL", "https://hooks.example.com/ops"),
                        ("CRONRADAR_OPS_SECRET", "hook-secret"),
                        ("CRONRADAR_PAGER_API_KEY", "og-key")):
        monkeypatch.setenv(name, value)
    status, lines, err = cr("apply", "-f", str(out), "--prune")
    assert (status, lines[-1], err) == (0, "0 created, 0 changed, 5 unchanged, 0 pruned", "")
    assert _state(cr.api) == before
    # the same as YAML
    status, lines, _ = cr("export", "--format", "yaml")
    assert status == 0 and declarative.parse("\n".join(lines), "yaml") == doc


@pytest.mark.live
def test_live_a_change_is_an_exact_diff_and_dry_run_changes_nothing(applied, tmp_path):
    cr, path = applied
    changed = tmp_path / "changed.yaml"
    changed.write_text(FILE.replace("grace: 600", "grace: 900")
                       .replace("region: eu", "region: us")
                       .replace("[{delay: 0, channels: [ops]}, ",
                                "[{delay: 60, channels: [pager]}, "))
    before = _state(cr.api)
    diff = ['changed channel pager: config.region: "eu" → "us"',
            'changed escalation policy night: tiers: [{"delay": 0, "channels": ["ops"]}, '
            '{"delay": 600, "channels": ["ops", "pager"]}] → [{"delay": 60, "channels": '
            '["pager"]}, {"delay": 600, "channels": ["ops", "pager"]}]',
            "changed monitor nightly-backup: grace: 600 → 900"]
    status, lines, err = cr("apply", "-f", str(changed), "--dry-run")
    assert (status, [x for x in lines if x.startswith("changed")], lines[-1], err) == (
        0, diff, "0 created, 3 changed, 2 unchanged, 0 pruned (dry run: nothing changed)", "")
    assert _state(cr.api) == before
    status, lines, _ = cr("apply", "-f", str(changed))
    assert [x for x in lines if x.startswith("changed")] == diff
    after = _state(cr.api)
    assert after["monitors"][0]["grace"] == 900
    assert after["channels"][1]["config"]["region"] == "us"
    assert after["escalation-policies"][0]["tiers"][0] == {
        "delay": 60, "channels": [after["channels"][1]["id"]]}
    assert cr("apply", "-f", str(changed))[1][-1] == "0 created, 0 changed, 5 unchanged, 0 pruned"


@pytest.mark.live
def test_live_prune_deletes_what_the_file_leaves_out_of_its_sections(applied, tmp_path):
    cr, _ = applied
    smaller = tmp_path / "smaller.json"
    smaller.write_text(json.dumps({"version": 1, "channels": [
        {"name": "ops", "kind": "webhook", "config": {"url": "https://hooks.example.com/ops"}}],
        "monitors": [{"slug": "heartbeat"}]}))
    before = _state(cr.api)
    assert cr("apply", "-f", str(smaller), "--prune", "--dry-run")[1] == [
        "unchanged channel ops", "unchanged monitor heartbeat", "pruned monitor nightly-backup",
        "pruned channel pager", "0 created, 0 changed, 2 unchanged, 2 pruned (dry run: "
        "nothing changed)"]
    assert _state(cr.api) == before
    assert cr("apply", "-f", str(smaller), "--prune") == (0, [
        "unchanged channel ops", "unchanged monitor heartbeat", "pruned monitor nightly-backup",
        "pruned channel pager", "0 created, 0 changed, 2 unchanged, 2 pruned"], "")
    state = _state(cr.api)
    assert [m["slug"] for m in state["monitors"]] == ["heartbeat"]
    ops = state["channels"][0]["id"]
    # the policy has no section in the file: kept (without the deleted channel)
    assert state["escalation-policies"][0]["tiers"] == [{"delay": 0, "channels": [ops]},
                                                        {"delay": 600, "channels": [ops]}]
    smaller.write_text(json.dumps({"version": 1, "escalation_policies": [], "channels": [
        {"name": "ops", "kind": "webhook", "config": {"url": "https://hooks.example.com/ops"}}]}))
    assert cr("apply", "-f", str(smaller), "--prune")[1] == [
        "unchanged channel ops", "pruned escalation policy night",
        "0 created, 0 changed, 1 unchanged, 1 pruned"]
    state = _state(cr.api)
    assert ([c["name"] for c in state["channels"]], state["escalation-policies"],
            [m["slug"] for m in state["monitors"]]) == (["ops"], [], ["heartbeat"])


@pytest.mark.live
def test_live_credentials_placeholders_and_kept_secrets(applied, tmp_path, monkeypatch):
    cr, path = applied
    monkeypatch.delenv("HOOK_SECRET")
    before = _state(cr.api)
    assert cr("apply", "-f", str(path)) == (1, [], "cronradar apply: channels[0] (ops): "
                                            "config.secret: ${HOOK_SECRET} is not set in the "
                                            "environment\n")
    masked = tmp_path / "masked.yaml"
    masked.write_text(FILE.replace('"${HOOK_SECRET}"', '"***"').replace('"og-key"', '"***"'))
    assert cr("apply", "-f", str(masked))[1][-1] == "0 created, 0 changed, 5 unchanged, 0 pruned"
    left_out = tmp_path / "left-out.yaml"
    left_out.write_text(FILE.replace(', secret: "${HOOK_SECRET}"', "")
                        .replace('config: {api_key: "og-key", region: eu}', "config: {region: eu}"))
    assert cr("apply", "-f", str(left_out))[1][-1] == (
        "0 created, 0 changed, 5 unchanged, 0 pruned")
    assert _state(cr.api) == before
    monkeypatch.setenv("HOOK_SECRET", "rotated")
    assert cr("apply", "-f", str(path))[1][0] == (
        "changed channel ops: config.secret: *** → *** (a credential: not shown)")
    assert _state(cr.api)["channels"][0]["config"]["secret"] == "rotated"


@pytest.mark.live
def test_live_150_monitors_are_read_exported_and_pruned_to_the_one_left_out(cr, tmp_path):
    for i in range(150):
        assert cr.api.put(f"/monitors/by-slug/job-{i:03}/", json={
            "name": f"job {i}", "period": 3600, "grace": 60}).status_code == 201
    out = tmp_path / "all.json"
    assert cr("export", "-o", str(out))[0] == 0
    doc = json.loads(out.read_text())
    assert [m["slug"] for m in doc["monitors"]] == [f"job-{i:03}" for i in range(150)]
    doc["monitors"] = [m for m in doc["monitors"] if m["slug"] != "job-149"]
    out.write_text(json.dumps(doc))
    status, lines, _ = cr("apply", "-f", str(out), "--prune")
    assert (status, lines[-2:]) == (0, ["pruned monitor job-149",
                                        "0 created, 0 changed, 149 unchanged, 1 pruned"])
    assert len(cr.api.get("/monitors/", params={"limit": 1000}).json()) == 149


@pytest.mark.live
def test_live_an_api_refusal_exits_1_with_the_server_s_message(cr, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"version": 1, "monitors": [{"slug": "a", "name": "a",
                                                            "period": 60, "grace": 5,
                                                            "timezone": "Mars/Base"}]}))
    status, lines, err = cr("apply", "-f", str(path))
    assert (status, lines) == (1, [])
    assert err.endswith("/api/v1/monitors/by-slug/a/: 400: timezone: unknown time zone "
                        "'Mars/Base'\n")


@pytest.mark.live
def test_live_a_file_over_the_plan_writes_nothing_dry_run_too(cr, service, request, tmp_path):
    service.manage("plan", "pro5", "--max-monitors", "5")
    service.manage("setplan", request.node.name[:90], "pro5")
    path = tmp_path / "f.json"
    path.write_text(json.dumps(OVER))
    refused = (1, [], "cronradar apply: this organisation's plan (pro5) allows 5 monitors\n")
    assert cr("apply", "-f", str(path), "--dry-run") == refused
    assert cr("apply", "-f", str(path)) == refused
    assert _state(cr.api) == {"channels": [], "escalation-policies": [], "monitors": []}
    path.write_text(json.dumps({**OVER, "monitors": OVER["monitors"][:5]}))
    status, lines, err = cr("apply", "-f", str(path))
    assert (status, lines[-1], err) == (0, "6 created, 0 changed, 0 unchanged, 0 pruned", "")


PY38 = Path("/root/.pyenv/versions/3.8.18/bin/python3.8")


@pytest.mark.live
@pytest.mark.skipif(not PY38.exists(), reason="no Python 3.8 on this machine")
def test_live_apply_and_export_run_on_python_3_8(cr, tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"version": 1, "monitors": [
        {"slug": "old", "name": "Old", "period": 60, "grace": 5}]}))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "sdk" / "python")}

    def run(*args):
        done = subprocess.run([str(PY38), "-m", "cronradar_sdk.cli", *args], env=env,
                              capture_output=True, text=True, timeout=60)
        return done.returncode, done.stdout.splitlines(), done.stderr
    assert run("apply", "-f", str(path)) == (0, [
        "created monitor old", "1 created, 0 changed, 0 unchanged, 0 pruned"], "")
    status, lines, err = run("export", "--format", "json")
    assert (status, err) == (0, "")
    assert [m["slug"] for m in json.loads("\n".join(lines))["monitors"]] == ["old"]
