"""A tiny webhook receiver for scripts/demo: prints each CronRadar notification it
gets (incident events; and notices of no incident: test, outage.summary,
channel.failing, channel.recovered), and always answers 200.

Usage: python scripts/demo_receiver.py PORT
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        try:
            doc = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            head, text = describe(doc)
            print(f"[receiver {time.strftime('%H:%M:%S')}] {head} "
                  f"signature={self.headers.get('X-CronRadar-Signature', '')[:19]}...\n"
                  f"    {text}", flush=True)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:
            print(f"[receiver] not a CronRadar notification ({exc!r})", flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def describe(doc: dict) -> tuple[str, str]:
    """(headline, text) of a notification body (docs/channels.md's webhook schemas)."""
    event, inc = doc.get("event", "?"), doc.get("incident")
    if inc:
        return (f"{event:<18} cause={inc['cause']:<8} missed={inc['missed_count']}",
                inc["resolution"] or inc["summary"])
    if ch := doc.get("channel"):
        return (f"{event:<18} channel {ch.get('name')!r}",
                f"failing since {ch.get('failing_since')}: {ch.get('last_error')}")
    if out := doc.get("outage"):
        return f"{event:<18}", f"{out.get('unknown_slots')} slots unknown during an outage"
    return f"{event:<18}", f"event_id {doc.get('event_id')}"


if __name__ == "__main__":
    port = int(sys.argv[1])
    try:
        server = HTTPServer(("127.0.0.1", port), Handler)
    except OSError as exc:
        sys.exit(f"demo_receiver: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")
    server.serve_forever()
