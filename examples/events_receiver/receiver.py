#!/usr/bin/env python3
"""A reference receiver for payrecon's events (docs/reference.md §6), to copy into a merchant's application.

It does what a receiver must do to turn at-least-once delivery into exactly one effect:

1. verify the Standard Webhooks signature with the official library (`pip install
   standardwebhooks`); a bad or stale signature is answered 400 and changes nothing;
2. in ONE database transaction: record the `webhook-id` (a primary key, so a second delivery of
   the same event is a no-op) and perform the effect, here "fulfil the order" on `order.final`,
   itself unique per (order_ref, to_state) so that the merchant's own webhook handler and
   payrecon's events together fulfil each order once;
3. answer 2xx only after that transaction committed (payrecon retries anything else).

Run:  python3 receiver.py --db shop.db --port 8080 --secret-file secret.txt
      (the secret is the `whsec_...` value of payrecon's `[events] secret`)
"""

import argparse
import json
import sqlite3
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SCHEMA = """
CREATE TABLE IF NOT EXISTS received_events (
    webhook_id  TEXT PRIMARY KEY,          -- payrecon's event id: the dedup key
    type        TEXT NOT NULL,
    order_ref   TEXT NOT NULL,
    received_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE IF NOT EXISTS fulfilments (
    order_ref   TEXT NOT NULL,
    to_state    TEXT NOT NULL,
    via         TEXT NOT NULL,             -- 'payrecon' here; the merchant's handler writes its own
    UNIQUE (order_ref, to_state)           -- one effect per (order, to_state), whoever brings it
);
"""


def handle_event(db, webhook_id, event):
    """Records the event and performs its effect in one transaction. Returns False for a
    duplicate delivery (nothing done)."""
    data = event["data"]
    with db:  # BEGIN ... COMMIT, or ROLLBACK on an exception
        cur = db.execute(
            "INSERT INTO received_events (webhook_id, type, order_ref) VALUES (?, ?, ?) "
            "ON CONFLICT (webhook_id) DO NOTHING",
            (webhook_id, event["type"], data["order_ref"]),
        )
        if cur.rowcount == 0:
            return False
        if event["type"] == "order.final":
            # The effect. ON CONFLICT: the merchant's own handler may have fulfilled it already.
            db.execute(
                "INSERT INTO fulfilments (order_ref, to_state, via) VALUES (?, 'final', 'payrecon') "
                "ON CONFLICT (order_ref, to_state) DO NOTHING",
                (data["order_ref"],),
            )
    return True


def make_handler(webhook, db_path):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                event = webhook.verify(body, headers)
            except WebhookVerificationError:
                return self.answer(400, "bad signature")
            db = sqlite3.connect(db_path, timeout=10)
            try:
                new = handle_event(db, headers["webhook-id"], event)
            finally:
                db.close()
            self.answer(200, "ok" if new else "duplicate")

        def answer(self, status, text):
            payload = text.encode()
            self.send_response(status)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, fmt, *args):  # one line per request on stderr
            sys.stderr.write("receiver: " + (fmt % args) + "\n")

    return Handler


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", required=True)
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--secret-file", required=True)
    args = p.parse_args()
    with open(args.secret_file) as f:
        webhook = Webhook(f.read().strip())
    db = sqlite3.connect(args.db)
    db.executescript(SCHEMA)
    db.close()
    server = ThreadingHTTPServer((args.host, args.port), make_handler(webhook, args.db))
    print(f"listening on {args.host}:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
