#pragma once

/// The master's peer notification (docs/protocol.md "Internal routes"): after a scan commits,
/// each other slave that got fires is told which, so it need not wait for its poll.
///
///     POST /internal/v1/fires {"epoch": 12, "fire_ids": [7, 8]}
///       -> 202 {"accepted": true}
///       -> 400 naming the field (unknown field, wrong type, too many ids)
///       -> 409 naming epoch: the sender's term is older than one the receiver has seen (a
///          deposed master); the receiver's slave is not woken
///
/// Best effort either way: a slave's poll finds its fires without the notice.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/protocol/parsed.hpp"

namespace sched::protocol {

inline constexpr std::string_view kFiresNoticePath = "/internal/v1/fires";

/// The ids come from one scan (its batch), so a few thousand is already generous.
inline constexpr std::size_t kMaxNoticeFires = 10000;

struct FiresNotice {
    std::int64_t epoch = 0;              ///< the sender's lease epoch (fencing token), >= 1
    std::vector<std::int64_t> fire_ids;  ///< each >= 1, at most kMaxNoticeFires

    friend bool operator==(const FiresNotice&, const FiresNotice&) = default;
};

nlohmann::json ToJson(const FiresNotice& notice);
/// Exactly {epoch, fire_ids}, bounded; the first problem names its field ("body" for a
/// non-object).
Parsed<FiresNotice> ParseFiresNotice(const nlohmann::json& body);

}  // namespace sched::protocol
