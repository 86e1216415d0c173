#include "impl/run_registry.hpp"

#include <algorithm>

namespace sched::client::impl {

std::chrono::steady_clock::time_point Run::MarkStarted(std::chrono::steady_clock::time_point now) {
    const auto deadline = request.timeout_ms > 0 ? now + std::chrono::milliseconds(request.timeout_ms)
                                                 : std::chrono::steady_clock::time_point::max();
    deadline_ns = request.timeout_ms > 0
                      ? std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count()
                      : kNoDeadline;
    return deadline;
}

std::optional<std::chrono::milliseconds> Run::TimeoutLeft(std::chrono::steady_clock::time_point now) const {
    using std::chrono::ceil;
    using std::chrono::milliseconds;
    if (request.timeout_ms <= 0) return std::nullopt;
    const std::int64_t deadline = deadline_ns.load();
    if (deadline == 0) {
        // Not started: the whole timeout is ahead, after whatever is left of its hold.
        const auto hold = not_before > now ? ceil<milliseconds>(not_before - now) : milliseconds(0);
        return hold + milliseconds(request.timeout_ms);
    }
    const auto left = std::chrono::steady_clock::time_point(std::chrono::nanoseconds(deadline)) - now;
    if (left <= std::chrono::steady_clock::duration::zero()) return std::nullopt;
    return ceil<milliseconds>(left);
}

RunRegistry::RunRegistry(std::size_t capacity, std::size_t dedupe_window)
    : capacity_(capacity), dedupe_window_(std::max<std::size_t>(dedupe_window, 1)) {}

void RunRegistry::Remember(std::int64_t fire_id, std::int64_t attempt) {
    seen_.emplace(fire_id, attempt);
    seen_order_.emplace_back(fire_id, attempt);
    while (seen_order_.size() > dedupe_window_) {
        seen_.erase(seen_order_.front());
        seen_order_.pop_front();
    }
}

std::vector<AdmitResult> RunRegistry::AdmitAll(std::vector<RunRequest> requests, const OnAccepted& on_accepted) {
    std::vector<AdmitResult> out;
    out.reserve(requests.size());
    // One lock for the runs admitted together: taken per run, the workers finishing runs and the
    // admission of a burst handed the mutex back and forth hundreds of times (13 % of the SDK's
    // CPU in futex wake-ups and waits under client_run_bench --batch 333).
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < requests.size(); ++i)
        out.push_back(AdmitLocked(std::move(requests[i]), i, on_accepted));
    return out;
}

AdmitResult RunRegistry::Admit(RunRequest request) {
    std::vector<RunRequest> one;
    one.push_back(std::move(request));
    return std::move(AdmitAll(std::move(one)).front());
}

AdmitResult RunRegistry::AdmitLocked(RunRequest request, std::size_t index, const OnAccepted& on_accepted) {
    AdmitResult out;
    // A run this instance already has is a duplicate whatever its epoch, before the fence: it
    // starts nothing, so there is nothing to fence. A node sends a run again when it did not get
    // the first answer (a timeout); refused as stale (the instance saw a newer master since), it
    // would take the run for not placed, re-stamp the fire with the newer epoch and send it
    // again, and the result of the run going here, under the older epoch, would then be
    // refused as stale_epoch with the fire recorded `running` here: stuck until a timeout, and
    // forever for a job without one.
    if (seen_.contains({request.fire_id, request.attempt})) {
        max_epoch_ = std::max(max_epoch_, request.epoch);
        // The same run under a newer epoch: the node re-stamped its fire (another instance
        // refused the older epoch) and records the newer one; the result must name it.
        if (const auto it = in_flight_.find(request.fire_id);
            it != in_flight_.end() && it->second->request.attempt == request.attempt) {
            Run& held = *it->second;
            if (request.epoch > held.result_epoch.load()) held.result_epoch.store(request.epoch);
        }
        out.admission = Admission::kDuplicate;
        return out;
    }
    // Fencing: a master with an older epoch has lost its lease; whatever it sends now may
    // duplicate what the new master dispatches.
    if (request.epoch < max_epoch_) {
        out.admission = Admission::kStaleEpoch;
        out.message = "epoch " + std::to_string(request.epoch) + " is older than epoch " + std::to_string(max_epoch_) +
                      " already seen: refusing a stale master's dispatch";
        return out;
    }
    max_epoch_ = request.epoch;
    // The cluster enforced the job's policy and limit (the node sent `overlap`): the run is
    // within them, so it starts now, in no lane, beside any other run of the job here.
    const bool enforced = request.overlap.has_value();
    auto lane_it = enforced ? lanes_.end() : lanes_.find(request.job_id);
    const bool busy = lane_it != lanes_.end();
    std::size_t replaced = 0;
    if (busy) {
        const Lane& lane = lane_it->second;
        // What a run of a job already going here waits for: a name of the new policies reads as
        // the executor-side strategy it maps to.
        switch (ExecutorStrategy(request.block_strategy)) {
            case BlockStrategy::kDiscardLater:
                out.admission = Admission::kBusy;
                out.message = "job " + std::to_string(request.job_id) + " is running fire " +
                              std::to_string(lane.running->request.fire_id) + " (block strategy discard-later)";
                return out;
            case BlockStrategy::kCoverEarly:
                // The covered runs make room for the new one.
                replaced = lane.queued.size() + 1;
                break;
            default:  // serial
                break;
        }
    }
    if (in_flight_.size() - replaced >= capacity_) {
        out.admission = Admission::kNoCapacity;
        out.message = "out of capacity: " + std::to_string(in_flight_.size()) + " runs in flight, capacity " +
                      std::to_string(capacity_);
        return out;
    }

    Remember(request.fire_id, request.attempt);
    const std::int64_t fire_id = request.fire_id;
    auto run = std::make_shared<Run>(std::move(request));
    in_flight_[fire_id] = run;
    out.run = run;
    out.start_now = !busy;
    if (on_accepted) on_accepted(index, *run, out.start_now);
    if (!busy) {
        if (!enforced) lanes_[run->request.job_id].running = run;
        return out;
    }
    Lane& lane = lane_it->second;
    if (ExecutorStrategy(run->request.block_strategy) == BlockStrategy::kCoverEarly) {
        for (auto& queued : lane.queued) {
            in_flight_.erase(queued->request.fire_id);
            queued->covered_by.store(fire_id);
            queued->token.Cancel(CancelReason::kCovered);
            out.dropped.push_back(std::move(queued));
        }
        lane.queued.clear();
        lane.running->covered_by.store(fire_id);
        lane.running->token.Cancel(CancelReason::kCovered);
        // It starts when the covered run returns: never two runs of one job at once.
        lane.queued.push_back(run);
    } else {
        lane.queued.push_back(run);
    }
    return out;
}

RunPtr RunRegistry::Finish(const RunPtr& run) {
    std::lock_guard lock(mu_);
    in_flight_.erase(run->request.fire_id);
    auto it = lanes_.find(run->request.job_id);
    if (it == lanes_.end() || it->second.running != run) return nullptr;
    Lane& lane = it->second;
    if (lane.queued.empty()) {
        lanes_.erase(it);
        return nullptr;
    }
    lane.running = std::move(lane.queued.front());
    lane.queued.pop_front();
    return lane.running;
}

KillResult RunRegistry::Kill(std::int64_t fire_id, bool timeout, std::chrono::steady_clock::time_point now) {
    std::lock_guard lock(mu_);
    KillResult out;
    auto it = in_flight_.find(fire_id);
    if (it == in_flight_.end()) return out;
    out.run = it->second;
    // Queued in its job's lane, or running (in the lane, or in none: a run the cluster admitted).
    auto lane = lanes_.find(out.run->request.job_id);
    const bool queued = lane != lanes_.end() && std::find(lane->second.queued.begin(), lane->second.queued.end(),
                                                          out.run) != lane->second.queued.end();
    out.was_running = !queued;
    // The node's watch began at its dispatch; the run's timeout begins at its handler's start,
    // which waiting behind the job's running fire or for its start time puts later.
    if (timeout) {
        out.timeout_in = out.run->TimeoutLeft(now);
        if (out.timeout_in) return out;
    }
    const CancelReason reason = timeout ? CancelReason::kTimeout : CancelReason::kKilled;
    if (out.was_running) {
        out.stopped_now = out.run->token.Cancel(reason);
        return out;
    }
    std::erase(lane->second.queued, out.run);
    in_flight_.erase(it);
    out.run->token.Cancel(reason);
    return out;
}

std::vector<RunPtr> RunRegistry::CancelAll(CancelReason reason) {
    std::lock_guard lock(mu_);
    std::vector<RunPtr> dropped;
    for (auto& [job_id, lane] : lanes_) {
        for (auto& queued : lane.queued) {
            in_flight_.erase(queued->request.fire_id);
            queued->token.Cancel(reason);
            dropped.push_back(std::move(queued));
        }
        lane.queued.clear();
    }
    // What is left in flight is running: in a lane, or in none (admitted by the cluster).
    for (auto& [fire_id, run] : in_flight_) run->token.Cancel(reason);
    return dropped;
}

bool RunRegistry::Idle(std::int64_t job_id) const {
    std::lock_guard lock(mu_);
    return !lanes_.contains(job_id);
}

std::size_t RunRegistry::InFlight() const {
    std::lock_guard lock(mu_);
    return in_flight_.size();
}

std::int64_t RunRegistry::MaxEpoch() const {
    std::lock_guard lock(mu_);
    return max_epoch_;
}

std::vector<std::int64_t> RunRegistry::RunningFires() const {
    std::lock_guard lock(mu_);
    std::vector<std::int64_t> out;
    for (const auto& [job_id, lane] : lanes_) out.push_back(lane.running->request.fire_id);
    return out;
}

}  // namespace sched::client::impl
