#pragma once

/// The master's peer notification (docs/protocol.md "Internal routes"): after a scan commits,
/// each other slave that got fires is told which, so it need not wait for its poll.
///
///     POST /internal/v1/fires {"epoch": 12, "fire_ids": [7, 8], "due_at": [1795800000100, 1795800000350]}
///       -> 202 {"accepted": true}
///       -> 400 naming the field (unknown field, wrong type, too many ids, due_at not one per id)
///       -> 409 naming epoch: the sender's term is older than one the receiver has seen (a
///          deposed master); the receiver's slave is not woken
///
/// `due_at[i]` is the due time (epoch ms) of `fire_ids[i]`, as the master wrote it: the slave
/// queues the fire by it and reads the row only when it claims it. Optional: a notice without
/// it (from a master older than the field) makes the slave read the fires first.
///
/// `shard` is the shard of the job space whose master sent it (0 .. 63; absent: 0): the epoch
/// is that shard's lease epoch, compared with the receiver's sighting of the same shard.
///
/// `fill` (optional, absent when empty) names those of `fire_ids` that the slave may claim
/// earlier than its claim-ahead to fill a small group: their jobs' claims judge nothing by the
/// time they are made (model::MayClaimEarly). A node older than the field refuses it (400
/// naming `fill`); the sender then sends the notice without it.
///
/// `planned` (optional, absent when empty) names those of `fire_ids` the master wrote already
/// claimed for the receiver (docs/architecture/slave.md "Planned fires"): a claim of fires all
/// planned skips its UPDATE of pending ones. A hint only: the claim reads each row. A node older
/// than the field refuses it (400 naming `planned`); the sender then sends the notice without it.
///
/// Best effort either way: a slave's poll finds its fires without the notice.
///
/// The ended runs' notice: a node that applied executors' results tells the other nodes which
/// fires ended, so that the node that dispatched one drops the `running` record it still holds
/// for it (written, it would change no row: the fire is no longer `dispatching`).
///
///     POST /internal/v1/runs/ended {"fire_ids": [7, 8]}
///       -> 202 {"withdrawn": N}: N of them had a record waiting on the receiver
///       -> 400 naming the field (unknown field, wrong type, too many ids)
///
/// Best effort: a record the notice misses is written and changes nothing. A node older than
/// the route answers 404.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/protocol/parsed.hpp"

namespace sched::protocol {

inline constexpr std::string_view kFiresNoticePath = "/internal/v1/fires";
inline constexpr std::string_view kRunsEndedPath = "/internal/v1/runs/ended";

/// The ids come from one scan (its batch), so a few thousand is already generous.
inline constexpr std::size_t kMaxNoticeFires = 10000;

/// A fire the master assigned to a slave, as the notice carries it.
struct NoticedFire {
    std::int64_t id = 0;
    std::int64_t due_at = 0;  ///< epoch ms
    bool fill = false;        ///< may be claimed early to fill a small group (above)
    bool planned = false;     ///< written already claimed for the node (above)

    friend bool operator==(const NoticedFire&, const NoticedFire&) = default;
};

struct FiresNotice {
    std::int64_t epoch = 0;              ///< the sender's lease epoch (fencing token), >= 1
    int shard = 0;                       ///< the sender's shard; sent only when > 0
    std::vector<std::int64_t> fire_ids;  ///< each >= 1, at most kMaxNoticeFires
    /// One per id, each >= 0; nullopt: the sender did not say (an older master).
    std::optional<std::vector<std::int64_t>> due_at;
    /// Ids among fire_ids that may fill a small group; each >= 1, at most kMaxNoticeFires.
    std::vector<std::int64_t> fill;
    /// Ids among fire_ids planned already claimed; each >= 1, at most kMaxNoticeFires.
    std::vector<std::int64_t> planned;

    friend bool operator==(const FiresNotice&, const FiresNotice&) = default;
};

/// The notice of `fires`, with their due times.
FiresNotice MakeFiresNotice(std::int64_t epoch, const std::vector<NoticedFire>& fires, int shard = 0);
/// The fires with their due times; nullopt when the notice has none.
std::optional<std::vector<NoticedFire>> NoticedFires(const FiresNotice& notice);

/// Whether a node answered a notice `status` + `body` by refusing its due_at: a node older
/// than the field (a rolling upgrade), to be sent the ids alone.
bool RefusedDueAt(int status, const std::string& body);
/// Whether a node answered by refusing `fill`: older than the field, to be sent the notice
/// without it.
bool RefusedFill(int status, const std::string& body);
/// Whether a node answered by refusing `planned`: older than the field, to be sent the notice
/// without it.
bool RefusedPlanned(int status, const std::string& body);

/// Fires whose results were applied, for the node that dispatched them.
struct RunsEnded {
    std::vector<std::int64_t> fire_ids;  ///< each >= 1, at most kMaxNoticeFires

    friend bool operator==(const RunsEnded&, const RunsEnded&) = default;
};

nlohmann::json ToJson(const RunsEnded& ended);
/// Exactly {fire_ids}, bounded; the first problem names its field ("body" for a non-object).
Parsed<RunsEnded> ParseRunsEnded(const nlohmann::json& body);

nlohmann::json ToJson(const FiresNotice& notice);
/// Exactly {epoch, fire_ids} and optionally due_at and shard, bounded; the first problem names its field
/// ("body" for a non-object).
Parsed<FiresNotice> ParseFiresNotice(const nlohmann::json& body);

}  // namespace sched::protocol
