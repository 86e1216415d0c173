#pragma once

/// The stored tail of a fire's log (table `job_fire_log`, migration 006): what the executor sent
/// with its result, kept after the executor forgot it or went away. Written only by the result
/// paths (FireRepository::ApplyResult, FireResults::ApplyMany), in the transaction that applied
/// the result; read by `GET /api/v1/fires/{id}/log` once the fire has ended.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/store/fire.hpp"

namespace sched::store {

struct StoredFireLog {
    std::int64_t fire_id = 0;
    std::string log;                   ///< UTF-8, lines separated by '\n'
    std::int64_t truncated_bytes = 0;  ///< bytes cut from the front (by the executor and here)
    std::int64_t stored_at_ms = 0;     ///< database clock
};

class FireLogs {
  public:
    /// The most a stored log holds; a longer one keeps its last bytes (cut at a UTF-8 character
    /// boundary) and counts the rest in truncated_bytes. The callback parser refuses more.
    static constexpr std::size_t kMaxLogBytes = std::size_t{256} << 10;

    /// Stores (replaces) the logs of `results` whose `log` is set, inside the caller's
    /// transaction: one multi-row REPLACE per 4 MiB of log text. Call it only for results that
    /// were applied. Each log is bounded to kMaxLogBytes and its NUL bytes become U+FFFD first,
    /// so no size or content of a log makes the statement fail. Throws what soci throws.
    static void StoreMany(soci::session& s, const std::vector<const ExecutorResult*>& results);

    /// The stored log of a fire, or nullopt.
    static std::optional<StoredFireLog> Find(soci::session& s, std::int64_t fire_id);

    /// `log` made storable: NUL bytes replaced by U+FFFD, then at most `max_bytes` kept from its
    /// end, starting at a character boundary; the bytes dropped are added to `truncated_bytes`.
    static void Bound(std::string& log, std::int64_t& truncated_bytes, std::size_t max_bytes = kMaxLogBytes);
};

}  // namespace sched::store
