#include "sched/store/shard.hpp"

#include <charconv>

namespace sched::store {

namespace {
constexpr const char* kShardsSetting = "shards";
}  // namespace

std::string JobShard::JobFilter(std::string_view column) const {
    if (Whole()) return "";
    // Ids are positive, so % is the same in SQLite and MySQL; the filter is applied to the rows
    // an index already narrowed (due jobs, flagged follow-ups), never a table scan of its own.
    return " AND (" + std::string(column) + " % " + std::to_string(total) + ") = " + std::to_string(index);
}

std::string JobShard::FollowupFilter() const {
    if (Whole()) return "";
    const std::string own = "(job_id % " + std::to_string(total) + ") = " + std::to_string(index);
    if (First()) return " AND (" + own + " OR workflow_run_id IS NOT NULL)";
    return " AND " + own + " AND workflow_run_id IS NULL";
}

std::string ShardLeaseName(std::string_view base, int index) {
    if (index == 0) return std::string(base);
    return std::string(base) + "/" + std::to_string(index);
}

std::string ShardLeasePattern(std::string_view base) {
    return std::string(base) + "/%";
}

std::string ShardLeaseBase(std::string_view lease, int index) {
    const std::string suffix = "/" + std::to_string(index);
    if (index == 0 || !lease.ends_with(suffix)) return std::string(lease);
    return std::string(lease.substr(0, lease.size() - suffix.size()));
}

std::optional<int> ReadShardCount(soci::session& s) {
    // A named string: the statement runs when the full expression ends, after any temporary.
    const std::string name = kShardsSetting;
    std::string value;
    soci::indicator ind = soci::i_null;
    s << "SELECT value FROM cluster_setting WHERE name = :name", soci::use(name, "name"), soci::into(value, ind);
    if (!s.got_data() || ind != soci::i_ok) return std::nullopt;
    int total = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), total);
    if (ec != std::errc() || end != value.data() + value.size() || total < 1) return std::nullopt;
    return total;
}

void WriteShardCount(soci::session& s, int total, std::int64_t now_ms) {
    // Delete and insert rather than update: MySQL reports an update that changes nothing as
    // zero rows, which could not be told from a missing row. Callers run it in one transaction.
    const std::string name = kShardsSetting;
    const std::string value = std::to_string(total);
    s << "DELETE FROM cluster_setting WHERE name = :name", soci::use(name, "name");
    s << "INSERT INTO cluster_setting (name, value, updated_at) VALUES (:name, :value, :now)", soci::use(name, "name"),
        soci::use(value, "value"), soci::use(now_ms, "now");
}

}  // namespace sched::store
