#!/usr/bin/env python3
"""A minimal OpenID Connect provider, for tests only (never for real sign-ins).

It serves discovery, a JWKS with one RS256 and one ES256 key (generated at start), an
authorization endpoint that approves the user named by `login_hint` at once (or shows a tiny
form asking for one), and a token endpoint that checks the code (single use, 60 s), the
redirect URI, the PKCE S256 verifier and the client's id and secret. ID tokens are signed RS256
(audience: the client id, with the sign-in's nonce); access tokens ES256 (audience:
--api-audience). Users and their groups come from a JSON file:

    {"alice": {"sub": "u-alice", "email": "alice@example.com", "name": "Alice", "groups": ["sched-admins"]}}

    test_idp.py --users users.json --client-id sched-ui --client-secret-file secret \\
                --api-audience sched-api [--port 0]

It prints "test-idp listening on http://127.0.0.1:<port>" once it serves.
"""

import argparse
import base64
import hashlib
import html
import json
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def int_bytes(n, length=None):
    length = length or (n.bit_length() + 7) // 8
    return n.to_bytes(length, "big")


class Keys:
    def __init__(self):
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())

    def jwks(self):
        rn = self.rsa.public_key().public_numbers()
        en = self.ec.public_key().public_numbers()
        return {"keys": [
            {"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256", "n": b64url(int_bytes(rn.n)),
             "e": b64url(int_bytes(rn.e))},
            {"kty": "EC", "kid": "ec-1", "use": "sig", "alg": "ES256", "crv": "P-256",
             "x": b64url(int_bytes(en.x, 32)), "y": b64url(int_bytes(en.y, 32))},
        ]}

    def sign(self, claims, alg):
        header = {"alg": alg, "typ": "JWT", "kid": "rsa-1" if alg == "RS256" else "ec-1"}
        signing_input = (b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())).encode()
        if alg == "RS256":
            sig = self.rsa.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
        else:
            r, s = decode_dss_signature(self.ec.sign(signing_input, ec.ECDSA(hashes.SHA256())))
            sig = int_bytes(r, 32) + int_bytes(s, 32)
        return signing_input.decode() + "." + b64url(sig)


class Idp:
    def __init__(self, args):
        with open(args.users) as f:
            self.users = json.load(f)
        with open(args.client_secret_file) as f:
            self.client_secret = f.read().strip()
        self.client_id = args.client_id
        self.api_audience = args.api_audience
        self.keys = Keys()
        self.codes = {}
        self.lock = threading.Lock()
        self.issuer = ""

    def tokens(self, user, client_id, nonce):
        now = int(time.time())
        base = {"iss": self.issuer, "sub": user["sub"], "iat": now, "exp": now + 300}
        for claim in ("email", "name", "groups"):
            if claim in user:
                base[claim] = user[claim]
        id_claims = dict(base, aud=client_id)
        if nonce:
            id_claims["nonce"] = nonce
        access_claims = dict(base, aud=self.api_audience, scope="openid email profile")
        return {"id_token": self.keys.sign(id_claims, "RS256"),
                "access_token": self.keys.sign(access_claims, "ES256"),
                "token_type": "Bearer", "expires_in": 300}


def make_handler(idp):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            sys.stderr.write("test-idp: " + (fmt % args) + "\n")

        def answer(self, status, body, content_type="application/json", headers=None):
            data = body if isinstance(body, bytes) else (
                json.dumps(body) if content_type == "application/json" else body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def error(self, status, code, description):
            self.answer(status, {"error": code, "error_description": description})

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            if url.path == "/.well-known/openid-configuration":
                self.answer(200, {
                    "issuer": idp.issuer,
                    "authorization_endpoint": idp.issuer + "/authorize",
                    "token_endpoint": idp.issuer + "/token",
                    "jwks_uri": idp.issuer + "/jwks",
                    "response_types_supported": ["code"],
                    "subject_types_supported": ["public"],
                    "id_token_signing_alg_values_supported": ["RS256", "ES256"],
                    "code_challenge_methods_supported": ["S256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
                })
            elif url.path == "/jwks":
                self.answer(200, idp.keys.jwks())
            elif url.path == "/authorize":
                self.authorize(query)
            else:
                self.error(404, "not_found", url.path)

        def authorize(self, q):
            if q.get("client_id") != idp.client_id:
                return self.error(400, "invalid_client", "unknown client_id")
            if q.get("response_type") != "code" or q.get("code_challenge_method") != "S256" or \
                    not q.get("code_challenge") or not q.get("redirect_uri") or not q.get("state"):
                return self.error(400, "invalid_request",
                                  "response_type=code, S256 code_challenge, redirect_uri and state are required")
            user_name = q.get("login_hint")
            if not user_name:
                hidden = "".join('<input type="hidden" name="%s" value="%s">' % (html.escape(k), html.escape(v))
                                 for k, v in q.items())
                return self.answer(200, '<form method="get" action="/authorize">%s<label>user '
                                        '<input name="login_hint"></label><button>Sign in</button></form>' % hidden,
                                   "text/html; charset=utf-8")
            if user_name not in idp.users:
                return self.error(400, "access_denied", "no such user")
            code = secrets.token_urlsafe(24)
            with idp.lock:
                idp.codes[code] = {"user": idp.users[user_name], "redirect_uri": q["redirect_uri"],
                                   "challenge": q["code_challenge"], "nonce": q.get("nonce"),
                                   "client_id": q["client_id"], "expires": time.time() + 60}
            sep = "&" if "?" in q["redirect_uri"] else "?"
            location = q["redirect_uri"] + sep + urllib.parse.urlencode({"code": code, "state": q["state"]})
            self.answer(302, b"", "text/plain", {"Location": location})

        def do_POST(self):
            url = urllib.parse.urlsplit(self.path)
            if url.path != "/token":
                return self.error(404, "not_found", url.path)
            length = int(self.headers.get("Content-Length") or 0)
            if length > 65536:
                return self.error(413, "invalid_request", "body too large")
            form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
            client_id, client_secret = form.get("client_id"), form.get("client_secret")
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Basic "):
                client_id, _, client_secret = base64.b64decode(auth[6:]).decode().partition(":")
            if client_id != idp.client_id or client_secret != idp.client_secret:
                return self.error(401, "invalid_client", "wrong client id or secret")
            if form.get("grant_type") != "authorization_code":
                return self.error(400, "unsupported_grant_type", "only authorization_code")
            with idp.lock:
                grant = idp.codes.pop(form.get("code", ""), None)
            if grant is None or grant["expires"] < time.time():
                return self.error(400, "invalid_grant", "unknown, used or expired code")
            if grant["redirect_uri"] != form.get("redirect_uri") or grant["client_id"] != client_id:
                return self.error(400, "invalid_grant", "redirect_uri or client differs from the authorization")
            verifier = form.get("code_verifier", "")
            if b64url(hashlib.sha256(verifier.encode()).digest()) != grant["challenge"]:
                return self.error(400, "invalid_grant", "PKCE verifier does not match")
            self.answer(200, idp.tokens(grant["user"], client_id, grant["nonce"]))

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--client-secret-file", required=True)
    parser.add_argument("--api-audience", required=True)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    idp = Idp(args)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(idp))
    idp.issuer = "http://127.0.0.1:%d" % server.server_address[1]
    print("test-idp listening on " + idp.issuer, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
