#pragma once

/// Durations as operators write them in YAML: "250ms", "3s", "1m", "1h30m", "2d", "1500us".

#include <chrono>
#include <string>
#include <string_view>

#include "sched/common/status.hpp"

namespace sched {

using Millis = std::chrono::milliseconds;
using Micros = std::chrono::microseconds;

/// Parses a duration string. Units: us, ms, s, m, h, d; several may be concatenated ("1m30s").
/// A bare "0" is accepted; any other number needs a unit. Negative values are rejected.
/// Returns kInvalidArgument with a message saying what was expected.
Result<Micros> ParseDuration(std::string_view text);

/// The shortest exact spelling of `d` that ParseDuration accepts ("1m30s", "250ms", "0s").
std::string FormatDuration(Micros d);

}  // namespace sched
