#!/usr/bin/env python3
"""Process test: single sign-on end to end. A real scheduler-standalone (SQLite, loopback) is
configured with the test identity provider (test_idp.py, its own process). A browser (a cookie
jar that follows no redirect by itself) signs in as an admin through the whole authorization
code flow, creates and pauses a job with the session's CSRF header, and the audit log names the
person; a change without the header is refused; a replayed state is refused; a user whose groups
map to no role gets 403 saying so; an access token of the IdP works as a bearer, and a token for
another audience (the ID token) is refused. Sessions live in the database: after a restart of
scheduler-standalone the cookie still works, and a scheduler-web on the same database knows it
too; signing out there ends it everywhere. A sign-in started at one process may come back to the
other (the browser carries it). Sign-ins, sign-outs and refused sign-ins are in the
audit log, without a cookie or token value.

    oidc_process_test.py /path/to/scheduler-standalone /path/to/scheduler-web
"""

import base64
import hashlib
import http.cookiejar
import json
import os
import secrets
import shutil
import socket
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from process_harness import Child  # noqa: E402

USERS = {
    "alice": {"sub": "u-alice", "email": "alice@example.com", "name": "Alice", "groups": ["staff", "sched-admins"]},
    "bob": {"sub": "u-bob", "email": "bob@example.com", "name": "Bob", "groups": ["staff"]},
}


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def headers_of(message):
    """The answer's headers as a dict; several Set-Cookie fields joined by newlines."""
    out = dict(message)
    cookies = message.get_all("Set-Cookie") or []
    if cookies:
        out["Set-Cookie"] = "\n".join(cookies)
    return out


class Browser:
    """A cookie jar; every answer (redirects and errors included) is returned, not raised."""

    def __init__(self):
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), NoRedirect())

    def call(self, method, url, body=None, headers=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with self.opener.open(req, timeout=10) as r:
                return r.status, headers_of(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, headers_of(e.headers), e.read().decode()

    def sign_in(self, base, user, callback_base=None):
        """GET /auth/login -> IdP /authorize -> /auth/callback (at callback_base when given: a balancer
        sending it to another web process); returns the callback's answer and URL."""
        status, headers, body = self.call("GET", base + "/auth/login?login_hint=" + user)
        assert status == 302, (status, body)
        sign_in_cookie = headers.get("Set-Cookie", "")
        for attribute in ("sched_sign_in_", "HttpOnly", "SameSite=Lax", "Path=/auth/callback", "Max-Age=600"):
            assert attribute in sign_in_cookie, sign_in_cookie
        authorize = headers["Location"]
        q = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(authorize).query))
        assert q["code_challenge_method"] == "S256" and q["state"] and q["nonce"], authorize
        status, headers, body = self.call("GET", authorize)
        assert status == 302, (status, body)
        callback = headers["Location"]
        assert callback.startswith(base + "/auth/callback?"), callback
        if callback_base:
            callback = callback_base + callback[len(base):]
        return self.call("GET", callback) + (callback,)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def idp_access_and_id_token(issuer, secret):
    """The code flow as an API client would do it, straight against the IdP."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    redirect = "http://127.0.0.1:1/cli"
    browser = Browser()
    status, headers, body = browser.call("GET", issuer + "/authorize?" + urllib.parse.urlencode({
        "response_type": "code", "client_id": "sched-ui", "redirect_uri": redirect, "scope": "openid",
        "state": "s", "code_challenge": challenge, "code_challenge_method": "S256", "login_hint": "alice"}))
    assert status == 302, (status, body)
    code = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(headers["Location"]).query))["code"]
    form = urllib.parse.urlencode({"grant_type": "authorization_code", "code": code, "redirect_uri": redirect,
                                   "code_verifier": verifier, "client_id": "sched-ui",
                                   "client_secret": secret}).encode()
    with urllib.request.urlopen(urllib.request.Request(issuer + "/token", data=form), timeout=10) as r:
        tokens = json.loads(r.read())
    return tokens["access_token"], tokens["id_token"]


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    standalone_bin = os.path.abspath(sys.argv[1])
    web_bin = os.path.abspath(sys.argv[2])
    work = tempfile.mkdtemp(prefix="sched-oidc-")
    children = []
    try:
        with open(os.path.join(work, "users.json"), "w") as f:
            json.dump(USERS, f)
        client_secret = secrets.token_hex(16)
        secret_file = os.path.join(work, "client-secret")
        with open(secret_file, "w") as f:
            f.write(client_secret + "\n")
        env = dict(os.environ)
        env.pop("SCHED_TOKEN", None)
        env.pop("SCHED_OIDC_CLIENT_SECRET", None)
        idp = Child([sys.executable, os.path.join(HERE, "test_idp.py"), "--users", os.path.join(work, "users.json"),
                     "--client-id", "sched-ui", "--client-secret-file", secret_file,
                     "--api-audience", "sched-api"], env, work)
        children.append(idp)
        line = idp.wait_line("test-idp listening on ", 20)
        assert line, "the test IdP did not start:\n" + idp.output()
        issuer = line.split("listening on ", 1)[1].strip()

        port = free_port()
        base = "http://127.0.0.1:%d" % port
        cluster_token = secrets.token_hex(16)
        config = os.path.join(work, "standalone.yaml")
        oidc_section = [
                "oidc:",
                '  issuer: "%s"' % issuer,
                "  client-id: sched-ui",
                '  client-secret-file: "%s"' % secret_file,
                "  audience: sched-api",
                '  public-url: "%s"' % base,
                "  role-mapping:",
                "    admin: [sched-admins]",
                "    operator: [sched-ops]"]
        db_url = "sqlite://%s/data/s.db" % work

        def write_config(path, listen_port):
            """A node's config: this cluster token, database and sign-in, listening on listen_port."""
            with open(path, "w") as f:
                f.write("\n".join([
                    'token: "%s"' % cluster_token,
                    "http:", '  listen: "127.0.0.1:%d"' % listen_port,
                    "database:", '  url: "%s"' % db_url,
                    "log:", "  level: info"] + oidc_section + [""]))

        write_config(config, port)
        os.makedirs(os.path.join(work, "data"))

        def start_standalone():
            child = Child([standalone_bin, "--config", config], env, work)
            children.append(child)
            assert child.wait_line("listening on http://127.0.0.1:", 30), \
                "scheduler-standalone did not start:\n" + child.output()
            return child

        standalone = start_standalone()

        # The UI learns that SSO is on.
        anonymous = Browser()
        status, _, body = anonymous.call("GET", base + "/auth/config")
        assert status == 200 and json.loads(body)["oidc"] is True, (status, body)

        # Alice signs in through the whole code flow.
        alice = Browser()
        status, headers, body, callback = alice.sign_in(base, "alice")
        assert status == 302, (status, body, standalone.output())
        cookie = headers.get("Set-Cookie", "")
        for attribute in ("sched_session=", "HttpOnly", "SameSite=Lax", "Path=/"):
            assert attribute in cookie, cookie
        assert "Secure" not in cookie, "public-url is http here: " + cookie
        status, _, body = alice.call("GET", base + "/api/v1/session")
        assert status == 200, (status, body)
        session = json.loads(body)
        assert session["name"] == "alice@example.com" and session["role"] == "admin", session
        assert session["via"] == "session" and session["issuer"] == issuer and session["subject"] == "u-alice", session
        csrf = session["csrf_token"]
        assert csrf, session

        # A replayed state (the same callback URL again) is refused.
        status, _, body = Browser().call("GET", callback)
        assert status == 400 and "already used" in body, (status, body)

        # Changes need the CSRF header; with it, they are Alice's.
        job = {"name": "sso-job", "app": "demo", "handler": "echo", "schedule_type": "cron",
               "schedule_expr": "0 0 * * * ?"}
        status, _, body = alice.call("POST", base + "/api/v1/jobs", job)
        assert status == 403 and "X-CSRF-Token" in body, (status, body)
        status, _, body = alice.call("POST", base + "/api/v1/jobs", job, {"X-CSRF-Token": "0" * 64})
        assert status == 403, (status, body)
        status, _, body = alice.call("POST", base + "/api/v1/jobs", job, {"X-CSRF-Token": csrf})
        assert status == 201, (status, body)
        job_id = json.loads(body)["id"]
        status, _, body = alice.call("POST", base + "/api/v1/jobs/%d/pause" % job_id, {}, {"X-CSRF-Token": csrf})
        assert status == 200, (status, body)
        status, _, body = alice.call("GET", base + "/api/v1/audit?target_kind=job&target_id=%d" % job_id)
        assert status == 200, (status, body)
        entries = json.loads(body)["items"]
        assert sorted(e["action"] for e in entries) == ["create", "pause"], entries
        for e in entries:
            assert e["actor"]["name"] == "alice@example.com" and e["actor"]["role"] == "admin", e

        # Bob's groups map to no role: 403 saying so, and no session.
        bob = Browser()
        status, headers, body, _ = bob.sign_in(base, "bob")
        assert status == 403 and "has no role here" in body and "groups" in body, (status, body)
        assert "sched_session=" not in headers.get("Set-Cookie", ""), headers

        # An access token of the IdP as a bearer; the ID token (audience sched-ui) is not one.
        access_token, id_token = idp_access_and_id_token(issuer, client_secret)
        api = Browser()
        status, _, body = api.call("GET", base + "/api/v1/session", headers={"Authorization": "Bearer " + access_token})
        assert status == 200 and json.loads(body)["via"] == "oidc-bearer", (status, body)
        status, _, body = api.call("GET", base + "/api/v1/jobs", headers={"Authorization": "Bearer " + access_token})
        assert status == 200 and "sso-job" in body, (status, body)
        status, _, body = api.call("GET", base + "/api/v1/jobs", headers={"Authorization": "Bearer " + id_token})
        assert status == 401 and "wrong audience" in body, (status, body)

        # The session is in the database: a restart signs nobody out.
        session_id = next(c.value for c in alice.jar if c.name == "sched_session")
        assert standalone.stop() == 0, standalone.output()
        standalone = start_standalone()
        status, _, body = alice.call("GET", base + "/api/v1/session")
        assert status == 200, (status, body, standalone.output())
        assert json.loads(body)["csrf_token"] == csrf and json.loads(body)["name"] == "alice@example.com", body
        status, _, body = alice.call("POST", base + "/api/v1/jobs/%d/resume" % job_id, {}, {"X-CSRF-Token": csrf})
        assert status == 200, (status, body)

        # A scheduler-web on the same database knows the session (no sticky sessions needed).
        web_port = free_port()
        web_base = "http://127.0.0.1:%d" % web_port
        web_config = os.path.join(work, "web.yaml")
        write_config(web_config, web_port)
        web = Child([web_bin, "--config", web_config], env, work)
        children.append(web)
        assert web.wait_line("listening on http://127.0.0.1:", 30), "scheduler-web did not start:\n" + web.output()
        by_hand = {"Cookie": "sched_session=" + session_id}
        status, _, body = Browser().call("GET", web_base + "/api/v1/session", headers=by_hand)
        assert status == 200 and json.loads(body)["csrf_token"] == csrf, (status, body, web.output())
        status, _, body = Browser().call("POST", web_base + "/api/v1/jobs/%d/pause" % job_id, {},
                                         dict(by_hand, **{"X-CSRF-Token": csrf}))
        assert status == 200, (status, body)

        # A sign-in started at scheduler-standalone whose callback a balancer sends to scheduler-web:
        # the browser carries the sign-in, and the session is known to both.
        alice2 = Browser()
        status, headers, body, _ = alice2.sign_in(base, "alice", callback_base=web_base)
        assert status == 302 and "sched_session=" in headers.get("Set-Cookie", ""), (status, body, web.output())
        status, _, body = alice2.call("GET", base + "/api/v1/session")
        assert status == 200 and json.loads(body)["via"] == "session", (status, body)
        assert json.loads(body)["csrf_token"] != csrf, "a session of its own"

        # Signing out (it needs the CSRF header too) on one process ends the session on both: the
        # old cookie, sent again by hand, is refused.
        status, _, body = Browser().call("POST", web_base + "/auth/logout", headers=by_hand)
        assert status == 403, (status, body)
        status, headers, body = Browser().call("POST", web_base + "/auth/logout",
                                               headers=dict(by_hand, **{"X-CSRF-Token": csrf}))
        assert status == 204 and "Max-Age=0" in headers.get("Set-Cookie", ""), (status, headers, body)
        for where in (base, web_base):
            status, _, body = Browser().call("GET", where + "/api/v1/session", headers=by_hand)
            assert status == 401 and "sign in again" in body, (where, status, body)

        # The audit log has the sign-in and the sign-out (Alice's, one session), and Bob's refusal
        # with its reason; no entry holds the cookie, its CSRF token or a token of the IdP.
        admin = {"Authorization": "Bearer " + cluster_token}
        status, _, body = api.call("GET", base + "/api/v1/audit?target_kind=session", headers=admin)
        assert status == 200, (status, body)
        entries = json.loads(body)["items"]
        by_action = {}
        for e in entries:
            by_action.setdefault(e["action"], []).append(e)
        assert sorted(by_action) == ["sign-in", "sign-in-refused", "sign-out"], entries
        signed_out = by_action["sign-out"][0]
        assert len(by_action["sign-in"]) == 2 and len(by_action["sign-out"]) == 1, entries
        for e in by_action["sign-in"] + by_action["sign-out"]:
            assert e["actor"]["name"] == "alice@example.com" and e["actor"]["role"] == "admin", e
        # The sign-out pairs with the first sign-in (entries are newest first).
        signed_in = by_action["sign-in"][1]
        assert signed_in["target"]["id"] == signed_out["target"]["id"], entries
        assert by_action["sign-in"][0]["target"]["id"] != signed_out["target"]["id"], entries
        assert signed_in["after"]["subject"] == "u-alice" and signed_out["after"] is None, entries
        refused = by_action["sign-in-refused"][0]
        assert refused["actor"]["name"] == "bob@example.com" and refused["actor"]["role"] == "none", refused
        assert "has no role here" in refused["after"]["reason"], refused
        for secret in (session_id, csrf, access_token, id_token, hashlib.sha256(session_id.encode()).hexdigest()):
            assert secret not in body, "a secret in the audit log"
        status, _, body = api.call("GET", base + "/api/v1/audit?action=sign-in-refused", headers=admin)
        assert status == 200 and len(json.loads(body)["items"]) == 1, (status, body)
        print("oidc process test: OK")
        return 0
    finally:
        for child in reversed(children):
            child.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
