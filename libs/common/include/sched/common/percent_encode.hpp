#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sched {

/// Percent-encodes every byte of `text` but RFC 3986's unreserved characters (ALPHA, DIGIT,
/// '-', '.', '_', '~') and those in `also_kept`, as %XX with upper-case hex: a query value, a
/// form field (application/x-www-form-urlencoded without '+'), a path segment or a part of a
/// database URL.
std::string PercentEncode(std::string_view text, std::string_view also_kept = {});

/// Percent-decodes `text`; when `plus_is_space` (query strings) '+' becomes ' '. nullopt on a
/// malformed escape: '%' not followed by two hex digits (a sign, "%-1", is not a digit).
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space = false);

}  // namespace sched
