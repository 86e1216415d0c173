#pragma once

// The executors a slave's pieces are given, for a test of one piece alone: an io_context run by
// one thread (or as many as asked), and a one-thread pool for blocking (database) work.

#include <thread>
#include <vector>

#include "sched/common/net.hpp"

namespace sched::trigger {

class IoThread {
  public:
    explicit IoThread(int threads = 1) : work_(net::make_work_guard(io)) {
        for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { io.run(); });
    }
    ~IoThread() { Join(); }
    IoThread(const IoThread&) = delete;
    IoThread& operator=(const IoThread&) = delete;

    /// Lets the io_context run out of work and waits for its threads and the pool's. A fixture
    /// calls it in its destructor, before the members its handlers reach are destroyed. Idempotent.
    void Join() {
        if (threads_.empty()) return;
        work_.reset();
        for (auto& t : threads_) t.join();
        threads_.clear();
        pool.join();
    }

    net::io_context io;
    net::thread_pool pool{1};

  private:
    net::executor_work_guard<net::io_context::executor_type> work_;
    std::vector<std::thread> threads_;
};

}  // namespace sched::trigger
