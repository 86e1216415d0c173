#pragma once

/// Turns what the sink received and what the fire table holds into figures: lag percentiles,
/// misses, doubles, and per-phase timings; writes CSV and gnuplot plots.
///
/// Definitions (docs/benchmarks.md "How to reproduce"):
/// - lag = arrival at the sink - scheduled time, of the first arrival of each expected
///   (job, scheduled time) pair;
/// - miss = an expected pair that never arrived and is not recorded `lost` in job_fire;
/// - double = a pair that arrived more than once (each extra arrival counts one);
/// - claim lag = job_fire.dispatched_at - due_at (the slave's timer and claim), delivery =
///   arrival - dispatched_at (HTTP to the SDK and its queue). A fire the master planned already
///   claimed (docs/architecture/slave.md "Planned fires") has its plan time as dispatched_at:
///   its claim lag is minus the plan's lead (about -2 s) and its delivery includes that lead.

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench_cluster.hpp"
#include "sink.hpp"

namespace sched::bench {

struct FireRow {
    std::int64_t id = 0;
    std::int64_t job_id = 0;
    std::int64_t scheduled_ms = 0;
    std::string kind;
    std::int64_t attempt = 0;
    std::string status;
    std::string assigned_node;
    std::int64_t epoch = 0;
    std::int64_t due_at = 0;
    std::int64_t created_at = 0;
    std::optional<std::int64_t> dispatched_at;
};

/// Fire rows with scheduled_time in [from_ms, to_ms). Throws std::runtime_error on DB errors.
std::vector<FireRow> ReadFires(db::Database& db, std::int64_t from_ms, std::int64_t to_ms);

/// Nearest-rank percentiles, each rounded to 3 decimals (the microsecond of a lag in ms) by
/// Summarise, so every table and result.json show the same figure.
struct Percentiles {
    std::size_t n = 0;
    double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
    nlohmann::json Json() const;
};
Percentiles Summarise(std::vector<double> values);

struct WindowStats {
    std::int64_t from_ms = 0;
    std::int64_t to_ms = 0;
    std::size_t expected = 0;
    std::size_t received = 0;  ///< expected pairs that arrived at least once
    std::size_t misses = 0;
    std::size_t lost = 0;  ///< not arrived, recorded lost (at-most-once after a dead slave)
    std::size_t doubles = 0;
    std::size_t unexpected = 0;                           ///< arrivals of pairs not in the plan (e.g. misfire fires)
    std::map<std::string, std::size_t> misses_by_status;  ///< fire-table status of each miss ("no row")
    std::map<std::string, std::size_t> per_node;          ///< arrivals by dispatching node
    Percentiles lag_ms;
    Percentiles claim_ms;
    Percentiles delivery_ms;
    nlohmann::json Json() const;
};

/// Figures for fires scheduled in [from_ms, to_ms).
WindowStats Analyse(const std::vector<JobPlan>& plans, const std::vector<Arrival>& arrivals,
                    const std::vector<FireRow>& fires, std::int64_t from_ms, std::int64_t to_ms);

/// Raw records: one line per arrival (with the fire row's node and dispatch time).
void WriteCsv(const std::filesystem::path& path, const std::vector<Arrival>& arrivals,
              const std::vector<FireRow>& fires);

struct PlotEvent {
    double at_s = 0;  ///< seconds from the plot's origin
    std::string label;
};

/// Writes `<stem>.dat` and `<stem>.gp` (lag over scheduled time, events as vertical lines) and
/// runs gnuplot to make `<stem>.png`. Returns false (and says why) when gnuplot is missing.
bool PlotLag(const std::filesystem::path& stem, const std::string& title, const std::vector<Arrival>& arrivals,
             std::int64_t origin_ms, const std::vector<PlotEvent>& events);

}  // namespace sched::bench
