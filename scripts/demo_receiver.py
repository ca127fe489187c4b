"""A tiny webhook receiver for scripts/demo: prints each CronRadar alert it gets.

Usage: python scripts/demo_receiver.py PORT
"""
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        doc = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inc = doc["incident"]
        print(f"[receiver {time.strftime('%H:%M:%S')}] {doc['event']:<18} "
              f"cause={inc['cause']:<8} missed={inc['missed_count']} "
              f"signature={self.headers['X-CronRadar-Signature'][:19]}...\n"
              f"    {inc['resolution'] or inc['summary']}", flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(sys.argv[1])
    try:
        server = HTTPServer(("127.0.0.1", port), Handler)
    except OSError as exc:
        sys.exit(f"demo_receiver: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}")
    server.serve_forever()
