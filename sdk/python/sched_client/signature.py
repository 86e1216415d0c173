"""Request signatures, version v1 (docs/protocol.md "Security"); canonical code in C++:
libs/protocol/src/request_signature.cpp."""

from __future__ import annotations

import hashlib
import hmac
import urllib.parse
from typing import Mapping, Optional

KEY_ID_HEADER = "X-Sched-Key-Id"
TIMESTAMP_HEADER = "X-Sched-Timestamp"
SIGNATURE_HEADER = "X-Sched-Signature"
DEFAULT_WINDOW_MS = 30_000
_MAX_HEADER = 256
INSTANCE_PARAM = "instance"
MAX_INSTANCE_LENGTH = 300
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:")


def canonical_string(method: str, target: str, timestamp: str, key_id: str, body: bytes) -> str:
    """The six lines the HMAC covers: v1, METHOD, target, timestamp, key id, sha256(body)."""
    return "\n".join(["v1", method.upper(), target, timestamp, key_id, hashlib.sha256(body).hexdigest()])


def sign(secret: str, method: str, target: str, timestamp: object, key_id: str, body: bytes) -> str:
    """`v1=` + hex HMAC-SHA256 keyed by the secret's characters (not hex-decoded)."""
    canon = canonical_string(method, target, str(timestamp), key_id, body)
    return "v1=" + hmac.new(secret.encode(), canon.encode(), hashlib.sha256).hexdigest()


def verify(method: str, target: str, body: bytes, key_id: Optional[str], timestamp: Optional[str],
           signature: Optional[str], keys: Mapping[str, str], cluster_now_ms: int,
           window_ms: int = DEFAULT_WINDOW_MS) -> Optional[str]:
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


def addressed_target(target: str, instance: str) -> str:
    """`target` with `instance=<host:port>` appended: the instance a node sends the call to, under
    the signature (every byte but letters, digits, "-._~" and ":" percent-encoded)."""
    encoded = "".join(c if c in _UNRESERVED else "".join("%%%02X" % b for b in c.encode("utf-8"))
                      for c in instance)
    return target + ("&" if "?" in target else "?") + INSTANCE_PARAM + "=" + encoded


def verify_addressee(target: str, instance: str) -> Optional[str]:
    """After verify(): None when `target` names this instance (`instance`, its advertised address,
    compared byte for byte) or none at all (a node older than the parameter), else the reason it
    is refused: addressed to another instance of the app, named twice, or malformed."""
    _, question, query = target.partition("?")
    if not question:
        return None
    addressed: Optional[str] = None
    for pair in query.split("&"):
        key, _, value = pair.partition("=")
        if key != INSTANCE_PARAM:
            continue
        if addressed is not None:
            return "instance: named more than once"
        addressed = _percent_decoded(value) if len(value) <= 3 * MAX_INSTANCE_LENGTH else None
        if addressed is None or len(addressed) > MAX_INSTANCE_LENGTH:
            return "instance: malformed"
    if addressed is None or addressed == instance:
        return None
    return "instance: the call is addressed to instance %r, not to this one (%s): a signed call is valid only " \
           "at the instance it was sent to" % (addressed[:64], instance)


def _percent_decoded(value: str) -> Optional[str]:
    """`value` percent-decoded ('+' stays a '+'), or None when an escape is malformed or the
    bytes are not UTF-8."""
    out = bytearray()
    i = 0
    while i < len(value):
        if value[i] == "%":
            digits = value[i + 1:i + 3]
            if len(digits) != 2 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                return None
            out.append(int(digits, 16))
            i += 3
        else:
            out.extend(value[i].encode("utf-8"))
            i += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None
