#include "sched/client/testing/fake_web.hpp"

namespace sched::client::testing {

FakeWeb::FakeWeb(std::string token, std::uint16_t port) {
    rest::Router router;
    const auto record = [this](std::vector<nlohmann::json>& into) {
        return [this, &into](rest::Request& req) {
            auto body = req.Json();
            if (!body.ok()) return rest::Response::Error(body.status(), "body");
            std::lock_guard lock(mu_);
            into.push_back(std::move(*body));
            return rest::Response::Json({{"ok", true}});
        };
    };
    router.Add(rest::Method::kPost, "/api/v1/registry/heartbeat", record(heartbeats_));
    router.Add(rest::Method::kPost, "/api/v1/registry/deregister", record(deregistrations_));
    router.Add(rest::Method::kPost, "/api/v1/callback", [this](rest::Request& req) {
        auto body = req.Json();
        if (!body.ok()) return rest::Response::Error(body.status(), "body");
        if (!body->is_array()) {
            return rest::Response::Error(
                rest::ApiError{Code::kInvalidArgument, "expected an array of results", "body"});
        }
        std::lock_guard lock(mu_);
        ++callback_requests_;
        for (auto& r : *body) results_.push_back(std::move(r));
        return rest::Response::Json({{"accepted", body->size()}});
    });
    auto options = rest::testing::LoopbackOptions();
    options.listen = "127.0.0.1:" + std::to_string(port);
    options.access_log = rest::AccessLog::kOff;
    options.name = "fake-web";
    server_ = std::make_unique<rest::testing::TestServer>(std::move(router), options,
                                                          rest::BearerTokenAuth(std::move(token)));
    port_ = server_->port();
}

FakeWeb::~FakeWeb() {
    Stop();
}

void FakeWeb::Stop() {
    server_->Stop();
}

std::string FakeWeb::Url() const {
    return "http://127.0.0.1:" + std::to_string(port_);
}

std::vector<nlohmann::json> FakeWeb::Heartbeats() const {
    std::lock_guard lock(mu_);
    return heartbeats_;
}

std::vector<nlohmann::json> FakeWeb::Deregistrations() const {
    std::lock_guard lock(mu_);
    return deregistrations_;
}

std::vector<nlohmann::json> FakeWeb::Results() const {
    std::lock_guard lock(mu_);
    return results_;
}

std::vector<nlohmann::json> FakeWeb::ResultsFor(std::int64_t fire_id) const {
    std::lock_guard lock(mu_);
    std::vector<nlohmann::json> out;
    for (const auto& r : results_) {
        if (r.value("fire_id", std::int64_t{-1}) == fire_id) out.push_back(r);
    }
    return out;
}

std::size_t FakeWeb::CallbackRequests() const {
    std::lock_guard lock(mu_);
    return callback_requests_;
}

}  // namespace sched::client::testing
