#pragma once

/// "Now" for scheduling decisions: the database clock, read through a local offset.
///
/// Every node measures offset = db_now - midpoint(local_before, local_after) with a round-trip
/// query, keeps the sample with the smallest round trip among the recent ones (the tightest
/// bound on the true offset), and answers Now() = local system clock + offset. A node whose
/// own clock is minutes off therefore still fires on time, and all nodes agree on "now" to
/// within half the best round trip.
///
/// Thread-safe. The probe is blocking (DB): call Refresh() off the I/O thread.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>

#include "sched/common/clock.hpp"
#include "sched/common/status.hpp"

namespace sched::trigger {

class DbTime {
  public:
    /// `read_db_now_us` returns the database clock (e.g. Database::NowUs); `clock` is the local one.
    DbTime(const Clock& clock, std::function<Result<std::int64_t>()> read_db_now_us, int window = 8);

    /// Takes one sample. On failure the previous offset stays in use (and the error is returned).
    Status Refresh();
    /// The database's "now" in epoch milliseconds; before the first successful Refresh, the local clock.
    std::int64_t NowMs() const;
    std::int64_t NowUs() const;
    /// The offset in use (db - local), and the round trip of the sample it came from.
    std::chrono::microseconds Offset() const;
    std::chrono::microseconds RoundTrip() const;
    bool Synced() const;

  private:
    struct Sample {
        std::chrono::microseconds offset;
        std::chrono::microseconds rtt;
    };
    const Clock& clock_;
    std::function<Result<std::int64_t>()> read_;
    std::size_t window_;
    mutable std::mutex mu_;
    std::deque<Sample> samples_;
    std::optional<Sample> best_;
};

}  // namespace sched::trigger
