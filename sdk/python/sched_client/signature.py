"""Request signatures, version v1 (docs/protocol.md "Security"); canonical code in C++:
libs/protocol/src/request_signature.cpp."""

import hashlib
import hmac

KEY_ID_HEADER = "X-Sched-Key-Id"
TIMESTAMP_HEADER = "X-Sched-Timestamp"
SIGNATURE_HEADER = "X-Sched-Signature"
DEFAULT_WINDOW_MS = 30_000
_MAX_HEADER = 256


def canonical_string(method, target, timestamp, key_id, body):
    """The six lines the HMAC covers: v1, METHOD, target, timestamp, key id, sha256(body)."""
    return "\n".join(["v1", method.upper(), target, timestamp, key_id, hashlib.sha256(body).hexdigest()])


def sign(secret, method, target, timestamp, key_id, body):
    """`v1=` + hex HMAC-SHA256 keyed by the secret's characters (not hex-decoded)."""
    canon = canonical_string(method, target, str(timestamp), key_id, body)
    return "v1=" + hmac.new(secret.encode(), canon.encode(), hashlib.sha256).hexdigest()


def verify(method, target, body, key_id, timestamp, signature, keys, cluster_now_ms, window_ms=DEFAULT_WINDOW_MS):
    """Checks a request in the protocol's order. `keys` maps key id -> secret. Returns None when
    the request verifies, else the reason (a short string) it does not."""
    if not keys:
        return "no signing keys yet: they arrive with the first answered heartbeat"
    if key_id is None or timestamp is None or signature is None:
        return "missing signature headers"
    if len(key_id) > _MAX_HEADER or len(timestamp) > 20 or len(signature) > _MAX_HEADER:
        return "oversized signature header"
    if not signature.startswith("v1="):
        return "unsupported signature version"
    if not timestamp.isascii() or not timestamp.isdigit():
        return "timestamp: expected decimal milliseconds"
    if abs(int(timestamp) - cluster_now_ms) > window_ms:
        return "timestamp outside the signature window"
    secret = keys.get(key_id)
    if secret is None:
        return "unknown key id"
    expected = sign(secret, method, target, timestamp, key_id, body)
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        return "bad signature"
    return None
