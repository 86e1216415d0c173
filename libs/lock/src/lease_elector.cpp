#include "sched/lock/lease_elector.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "sched/common/name_table.hpp"

namespace sched::lock {

namespace {

using Steady = std::chrono::steady_clock;

std::string Key(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
}

}  // namespace

ElectionConfig ElectionConfig::FromYaml(const ConfigNode& node) {
    ElectionConfig c;
    c.tick = node.Duration("tick", c.tick);
    c.ttl = node.Duration("ttl", c.ttl);
    c.margin = node.Duration("margin", c.margin);
    c.Validate(node.path());
    return c;
}

void ElectionConfig::Validate(const std::string& path) const {
    const auto show = [](Micros d) {
        return FormatDuration(d);
    };
    if (ttl.count() <= 0) throw ConfigError(Key(path, "ttl"), "must be positive");
    if (tick.count() <= 0) throw ConfigError(Key(path, "tick"), "must be positive");
    if (margin.count() <= 0) throw ConfigError(Key(path, "margin"), "must be positive");
    if (tick * 2 >= ttl) {
        throw ConfigError(Key(path, "tick"), "must be less than ttl / 2 (tick " + show(tick) + ", ttl " + show(ttl) +
                                                 "): a leader needs two renew attempts per lease");
    }
    if (tick + margin >= ttl) {
        throw ConfigError(Key(path, "margin"), "must be less than ttl - tick (margin " + show(margin) + ", ttl " +
                                                   show(ttl) + ", tick " + show(tick) +
                                                   "): a healthy leader would demote itself before each renew");
    }
    if (name.empty() || name.size() > kMaxLockNameLength) throw ConfigError(Key(path, "name"), "invalid lock name");
}

db::DbUrl ElectionDbUrl(db::DbUrl base, const ElectionConfig& config) {
    const Micros half = std::max<Micros>(config.margin / 2, std::chrono::milliseconds(1));
    base.pool = 2;
    base.acquire_timeout = half;
    base.statement_timeout = half;
    base.busy_timeout = half;
    base.priority = true;
    base.lock_wait_timeout = std::chrono::seconds(1);
    base.connect_timeout = std::chrono::seconds(1);
    base.read_timeout = std::chrono::seconds(1);
    base.write_timeout = std::chrono::seconds(1);
    return base;
}

std::string_view StopReasonName(StopReason reason) {
    static constexpr auto kStopReasonNames = MakeNameTable<StopReason>({"resigned", "lost", "self-demoted"});
    return kStopReasonNames.Name(reason);
}

LeaseElector::LeaseElector(LockStore& store, std::string node_id, ElectionConfig config, const Clock& clock)
    : store_(store), node_id_(std::move(node_id)), config_(std::move(config)), clock_(clock) {
    config_.Validate();
    if (node_id_.empty() || node_id_.size() > kMaxLockNameLength) {
        throw std::invalid_argument("LeaseElector: node id must have 1..191 characters");
    }
}

LeaseElector::~LeaseElector() = default;

void LeaseElector::AddObserver(ElectionObserver& observer) {
    observers_.push_back(&observer);
}

std::optional<Leadership> LeaseElector::CurrentLeadership() const {
    std::lock_guard lock(mu_);
    // The deadline is checked here, not only by the driver: a driver blocked in a slow statement
    // cannot demote on time, but master code asking here still gets the right answer.
    if (!leading_ || clock_.Steady() >= valid_until_) return std::nullopt;
    return Leadership{holding_.epoch, valid_until_};
}

bool LeaseElector::IsLeading(std::int64_t epoch) const {
    auto l = CurrentLeadership();
    return l.has_value() && l->epoch == epoch;
}

std::optional<std::pair<std::string, std::int64_t>> LeaseElector::LeaderSeen() const {
    std::lock_guard lock(mu_);
    return leader_seen_;
}

std::optional<Steady::time_point> LeaseElector::LastLeaderActivity() const {
    std::lock_guard lock(mu_);
    return leader_activity_;
}

void LeaseElector::SeeLeaderActivity(SteadyTime at) {
    std::lock_guard lock(mu_);
    if (!leader_activity_ || *leader_activity_ < at) leader_activity_ = at;
}

ElectionCounters LeaseElector::Counters() const {
    std::lock_guard lock(mu_);
    return counters_;
}

Steady::time_point LeaseElector::NextTickAt() const {
    std::lock_guard lock(mu_);
    auto next = last_round_start_ + config_.tick;
    if (leading_) next = std::min(next, valid_until_);
    return next;
}

void LeaseElector::Tick() {
    bool leading = false;
    SteadyTime deadline{};
    {
        std::lock_guard lock(mu_);
        ++counters_.ticks;
        last_round_start_ = clock_.Steady();
        leading = leading_;
        deadline = valid_until_;
    }
    if (leading && clock_.Steady() >= deadline) {
        Demote(StopReason::kSelfDemoted, deadline, "no successful renew before the deadline");
        leading = false;
    }
    if (leading) RenewRound();
    bool now_leading = false;
    {
        std::lock_guard lock(mu_);
        now_leading = leading_;
    }
    // A follower, or a leader that just lost its term: look at the row (and maybe take it) in
    // the same round, so a lost lease costs no extra tick.
    if (!now_leading) AcquireRound();
}

void LeaseElector::RenewRound() {
    Holding holding;
    SteadyTime deadline{};
    {
        std::lock_guard lock(mu_);
        holding = holding_;
        deadline = valid_until_;
    }
    // Taken before the statement is sent: the database evaluates NOW no earlier than this
    // instant, so start + ttl never lies beyond the lease the database records.
    const SteadyTime start = clock_.Steady();
    auto renewed = store_.Renew(holding.id, node_id_, holding.epoch, config_.ttl);
    const SteadyTime done = clock_.Steady();
    if (renewed.ok() && *renewed) {
        if (done >= deadline) {
            // The term ended while the statement ran (CurrentLeadership already said so); a term
            // never resumes, so give this one up for good and let a new epoch start.
            Demote(StopReason::kSelfDemoted, deadline, "renew succeeded only after the deadline");
            return;
        }
        std::lock_guard lock(mu_);
        valid_until_ = start + config_.ttl - config_.margin;
        ++counters_.renews;
        if (!leader_activity_ || *leader_activity_ < start) leader_activity_ = start;
        return;
    }
    {
        std::lock_guard lock(mu_);
        ++counters_.renew_failures;
    }
    if (renewed.ok()) {
        Demote(StopReason::kLost, std::min(done, deadline),
               "renew found the lease expired, released or taken over (database clock)");
        return;
    }
    spdlog::warn("election {}: renew of epoch {} failed: {}", config_.name, holding.epoch, renewed.status().ToString());
    if (done >= deadline) {
        Demote(StopReason::kSelfDemoted, deadline, "renew failed: " + renewed.status().ToString());
    }
}

bool LeaseElector::GateAllows(SteadyTime round_start, const ClockStepGuard& guard) {
    // A plain read first: the gate decides only about a free row, and a held one is handled as
    // in any round. TryAcquireOnce reads once more before its CAS, an extra read only while a
    // row is free, which is the rare case.
    auto row = store_.Read(config_.name);
    if (!row.ok()) {
        {
            std::lock_guard lock(mu_);
            ++counters_.acquire_errors;
        }
        spdlog::warn("election {}: acquire round failed: {}", config_.name, row.status().ToString());
        return false;
    }
    if (row->has_value() && !(*row)->Available(guard)) {
        free_since_.reset();
        if ((*row)->owner.has_value()) SeeHolder(**row, round_start);
        return false;
    }
    if (!free_since_) free_since_ = round_start;
    return gate_->MayAcquire(config_.name, *free_since_);
}

void LeaseElector::AcquireRound() {
    const SteadyTime start = clock_.Steady();
    std::optional<LockRow> seen;
    const ClockStepGuard guard = clock_step_guard();
    if (gate_ != nullptr && !GateAllows(start, guard)) return;
    auto acquired = TryAcquireOnce(store_, config_.name, node_id_, config_.ttl, &seen, guard);
    if (!acquired.ok()) {
        {
            std::lock_guard lock(mu_);
            ++counters_.acquire_errors;
        }
        spdlog::warn("election {}: acquire round failed: {}", config_.name, acquired.status().ToString());
        return;
    }
    if (acquired->has_value()) {
        free_since_.reset();
        const Holding holding = **acquired;
        if (clock_.Steady() >= start + config_.ttl - config_.margin) {
            // Acquired, but so slowly that the term would already be over: hand it straight back
            // rather than start a term that has no valid instant.
            (void)store_.Release(holding.id, node_id_, holding.epoch);
            return;
        }
        if (seen.has_value() && seen->owner.has_value() && seen->lease_until_us > seen->db_now_us &&
            seen->ClockStepped(guard)) {
            std::lock_guard lock(mu_);
            ++counters_.clock_anomalies;  // TryAcquireOnce logged it
        }
        Promote(holding, start);
        return;
    }
    if (!seen.has_value() || !seen->owner.has_value() || seen->Available(guard)) return;
    SeeHolder(*seen, start);
}

void LeaseElector::SeeHolder(const LockRow& seen, SteadyTime round_start) {
    // A live holder writes the row every tick, so its age (database clock) dates its last
    // renew; a dead one's row keeps aging until it expires.
    const std::int64_t age_us = std::max<std::int64_t>(0, seen.db_now_us - seen.update_time_us);
    SeeLeaderActivity(round_start - std::chrono::microseconds(age_us));
    if (*seen.owner == node_id_) {
        // Still held in our name by a term that has ended (self-demotion, late renew): give it
        // back so that the next acquisition, ours or another node's, starts a new epoch at once
        // instead of after the rest of the TTL.
        auto released = store_.Release(seen.id, node_id_, seen.epoch);
        if (!released.ok()) {
            spdlog::warn("election {}: giving back epoch {} failed: {}", config_.name, seen.epoch,
                         released.status().ToString());
        }
        return;
    }
    SeeLeader(*seen.owner, seen.epoch);
}

void LeaseElector::Promote(const Holding& holding, SteadyTime renew_start) {
    {
        std::lock_guard lock(mu_);
        leading_ = true;
        holding_ = holding;
        valid_until_ = renew_start + config_.ttl - config_.margin;
        ++counters_.started_leading;
        if (!leader_activity_ || *leader_activity_ < renew_start) leader_activity_ = renew_start;
    }
    spdlog::info("election {}: {} started leading, epoch {}", config_.name, node_id_, holding.epoch);
    for (auto* o : observers_) o->OnStartedLeading(holding.epoch);
    SeeLeader(node_id_, holding.epoch);
}

void LeaseElector::Demote(StopReason reason, SteadyTime ended_at, std::string detail) {
    LeadershipEnd end;
    {
        std::lock_guard lock(mu_);
        if (!leading_) return;
        leading_ = false;
        end.epoch = holding_.epoch;
        ++counters_.stopped_leading;
        if (reason == StopReason::kSelfDemoted) ++counters_.self_demotions;
    }
    end.reason = reason;
    end.ended_at = ended_at;
    end.detail = std::move(detail);
    spdlog::log(reason == StopReason::kResigned ? spdlog::level::info : spdlog::level::warn,
                "election {}: {} stopped leading, epoch {} ({}: {})", config_.name, node_id_, end.epoch,
                StopReasonName(reason), end.detail);
    for (auto* o : observers_) o->OnStoppedLeading(end);
}

void LeaseElector::SeeLeader(const std::string& node, std::int64_t epoch) {
    {
        std::lock_guard lock(mu_);
        if (leader_seen_ && leader_seen_->first == node && leader_seen_->second == epoch) return;
        leader_seen_ = std::make_pair(node, epoch);
    }
    for (auto* o : observers_) o->OnNewLeader(node, epoch);
}

Status LeaseElector::Resign() {
    Holding holding;
    {
        std::lock_guard lock(mu_);
        if (!leading_) return Status::Ok();
        holding = holding_;
    }
    // Stop first, release second: observers stop master work before any other node can start.
    Demote(StopReason::kResigned, clock_.Steady(), "resigned");
    auto released = store_.Release(holding.id, node_id_, holding.epoch);
    if (!released.ok()) return released.status();
    if (!*released) return LeaseLost("epoch " + std::to_string(holding.epoch) + " was no longer ours at release");
    return Status::Ok();
}

void LeaseElector::Nudge() {
    {
        std::lock_guard lock(wait_mu_);
        nudged_ = true;
    }
    wait_cv_.notify_all();
}

void LeaseElector::Run(const std::stop_token& stop) {
    while (!stop.stop_requested()) {
        Tick();
        if (gate_ != nullptr && IsLeading() && gate_->ShouldYield(config_.name)) {
            spdlog::info("election {}: {} gives the lease back for another node to take", config_.name, node_id_);
            if (Status s = Resign(); !s.ok()) {
                spdlog::warn("election {}: giving the lease back failed: {}", config_.name, s.ToString());
            }
        }
        const auto wait = NextTickAt() - clock_.Steady();
        std::unique_lock lock(wait_mu_);
        if (wait.count() > 0) wait_cv_.wait_for(lock, stop, wait, [this] { return nudged_; });
        nudged_ = false;
    }
    if (Status s = Resign(); !s.ok()) {
        spdlog::warn("election {}: release on shutdown failed: {}", config_.name, s.ToString());
    }
}

}  // namespace sched::lock
