#include "table_rows.hpp"

#include <cmath>

#include <spdlog/spdlog.h>

namespace sched::bench {

using nlohmann::json;

namespace {

double Rounded(double v) {
    return std::round(v * 100.0) / 100.0;
}

}  // namespace

TableStatistics::TableStatistics(db::Database& db, bool on) : db_(db) {
    if (!on || db.backend() != db::Backend::kMySql) return;
    int was_on = 0;
    auto done = db_.Run([&](soci::session& s) {
        s << "SELECT @@GLOBAL.userstat", soci::into(was_on);
        if (!was_on) s << "SET GLOBAL userstat = 1";
    });
    if (!done.ok()) {
        spdlog::warn("per-table row statistics unavailable: {}", done.ToString());
        return;
    }
    on_ = true;
    restore_off_ = !was_on;
}

TableStatistics::~TableStatistics() {
    if (!restore_off_) return;
    auto done = db_.Run([](soci::session& s) { s << "SET GLOBAL userstat = 0"; });
    if (!done.ok()) spdlog::warn("could not turn the per-table row statistics off again: {}", done.ToString());
}

std::optional<TableRowSample> TableStatistics::Sample() {
    if (!on_) return std::nullopt;
    std::optional<TableRowSample> out;
    auto done = db_.Run([&](soci::session& s) {
        TableRowSample sample;
        std::string table;
        long long changed = 0;
        soci::statement st = (s.prepare << "SELECT TABLE_NAME, ROWS_CHANGED FROM information_schema.TABLE_STATISTICS "
                                           "WHERE TABLE_SCHEMA = DATABASE()",
                              soci::into(table), soci::into(changed));
        st.execute();
        while (st.fetch()) sample[table] = TableRows{static_cast<double>(changed)};
        out = std::move(sample);
    });
    if (!done.ok()) {
        spdlog::warn("per-table row statistics unreadable: {}", done.ToString());
        return std::nullopt;
    }
    return out;
}

json TableRowsPerFire(const std::optional<TableRowSample>& before, const std::optional<TableRowSample>& after,
                      std::size_t fires) {
    if (!before || !after || fires == 0) return json(nullptr);
    const double n = static_cast<double>(fires);
    json out = json::object();
    double all = 0;
    for (const auto& [table, b] : *after) {
        const auto a = before->find(table);
        const double changed = b.changed - (a == before->end() ? 0.0 : a->second.changed);
        if (changed <= 0) continue;
        all += changed;
        out[table] = Rounded(changed / n);
    }
    out["all"] = Rounded(all / n);
    return out;
}

json FireRowsPerFire(const json& per_fire) {
    if (!per_fire.is_object()) return json(nullptr);
    // A window in which no job_fire row changed measured 0, not nothing.
    return per_fire.contains("job_fire") ? per_fire["job_fire"] : json(0.0);
}

}  // namespace sched::bench
