"""scripts/demo_receiver.py, the README tour's receiver: it answers 200 to every
notification, incident events and notices of no incident alike."""
import importlib.util
import threading
from http.server import HTTPServer
from pathlib import Path

import httpx

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "demo_receiver.py"
spec = importlib.util.spec_from_file_location("demo_receiver", SCRIPT)
demo_receiver = importlib.util.module_from_spec(spec)
spec.loader.exec_module(demo_receiver)

OPENED = {"event": "incident.opened", "event_id": 7, "incident": {
    "cause": "missed", "missed_count": 2, "resolution": "", "summary": "backup: 2 missed"}}
FAILING = {"event": "channel.failing", "event_id": 8, "incident": None, "channel": {
    "name": "hook", "failing_since": "2026-01-05T12:00:00Z", "last_error": "HTTP 500"}}
TEST = {"event": "test", "event_id": 9, "incident": None}


def test_every_notification_is_described():
    assert demo_receiver.describe(OPENED) == (
        "incident.opened    cause=missed   missed=2", "backup: 2 missed")
    assert demo_receiver.describe(FAILING) == (
        "channel.failing    channel 'hook'", "failing since 2026-01-05T12:00:00Z: HTTP 500")
    assert demo_receiver.describe(TEST) == ("test              ", "event_id 9")


def test_it_answers_200_to_notices_of_no_incident_and_to_junk(capsys):
    server = HTTPServer(("127.0.0.1", 0), demo_receiver.Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        signed = {"X-CronRadar-Signature": "sha256=abc"}
        assert [httpx.post(url, json=doc, headers=signed).status_code
                for doc in (OPENED, FAILING, TEST)] == [200, 200, 200]
        assert httpx.post(url, content=b"not json").status_code == 200
    finally:
        server.shutdown()
    out = capsys.readouterr().out
    assert "channel.failing    channel 'hook'" in out and "not a CronRadar notification" in out
