#pragma once

// A fake of the executors a node calls (dispatch::ExecutorClient), for the slave's unit tests:
// it answers /v1/run, /v1/runs and /v1/runs-ahead as an SDK would, records every call, and can
// refuse, delay or lack the batch routes.

#include <algorithm>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/dispatch/executor_client.hpp"

namespace sched::trigger_testing {

// An executor instance as the fake sees it: /v1/run answers one run; /v1/runs and
// /v1/runs-ahead answer each run of the batch as /v1/run would (or 404 for the path, like an
// SDK before the route).
class FakeExecutors final : public dispatch::ExecutorClient {
  public:
    struct Call {
        std::string url;
        std::string body;
        std::int64_t at_ms = 0;
    };
    std::mutex mu;
    std::vector<Call> calls;
    std::size_t runs = 0;  // runs offered: one per /v1/run, one per item of a /v1/runs
    int open = 0;
    int max_open = 0;
    int refuse_first = 0;  // answer this many runs with `refuse_status`
    int refuse_status = 503;
    std::string refuse_field;  // the error's field for those (batch items: "runs[i]." + it)
    int status = 202;          // then this
    bool serves_batch = true;
    bool serves_ahead = true;
    std::int64_t newest_epoch = 0;          // runs with an older epoch are refused, as the SDK does
    int batch_status = 0;                   // non-zero: /v1/runs answers this, runs none
    Micros delay{0};                        // each call takes this long
    std::vector<std::string> kill_answers;  // the next /v1/kill calls answer 200 with these bodies
    net::any_io_executor io;

    explicit FakeExecutors(net::any_io_executor e) : io(std::move(e)) {}

    std::size_t Runs() {
        std::lock_guard lock(mu);
        return runs;
    }
    std::size_t Batches(std::string_view path = "/v1/runs") {
        std::lock_guard lock(mu);
        return static_cast<std::size_t>(
            std::count_if(calls.begin(), calls.end(), [path](const Call& c) { return c.url.ends_with(path); }));
    }

    net::awaitable<Result<http::ClientResponse>> Send(std::string, http::Method, std::string url, std::string body,
                                                      http::CallOptions) override {
        http::ClientResponse r;
        {
            std::lock_guard lock(mu);
            calls.push_back({url, body, WallMs()});
            max_open = std::max(max_open, ++open);
            const auto answer = [&](const nlohmann::json& run, const std::string& prefix) {
                ++runs;
                nlohmann::json item = {{"status", status}};
                const std::int64_t epoch = run.value("epoch", std::int64_t{0});
                if (epoch < newest_epoch) {
                    item["status"] = 409;
                    item["error"] = {{"code", "aborted"}, {"message", "stale epoch"}, {"field", prefix + "epoch"}};
                    return item;
                }
                newest_epoch = epoch;
                if (refuse_first > 0) {
                    --refuse_first;
                    item["status"] = refuse_status;
                    item["error"] = {{"code", "x"}, {"message", "refused"}, {"field", prefix + refuse_field}};
                }
                return item;
            };
            const bool ahead = url.ends_with("/v1/runs-ahead");
            if (url.ends_with("/v1/runs") || ahead) {
                if (!(ahead ? serves_ahead : serves_batch)) {
                    r.status = 404;
                } else if (batch_status != 0) {
                    r.status = batch_status;
                } else {
                    nlohmann::json results = nlohmann::json::array();
                    const auto runs_in = nlohmann::json::parse(body)["runs"];
                    for (std::size_t i = 0; i < runs_in.size(); ++i) {
                        results.push_back(answer(runs_in[i], "runs[" + std::to_string(i) + "]."));
                    }
                    r.status = 200;
                    r.body = nlohmann::json{{"results", results}}.dump();
                }
            } else if (url.ends_with("/v1/run")) {
                auto item = answer(nlohmann::json::parse(body), "");
                r.status = item["status"].get<int>();
                if (item.contains("error")) r.body = nlohmann::json{{"error", item["error"]}}.dump();
            } else if (url.ends_with("/v1/kill") && !kill_answers.empty()) {
                r.status = 200;
                r.body = kill_answers.front();
                kill_answers.erase(kill_answers.begin());
            } else {
                r.status = status;
            }
        }
        if (delay > Micros{0}) {
            net::steady_timer t(io);
            t.expires_after(delay);
            co_await t.async_wait(net::use_awaitable);
        }
        {
            std::lock_guard lock(mu);
            --open;
        }
        co_return r;
    }

    static std::int64_t WallMs() {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    }
};

}  // namespace sched::trigger_testing
