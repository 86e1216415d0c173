#include "sched/client/testing/fake_web.hpp"

#include <algorithm>

#include <chrono>

#include "sched/http/url.hpp"

namespace sched::client::testing {

protocol::SigningKey TestSigningKey() {
    return {"k-test", "0000000000000000000000000000000000000000000000000000000000000001"};
}

std::int64_t WallMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

http::ClientRequest SignedRequest(const protocol::SigningKey& key, http::Method method, const std::string& url,
                                  std::string body, std::optional<std::int64_t> timestamp_ms) {
    http::ClientRequest request;
    request.method = method;
    request.url = url;
    const auto target = http::Url::Parse(url)->target;
    for (auto& [name, value] :
         protocol::SignatureHeaders(key, http::MethodName(method), target, timestamp_ms.value_or(WallMs()), body)) {
        request.headers.Set(name, std::move(value));
    }
    if (!body.empty()) request.headers.Set("Content-Type", "application/json");
    request.body = std::move(body);
    return request;
}

FakeWeb::FakeWeb(std::string token, std::uint16_t port) {
    http::Router router;
    const auto record = [this](std::vector<nlohmann::json>& into) {
        return [this, &into](http::Request& req) {
            auto body = req.Json();
            if (!body.ok()) return http::Response::Error(body.status(), "body");
            std::lock_guard lock(mu_);
            into.push_back(std::move(*body));
            return http::Response::Json({{"ok", true}});
        };
    };
    router.Add(http::Method::kPost, "/api/v1/registry/heartbeat", [this](http::Request& req) {
        auto body = req.Json();
        if (!body.ok()) return http::Response::Error(body.status(), "body");
        std::lock_guard lock(mu_);
        heartbeats_.push_back(std::move(*body));
        nlohmann::json keys = nlohmann::json::array();
        for (const auto& k : signing_keys_) keys.push_back({{"id", k.id}, {"secret", k.secret}, {"active_from_ms", 0}});
        nlohmann::json answer = {
            {"registered", true},
            {"signing", {{"keys", std::move(keys)}, {"server_time_ms", WallMs() + clock_offset_ms_}}}};
        if (!capabilities_.empty()) answer["capabilities"] = capabilities_;
        return http::Response::Json(answer);
    });
    router.Add(http::Method::kPost, "/api/v1/registry/deregister", record(deregistrations_));
    router.Add(http::Method::kPost, "/api/v1/callback", [this](http::Request& req) {
        auto body = req.Json();
        if (!body.ok()) return http::Response::Error(body.status(), "body");
        if (!body->is_array()) {
            return http::Response::Error(
                http::ApiError{Code::kInvalidArgument, "expected an array of results", "body"});
        }
        std::lock_guard lock(mu_);
        const bool takes_trace =
            std::find(capabilities_.begin(), capabilities_.end(), "result-traceparent") != capabilities_.end();
        for (std::size_t i = 0; i < body->size() && !takes_trace; ++i) {
            if ((*body)[i].is_object() && (*body)[i].contains("traceparent")) {
                const std::string field = "[" + std::to_string(i) + "].traceparent";
                return http::Response::Error(http::ApiError{Code::kInvalidArgument, field + ": unknown field", field});
            }
        }
        ++callback_requests_;
        for (auto& r : *body) results_.push_back(std::move(r));
        return http::Response::Json({{"accepted", body->size()}});
    });
    auto options = http::testing::LoopbackOptions();
    options.listen = "127.0.0.1:" + std::to_string(port);
    options.access_log = http::AccessLog::kOff;
    options.name = "fake-web";
    server_ = std::make_unique<http::testing::TestServer>(std::move(router), options,
                                                          http::BearerTokenAuth(std::move(token)));
    port_ = server_->port();
}

FakeWeb::~FakeWeb() {
    Stop();
}

void FakeWeb::Stop() {
    server_->Stop();
}

void FakeWeb::SetSigningKeys(std::vector<protocol::SigningKey> keys) {
    std::lock_guard lock(mu_);
    signing_keys_ = std::move(keys);
}

void FakeWeb::SetCapabilities(std::vector<std::string> capabilities) {
    std::lock_guard lock(mu_);
    capabilities_ = std::move(capabilities);
}

void FakeWeb::SetClockOffset(std::int64_t offset_ms) {
    std::lock_guard lock(mu_);
    clock_offset_ms_ = offset_ms;
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
