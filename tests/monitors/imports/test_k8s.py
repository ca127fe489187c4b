"""Kubernetes CronJob manifests read into monitor specs (monitors.imports.k8s).
Fixture: tests/data/cronjobs.yaml."""
import re

import pytest

from monitors.imports import k8s, spec
from monitors.imports.spec import Remark, Spec
from tests.conftest import DATA, S
from tests.monitors.conftest import GRACE, cron

KEPT = ("a Kubernetes import does not set it: activeDeadlineSeconds maps to deadline (clear "
        "max_runtime if an earlier import set it)")


def cronjob(slug, where, schedule, tz, concurrency, active, attempts, paused, name, ns,
            grace=None):
    """The spec of a CronJob; ``active``: its activeDeadlineSeconds (timedelta or None)."""
    fields = {**cron(schedule, tz, "kubernetes"), "concurrency": concurrency,
              "max_attempts": attempts, "paused": paused}
    defaults = {"name": name}
    if grace is None:
        defaults["grace"] = GRACE
    else:
        fields["grace"] = grace
    return Spec(slug, where, fields, defaults, ("kubernetes", f"ns:{ns}"),
                after_grace={"deadline": active} if active else {}, kept={"max_runtime": KEPT})


def test_cronjob_manifests_are_mapped():
    parsed = k8s.parse_k8s((DATA / "cronjobs.yaml").read_text())
    assert parsed.specs == [
        cronjob("nightly-report", "document 1 (line 2)", "0 2 * * *", "Europe/Berlin", "forbid",
                3600 * S, 3, False, "reporting/nightly-report", "reporting", grace=600 * S),
        cronjob("cache-warmer", "document 3 (line 36)", "*/10 * * * *", "UTC", "replace", None,
                7, True, "web/cache.warmer", "web"),
        cronjob("ledger-close", "document 4 (line 54)", "30 17 * * 1-5", "America/New_York",
                "forbid", None, 1, False, "finance/ledger-close", "finance", grace=30 * S)]
    assert parsed.reported == [
        Remark("document 2 (line 28)", "kind ConfigMap (v1) is not a CronJob: skipped"),
        Remark("document 5 (line 74)", "schedule '0 0 30 2 *' never fires: no date matches its "
               "day-of-month, month and day-of-week fields: not imported"),
        Remark("document 6 (line 89)", "spec.schedule starts with CRON_TZ=Europe/London: "
               "Kubernetes 1.29+ refuses a time zone in the schedule on create (older CronJobs "
               "still carry it); write timeZone: Europe/London and schedule: '15 4 * * *' in "
               "spec: not imported")]
    one, three, four = "document 1 (line 2)", "document 3 (line 36)", "document 4 (line 54)"
    assert parsed.notes == [
        Remark(one, "deadline = activeDeadlineSeconds 3600 s + grace: it counts from the Job's "
                    "start across all its attempts, so it bounds the slot's run (deadline), not "
                    "one attempt (max_runtime)"),
        Remark(one, "not mapped: spec.failedJobsHistoryLimit, spec.jobTemplate.spec."
                    "ttlSecondsAfterFinished, spec.successfulJobsHistoryLimit"),
        Remark(three, "slug cache-warmer (metadata.name cache.warmer with '.' made '-')"),
        Remark(three, "no spec.timeZone: read in UTC, the usual zone of the cluster's "
                      "controller (set timeZone if yours differs)"),
        Remark(three, "no backoffLimit: Kubernetes' default 6, so max_attempts 7"),
        Remark(three, "no startingDeadlineSeconds: grace 300 s for a new monitor (an existing "
                      "one keeps its grace)"),
        Remark(four, "warning: concurrencyPolicy Forbid with no activeDeadlineSeconds: one "
                     "hung Job blocks every later run (the controller starts none while it "
                     "runs); set activeDeadlineSeconds"),
        Remark(four, "grace 30 s from startingDeadlineSeconds: it must also cover the pod's "
                     "start (scheduling, image pull) before its first ping")]


def manifest(spec: str, name="job", extra="") -> str:
    return (f"apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: {name}}}\n"
            f"spec: {{{spec}}}\n{extra}")


@pytest.mark.parametrize("spec,reason", [
    ('schedule: "TZ=Asia/Tokyo 0 1 * * *", timeZone: UTC', "spec.schedule starts with "
     "TZ=Asia/Tokyo and spec.timeZone is set (UTC): Kubernetes refuses both; write schedule: "
     "'0 1 * * *' and the zone in timeZone only"),
    ('schedule: "TZ=Mars/Base  */5 * * * *"', "spec.schedule starts with TZ=Mars/Base: "
     "Kubernetes 1.29+ refuses a time zone in the schedule on create (older CronJobs still carry "
     "it); write timeZone: Mars/Base and schedule: '*/5 * * * *' in spec"),
    ('schedule: "@every 1h"', "schedule '@every 1h': @every runs at an interval, not on a cron "
     "schedule: make an interval monitor for it"),
    ('schedule: "0 1 * * 7"', "schedule '0 1 * * 7': bad day-of-week field '7': 7 is out of "
     "range 0-6"),
    ('schedule: "0 1 * * *", timeZone: Mars/Base', "schedule '0 1 * * *': unknown time zone "
     "'Mars/Base'"),
    ('schedule: "0 1 * * *", concurrencyPolicy: Sometimes', "spec.concurrencyPolicy "
     "'Sometimes': Allow, Forbid or Replace"),
    ('schedule: "0 1 * * *", suspend: "yes"', "spec.suspend must be true or false"),
    ('schedule: "0 1 * * *", startingDeadlineSeconds: "60"', "spec.startingDeadlineSeconds must "
     "be a whole number from 0 to 315360000"),
    ('schedule: "0 1 * * *", jobTemplate: {spec: {activeDeadlineSeconds: 0}}',
     "spec.jobTemplate.spec.activeDeadlineSeconds must be a whole number from 1 to 315360000"),
    ('schedule: "0 1 * * *", jobTemplate: []', "spec.jobTemplate must be a mapping"),
    ("jobTemplate: {}", "no spec.schedule"),
])
def test_cronjobs_that_cannot_be_mapped_are_reported(spec, reason):
    parsed = k8s.parse_k8s(manifest(spec))
    assert (parsed.specs, parsed.reported) == ([], [Remark("document 1 (line 1)",
                                                           f"{reason}: not imported")])


def test_cronjob_details():
    text = ("---\n# a list, as kubectl get -o yaml writes it\napiVersion: v1\nkind: List\nitems:\n"
            "- apiVersion: batch/v1\n  kind: CronJob\n  metadata: {name: a}\n"
            "  spec: {schedule: '@daily', startingDeadlineSeconds: 0,\n"
            "         jobTemplate: {spec: {backoffLimit: 150}}}\n"
            "- {apiVersion: batch/v1beta1, kind: CronJob, metadata: {name: b}, spec: {}}\n"
            "---\n- just a list\n---\n")
    parsed = k8s.parse_k8s(text)
    [spec] = parsed.specs
    assert (spec.slug, spec.where, spec.fields["schedule"], spec.fields["grace"],
            spec.fields["max_attempts"], spec.tags, spec.defaults) == (
        "a", "document 1 (line 3) item 1", "0 0 * * *", S, 100, ("kubernetes",), {"name": "a"})
    assert parsed.reported == [
        Remark("document 1 (line 3) item 2", "apiVersion batch/v1beta1: only batch/v1 CronJobs "
               "are read: skipped"),
        Remark("document 2 (line 13)", "not a Kubernetes object (a mapping): skipped")]
    assert [n.message for n in parsed.notes] == [
        "no spec.timeZone: read in UTC, the usual zone of the cluster's controller (set timeZone "
        "if yours differs)",
        "backoffLimit 150: max_attempts 100, the most CronRadar counts",
        "grace 1 s from startingDeadlineSeconds: it must also cover the pod's start (scheduling, "
        "image pull) before its first ping"]


@pytest.mark.parametrize("text,message", [
    ("a: [1, 2\n", "not YAML at line 2: expected ',' or ']', but got '<stream end>'"),
    ("a: b\n c: d\n", "not YAML at line 2: mapping values are not allowed here"),
    ("[" * 5000, "not YAML this import reads: nested too deeply"),
    ("\xad\x12X", "not YAML: unacceptable character #x0012: special characters are not "
                  "allowed")])
def test_text_that_is_not_yaml_fails_the_whole_import(text, message):
    with pytest.raises(spec.ImportFailed, match=re.escape(message)):
        k8s.parse_k8s(text)
