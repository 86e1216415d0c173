#pragma once

// The executors a slave's pieces are given, for a test of one piece alone: an io_context run by
// one thread, and a one-thread pool for blocking (database) work.

#include <thread>

#include "sched/common/net.hpp"

namespace sched::trigger {

class IoThread {
  public:
    IoThread() : work_(net::make_work_guard(io)) {
        thread_ = std::thread([this] { io.run(); });
    }
    ~IoThread() { Join(); }
    IoThread(const IoThread&) = delete;
    IoThread& operator=(const IoThread&) = delete;

    /// Lets the io_context run out of work and waits for both threads. A fixture calls it in its
    /// destructor, before the members its handlers reach are destroyed. Idempotent.
    void Join() {
        if (!thread_.joinable()) return;
        work_.reset();
        thread_.join();
        pool.join();
    }

    net::io_context io;
    net::thread_pool pool{1};

  private:
    net::executor_work_guard<net::io_context::executor_type> work_;
    std::thread thread_;
};

}  // namespace sched::trigger
