#pragma once

#include <cstddef>
#include <string_view>

namespace sched {

/// The length in bytes of the character `s` starts with: 1 for ASCII, 2 to 4 for a well-formed
/// UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), 0 for
/// anything else (a stray or truncated byte). `s` must not be empty.
std::size_t Utf8CharLength(std::string_view s);

}  // namespace sched
