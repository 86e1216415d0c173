#include "analysis.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <spdlog/spdlog.h>

namespace sched::bench {

namespace {

struct PairHash {
    std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const {
        return std::hash<std::int64_t>()(p.first * 1'000'003 + p.second);
    }
};
using PairKey = std::pair<std::int64_t, std::int64_t>;  // (job, scheduled ms)

double Quantile(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return 0;
    // Nearest rank: the smallest value with at least q of the values at or below it.
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

double Round3(double v) {
    return std::round(v * 1000.0) / 1000.0;
}

}  // namespace

std::vector<FireRow> ReadFires(db::Database& db, std::int64_t from_ms, std::int64_t to_ms) {
    auto rows = db.Run([&](soci::session& s) {
        std::vector<FireRow> out;
        long long id = 0, job = 0, sched = 0, attempt = 0, epoch = 0, due = 0, created = 0, dispatched = 0;
        std::string kind, status, node;
        soci::indicator node_ind = soci::i_null, dispatched_ind = soci::i_null;
        long long from = from_ms, to = to_ms;
        soci::statement st =
            (s.prepare << "SELECT id, job_id, scheduled_time, kind, attempt, status, assigned_node, epoch, due_at, "
                          "created_at, dispatched_at FROM job_fire WHERE scheduled_time >= :f AND scheduled_time < :t",
             soci::use(from), soci::use(to), soci::into(id), soci::into(job), soci::into(sched), soci::into(kind),
             soci::into(attempt), soci::into(status), soci::into(node, node_ind), soci::into(epoch), soci::into(due),
             soci::into(created), soci::into(dispatched, dispatched_ind));
        st.execute();
        while (st.fetch()) {
            FireRow r;
            r.id = id;
            r.job_id = job;
            r.scheduled_ms = sched;
            r.kind = kind;
            r.attempt = attempt;
            r.status = status;
            r.assigned_node = node_ind == soci::i_ok ? node : "";
            r.epoch = epoch;
            r.due_at = due;
            r.created_at = created;
            if (dispatched_ind == soci::i_ok) r.dispatched_at = dispatched;
            out.push_back(std::move(r));
        }
        return out;
    });
    if (!rows.ok()) throw std::runtime_error("read job_fire: " + rows.status().ToString());
    return *rows;
}

nlohmann::json Percentiles::Json() const {
    return {{"n", n}, {"p50", p50}, {"p90", p90}, {"p99", p99}, {"max", max}, {"mean", mean}};
}

Percentiles Summarise(std::vector<double> values) {
    Percentiles p;
    p.n = values.size();
    if (values.empty()) return p;
    std::sort(values.begin(), values.end());
    // Rounded here, once, to the microsecond result.json keeps: the summary lines, the tables,
    // the pass check and result.json then show the same figure (a p99 of 5.6498 ms printed as
    // 5.6 in one place and, rounded again from 5.650, as 5.7 in another).
    p.p50 = Round3(Quantile(values, 0.50));
    p.p90 = Round3(Quantile(values, 0.90));
    p.p99 = Round3(Quantile(values, 0.99));
    p.max = Round3(values.back());
    p.mean = Round3(std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size()));
    return p;
}

nlohmann::json WindowStats::Json() const {
    return {{"scheduled_from_ms", from_ms},
            {"scheduled_to_ms", to_ms},
            {"expected", expected},
            {"received", received},
            {"misses", misses},
            {"lost", lost},
            {"doubles", doubles},
            {"unexpected", unexpected},
            {"misses_by_status", misses_by_status},
            {"arrivals_by_node", per_node},
            {"lag_ms", lag_ms.Json()},
            {"claim_lag_ms", claim_ms.Json()},
            {"delivery_ms", delivery_ms.Json()}};
}

WindowStats Analyse(const std::vector<JobPlan>& plans, const std::vector<Arrival>& arrivals,
                    const std::vector<FireRow>& fires, std::int64_t from_ms, std::int64_t to_ms) {
    WindowStats w;
    w.from_ms = from_ms;
    w.to_ms = to_ms;
    std::unordered_map<std::int64_t, const FireRow*> fire_by_id;
    std::unordered_map<PairKey, std::vector<const FireRow*>, PairHash> fires_by_pair;
    for (const auto& f : fires) {
        fire_by_id[f.id] = &f;
        fires_by_pair[{f.job_id, f.scheduled_ms}].push_back(&f);
    }
    std::unordered_map<PairKey, std::vector<const Arrival*>, PairHash> arrived;
    for (const auto& a : arrivals) {
        if (a.scheduled_ms >= from_ms && a.scheduled_ms < to_ms) arrived[{a.job_id, a.scheduled_ms}].push_back(&a);
    }
    std::set<PairKey> expected;
    for (const auto& p : plans) {
        if (p.period_ms <= 0) continue;
        std::int64_t t = p.first_ms;
        if (t < from_ms) t += (from_ms - t + p.period_ms - 1) / p.period_ms * p.period_ms;
        for (; t < to_ms; t += p.period_ms) expected.insert({p.job_id, t});
    }
    w.expected = expected.size();
    std::vector<double> lags, claims, deliveries;
    for (const auto& key : expected) {
        auto it = arrived.find(key);
        if (it == arrived.end()) {
            std::string status = "no row";
            auto f = fires_by_pair.find(key);
            if (f != fires_by_pair.end() && !f->second.empty()) status = f->second.front()->status;
            if (status == "lost") {
                ++w.lost;
            } else {
                ++w.misses;
                ++w.misses_by_status[status];
            }
            continue;
        }
        ++w.received;
        auto& list = it->second;
        std::sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->arrival_us < b->arrival_us; });
        w.doubles += list.size() - 1;
        const Arrival& first = *list.front();
        lags.push_back(static_cast<double>(first.arrival_us) / 1000.0 - static_cast<double>(first.scheduled_ms));
        auto f = fire_by_id.find(first.fire_id);
        if (f != fire_by_id.end()) {
            ++w.per_node[f->second->assigned_node.empty() ? "?" : f->second->assigned_node];
            if (f->second->dispatched_at) {
                claims.push_back(static_cast<double>(*f->second->dispatched_at - f->second->due_at));
                deliveries.push_back(static_cast<double>(first.arrival_us) / 1000.0 -
                                     static_cast<double>(*f->second->dispatched_at));
            }
        }
    }
    for (const auto& [key, list] : arrived) {
        if (!expected.count(key)) w.unexpected += list.size();
    }
    w.lag_ms = Summarise(std::move(lags));
    w.claim_ms = Summarise(std::move(claims));
    w.delivery_ms = Summarise(std::move(deliveries));
    return w;
}

void WriteCsv(const std::filesystem::path& path, const std::vector<Arrival>& arrivals,
              const std::vector<FireRow>& fires) {
    std::unordered_map<std::int64_t, const FireRow*> by_id;
    for (const auto& f : fires) by_id[f.id] = &f;
    std::ofstream out(path);
    out << "arrival_us,job_id,fire_id,scheduled_ms,attempt,epoch,lag_ms,node,dispatched_at_ms\n";
    for (const auto& a : arrivals) {
        auto f = by_id.find(a.fire_id);
        out << a.arrival_us << ',' << a.job_id << ',' << a.fire_id << ',' << a.scheduled_ms << ',' << a.attempt << ','
            << a.epoch << ',' << (static_cast<double>(a.arrival_us) / 1000.0 - static_cast<double>(a.scheduled_ms))
            << ',' << (f != by_id.end() ? f->second->assigned_node : "") << ',';
        if (f != by_id.end() && f->second->dispatched_at) out << *f->second->dispatched_at;
        out << '\n';
    }
}

bool PlotLag(const std::filesystem::path& stem, const std::string& title, const std::vector<Arrival>& arrivals,
             std::int64_t origin_ms, const std::vector<PlotEvent>& events) {
    if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
        spdlog::warn("gnuplot is not installed: no plot {}.png (apt-get install gnuplot-nox)", stem.string());
        return false;
    }
    const auto dat = stem.string() + ".dat";
    {
        std::ofstream out(dat);
        for (const auto& a : arrivals) {
            out << static_cast<double>(a.scheduled_ms - origin_ms) / 1000.0 << ' '
                << (static_cast<double>(a.arrival_us) / 1000.0 - static_cast<double>(a.scheduled_ms)) << '\n';
        }
    }
    const auto gp = stem.string() + ".gp";
    {
        std::ofstream out(gp);
        out << "set terminal pngcairo size 900,380 font 'sans,9'\n"
            << "set output '" << stem.string() << ".png'\n"
            << "set title '" << title << "'\n"
            << "set xlabel 'scheduled time (s from start)'\nset ylabel 'lag (ms, log scale)'\n"
            << "set logscale y\nset yrange [0.1:*]\nset grid ytics\nset key off\n";
        int n = 0;
        for (const auto& e : events) {
            out << "set arrow " << ++n << " from " << e.at_s << ", graph 0 to " << e.at_s
                << ", graph 1 nohead lc rgb 'red' dt 2\n";
            out << "set label " << n << " '" << e.label << "' at " << e.at_s << ", graph 0.95 left offset 0.3,0"
                << " textcolor rgb 'red'\n";
        }
        out << "plot '" << dat << "' using 1:($2 < 0.1 ? 0.1 : $2) with points pt 7 ps 0.2 lc rgb '#1f5fa8'\n";
    }
    const std::string cmd = "gnuplot '" + gp + "'";
    if (std::system(cmd.c_str()) != 0) {
        spdlog::warn("gnuplot {} failed", gp);
        return false;
    }
    return true;
}

}  // namespace sched::bench
