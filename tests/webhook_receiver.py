#!/usr/bin/env python3
"""A webhook receiver for the black-box tests: verifies every delivery with the Standard Webhooks
reference library from PyPI (`standardwebhooks`, pinned in xtask and .ci/run), never our own code.

Usage: webhook_receiver.py SECRETS_FILE [--fail-first N] [--throttle-first N --retry-after S]
                           [--delay-ms MS [--delay-first N]]
Prints the port it listens on (127.0.0.1) as its first line. SECRETS_FILE holds one `whsec_…`
secret per line, read again for each request (the test writes it once the webhook exists).
POST /anything  -> a delivery, recorded as it arrives (before the answer); then, after MS
                   milliseconds (a slow receiver, so that a test can stop the server while
                   deliveries are in flight; only the first N requests with --delay-first), answers 503 for the first N (--fail-first), or 429
                   with `Retry-After: S` for the first N (--throttle-first), then 200.
GET /anything   -> JSON list of what arrived: {id, type, status, verifiedWith: [indexes of the
                   secrets that verify it], signatures, body, at (arrival, seconds since the
                   epoch)}; `?from=K` lists from the K-th on, `?count` answers {"count": n} only.
PUT /anything   -> 204; from then on every delivery is answered 200 (the endpoint recovered).
"""

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def option(name, default=0):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


SECRETS_FILE = sys.argv[1]
FAIL_FIRST = option("--fail-first")
THROTTLE_FIRST = option("--throttle-first")
RETRY_AFTER = option("--retry-after", 1)
DELAY = option("--delay-ms") / 1000.0
DELAY_FIRST = option("--delay-first", 1 << 62)
HEALED = threading.Event()
LOCK = threading.Lock()
RECEIVED = []


def secrets():
    try:
        with open(SECRETS_FILE, encoding="utf-8") as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        query = parse_qs(urlsplit(self.path).query, keep_blank_values=True)
        with LOCK:
            if "count" in query:
                body = json.dumps({"count": len(RECEIVED)})
            else:
                body = json.dumps(RECEIVED[int(query.get("from", ["0"])[0]):])
        self.answer(200, body.encode(), [("content-type", "application/json")])

    def do_PUT(self):
        HEALED.set()
        self.answer(204, b"")

    def do_POST(self):
        at = time.time()
        length = int(self.headers.get("content-length", "0"))
        payload = self.rfile.read(length).decode()
        headers = {name.lower(): value for name, value in self.headers.items()}
        verified = []
        for index, secret in enumerate(secrets()):
            try:
                Webhook(secret).verify(payload, headers)
                verified.append(index)
            except WebhookVerificationError:
                pass
        with LOCK:
            n = len(RECEIVED)
            if HEALED.is_set():
                status = 200
            elif n < FAIL_FIRST:
                status = 503
            elif n < THROTTLE_FIRST:
                status = 429
            else:
                status = 200
            try:
                kind = json.loads(payload).get("type")
            except ValueError:
                kind = None
            RECEIVED.append({
                "id": headers.get("webhook-id"),
                "type": kind,
                "status": status,
                "verifiedWith": verified,
                "signatures": headers.get("webhook-signature", ""),
                "body": payload,
                "at": at,
            })
        if DELAY and n < DELAY_FIRST:
            time.sleep(DELAY)
        if status == 503:
            self.answer(503, b"unavailable")
        elif status == 429:
            self.answer(429, b"slow down", [("retry-after", str(RETRY_AFTER))])
        else:
            self.answer(200, b"ok")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
