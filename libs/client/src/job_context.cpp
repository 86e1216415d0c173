#include "sched/client/job_context.hpp"

namespace sched::client {

bool CancellationToken::cancelled() const {
    return reason() != CancelReason::kNone;
}

CancelReason CancellationToken::reason() const {
    std::lock_guard lock(mu_);
    return reason_;
}

bool CancellationToken::WaitFor(std::chrono::steady_clock::duration timeout) const {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return reason_ != CancelReason::kNone; });
}

bool CancellationToken::Cancel(CancelReason reason) {
    {
        std::lock_guard lock(mu_);
        if (reason_ != CancelReason::kNone || reason == CancelReason::kNone) return false;
        reason_ = reason;
    }
    cv_.notify_all();
    return true;
}

JobContext::JobContext(const RunRequest& run, const CancellationToken& token,
                       std::chrono::steady_clock::time_point deadline, LogSink log_sink)
    : run_(run), token_(token), deadline_(deadline), log_sink_(std::move(log_sink)) {}

void JobContext::AppendLog(std::string line) {
    if (log_sink_) log_sink_(std::move(line));
}

}  // namespace sched::client
