#pragma once

#include <string>
#include <string_view>

namespace sched {

/// Untrusted text as it may appear in an error message: in single quotes, at most 64 bytes
/// (then "..."), every byte outside printable ASCII shown as '?', so a message never carries
/// control characters or an unbounded echo of the input.
std::string QuotedForMessage(std::string_view text);

}  // namespace sched
