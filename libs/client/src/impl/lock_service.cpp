#include "impl/lock_service.hpp"

#include <algorithm>
#include <cctype>
#include <future>

#include <spdlog/spdlog.h>

#include "sched/common/backoff.hpp"
#include "sched/http/error_body.hpp"
#include "sched/protocol/lock.hpp"

namespace sched::client {
namespace impl {

namespace {

using std::chrono::milliseconds;

constexpr std::size_t kMaxKeyLength = 128;
constexpr Micros kFirstBackoff = milliseconds(100);
constexpr Micros kMaxBackoff = milliseconds(2000);

std::int64_t Ms(Micros d) {
    return std::chrono::duration_cast<milliseconds>(d).count();
}

Micros Until(LockClock::time_point t) {
    return std::chrono::duration_cast<Micros>(t - LockClock::now());
}

// The server's gateway statuses mean "another endpoint may do better", like a refused connection.
bool TryElsewhere(int status) {
    return status == 502 || status == 503 || status == 504;
}

}  // namespace

Status StatusFromResponse(const http::ClientResponse& response) {
    auto body = response.Json();
    std::string message = "HTTP " + std::to_string(response.status);
    if (const auto error = body.ok() ? http::ParseErrorBody(*body) : std::nullopt) {
        if (!error->message.empty()) message = error->message;
        if (const auto code = error->Canonical()) return Status(*code, message);
    }
    return Status(response.status >= 500 ? Code::kUnavailable : Code::kInternal, message);
}

LockService::LockService(std::vector<http::Url> endpoints, std::string token, Micros web_timeout,
                         const std::string& app, http::ClientTlsOptions tls)
    : endpoints_(std::move(endpoints)), token_(std::move(token)), app_(app), web_timeout_(web_timeout) {
    http::ClientOptions options;
    options.connect_timeout = std::min(web_timeout_, options.connect_timeout);
    options.user_agent = "sched-client-lock/" + app;
    options.tls = std::move(tls);
    client_ = std::make_unique<http::HttpClient>(io_.get_executor(), options);
    work_.emplace(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
}

LockService::~LockService() {
    // Guards hold this service: when it goes, no guard is left, so every watchdog was told to
    // stop; calls still in flight are abandoned with the I/O context.
    client_->CloseIdle();
    work_.reset();
    io_.stop();
    thread_.join();
}

net::awaitable<LockCallOutcome> LockService::Call(std::string path, std::function<nlohmann::json()> body,
                                                  LockClock::time_point deadline, std::function<Micros()> extra) {
    LockCallOutcome out;
    std::string last_error = "no web endpoint configured";
    Backoff backoff(kFirstBackoff, kMaxBackoff, BackoffJitter::kSpread);
    net::steady_timer timer(io_);
    for (;;) {
        const std::size_t start = preferred_.load();
        for (std::size_t i = 0; i < endpoints_.size(); ++i) {
            const std::size_t index = (start + i) % endpoints_.size();
            http::ClientRequest req;
            req.method = http::Method::kPost;
            req.url = endpoints_[index].WithPath(path).ToString();
            if (body) {
                req.body = body().dump();
                req.headers.Set("Content-Type", "application/json");
            } else {
                req.method = http::Method::kGet;
            }
            http::CallOptions call;
            call.bearer_token = token_;
            // Never much past the deadline: a watchdog must report a loss when its lease ends,
            // not a whole web-timeout later.
            call.timeout = std::min(web_timeout_ + (extra ? extra() : Micros{0}),
                                    std::max(Until(deadline), Micros(milliseconds(50))));
            out.sent = LockClock::now();
            auto r = co_await client_->Send(req, call);
            if (r.ok() && !TryElsewhere(r->status)) {
                preferred_ = index;
                out.response = std::move(*r);
                co_return out;
            }
            last_error = req.url + ": " + (r.ok() ? "HTTP " + std::to_string(r->status) : r.status().ToString());
            spdlog::debug("lock call failed: {}", last_error);
        }
        const Micros sleep = backoff.Next();
        if (Until(deadline) <= sleep) break;
        timer.expires_after(sleep);
        boost::system::error_code ec;
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
    out.status = Unavailable("no web endpoint answered the lock call (last: " + last_error + ")");
    co_return out;
}

LockCallOutcome LockService::RunCall(std::string path, std::function<nlohmann::json()> body,
                                     LockClock::time_point deadline, std::function<Micros()> extra) {
    auto call = [this, path = std::move(path), body = std::move(body), deadline,
                 extra = std::move(extra)]() -> net::awaitable<LockCallOutcome> {
        auto out = co_await Call(path, body, deadline, extra);
        co_return out;
    };
    return net::co_spawn(io_, call, net::use_future).get();
}

Result<LockGuard> LockService::Lock(std::string_view key, Micros lease, Micros wait) {
    const bool key_ok = !key.empty() && key.size() <= kMaxKeyLength && std::all_of(key.begin(), key.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '-';
    });
    if (!key_ok) {
        return InvalidArgument("lock key: expected 1.." + std::to_string(kMaxKeyLength) +
                               " characters of [A-Za-z0-9._:-], got \"" + std::string(key) + "\"");
    }
    if (Ms(lease) <= 0) return InvalidArgument("lock lease: at least 1 ms");
    if (wait < Micros{0}) return InvalidArgument("lock wait: must not be negative");

    const auto wait_end = LockClock::now() + wait;
    const std::int64_t lease_ms = Ms(lease);
    auto remaining_wait = [wait_end] {
        return std::max(Micros{0}, Until(wait_end));
    };
    auto body = [remaining_wait, lease_ms, app = app_] {
        return protocol::ToJson(
            protocol::LockAcquireRequest{.app = app, .lease_ms = lease_ms, .wait_ms = Ms(remaining_wait())});
    };
    const std::string path = "/api/v1/locks/" + std::string(key) + "/acquire";
    auto out = RunCall(path, body, wait_end + web_timeout_, remaining_wait);
    if (!out.status.ok()) return out.status;
    if (out.response.status != 200) return StatusFromResponse(out.response);
    auto answer = out.response.Json();
    const auto holding = answer.ok() ? protocol::ReadLockHolding(*answer) : protocol::Parsed<protocol::LockHolding>{};
    if (!answer.ok() || !holding.ok()) {
        return Internal("lock '" + std::string(key) + "': unexpected answer: " + out.response.body);
    }
    auto state = std::make_shared<LockState>();
    state->key = std::string(key);
    state->owner = holding.value.owner;
    state->epoch = holding.value.epoch;
    state->lease = lease;
    // The server took the lock no earlier than our send time plus the time it waited (it counts
    // from its receipt of the request, which came after our send): a deadline that never runs
    // past the database's lease.
    const auto waited = milliseconds(holding.value.waited_ms.value_or(0));
    state->valid_until = out.sent + waited + lease;
    state->timer = std::make_shared<net::steady_timer>(io_);
    auto watchdog = [this, state]() -> net::awaitable<void> {
        co_await Watchdog(state);
    };
    net::co_spawn(io_, watchdog, [key = state->key](const std::exception_ptr& e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            spdlog::error("lock '{}': watchdog failed: {}", key, ex.what());
        }
    });
    return LockGuard(shared_from_this(), state);
}

void LockService::MarkLost(LockState& s, const std::string& why) {
    {
        std::lock_guard lock(s.mu);
        if (s.released || s.lost) return;
        s.lost = true;
    }
    spdlog::warn("lock '{}' epoch {} lost: {}", s.key, s.epoch, why);
    s.lost_source.request_stop();
}

net::awaitable<void> LockService::Watchdog(std::shared_ptr<LockState> s) {
    LockClock::time_point next_renew;
    {
        std::lock_guard lock(s->mu);
        next_renew = s->valid_until - s->lease + s->lease / 3;
    }
    const std::string path = "/api/v1/locks/" + s->key + "/extend";
    const std::int64_t lease_ms = Ms(s->lease);
    nlohmann::json extend_body = protocol::ToJson(
        protocol::LockExtendRequest{.app = app_, .owner = s->owner, .epoch = s->epoch, .lease_ms = lease_ms});
    std::function<nlohmann::json()> body = [extend_body] {
        return extend_body;
    };
    std::function<Micros()> no_extra;
    for (;;) {
        LockClock::time_point valid_until;
        {
            std::lock_guard lock(s->mu);
            if (s->released || s->lost) co_return;
            valid_until = s->valid_until;
        }
        s->timer->expires_at(std::min(next_renew, valid_until));
        boost::system::error_code ec;
        co_await s->timer->async_wait(net::redirect_error(net::use_awaitable, ec));
        {
            std::lock_guard lock(s->mu);
            if (s->released || s->lost) co_return;
        }
        if (LockClock::now() >= valid_until) {
            MarkLost(*s, "its lease ran out without a successful extend");
            co_return;
        }
        // Retries stop at the local deadline: past it the lock may be someone else's.
        auto out = co_await Call(path, body, valid_until, no_extra);
        if (!out.status.ok()) {
            MarkLost(*s, out.status.ToString());
            co_return;
        }
        if (out.response.status == 200) {
            std::lock_guard lock(s->mu);
            s->valid_until = out.sent + s->lease;
            next_renew = out.sent + s->lease / 3;
            continue;
        }
        // 409 (expired, released or taken over), 404, 401/403: it cannot be extended any more.
        MarkLost(*s, StatusFromResponse(out.response).ToString());
        co_return;
    }
}

Status LockService::Release(LockState& s) {
    {
        std::lock_guard lock(s.mu);
        if (s.released) return Status::Ok();
        s.released = true;
    }
    net::post(io_, [timer = s.timer] { timer->cancel(); });
    nlohmann::json release_body =
        protocol::ToJson(protocol::LockReleaseRequest{.app = app_, .owner = s.owner, .epoch = s.epoch});
    auto body = [release_body] {
        return release_body;
    };
    const std::string path = "/api/v1/locks/" + s.key + "/release";
    auto out = RunCall(path, body, LockClock::now() + web_timeout_, {});
    if (!out.status.ok()) return out.status;
    if (out.response.status == 200) return Status::Ok();
    return StatusFromResponse(out.response);
}

}  // namespace impl

LockGuard::LockGuard(std::shared_ptr<impl::LockService> service, std::shared_ptr<impl::LockState> state)
    : service_(std::move(service)), state_(std::move(state)) {}

LockGuard::LockGuard(LockGuard&&) noexcept = default;

LockGuard& LockGuard::operator=(LockGuard&& other) noexcept {
    if (this != &other) {
        if (state_) (void)Release();
        service_ = std::move(other.service_);
        state_ = std::move(other.state_);
    }
    return *this;
}

LockGuard::~LockGuard() {
    if (!state_) return;
    if (Status s = Release(); !s.ok()) {
        spdlog::warn("lock '{}' epoch {}: release failed: {}", state_->key, state_->epoch, s.ToString());
    }
}

const std::string& LockGuard::key() const {
    return state_->key;
}

const std::string& LockGuard::owner() const {
    return state_->owner;
}

std::int64_t LockGuard::epoch() const {
    return state_->epoch;
}

bool LockGuard::Held() const {
    std::lock_guard lock(state_->mu);
    return !state_->released && !state_->lost && impl::LockClock::now() < state_->valid_until;
}

std::stop_token LockGuard::LostToken() const {
    return state_->lost_source.get_token();
}

Status LockGuard::Release() {
    return service_->Release(*state_);
}

}  // namespace sched::client
