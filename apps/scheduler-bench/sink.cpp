#include "sink.hpp"

#include <chrono>
#include <cstdlib>
#include <sstream>

#include "bench_cluster.hpp"

namespace sched::bench {

MeasuringSink::MeasuringSink(std::vector<std::string> web_endpoints, const std::string& token,
                             const std::filesystem::path& spool_dir) {
    arrivals_.reserve(1 << 20);
    client::ExecutorOptions options;
    options.app = "bench";
    options.web_endpoints = std::move(web_endpoints);
    options.token = token;
    options.heartbeat_interval = std::chrono::seconds(1);
    // Room for every run of a 10,000 fires/s burst; the handler returns at once.
    options.worker_threads = 4;
    options.capacity = 200000;
    options.spool_dir = spool_dir;
    options.callback_batch_size = 1000;
    options.shutdown_grace = std::chrono::seconds(2);
    options.log_retained_fires = 1;
    options.dedupe_window = 2'000'000;
    options.http.listen = "127.0.0.1:0";
    options.http.max_connections = 4096;
    if (const TlsFiles* tls = BenchTls()) {
        options.http.tls.cert_file = tls->cert;
        options.http.tls.key_file = tls->key;
        options.web_tls.ca_file = tls->ca;
    }
    executor_ = std::make_unique<client::Executor>(options);
    executor_->Handle("sink", [this](client::JobContext& ctx) {
        Arrival a;
        a.arrival_us =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        a.job_id = ctx.job_id();
        a.fire_id = ctx.fire_id();
        a.scheduled_ms = ctx.scheduled_ms();
        a.attempt = ctx.attempt();
        a.epoch = ctx.epoch();
        std::lock_guard lock(mu_);
        arrivals_.push_back(a);
        return Status::Ok();
    });
    executor_->Start();
}

MeasuringSink::~MeasuringSink() {
    executor_->Stop();
}

MeasuringSink::StartDelay MeasuringSink::StartDelays() const {
    StartDelay d;
    const std::string text = executor_->metrics().Render();
    const std::string bucket = "sched_client_run_start_delay_seconds_bucket{le=\"";
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        const auto space = line.rfind(' ');
        if (space == std::string::npos) continue;
        const double value = std::strtod(line.c_str() + space + 1, nullptr);
        if (line.rfind(bucket, 0) == 0) {
            d.buckets.emplace_back(line.substr(bucket.size(), line.find('"', bucket.size()) - bucket.size()), value);
        } else if (line.rfind("sched_client_run_start_delay_seconds_count ", 0) == 0) {
            d.count = value;
        } else if (line.rfind("sched_client_run_start_delay_seconds_sum ", 0) == 0) {
            d.sum_s = value;
        }
    }
    return d;
}

std::size_t MeasuringSink::Count() const {
    std::lock_guard lock(mu_);
    return arrivals_.size();
}

std::vector<Arrival> MeasuringSink::Snapshot() const {
    std::lock_guard lock(mu_);
    return arrivals_;
}

}  // namespace sched::bench
