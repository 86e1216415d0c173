#include <algorithm>
#include <string>

#include <spdlog/spdlog.h>

#include "impl/runtime.hpp"
#include "sched/common/backoff.hpp"
#include "sched/protocol/registry.hpp"
#include "sched/protocol/registry_answer.hpp"

namespace sched::client::impl {

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kHeartbeatRetry = std::chrono::seconds(2);

}  // namespace

// ---- The web module (coroutines on strand_) ----

Status Runtime::VerifyRequest(const http::Request& req) const {
    std::lock_guard lock(signing_mu_);
    if (signing_keys_.empty()) {
        return {Code::kUnauthenticated,
                "no signing keys yet: they arrive with the first answered heartbeat (docs/protocol.md)"};
    }
    Status verified = protocol::VerifySignature(protocol::SignedRequestOf(req), signing_keys_,
                                                WallMs() + clock_offset_ms_, options_.signature_window);
    // Signed for this app, but maybe for another of its instances: a captured call replayed here
    // would run its fire a second time, since each instance remembers only the runs it received.
    if (verified.ok()) verified = protocol::VerifyAddressee(req.target, address_);
    if (!verified.ok()) {
        ++counters_.refused_unsigned;
        // At most one line per second: a flood of forged calls must not become a flood of logs.
        const std::int64_t now = WallMs();
        std::int64_t last = last_refusal_log_ms_.load();
        if (now - last >= 1000 && last_refusal_log_ms_.compare_exchange_strong(last, now)) {
            spdlog::warn("executor {}: refused {} {} from {}: {} ({} refused so far)", options_.app, req.method_text,
                         req.path, req.remote, verified.message(), counters_.refused_unsigned.load());
        }
    }
    return verified;
}

void Runtime::LearnSigning(const http::ClientResponse& answer) {
    // An answer without keys (an older server) changes nothing; a malformed one is ignored
    // whole, so one bad answer never drops keys that work.
    auto body = answer.Json();
    if (!body.ok()) return;
    const auto read = protocol::ReadHeartbeatAnswer(*body);
    if (!read.ok()) {
        spdlog::warn("executor {}: ignoring a malformed heartbeat answer: {}", options_.app, read.error->message);
        return;
    }
    if (!read.value.signing) return;
    const protocol::KeyDelivery& signing = *read.value.signing;
    std::vector<protocol::SigningKey> keys;
    keys.reserve(signing.keys.size());
    for (const auto& k : signing.keys) keys.push_back(protocol::SigningKey{k.id, k.secret});
    // The server read its clock somewhere between our send and its answer: assume the middle
    // (the error is at most half the round trip, far inside the signature window).
    const std::int64_t server_ms = signing.server_time_ms;
    const std::int64_t offset = server_ms - (last_post_sent_ms_ + last_post_answered_ms_) / 2;
    std::lock_guard lock(signing_mu_);
    if (keys.size() != signing_keys_.size() || !std::equal(keys.begin(), keys.end(), signing_keys_.begin(),
                                                           [](const auto& a, const auto& b) { return a.id == b.id; })) {
        std::vector<std::string> ids;
        ids.reserve(keys.size());
        for (const auto& k : keys) ids.push_back(k.id);
        spdlog::info("executor {}: signing keys now {}; cluster clock offset {} ms", options_.app, fmt::join(ids, ", "),
                     offset);
    }
    signing_keys_ = std::move(keys);
    clock_offset_ms_ = offset;
}

void Runtime::LearnCapabilities(const http::ClientResponse& answer, std::size_t index) {
    if (index >= endpoints_.size()) return;
    if (endpoint_takes_trace_.size() != endpoints_.size()) endpoint_takes_trace_.assign(endpoints_.size(), false);
    auto body = answer.Json();
    // A malformed answer says nothing: that endpoint is taken as an older node.
    const auto read = body.ok() ? protocol::ReadHeartbeatAnswer(*body) : protocol::Parsed<protocol::HeartbeatAnswer>{};
    endpoint_takes_trace_[index] = body.ok() && read.ok() && read.value.Has(protocol::kCapabilityResultTraceparent);
    const bool all = std::all_of(endpoint_takes_trace_.begin(), endpoint_takes_trace_.end(), [](bool b) { return b; });
    if (all != results_carry_trace_.exchange(all)) {
        spdlog::info("executor {}: results {} the run's traceparent ({})", options_.app,
                     all ? "now carry" : "no longer carry",
                     all ? "every web endpoint takes it" : "a web endpoint does not take it");
    }
}

net::awaitable<void> Runtime::ProbeCapabilities() {
    if (results_carry_trace_.load() || endpoint_takes_trace_.size() != endpoints_.size()) co_return;
    const std::int64_t now = WallMs();
    if (now < next_capability_probe_ms_) co_return;
    next_capability_probe_ms_ = now + 60'000;
    const auto unknown = std::find(endpoint_takes_trace_.begin(), endpoint_takes_trace_.end(), false);
    const auto index = static_cast<std::size_t>(unknown - endpoint_takes_trace_.begin());
    http::CallOptions call;
    call.timeout = options_.web_timeout;
    call.bearer_token = options_.token;
    auto r = co_await client_->PostJson(endpoints_[index].WithPath(protocol::kHeartbeatPath).ToString(),
                                        protocol::ToJson(HeartbeatNow()), call);
    if (r.ok() && r->ok()) LearnCapabilities(*r, index);
}

net::awaitable<std::optional<http::ClientResponse>> Runtime::PostToWeb(std::string path, nlohmann::json body,
                                                                       std::string preferred_url, std::string* failure,
                                                                       std::size_t* answered) {
    std::vector<std::string> targets;
    if (!preferred_url.empty()) targets.push_back(preferred_url);
    const std::size_t first_endpoint = targets.size();
    const std::size_t start = preferred_endpoint_.load();
    for (std::size_t i = 0; i < endpoints_.size(); ++i) {
        targets.push_back(endpoints_[(start + i) % endpoints_.size()].WithPath(path).ToString());
    }
    http::CallOptions call;
    call.timeout = options_.web_timeout;
    call.bearer_token = options_.token;
    if (answered != nullptr) *answered = kNoEndpoint;
    for (std::size_t t = 0; t < targets.size(); ++t) {
        const std::int64_t sent = WallMs();
        auto r = co_await client_->PostJson(targets[t], body, call);
        if (r.ok() && r->ok()) {
            if (t >= first_endpoint) preferred_endpoint_ = (start + t - first_endpoint) % endpoints_.size();
            if (t >= first_endpoint && answered != nullptr)
                *answered = (start + t - first_endpoint) % endpoints_.size();
            last_post_sent_ms_ = sent;
            last_post_answered_ms_ = WallMs();
            co_return std::move(*r);
        }
        std::string why = r.ok() ? "HTTP " + std::to_string(r->status) + " " + r->body : r.status().ToString();
        spdlog::debug("executor {}: POST {} failed: {}", options_.app, targets[t], why);
        if (failure != nullptr) *failure = targets[t] + ": " + why;
    }
    co_return std::nullopt;
}

net::awaitable<void> Runtime::HeartbeatLoop() {
    bool was_ok = true;
    while (!heartbeat_stop_) {
        nlohmann::json body = protocol::ToJson(HeartbeatNow());
        std::string failure;
        std::size_t answered = kNoEndpoint;
        auto answer =
            co_await PostToWeb(std::string(protocol::kHeartbeatPath), std::move(body), "", &failure, &answered);
        const bool ok = answer.has_value();
        if (ok) {
            LearnSigning(*answer);
            LearnCapabilities(*answer, answered);
            co_await ProbeCapabilities();
        }
        ++(ok ? counters_.heartbeats_ok : counters_.heartbeats_failed);
        if (ok != was_ok) {
            if (ok) {
                spdlog::info("executor {}: heartbeats acknowledged again", options_.app);
            } else {
                // The last endpoint's cause, so that a certificate or token problem is visible
                // without debug logging.
                spdlog::warn("executor {}: no web endpoint acknowledged the heartbeat (last: {})", options_.app,
                             failure);
            }
            was_ok = ok;
        }
        if (heartbeat_stop_) break;
        const auto interval = std::chrono::duration_cast<Clock::duration>(options_.heartbeat_interval);
        heartbeat_timer_.expires_after(ok ? interval : std::min<Clock::duration>(interval, kHeartbeatRetry));
        boost::system::error_code ec;
        co_await heartbeat_timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
}

net::awaitable<bool> Runtime::Deregister() {
    nlohmann::json body = protocol::ToJson(protocol::Deregister{.app = options_.app, .address = address_});
    auto answer = co_await PostToWeb(std::string(protocol::kDeregisterPath), std::move(body), "");
    co_return answer.has_value();
}

}  // namespace sched::client::impl
