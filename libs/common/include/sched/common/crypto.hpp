#pragma once

/// Cryptographic primitives, all from OpenSSL's libcrypto (EVP, HMAC, RAND_bytes, CRYPTO_memcmp):
/// nothing here is hand-written. Used by the nodes (token hashes, request signatures, signing
/// secrets) and by the client SDK (verifying request signatures), which is why they live in
/// libs/common and not in a library the SDK does not link.
///
/// Thread-safe. Every function either returns its result or throws std::runtime_error when
/// libcrypto itself fails (out of memory, no entropy source): a broken invariant, not an
/// expected outcome.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sched::crypto {

/// SHA-256 (FIPS 180-4) of `data`: the 32-byte digest.
std::array<std::uint8_t, 32> Sha256(std::string_view data);

/// SHA-256 as 64 lower-case hex digits (what `api_token.token_hash` holds, the body hash of a
/// signed request). Not for passwords (no salt, no stretching): API tokens are 256-bit random
/// secrets, for which one unsalted hash is enough.
std::string Sha256Hex(std::string_view data);

/// HMAC-SHA256 (RFC 2104) of `data` under `key` (any length, bytes used as given), as 64
/// lower-case hex digits.
std::string HmacSha256Hex(std::string_view key, std::string_view data);

/// Compares two strings in time that depends only on their lengths (not on where they
/// differ), for secrets and signatures. Different lengths compare unequal at once: the
/// lengths of what is compared here (hex digests) are public.
bool ConstantTimeEqual(std::string_view a, std::string_view b);

/// `bytes` bytes from the operating system's CSPRNG (via RAND_bytes), as 2 * `bytes` lower-case
/// hex digits. 32 bytes = a 256-bit secret.
std::string RandomHex(std::size_t bytes);

/// Lower-case hex of arbitrary bytes.
std::string HexEncode(std::string_view bytes);

}  // namespace sched::crypto
