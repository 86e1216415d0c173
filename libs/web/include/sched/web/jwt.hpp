#pragma once

/// JSON Web Tokens signed by an OpenID Connect provider (RFC 7515/7517/7519), verified with
/// OpenSSL's EVP_DigestVerify: nothing cryptographic is hand-written here.
///
/// Only RS256 (RSA PKCS#1 v1.5 with SHA-256, keys of 2048 bits or more) and ES256 (ECDSA on
/// P-256 with SHA-256; the JWS signature is the raw 64-byte r||s, converted to DER for OpenSSL)
/// are accepted. `alg: none`, the HMAC algorithms (which would let a public key be used as a
/// shared secret) and everything else are refused before any key is looked at, and the header's
/// `alg` must match the key's type (and the key's own `alg`, when the key names one).
///
/// Every input is untrusted and bounded before work: the token's size, the key set's size and
/// key count, each base64url part's size; JSON goes through http::ParseJson (depth-bounded).
///
/// Thread-safe: a JwkSet is immutable once parsed and may be shared between threads.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sched/common/status.hpp"

namespace sched::web {

struct JwtLimits {
    /// A longer token is refused unread.
    std::size_t max_token_bytes = std::size_t{16} * 1024;
    /// A larger JWKS document is refused unparsed.
    std::size_t max_jwks_bytes = std::size_t{64} * 1024;
    /// A key set with more keys is refused.
    std::size_t max_keys = 32;
};

/// base64url without padding (RFC 7515 section 2) decoded; nullopt when `text` is longer than
/// `max_bytes` or not base64url. Padding '=' is tolerated.
std::optional<std::string> Base64UrlDecode(std::string_view text, std::size_t max_bytes);
/// base64url without padding.
std::string Base64UrlEncode(std::string_view bytes);

/// The signing keys of a JWKS document (`{"keys": [...]}`): RSA keys (`n`, `e`) and EC P-256
/// keys (`x`, `y`). Keys whose `use` is not "sig", and key types this module does not verify
/// with (oct, OKP, other curves), are skipped; a malformed RSA or EC key fails the whole set.
class JwkSet {
  public:
    /// kInvalidArgument naming the problem ("keys[2].n: ...", "more than 32 keys", ...).
    static Result<JwkSet> Parse(std::string_view json, const JwtLimits& limits = {});

    JwkSet();
    std::size_t size() const;
    bool HasKey(std::string_view kid) const;

    /// Opaque outside jwt.cpp (it holds the OpenSSL keys).
    struct Impl;
    const Impl& impl() const { return *impl_; }

  private:
    std::shared_ptr<const Impl> impl_;
};

/// What a token must say to be accepted.
struct JwtCheck {
    std::string issuer;    ///< `iss` must equal it
    std::string audience;  ///< `aud` must equal it or, as an array, contain it
    /// `nonce` must equal it when set (ID tokens of a browser sign-in).
    std::optional<std::string> nonce;
    std::int64_t now_s = 0;  ///< the current time in epoch seconds
    /// Tolerance for `exp`, `nbf` and `iat` against `now_s`.
    std::chrono::seconds clock_skew{60};
};

/// Verifies `token` (compact JWS) against `keys` and `check`, and returns its payload.
///
/// Each refusal is kUnauthenticated with its own message, in this order: too long / malformed
/// ("token: ..."), unsupported alg ("alg \"none\" is not accepted ..."), unknown key id
/// (kNotFound, "unknown key id \"k\""; the caller may refresh the key set and try again), key
/// and alg mismatch, bad signature ("signature does not verify"), wrong issuer, wrong audience,
/// expired (`exp` required), not yet valid (`nbf`), issued in the future (`iat`), nonce
/// missing or different.
Result<nlohmann::json> VerifyJwt(std::string_view token, const JwkSet& keys, const JwtCheck& check,
                                 const JwtLimits& limits = {});

}  // namespace sched::web
