#pragma once

/// A wake for the masters (docs/protocol.md "Internal routes"): whoever writes work a master
/// must act on (the web module's job, workflow and backfill writes, a manual trigger, a result
/// or a slave's end that leaves a follow-up) tells every shard's lease holder, so that its master
/// probes now instead of at its next `probe-interval`.
///
///     POST /internal/v1/master/wake (empty body or `{}`; the cluster token as bearer)
///       -> 202 {"woken": N}: N of the receiver's masters (the shards it leads) were woken; 0 when
///          it leads none (a sender's view of the leaders is a little old)
///
/// Best effort: a lost wake delays the work by at most the master's `probe-interval`, never
/// loses it. A node older than the route answers 404; its master probes every `scan-interval`.

#include <string_view>

namespace sched::protocol {

inline constexpr std::string_view kMasterWakePath = "/internal/v1/master/wake";

}  // namespace sched::protocol
