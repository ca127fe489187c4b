"""core.logs: ids on every record, JSON and plain lines with client text escaped,
one line a minute while the database is down."""
import io
import json
import logging
from datetime import UTC, datetime, timedelta

import pytest
from django.db import OperationalError

from core import logs

T0 = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
CREATED = T0.timestamp() + 0.25  # 2026-12-01T18:00:00.250Z


def _lines(formatter: logging.Formatter, emit) -> list[str]:
    """What ``emit(logger)`` writes through a handler set up as LOGGING sets it up."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(logs.ContextFilter())
    handler.setFormatter(formatter)
    logger = logging.getLogger("tests.core.logs")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    real = logging.LogRecord.__init__

    def at_created(self, *args, **kwargs):
        real(self, *args, **kwargs)
        self.created = CREATED

    try:
        logging.LogRecord.__init__ = at_created
        emit(logger)
    finally:
        logging.LogRecord.__init__ = real
        logger.removeHandler(handler)
    return out.getvalue().splitlines()


def test_json_line_has_time_level_logger_message_and_the_bound_ids():
    def emit(log):
        with logs.bound(request_id="r-1", monitor=7), logs.bound(incident=3, delivery=None):
            log.warning("ping of %s refused", "m7")
        log.info("outside")

    lines = _lines(logs.JsonFormatter(), emit)
    assert [json.loads(line) for line in lines] == [
        {"time": "2026-12-01T18:00:00.250Z", "level": "WARNING", "logger": "tests.core.logs",
         "message": "ping of m7 refused", "request_id": "r-1", "monitor": 7, "incident": 3},
        {"time": "2026-12-01T18:00:00.250Z", "level": "INFO", "logger": "tests.core.logs",
         "message": "outside"},
    ]


def test_json_escapes_client_text_and_keeps_extra_fields_and_the_traceback():
    def emit(log):
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("path %s", "/ping/x/\nINJECTED \u2028 \x1b[31m",
                          extra={"status": 400})

    lines = _lines(logs.JsonFormatter(), emit)
    assert len(lines) == 1
    assert lines[0].isascii()
    record = json.loads(lines[0])
    assert record["message"] == "path /ping/x/\nINJECTED \u2028 \x1b[31m"
    assert record["status"] == 400
    assert record["exc_info"].startswith("Traceback (most recent call last):")
    assert record["exc_info"].endswith("ValueError: boom")
    assert list(record) == ["time", "level", "logger", "message", "status", "exc_info"]


def test_plain_line_escapes_the_message_and_shows_the_ids():
    def emit(log):
        with logs.bound(request_id="abc", delivery=12, incident=4):
            log.info("GET %s %s", "/ping/x/\nINJECTED", "agent\r\x1b[2J\u2028\t")

    assert _lines(logs.PlainFormatter(), emit) == [
        "2026-12-01T18:00:00.250Z INFO tests.core.logs [request_id=abc incident=4 delivery=12] "
        "GET /ping/x/\\nINJECTED agent\\r\\x1b[2J\\u2028\\t"]


def test_plain_traceback_keeps_its_lines_after_the_escaped_message():
    def emit(log):
        try:
            raise KeyError("k")
        except KeyError:
            log.exception("failed for %s", "a\nb")

    lines = _lines(logs.PlainFormatter(), emit)
    assert lines[0] == "2026-12-01T18:00:00.250Z ERROR tests.core.logs failed for a\\nb"
    assert lines[1] == "Traceback (most recent call last):"
    assert lines[-1] == "KeyError: 'k'"


def test_escape_leaves_printable_text_alone():
    assert logs.escape("héllo wörld / ✓") == "héllo wörld / ✓"
    assert logs.escape("a\x00b\x7fc\x85") == "a\\x00b\\x7fc\\x85"


def test_bound_refuses_an_unknown_id_and_resets_on_exit():
    with pytest.raises(TypeError, match="unknown log id 'monitor_id'"):
        logs.bound(monitor_id=1)
    with logs.bound(monitor=1):
        assert logs.current() == {"monitor": 1}
    assert logs.current() == {}


class _Recorder(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.fixture
def recorded():
    logger = logging.getLogger("tests.core.logs.outage")
    handler = _Recorder()
    logger.addHandler(handler)
    logger.propagate = False
    yield logger, handler.records
    logger.removeHandler(handler)


def test_a_database_outage_logs_one_line_a_minute_and_one_when_it_is_over(recorded):
    logger, records = recorded
    down = logs.DatabaseDown()
    exc = OperationalError('connection refused\n\tIs the server running on host "db"?')
    for i in range(120):  # two loops failing 4 times a second for 30 s
        down.failed(logger, exc, T0 + timedelta(seconds=i / 4))
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("ERROR", "database unreachable since 2026-12-01T18:00:00+00:00: 1 failed step(s) "
                  "in this process (OperationalError: connection refused)")]
    down.failed(logger, exc, T0 + timedelta(seconds=59))
    assert len(records) == 1
    down.failed(logger, exc, T0 + timedelta(seconds=61))
    assert records[1].getMessage() == (
        "database unreachable since 2026-12-01T18:00:00+00:00: 122 failed step(s) "
        "in this process (OperationalError: connection refused)")
    assert not records[0].exc_info  # no traceback
    down.ok(logger, T0 + timedelta(seconds=75))
    down.ok(logger, T0 + timedelta(seconds=76))
    assert [(r.levelname, r.getMessage()) for r in records[2:]] == [
        ("INFO", "database reachable again after 75 s (122 failed step(s) in this process)")]
    down.failed(logger, exc, T0 + timedelta(seconds=90))  # a new outage: said at once
    assert records[3].getMessage().startswith("database unreachable since "
                                              "2026-12-01T18:01:30+00:00: 1 failed step(s)")


def test_report_logs_other_errors_with_their_traceback(recorded, monkeypatch):
    logger, records = recorded
    monkeypatch.setattr(logs, "database", logs.DatabaseDown())
    logs.report(logger, "evaluator tick failed", ZeroDivisionError("x"), T0)
    logs.report(logger, "evaluator tick failed", OperationalError("down"), T0)
    logs.report(logger, "evaluator tick failed", OperationalError("down"), T0)
    logs.recovered(logger, T0 + timedelta(seconds=5))
    assert [(r.getMessage(), bool(r.exc_info)) for r in records] == [
        ("evaluator tick failed", True),
        ("database unreachable since 2026-12-01T18:00:00+00:00: 1 failed step(s) in this "
         "process (OperationalError: down)", False),
        ("database reachable again after 5 s (2 failed step(s) in this process)", False)]


def test_quiet_outage_swallows_only_database_errors(recorded, monkeypatch):
    logger, records = recorded
    monkeypatch.setattr(logs, "database", logs.DatabaseDown())
    outcomes = iter([OperationalError("down"), 5, ZeroDivisionError("bug")])

    @logs.quiet_outage(logger)
    def task():
        """The task."""
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    assert (task.__name__, task.__doc__) == ("task", "The task.")
    assert task() is None
    assert task() == 5
    with pytest.raises(ZeroDivisionError):
        task()
    assert [(r.levelname, r.getMessage().split(" since ")[0].split(" after ")[0])
            for r in records] == [("ERROR", "database unreachable"),
                                  ("INFO", "database reachable again")]


def test_a_bad_host_is_a_line_without_a_traceback(client, caplog):
    """Any client can send a Host ALLOWED_HOSTS does not list (QA: 15 lines each)."""
    from django.test import override_settings

    with override_settings(ALLOWED_HOSTS=["cron.example.com"]), \
            caplog.at_level(logging.WARNING, logger="django.security.DisallowedHost"):
        assert client.get("/", HTTP_HOST="evil.example").status_code == 400
    [record] = [r for r in caplog.records if r.name == "django.security.DisallowedHost"]
    assert record.exc_info is None and record.exc_text is None
    assert record.getMessage().startswith("Invalid HTTP_HOST header: 'evil.example'.")


def test_outgoing_request_lines_are_not_logged():
    """httpx logs each request's full URL at INFO, urllib3 (the sender's
    connections) at DEBUG and in a WARNING about unparsable headers: a webhook's or
    the watchdog's path is a secret (a Slack hook URL, a check's UUID)."""
    assert logging.getLogger("httpx").getEffectiveLevel() == logging.WARNING
    assert logging.getLogger("httpcore").getEffectiveLevel() == logging.WARNING
    assert logging.getLogger("urllib3").getEffectiveLevel() == logging.ERROR


def _reference_time(created: float) -> str:
    """What iso_time wrote before it cached the second: the datetime way."""
    return datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds"
                                                          ).replace("+00:00", "Z")


@pytest.mark.parametrize("created", [
    CREATED, T0.timestamp(), T0.timestamp() + 0.0004999, T0.timestamp() + 0.0005,
    T0.timestamp() + 0.9994999, T0.timestamp() + 0.9995, T0.timestamp() + 0.9999994,
    T0.timestamp() + 0.9999995, T0.timestamp() + 0.9999996, T0.timestamp() + 59.9999999,
    1764612671.1234565, 1764612671.1234575, 1764612671.999, 0.0])
def test_iso_time_is_the_datetime_iso_format_to_the_millisecond(created):
    record = logging.LogRecord("x", logging.INFO, None, None, "m", (), None)
    record.created = created
    assert logs.iso_time(record) == _reference_time(created)


def test_iso_time_matches_datetime_over_many_times_in_and_across_seconds():
    record = logging.LogRecord("x", logging.INFO, None, None, "m", (), None)
    start = T0.timestamp() + 0.99
    for k in range(20_000):
        record.created = start + k * 0.0000731
        assert logs.iso_time(record) == _reference_time(record.created)


def test_json_format_writes_what_the_base_class_format_writes_byte_for_byte():
    """The fast path of JsonFormatter.format (a text message, no traceback) gives
    the line python-json-logger's own format gives, for the access line's shape
    and others."""
    formatter = logs.JsonFormatter()
    seen = []

    class Both(logging.Handler):
        def emit(self, record):
            base = logs._BaseJsonFormatter.format(formatter, record)
            seen.append((formatter.format(record), base))

    handler = Both()
    handler.addFilter(logs.ContextFilter())
    logger = logging.getLogger("tests.core.logs.both")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        with logs.bound(request_id="0123456789abcdef00000001"):
            logger.info('%s "%s" %s %.1fms %s "%s"', "GET", '/ping/x?a="1"\n', 200, 1.25,
                        "192.0.2.1", "wrk \u2028",
                        extra={"method": "GET", "path": '/ping/x?a="1"\n', "status": 200,
                               "duration_ms": 1.2, "client": "192.0.2.1",
                               "user_agent": "wrk \u2028"})
            logger.info('%s "%s" %s', "GET", "/", "-",
                        extra={"status": None, "_private": 1, "monitor_name": "é"})
        with logs.bound(monitor=7, incident=3):
            logger.warning("plain %d", 5)
        logger.info({"a": 1})
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("failed", extra={"status": 500})
    finally:
        logger.removeHandler(handler)
    assert len(seen) == 5
    for fast, base in seen:
        assert fast == base
    assert json.loads(seen[0][0]) == {
        "time": json.loads(seen[0][0])["time"], "level": "INFO",
        "logger": "tests.core.logs.both",
        "message": 'GET "/ping/x?a="1"\n" 200 1.2ms 192.0.2.1 "wrk \u2028"',
        "request_id": "0123456789abcdef00000001", "method": "GET",
        "path": '/ping/x?a="1"\n', "status": 200, "duration_ms": 1.2,
        "client": "192.0.2.1", "user_agent": "wrk \u2028"}
