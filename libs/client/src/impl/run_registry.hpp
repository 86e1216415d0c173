#pragma once

// Admission of runs: fencing by epoch, duplicate suppression, block strategies per job and the
// capacity limit. Pure bookkeeping (no I/O, no threads of its own) so that every rule is tested
// without HTTP. Thread-safe: one mutex around everything.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sched/client/job_context.hpp"

namespace sched::client::impl {

struct Run {
    explicit Run(RunRequest r) : request(std::move(r)), result_epoch(request.epoch) {}
    const RunRequest request;
    // The epoch its result carries: the run's own, or a newer one the cluster re-stamped its fire
    // with and sent here again while it was in flight (RunRegistry::AdmitAll), which is then the
    // fire's recorded dispatch epoch that a result must name.
    std::atomic<std::int64_t> result_epoch;
    CancellationToken token;
    // The fire whose cover-early arrival cancelled this one (0 if none); written under the
    // registry mutex before the token is cancelled, read after the handler returned.
    std::atomic<std::int64_t> covered_by{0};
    // Not before this time does it start (a run sent ahead of its due time, `start_in_ms`);
    // written by OnAccepted under the registry mutex, before anything can start the run.
    std::chrono::steady_clock::time_point not_before{};
    // When it was handed to the workers (its hold over, or admitted or launched after its job's
    // running fire): its handler's start minus this is the executor's own delay. Written before
    // the post that hands it over, read by the worker that runs it.
    std::chrono::steady_clock::time_point startable_at{};
    // When its own timeout ends it, set as its handler starts (MarkStarted): a node's timeout
    // kill is acted on only once this has passed, since the timeout counts from the handler's
    // start and not from when the node's watch began (the run may have waited for the job's
    // running fire, or for not_before). 0 until it started; kNoDeadline without a timeout.
    static constexpr std::int64_t kNoDeadline = std::numeric_limits<std::int64_t>::max();
    std::atomic<std::int64_t> deadline_ns{0};  // steady clock, since its epoch

    std::int64_t ResultEpoch() const { return result_epoch.load(); }
    /// Records that the handler starts at `now`; returns its deadline.
    std::chrono::steady_clock::time_point MarkStarted(std::chrono::steady_clock::time_point now);
    /// How long its own timeout still gives it at `now` (for a run not started yet: its whole
    /// timeout plus what is left of its hold, at least), or nullopt when that has passed or the
    /// run has no timeout of its own.
    std::optional<std::chrono::milliseconds> TimeoutLeft(std::chrono::steady_clock::time_point now) const;
};
using RunPtr = std::shared_ptr<Run>;

enum class Admission { kAccepted, kDuplicate, kStaleEpoch, kBusy, kNoCapacity };

struct AdmitResult {
    Admission admission = Admission::kAccepted;
    std::string message;          // why it was refused
    RunPtr run;                   // the accepted run (also when it is queued)
    bool start_now = false;       // false: queued behind a running run of the same job
    std::vector<RunPtr> dropped;  // queued runs removed by cover-early: report them killed
};

struct KillResult {
    RunPtr run;                // null: no such fire here
    bool was_running = false;  // false: it was queued and is now removed (report it killed)
    // For a running run: this kill cancelled it. False when it was cancelled already (its own
    // timeout, an earlier kill), possibly with its outcome already in its log.
    bool stopped_now = false;
    // Set for a timeout kill not acted on (Run::TimeoutLeft): the run goes on, untouched.
    std::optional<std::chrono::milliseconds> timeout_in;
};

class RunRegistry {
  public:
    RunRegistry(std::size_t capacity, std::size_t dedupe_window);

    /// Called under the registry's lock when a run is accepted, before anything can start it:
    /// the place to open its log so that no line of the run is lost and to set its not_before.
    /// `index`: the run's place in the requests admitted together.
    using OnAccepted = std::function<void(std::size_t index, Run& run, bool start_now)>;

    /// Admits `requests` in their order under one lock, each exactly as if alone (a later one
    /// sees what an earlier one did: its epoch, its lane, its place in the capacity). Result i
    /// is request i's.
    std::vector<AdmitResult> AdmitAll(std::vector<RunRequest> requests, const OnAccepted& on_accepted = {});
    AdmitResult Admit(RunRequest request);
    /// `run` returned from its handler. Returns the next run of its job to start, if any.
    RunPtr Finish(const RunPtr& run);
    /// Cancels a running fire (kKilled) or removes a queued one. With `timeout` (the node's
    /// watch of the job's timeout expired), the cancel reason is kTimeout, and a run whose own
    /// timeout has not passed at `now` is left alone (KillResult::timeout_in says for how long).
    KillResult Kill(std::int64_t fire_id, bool timeout = false,
                    std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
    /// Shutdown: removes and returns every queued run; cancels running ones with `reason`.
    std::vector<RunPtr> CancelAll(CancelReason reason);

    /// True when job `job_id` has nothing running or queued here.
    bool Idle(std::int64_t job_id) const;
    std::size_t InFlight() const;
    std::int64_t MaxEpoch() const;
    /// Fire ids currently running (for shutdown logs).
    std::vector<std::int64_t> RunningFires() const;

  private:
    struct Lane {
        RunPtr running;             // null only when the lane is about to be erased
        std::deque<RunPtr> queued;  // non-empty only when running is set
    };

    AdmitResult AdmitLocked(RunRequest request, std::size_t index, const OnAccepted& on_accepted);
    void Remember(std::int64_t fire_id, std::int64_t attempt);

    const std::size_t capacity_;
    const std::size_t dedupe_window_;
    mutable std::mutex mu_;
    std::unordered_map<std::int64_t, Lane> lanes_;        // by job_id
    std::unordered_map<std::int64_t, RunPtr> in_flight_;  // by fire_id
    std::set<std::pair<std::int64_t, std::int64_t>> seen_;
    std::deque<std::pair<std::int64_t, std::int64_t>> seen_order_;
    std::int64_t max_epoch_ = 0;
};

}  // namespace sched::client::impl
