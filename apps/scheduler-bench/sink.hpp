#pragma once

/// The measuring sink: an executor built on the client SDK (sched::client::Executor, app
/// "bench", handler "sink") that records every run it is handed and returns at once.
///
/// The arrival time is taken when the SDK calls the handler (after its HTTP accept and worker
/// queue), on this machine's wall clock in microseconds; the trigger nodes schedule by the
/// database clock, which is the same clock when the database runs on this machine.
///
/// Thread-safe: the handler runs on the SDK's worker threads; Snapshot() from any thread.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sched/client/executor.hpp"

namespace sched::bench {

struct Arrival {
    std::int64_t arrival_us = 0;
    std::int64_t job_id = 0;
    std::int64_t fire_id = 0;
    std::int64_t scheduled_ms = 0;
    std::int64_t attempt = 0;
    std::int64_t epoch = 0;
};

class MeasuringSink {
  public:
    /// Starts the executor on 127.0.0.1:0; its results and heartbeats go to `web_endpoints`
    /// (the trigger nodes' executor API). With BenchTls() it serves HTTPS with that certificate
    /// and verifies https endpoints against its CA. Throws like Executor::Start().
    MeasuringSink(std::vector<std::string> web_endpoints, const std::string& token,
                  const std::filesystem::path& spool_dir);
    ~MeasuringSink();

    std::vector<Arrival> Snapshot() const;
    /// Arrivals so far (doubles included), without copying them.
    std::size_t Count() const;
    client::ExecutorStats Stats() const { return executor_->Stats(); }
    /// The executor's sched_client_run_start_delay_seconds so far: cumulative count per bucket
    /// bound ("+Inf" last), its count and its sum; a window's delta is the executor's own share
    /// of that window's lag.
    struct StartDelay {
        std::vector<std::pair<std::string, double>> buckets;
        double count = 0;
        double sum_s = 0;
    };
    StartDelay StartDelays() const;
    std::string address() const { return executor_->address(); }
    void Stop() { executor_->Stop(); }

  private:
    mutable std::mutex mu_;
    std::vector<Arrival> arrivals_;
    std::unique_ptr<client::Executor> executor_;
};

}  // namespace sched::bench
