// Receive CronRadar webhooks and verify them as Standard Webhooks says.
//
// Node 18+, built-in modules only. Run it with the channel's `signing_secret`
// (`whsec_...`, from `GET /api/v1/channels/<id>/`):
//
//     WEBHOOK_SECRET=whsec_... node verify_webhook.mjs 8080
//
// It answers 204 to a notification whose signature is right and whose timestamp
// is at most 5 minutes old (or ahead), and 400 to anything else.
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";

const TOLERANCE = 5 * 60; // seconds: a captured request cannot be replayed later

export function verify(secret, headers, body, now = Date.now() / 1000) {
  // body: the exact bytes received (a Buffer), never re-serialized JSON
  const id = headers["webhook-id"];
  const timestamp = headers["webhook-timestamp"];
  const signatures = headers["webhook-signature"];
  if (!id || !timestamp || !signatures) {
    throw new Error("missing webhook-id, webhook-timestamp or webhook-signature");
  }
  const sent = Number(timestamp);
  if (!Number.isInteger(sent)) throw new Error("bad webhook-timestamp");
  if (Math.abs(now - sent) > TOLERANCE) throw new Error("timestamp too old or too new");
  const key = Buffer.from(secret.replace(/^whsec_/, ""), "base64");
  const expected = createHmac("sha256", key)
    .update(`${id}.${timestamp}.`).update(body).digest();
  for (const signature of signatures.split(" ")) {
    const [version, value] = signature.split(",");
    const given = Buffer.from(value ?? "", "base64");
    if (version === "v1" && given.length === expected.length
        && timingSafeEqual(given, expected)) {
      return JSON.parse(body); // dedupe on id (the event_id): retries repeat it
    }
  }
  throw new Error("no matching signature");
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    try {
      const event = verify(process.env.WEBHOOK_SECRET, req.headers, Buffer.concat(chunks));
      console.log("verified", event.event, event.event_id);
      res.writeHead(204).end();
    } catch (err) {
      res.writeHead(400).end(err.message);
    }
  });
});
server.listen(Number(process.argv[2] ?? 8080), "127.0.0.1", () => {
  console.log("listening on", server.address().port);
});
