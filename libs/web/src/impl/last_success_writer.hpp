#pragma once

// Each job's latest success, as the callback route applies results, written to job_last_success
// (store::RecordLastSuccesses) at most once per window per process: the last-success gauge then
// reads one row per job whose success moved, and a job firing every second costs one row change
// per window instead of one per fire (docs/architecture/metrics.md "Last success").

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "sched/common/duration.hpp"
#include "sched/common/net.hpp"
#include "sched/db/database.hpp"
#include "sched/store/fire_metrics.hpp"

namespace sched::web::impl {

class LastSuccessWriter : public std::enable_shared_from_this<LastSuccessWriter> {
  public:
    static constexpr Micros kWindow = std::chrono::seconds(10);

    LastSuccessWriter(db::DatabaseProvider database, net::thread_pool& db_pool, Micros window = kWindow)
        : database_(std::move(database)), db_pool_(db_pool), window_(window) {}

    /// Keeps each job's latest success and sees that a write follows (a timer on `ex`, the
    /// statement on the DB pool): at once when the last write was `window` ago or more, else
    /// when it will be. Returns at once. A failed write keeps its jobs for the next one, a window
    /// later (logged). What waits when the process stops is not written: the gauge then shows a
    /// success up to a window older until the job's next one.
    void Add(const std::vector<store::JobSuccess>& successes, const net::any_io_executor& ex);

    /// Jobs waiting for the next write.
    std::size_t waiting() const;

  private:
    net::awaitable<void> WriteWhileWaiting();
    void Write(const std::vector<store::JobSuccess>& batch);           // on the DB pool
    void KeepLocked(const std::vector<store::JobSuccess>& successes);  // each job's latest; mu_ held

    const db::DatabaseProvider database_;
    net::thread_pool& db_pool_;
    const Micros window_;
    mutable std::mutex mu_;
    std::map<std::int64_t, std::int64_t> waiting_;  // job id -> latest finish
    bool writer_on_ = false;                        // a WriteWhileWaiting runs
};

}  // namespace sched::web::impl
