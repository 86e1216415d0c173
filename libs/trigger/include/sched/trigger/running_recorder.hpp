#pragma once

/// The slave's `running` records: which instance runs an accepted fire, and since when
/// (docs/architecture/slave.md "Recording outcomes"). A record waits `record-running-after` past
/// its run's start, so the result of a short run usually ends the fire first and the record is
/// never written; records are written per executor instance in one statement per window. A run
/// its job's policy may stop for a later fire (cancel-other, terminate-other) is recorded at the
/// next `record-window` instead: a claim on another node learns its instance only from the record.
/// An end the slave records itself takes the queued record back (Withdraw), and so does a result
/// applied in this process (WithdrawEnded): its fire is no longer `dispatching`.
///
/// Thread-safe. Flushes keep what they need alive (WindowedWriter); Busy() tells whether one is
/// writing.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sched/common/metrics.hpp"
#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/store/fire_claims.hpp"
#include "sched/trigger/run_sender.hpp"
#include "sched/trigger/slave_ports.hpp"
#include "sched/trigger/windowed_writer.hpp"

namespace sched::trigger {

class RunningRecorder {
  public:
    /// A record waiting for its window: the fire, its start, the instance.
    struct Record {
        std::string address;
        store::StartedFire fire;
    };
    struct Options {
        Micros record_window{};         ///< the window of prompt records
        Micros record_running_after{};  ///< how long a record waits past its run's start
        WriteRetry retry{};             ///< database errors: retried with backoff, then logged
        /// Called with the fires of each committed statement (none: nothing is called): their
        /// rows are no longer `dispatching`.
        std::function<void(const std::vector<std::int64_t>&)> written;
    };

    /// Writes through `store.MarkRunning` (a CAS from `dispatching`); `store` outlives it. Counts
    /// its statements in sched_slave_running_batches_total.
    RunningRecorder(const net::any_io_executor& io, net::thread_pool& db_pool, Options options, FireClaimStore& store,
                    std::string node_id, MetricsRegistry& metrics);

    /// Queues the record of an accepted run.
    void Add(const AcceptedRun& run);
    /// Takes back the record of `fire_id` if no flush took it yet.
    std::optional<Record> Withdraw(std::int64_t fire_id);
    /// Takes back the records of `fire_ids` no flush took yet: their fires' ends are in the
    /// database (results this process applied), so the records would change no row. Returns how
    /// many it took back.
    std::size_t WithdrawEnded(const std::vector<std::int64_t>& fire_ids);
    /// The instance of the queued (not yet written) record of `fire_id`.
    std::optional<std::string> QueuedAddress(std::int64_t fire_id) const;
    /// Whether a flush is writing.
    bool Busy() const;
    /// Writes every queued record now and every later one within `record-window`, held or not:
    /// the node is stopping and must not wait out `record-running-after` before it lets go.
    void Hurry();

  private:
    Status Write(std::vector<Record>& batch);
    void NotRecorded(const Status& error, const std::vector<Record>& left, bool giving_up) const;

    Options options_;
    FireClaimStore& store_;
    std::string node_id_;
    CounterChild& statements_;
    WindowedWriter<Record> held_;    // held for record-running-after
    WindowedWriter<Record> prompt_;  // runs a later fire may stop: not held
};

}  // namespace sched::trigger
