#!/usr/bin/env python3
"""A webhook receiver for the black-box tests: verifies every delivery with the Standard Webhooks
reference library from PyPI (`standardwebhooks`, pinned in xtask and .ci/run), never our own code.

Usage: webhook_receiver.py SECRETS_FILE [--fail-first N]
Prints the port it listens on (127.0.0.1) as its first line. SECRETS_FILE holds one `whsec_…`
secret per line, read again for each request (the test writes it once the webhook exists).
POST /anything  -> a delivery: answers 503 for the first N, then 200.
GET /_received  -> JSON list of what arrived: {id, type, status, verifiedWith: [indexes of the
                   secrets that verify it], signatures, body}.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

SECRETS_FILE = sys.argv[1]
FAIL_FIRST = int(sys.argv[sys.argv.index("--fail-first") + 1]) if "--fail-first" in sys.argv else 0
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

    def do_GET(self):
        with LOCK:
            body = json.dumps(RECEIVED).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
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
            status = 503 if len(RECEIVED) < FAIL_FIRST else 200
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
            })
        answer = b"unavailable" if status == 503 else b"ok"
        self.send_response(status)
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
