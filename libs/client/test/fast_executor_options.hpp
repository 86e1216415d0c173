#pragma once

// The executor options the in-process executor tests start with: every interval short, so a
// test sees heartbeats, callbacks and retries within milliseconds; HTTP on a free loopback port.

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "sched/client/executor.hpp"

namespace sched::client::testing {

/// App "test-app" reporting to `web_endpoints` with `token`, spooling in `spool_dir`.
inline ExecutorOptions FastExecutorOptions(std::vector<std::string> web_endpoints, const std::string& token,
                                           const std::filesystem::path& spool_dir) {
    using namespace std::chrono_literals;
    ExecutorOptions o;
    o.app = "test-app";
    o.web_endpoints = std::move(web_endpoints);
    o.token = token;
    o.heartbeat_interval = 100ms;
    o.worker_threads = 4;
    o.capacity = 16;
    o.spool_dir = spool_dir;
    o.callback_flush_interval = 5ms;
    o.callback_max_backoff = 50ms;
    o.web_timeout = 2s;
    o.shutdown_grace = 5s;
    o.http.listen = "127.0.0.1:0";
    o.http.access_log = http::AccessLog::kOff;
    return o;
}

}  // namespace sched::client::testing
