#pragma once

/// Test toolbox: the executors a piece under test is given when it runs alone - an io_context
/// run by one thread (or as many as asked) and a thread pool for blocking (database) work.

#include <thread>
#include <vector>

#include "sched/common/net.hpp"

namespace sched::testing {

class IoThread {
  public:
    explicit IoThread(int threads = 1, int pool_threads = 1)
        : pool(static_cast<std::size_t>(pool_threads)), work_(net::make_work_guard(io)) {
        for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { io.run(); });
    }
    ~IoThread() { Stop(); }
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
    /// Stops the io_context now (what is still waiting, such as an idle keep-alive connection's
    /// read, is destroyed with it) and joins as Join() does. Idempotent.
    void Stop() {
        io.stop();
        Join();
    }

    net::io_context io;
    net::thread_pool pool;

  private:
    net::executor_work_guard<net::io_context::executor_type> work_;
    std::vector<std::thread> threads_;
};

}  // namespace sched::testing
