#pragma once

/// SHA-256 (FIPS 180-4), self-contained: API token secrets are stored only as their hash, and
/// the UI's static files get an ETag from it. Not for passwords (no salt, no stretching): tokens
/// are 256-bit random secrets, for which one unsalted hash is enough.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace sched::web {

/// The 32-byte digest of `data`.
std::array<std::uint8_t, 32> Sha256(std::string_view data);

/// The digest as 64 lower-case hex digits (what `api_token.token_hash` holds).
std::string Sha256Hex(std::string_view data);

}  // namespace sched::web
