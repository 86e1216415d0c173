#include "sched/web/lock_api.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <random>

#include "impl/context.hpp"
#include "impl/list_query.hpp"
#include "impl/lock_handlers.hpp"
#include "sched/common/backoff.hpp"
#include "sched/common/on_pool.hpp"
#include "sched/http/json.hpp"
#include "sched/lock/lock_backend.hpp"
#include "sched/protocol/lock.hpp"

namespace sched::web {

LockApiOptions LockApiOptions::FromYaml(const ConfigNode& node, const LockApiOptions& defaults) {
    using std::chrono::milliseconds;
    LockApiOptions o = defaults;
    o.max_lease = node.Duration("max-lease", o.max_lease, milliseconds(1), std::chrono::hours(24 * 7));
    o.max_wait = node.Duration("max-wait", o.max_wait, Micros{0}, std::chrono::minutes(10));
    o.max_waiters = static_cast<int>(node.Int("max-waiters", o.max_waiters, 0, 100000));
    o.backend = lock::LockBackendConfig::FromYaml(node);
    if (o.backend.backend == lock::LockBackend::kRedlock) {
        throw ConfigError(node.path().empty() ? "backend" : node.path() + ".backend",
                          "redlock cannot back the lock API: it has no fencing epoch (use sql or redis)");
    }
    return o;
}

namespace impl {

namespace {

using http::Request;
using http::Response;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::size_t kMaxKeyLength = 128;
// DistributedLock keeps key K in the row "lock:K" (docs/locks.md, "Rows are named ...").
constexpr std::string_view kRowPrefix = "lock:";

std::int64_t Ms(Micros d) {
    return std::chrono::duration_cast<milliseconds>(d).count();
}

protocol::LockLimits LimitsOf(const LockApiOptions& options) {
    return {.max_lease_ms = Ms(options.max_lease), .max_wait_ms = Ms(options.max_wait)};
}

// Keys travel in URL paths and in every backend's key space: a small safe alphabet, so that no
// encoding question ever arises (no '/', no '%', no spaces).
std::optional<Response> CheckKey(std::string_view key) {
    const bool chars_ok = std::all_of(key.begin(), key.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == ':' || c == '-';
    });
    if (key.empty() || key.size() > kMaxKeyLength || !chars_ok) {
        return BadRequest("key", "key: expected 1.." + std::to_string(kMaxKeyLength) +
                                     " characters of [A-Za-z0-9._:-], got \"" + std::string(key.substr(0, 200)) + "\"");
    }
    return std::nullopt;
}

// A lock's name in DistributedLock's key space: "<app>/<key>" in an app's namespace (no key has
// a '/', so the last one splits them), the bare key in the global one. `app` nullopt: global.
// Sets `error` (400 naming `app` or `key`, 403 naming `app`) when the caller may not use it.
std::optional<std::string> LockName(const Principal& who, const std::optional<std::string>& app, const std::string& key,
                                    std::optional<Response>& error) {
    if (!app) {
        if (IsAppScoped(who)) {
            error = Response::Error(http::ApiError{
                Code::kPermissionDenied,
                "app: token \"" + who.name + "\" (executor) locks only in its apps' namespaces; give app", "app"});
            return std::nullopt;
        }
        return key;
    }
    if (auto problem = AppNameProblem(*app)) {
        error = BadRequest("app", "app: " + *problem);
        return std::nullopt;
    }
    if (Status allowed = AuthorizeApp(who, *app); !allowed.ok()) {
        error = Response::Error(allowed, "app");
        return std::nullopt;
    }
    std::string name = *app + "/" + key;
    const std::size_t max = lock::kMaxLockNameLength - kRowPrefix.size();
    if (name.size() > max) {
        error = BadRequest("key", "key: app and key together take at most " + std::to_string(max - 1) + " bytes");
        return std::nullopt;
    }
    return name;
}

bool HeldNow(const lock::LockRow& row) {
    return row.owner.has_value() && row.lease_until_us > row.db_now_us;
}

nlohmann::json StateJson(std::string_view key, const std::optional<std::string>& app, const lock::LockRow& row) {
    const bool held = HeldNow(row);
    return protocol::ToJson(protocol::LockState{.key = std::string(key),
                                                .app = app,
                                                .held = held,
                                                .owner = row.owner,
                                                .epoch = row.epoch,
                                                .lease_until_ms = row.lease_until_us / 1000,
                                                .remaining_ms = held ? (row.lease_until_us - row.db_now_us) / 1000 : 0,
                                                .now_ms = row.db_now_us / 1000});
}

// 409 with the uniform error body plus the lock's current state, so that the caller can see who
// has it and until when without another request.
Response Conflict(std::string_view key, const std::optional<std::string>& app, const std::string& field,
                  const std::string& message, const std::optional<lock::LockRow>& row) {
    nlohmann::json body = {
        {"error", {{"code", std::string(CodeName(Code::kAborted))}, {"message", message}, {"field", field}}}};
    if (row) body["lock"] = StateJson(key, app, *row);
    return Response::Json(body, http::HttpStatusFor(Code::kAborted));
}

bool Transient(const Status& s) {
    return s.code() == Code::kUnavailable || s.code() == Code::kDeadlineExceeded ||
           (s.code() == Code::kAborted && !lock::IsLeaseLost(s));
}

// One acquisition attempt, run on the DB pool.
struct Attempt {
    std::optional<lock::LockHandle> handle;
    std::optional<lock::LockRow> row;  // the row after the attempt (holder, lease, DB clock)
};

// Extend and release share their checks; the outcome of one, run on the DB pool.
struct Change {
    bool done = false;
    std::string field;  // when !done: the conflicting field
    std::string message;
    std::optional<lock::LockRow> row;  // the row as read before the change (or after a lost race)
};

// Counts one waiting acquire for as long as it lives.
class WaiterSlot {
  public:
    explicit WaiterSlot(std::atomic<int>& waiting) : waiting_(waiting) {}
    ~WaiterSlot() { --waiting_; }
    WaiterSlot(const WaiterSlot&) = delete;
    WaiterSlot& operator=(const WaiterSlot&) = delete;

  private:
    std::atomic<int>& waiting_;
};

}  // namespace

LockApi::LockApi(LockApiOptions options, DatabaseProvider database, net::thread_pool& db_pool)
    : options_(std::move(options)), database_(std::move(database)), db_pool_(db_pool) {}

Result<LockApi::Backend> LockApi::GetBackend() {
    std::lock_guard lock(mu_);
    if (backend_) return *backend_;
    std::shared_ptr<lock::KeyLockStore> store = options_.store;
    if (!store) {
        auto db = database_ ? database_() : nullptr;
        if (!db && options_.backend.backend == lock::LockBackend::kSql) {
            return Unavailable("the database is not open yet");
        }
        store = lock::MakeLockStore(options_.backend, db);
    }
    backend_ = Backend{store, std::make_shared<lock::DistributedLock>(store)};
    return *backend_;
}

std::optional<LockApi::Target> LockApi::Resolve(const Principal& who, const std::optional<std::string>& app,
                                                const std::string& key, std::optional<Response>& error) {
    auto name = LockName(who, app, key, error);
    if (!name) return std::nullopt;
    auto backend = GetBackend();
    if (!backend.ok()) {
        error = Response::Error(backend.status());
        return std::nullopt;
    }
    return Target{*std::move(backend), *name, std::string(kRowPrefix) + *name};
}

net::awaitable<Response> LockApi::Acquire(Request& req, const Principal& who) {
    const std::string key(req.PathParam("key"));
    if (auto bad = CheckKey(key)) co_return *bad;
    auto body = req.Json();
    if (!body.ok()) co_return Response::Error(body.status(), "body");
    const auto request = protocol::ParseLockAcquireRequest(*body, LimitsOf(options_));
    if (!request.ok()) co_return Response::Error(*request.error);
    const std::optional<std::string>& app = request.value.app;
    const std::int64_t lease_ms = request.value.lease_ms;
    const std::int64_t wait_ms = request.value.wait_ms;
    std::optional<Response> error;
    const auto target = Resolve(who, app, key, error);
    if (!target) co_return *error;

    std::optional<WaiterSlot> slot;
    if (wait_ms > 0) {
        if (waiting_.fetch_add(1) >= options_.max_waiters) {
            --waiting_;
            co_return Response::Error(http::ApiError{Code::kResourceExhausted,
                                                     "wait_ms: " + std::to_string(options_.max_waiters) +
                                                         " acquires are waiting already; retry later or with wait_ms 0",
                                                     "wait_ms"});
        }
        slot.emplace(waiting_);
    }

    const Micros lease = milliseconds(lease_ms);
    const auto start = SteadyClock::now();
    const auto deadline = start + milliseconds(wait_ms);
    const std::string& row_name = target->row_name;
    auto executor = co_await net::this_coro::executor;
    net::steady_timer timer(executor);
    Backoff backoff(milliseconds(10), milliseconds(500), BackoffJitter::kSpread);
    for (;;) {
        const auto attempt_start = SteadyClock::now();
        auto attempt = [b = target->backend, name = target->name, row_name, lease]() -> Result<Attempt> {
            auto handle = b.locks->TryLock(name, Micros{0}, lease);
            if (!handle.ok()) return handle.status();
            Attempt a;
            a.handle = std::move(*handle);
            // The row after the attempt: the holder's lease (for the back-off and the 409), or our
            // own lease_until. A failed read costs only that detail.
            auto row = b.store->InspectLock(row_name);
            if (row.ok()) a.row = std::move(*row);
            return a;
        };
        auto got = co_await OnPool(db_pool_, attempt);
        if (!got.ok() && (!Transient(got.status()) || SteadyClock::now() >= deadline)) {
            std::string field;
            if (got.status().code() == Code::kInvalidArgument) field = "key";
            co_return Response::Error(got.status(), field);
        }
        if (!got.ok()) {
            // A busy or briefly unreachable database: try again within the caller's wait.
            timer.expires_after(
                std::min(backoff.Next(), std::chrono::duration_cast<Micros>(deadline - SteadyClock::now())));
            boost::system::error_code ec;
            co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
            continue;
        }
        if (got->handle) {
            const auto& h = *got->handle;
            protocol::LockHolding out{.key = key,
                                      .app = app,
                                      .owner = h.owner,
                                      .epoch = h.epoch,
                                      .lease_ms = lease_ms,
                                      .waited_ms = Ms(std::chrono::duration_cast<Micros>(attempt_start - start)),
                                      .lease_until_ms = std::nullopt};
            // Our row, unless it already changed hands (a lease of 1 ms) between the two statements.
            if (got->row && got->row->epoch == h.epoch && got->row->owner == h.owner) {
                out.lease_until_ms = got->row->lease_until_us / 1000;
            }
            co_return Response::Json(protocol::ToJson(out));
        }
        const auto now = SteadyClock::now();
        if (now >= deadline) {
            std::string message = "lock '" + key + "' is held by another owner";
            if (got->row && HeldNow(*got->row)) {
                message += " (epoch " + std::to_string(got->row->epoch) + ", " +
                           std::to_string((got->row->lease_until_us - got->row->db_now_us) / 1000) + " ms left)";
            }
            if (wait_ms > 0) message += " after waiting " + std::to_string(wait_ms) + " ms";
            co_return Conflict(key, app, "key", message, got->row);
        }
        Micros sleep = backoff.Next();
        if (got->row && HeldNow(*got->row)) {
            // No point sleeping past the holder's lease (database clock).
            sleep = std::min(sleep, Micros(got->row->lease_until_us - got->row->db_now_us) + milliseconds(1));
        }
        sleep = std::min(sleep, std::chrono::duration_cast<Micros>(deadline - now));
        // A timer, not a sleep: the I/O thread serves other requests meanwhile.
        timer.expires_after(sleep);
        boost::system::error_code ec;
        co_await timer.async_wait(net::redirect_error(net::use_awaitable, ec));
    }
}

net::awaitable<Response> LockApi::Extend(Request& req, const Principal& who) {
    Response response = co_await ExtendOrRelease(req, who, true);
    co_return response;
}

net::awaitable<Response> LockApi::Release(Request& req, const Principal& who) {
    Response response = co_await ExtendOrRelease(req, who, false);
    co_return response;
}

net::awaitable<Response> LockApi::ExtendOrRelease(Request& req, const Principal& who, bool extend) {
    const std::string key(req.PathParam("key"));
    if (auto bad = CheckKey(key)) co_return *bad;
    auto body = req.Json();
    if (!body.ok()) co_return Response::Error(body.status(), "body");
    std::optional<std::string> app;
    std::string owner;
    std::int64_t epoch = 0;
    std::int64_t lease_ms = 0;
    if (extend) {
        auto request = protocol::ParseLockExtendRequest(*body, LimitsOf(options_));
        if (!request.ok()) co_return Response::Error(*request.error);
        app = std::move(request.value.app);
        owner = std::move(request.value.owner);
        epoch = request.value.epoch;
        lease_ms = request.value.lease_ms;
    } else {
        auto request = protocol::ParseLockReleaseRequest(*body);
        if (!request.ok()) co_return Response::Error(*request.error);
        app = std::move(request.value.app);
        owner = std::move(request.value.owner);
        epoch = request.value.epoch;
    }
    std::optional<Response> error;
    const auto target = Resolve(who, app, key, error);
    if (!target) co_return *error;

    const std::string& row_name = target->row_name;
    auto work = [b = target->backend, key, name = target->name, row_name, owner, epoch, lease_ms,
                 extend]() -> Result<Change> {
        auto read = b.store->InspectLock(row_name);
        if (!read.ok()) return read.status();
        if (!*read) return NotFound("no lock '" + key + "' was ever acquired");
        Change c;
        c.row = std::move(*read);
        const lock::LockRow& row = *c.row;
        if (row.epoch != epoch) {
            c.field = "epoch";
            c.message = "lock '" + key + "': epoch " + std::to_string(epoch) + " is stale, the lock is at epoch " +
                        std::to_string(row.epoch) + " (released or taken over since); acquire it again";
            return c;
        }
        if (row.owner != owner) {
            c.field = "owner";
            c.message = "lock '" + key + "' epoch " + std::to_string(epoch) + " is not held by owner \"" + owner + "\"";
            return c;
        }
        if (extend && !HeldNow(row)) {
            c.field = "epoch";
            c.message = "lock '" + key + "' epoch " + std::to_string(epoch) + " expired " +
                        std::to_string((row.db_now_us - row.lease_until_us) / 1000) +
                        " ms ago (database clock); acquire it again";
            return c;
        }
        lock::LockHandle handle{name, owner, epoch, row.id, {}};
        const Status s = extend ? b.locks->Extend(handle, milliseconds(lease_ms)) : b.locks->Unlock(handle);
        if (lock::IsLeaseLost(s)) {
            // Lost between the read and the write: report the row as it is now.
            auto now = b.store->InspectLock(row_name);
            if (now.ok() && *now) c.row = std::move(*now);
            c.field = "epoch";
            c.message = "lock '" + key + "' epoch " + std::to_string(epoch) + ": " + s.message();
            return c;
        }
        if (!s.ok()) return s;
        if (!extend) {
            // The epoch the lock has now: every fenced backend moves it on by one on release
            // (docs/locks.md). Unknown if this read fails (and on Redlock, which has none).
            auto after = b.store->InspectLock(row_name);
            c.row = after.ok() ? *after : std::nullopt;
        }
        c.done = true;
        return c;
    };
    auto changed = co_await OnPool(db_pool_, work);
    if (!changed.ok()) {
        std::string field;
        if (changed.status().code() == Code::kNotFound) field = "key";
        co_return Response::Error(changed.status(), field);
    }
    if (!changed->done) co_return Conflict(key, app, changed->field, changed->message, changed->row);
    if (!extend) {
        const protocol::LockReleased released{
            .key = key, .app = app, .epoch = changed->row ? std::optional(changed->row->epoch) : std::nullopt};
        co_return Response::Json(protocol::ToJson(released));
    }
    // The extend's statement set lease_until = its NOW + lease, and its NOW is not earlier than
    // the read's: the lease lasts at least until this instant.
    const protocol::LockHolding extended{.key = key,
                                         .app = app,
                                         .owner = owner,
                                         .epoch = epoch,
                                         .lease_ms = lease_ms,
                                         .waited_ms = std::nullopt,
                                         .lease_until_ms = changed->row->db_now_us / 1000 + lease_ms};
    co_return Response::Json(protocol::ToJson(extended));
}

net::awaitable<Response> LockApi::Inspect(Request& req, const Principal& who) {
    const std::string key(req.PathParam("key"));
    if (auto bad = CheckKey(key)) co_return *bad;
    std::optional<std::string> app;
    if (auto given = req.Query("app"); given && !given->empty()) app = *given;
    std::optional<Response> error;
    const auto target = Resolve(who, app, key, error);
    if (!target) co_return *error;
    const std::string& row_name = target->row_name;
    auto work = [b = target->backend, row_name] {
        return b.store->InspectLock(row_name);
    };
    auto row = co_await OnPool(db_pool_, work);
    if (!row.ok()) co_return Response::Error(row.status());
    if (!*row) {
        co_return Response::Error(http::ApiError{Code::kNotFound, "no lock '" + key + "' was ever acquired", "key"});
    }
    co_return Response::Json(StateJson(key, app, **row));
}

}  // namespace impl

}  // namespace sched::web
