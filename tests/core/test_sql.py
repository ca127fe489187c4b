"""core.sql: rows written with plain SQL equal what the ORM writes."""
import warnings
from datetime import timedelta

import pytest
from django.db import connection

from alerts.models import Channel, Delivery, Incident, IncidentEvent
from core import sql
from monitors import schedule
from monitors.models import Monitor
from tests.conftest import T0

pytestmark = pytest.mark.django_db


def _rows(model, ids, skip=("id",)):
    names = [f.attname for f in model._meta.concrete_fields if f.attname not in skip]
    return list(model.objects.filter(pk__in=ids).order_by("pk").values_list(*names))


@pytest.mark.parametrize("n", [1, 3, 400])  # 400 incidents: several statements on SQLite
def test_insert_many_writes_what_bulk_create_writes(make_monitor, project, n):
    m = make_monitor()
    fields = ("monitor_id", "cause", "summary", "opened_at", "resolved_at",
              "next_escalation_at")
    values = [(m.pk, "missed", f"job {i % 2}", T0 + timedelta(seconds=i % 2), T0,
               None if i % 3 else T0) for i in range(n)]
    ids = sql.insert_many(Incident, fields, values)
    objs = Incident.objects.bulk_create(Incident(**dict(zip(fields, v, strict=True)))
                                        for v in values)
    assert len(ids) == n and ids == sorted(ids)
    # every field but the id and the random dedup_key, defaults included
    skip = ("id", "dedup_key")
    assert _rows(Incident, ids, skip) == _rows(Incident, [o.pk for o in objs], skip)
    keys = set(Incident.objects.values_list("dedup_key", flat=True))
    assert len(keys) == 2 * n  # a callable default is called for each row
    # JSON: sent once only when every value is written alike (1 == 1.0, but not in
    # JSON); a null step
    ev_fields = ("incident_id", "kind", "at", "message", "detail", "step")
    for detail in (lambda k: {"n": 1.0 if k else 1, "ok": True}, lambda k: {"n": [1, "a"]}):
        ev_values = [(i, "opened", T0, "m", detail(k), None) for k, i in enumerate(ids)]
        ev_ids = sql.insert_many(IncidentEvent, ev_fields, ev_values)
        evs = IncidentEvent.objects.bulk_create(
            IncidentEvent(**dict(zip(ev_fields, v, strict=True))) for v in ev_values)
        assert _rows(IncidentEvent, ev_ids) == _rows(IncidentEvent, [e.pk for e in evs])
        assert [repr(e.detail) for e in IncidentEvent.objects.filter(pk__in=ev_ids[:2])
                .order_by("pk")] == [repr(detail(k)) for k in range(min(n, 2))]
    # deliveries, one channel each way (one delivery per event and channel)
    hooks = [Channel.objects.create(project=project, kind="webhook", config={"url": "x"})
             for _ in range(2)]
    d_fields = ("event_id", "incident_id", "channel_id", "created_at", "next_attempt_at")
    d_ids = sql.insert_many(Delivery, d_fields, [(e, i, hooks[0].pk, T0, T0)
                                                 for e, i in zip(ev_ids, ids, strict=True)])
    ds = Delivery.objects.bulk_create(
        Delivery(event_id=e, incident_id=i, channel_id=hooks[1].pk, created_at=T0,
                 next_attempt_at=T0) for e, i in zip(ev_ids, ids, strict=True))
    skip = ("id", "channel_id")
    assert _rows(Delivery, d_ids, skip) == _rows(Delivery, [d.pk for d in ds], skip)
    assert sql.insert_many(Delivery, d_fields, []) == []


def test_update_many_sends_equal_values_once(make_monitor, django_assert_num_queries):
    ms = [make_monitor() for _ in range(5)]
    for i, m in enumerate(ms):
        m.next_evaluation_at = T0 + timedelta(seconds=1 if i < 3 else 10 + i)
        m.evaluation_error = "x"
    with django_assert_num_queries(2) as ctx:  # the three equal ones, then the other two
        sql.update_many(ms, ["next_evaluation_at", "evaluation_error"])
    assert "IN" in ctx.captured_queries[0]["sql"] or "ANY" in ctx.captured_queries[0]["sql"]
    got = dict(Monitor.objects.values_list("pk", "next_evaluation_at"))
    assert got == {m.pk: m.next_evaluation_at for m in ms}
    assert set(Monitor.objects.values_list("evaluation_error", flat=True)) == {"x"}


def test_where_in_selects_the_values_given(make_monitor):
    ms = [make_monitor() for _ in range(4)]
    where, params = sql.where_in(Monitor, "id", [ms[0].pk, ms[2].pk])
    assert [m.pk for m in sql.select(Monitor, where, params, "ORDER BY id")] == [
        ms[0].pk, ms[2].pk]
    assert ("ANY" in where) == (connection.vendor == "postgresql")


def test_cached_schedule_answers_are_copies():
    after, until = T0 - timedelta(hours=5), T0
    first = schedule.last_fires("0 * * * *", "UTC", after, until)
    first.append(None)
    assert schedule.last_fires("0 * * * *", "UTC", after, until) == [
        T0 - timedelta(hours=h) for h in (4, 3, 2, 1, 0)]
    assert schedule.count_fires("0 * * * *", "UTC", after, until) == 5


def test_prepared_values_are_what_the_fields_prepare(make_monitor):
    """The ping path's shortcut (sql._saver) gives, for every field of the rows it
    writes, what the field's get_db_prep_save gives: the same value and type, for
    stored values, None, and values a field must convert (a naive datetime, a
    string UUID, an int for a bool...)."""
    import uuid as uuidlib

    from monitors.models import Ping, Run
    from monitors.pings import PingInput, ingest

    m = make_monitor(max_runtime=timedelta(seconds=30))
    rid = uuidlib.uuid4()
    ingest(m.pk, PingInput("start", rid=rid, remote_addr="192.0.2.1", body=b"x", body_size=1),
           T0)
    objs = [Monitor.objects.get(pk=m.pk), Run.objects.get(rid=rid), Ping.objects.get()]
    odd = {"DateTimeField": T0.replace(tzinfo=None), "UUIDField": str(rid),
           "BooleanField": 1, "IntegerField": "7", "CharField": 5, "BigAutoField": "3"}
    checked = 0
    for obj in objs:
        for field in type(obj)._meta.concrete_fields:
            kind = (field.target_field if field.is_relation else field).get_internal_type()
            for value in (getattr(obj, field.attname), None, odd.get(kind)):
                if value is None and not field.null:
                    continue
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # the naive datetime
                    want = field.get_db_prep_save(value, connection)
                    got = sql._saver(type(obj), field.attname, connection.vendor)(value)
                # psycopg's Jsonb wrapper does not compare by value: its .obj does
                assert ((type(got), getattr(got, "obj", got))
                        == (type(want), getattr(want, "obj", want))), (field, value)
                checked += 1
    assert checked > 60


def _built(obj) -> tuple:
    """An instance's attributes and its state, as Model.__init__ leaves them."""
    fields = {k: v for k, v in obj.__dict__.items() if k != "_state"}
    return fields, obj._state.adding, obj._state.db, obj._state.fields_cache


def test_new_builds_what_model_init_builds(make_monitor):
    from monitors.models import Ping, Run

    monitor = make_monitor()
    run = Run(monitor=monitor, slot_at=T0)
    cases = [(Run, {"monitor": monitor, "slot_at": T0}),
             (Run, {"monitor_id": monitor.pk, "rid": None}),
             (Ping, {"monitor_id": monitor.pk, "run": None, "received_at": T0,
                     "kind": "success", "exit_status": 3, "rid": None, "method": "GET",
                     "remote_addr": "192.0.2.1", "user_agent": "curl", "body": b"x",
                     "body_size": 1, "body_truncated": False, "duplicate": True}),
             (Ping, {"monitor": monitor, "run": run, "received_at": T0, "kind": "start",
                     "method": "POST"})]
    for model, values in cases:
        made = sql.new(model, **values)
        assert _built(made) == _built(model(**values))
        assert made._state.adding is True
    assert sql.new(Ping, monitor=monitor, run=run, received_at=T0).run is run
    with pytest.raises(TypeError, match="no_such_field"):
        sql.new(Run, no_such_field=1)
