#pragma once

// Each job's latest success, as the callback route applies results, written to job_last_success
// (store::RecordLastSuccesses): a job's first success within a window at once, its later ones
// within that window together at the window's end. The last-success gauge then reads one row
// per job whose success moved, and a job firing every second costs one row change per window
// instead of one per fire (docs/architecture/metrics.md "Last success").

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

    /// Records `successes`: a job not written within the last `window` in one statement now
    /// (on the DB pool), the others kept, each job's latest, and written together a window later
    /// (a timer on `ex`). Returns at once. A failed write keeps its jobs for the next turn, a
    /// window later (logged). So the row of a job lags its latest success by at most a window,
    /// also when the process stops before its turn.
    void Add(const std::vector<store::JobSuccess>& successes, const net::any_io_executor& ex);

    /// Jobs waiting for the next turn.
    std::size_t waiting() const;

  private:
    using Clock = std::chrono::steady_clock;
    net::awaitable<void> Turns();
    void Write(const std::vector<store::JobSuccess>& batch);  // on the DB pool
    void PostWrite(std::vector<store::JobSuccess> batch);

    const db::DatabaseProvider database_;
    net::thread_pool& db_pool_;
    const Micros window_;
    mutable std::mutex mu_;
    std::map<std::int64_t, store::JobSuccess> waiting_;     // job id -> its latest success, for the next turn
    std::map<std::int64_t, Clock::time_point> written_at_;  // jobs written within the last window
    bool turns_on_ = false;                                 // a Turns coroutine runs
};

}  // namespace sched::web::impl
