"""Receive CronRadar webhooks and verify them as Standard Webhooks says.

Python 3.10+, standard library only. Run it with the channel's `signing_secret`
(`whsec_...`, from `GET /api/v1/channels/<id>/`):

    WEBHOOK_SECRET=whsec_... python3 verify_webhook.py 8080

It answers 204 to a notification whose signature is right and whose timestamp
is at most 5 minutes old (or ahead), and 400 to anything else.
"""
import base64
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

TOLERANCE = 5 * 60  # seconds: older (or newer) timestamps are refused, so a captured
# request cannot be replayed later


class InvalidWebhook(Exception):
    pass


def verify(secret: str, headers, body: bytes, now: float | None = None) -> dict:
    """The notification in ``body`` (the exact bytes received), or InvalidWebhook."""
    msg_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not (msg_id and timestamp and signatures):
        raise InvalidWebhook("missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        sent = int(timestamp)
    except ValueError:
        raise InvalidWebhook("bad webhook-timestamp") from None
    now = time.time() if now is None else now
    if abs(now - sent) > TOLERANCE:
        raise InvalidWebhook("timestamp too old or too new")
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{msg_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for signature in signatures.split(" "):
        version, _, value = signature.partition(",")
        if version == "v1" and hmac.compare_digest(value, expected):
            return json.loads(body)  # dedupe on msg_id (the event_id): retries repeat it
    raise InvalidWebhook("no matching signature")


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            event = verify(os.environ["WEBHOOK_SECRET"], self.headers, body)
        except InvalidWebhook as exc:
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(exc).encode())
            return
        print("verified", event["event"], event["event_id"], flush=True)
        self.send_response(204)
        self.end_headers()


if __name__ == "__main__":
    server = HTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8080), Receiver)
    print("listening on", server.server_address[1], flush=True)
    server.serve_forever()
