#include "sched/dispatch/executor_signer.hpp"

#include "sched/common/on_pool.hpp"
#include "sched/http/url.hpp"
#include "sched/protocol/request_signature.hpp"

namespace sched::dispatch {

namespace {

// The URL's host:port as written ("http://10.0.0.7:9999/v1/run" -> "10.0.0.7:9999"): the address
// the instance registered, byte for byte, which is what it compares with (not a normalised form).
std::string RawAuthority(std::string_view url) {
    if (const auto scheme = url.find("://"); scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
    return std::string(url.substr(0, url.find_first_of("/?")));
}

}  // namespace

ExecutorSigner::ExecutorSigner(db::DatabaseProvider database, net::thread_pool& db_pool,
                               std::function<std::int64_t()> now_ms, Micros refresh)
    : database_(std::move(database)),
      db_pool_(db_pool),
      now_ms_(std::move(now_ms)),
      cache_(std::make_shared<store::SigningKeyCache>(refresh)) {}

net::awaitable<Result<store::AppSigningKeys>> ExecutorSigner::Keys(std::string app) {
    if (auto fresh = cache_->Fresh(app)) co_return *fresh;
    // A named callable, not a temporary inside the co_await (g++ 12, docs/architecture/build.md).
    auto work = [db = database_(), cache = cache_, app]() -> Result<store::AppSigningKeys> {
        if (!db) return Unavailable("the database is not open yet");
        return cache->Get(*db, app);
    };
    auto read = co_await OnPool(db_pool_, std::move(work));
    co_return read;
}

net::awaitable<Result<http::ClientResponse>> ExecutorSigner::Send(http::HttpClient& http, std::string app,
                                                                  http::Method method, std::string url,
                                                                  std::string body, http::CallOptions call) {
    auto parsed = http::Url::Parse(url);
    if (!parsed.ok()) co_return parsed.status();
    auto keys = co_await Keys(app);
    if (!keys.ok()) {
        co_return Status(Code::kUnavailable, "no signing key for app " + app + ": " + keys.status().message());
    }
    const std::int64_t now = now_ms_ ? now_ms_() : cache_->DbNowMs();
    const store::SigningKey* key = keys->SigningAt(now);
    if (key == nullptr) co_return Status(Code::kUnavailable, "app " + app + " has no active signing key yet");
    // Addressed to the instance the URL names, under the signature: the call is worth nothing at
    // any other instance of the app (docs/protocol.md "Replays").
    const std::string target = protocol::AddressedTarget(parsed->target, RawAuthority(url));
    http::ClientRequest request;
    request.method = method;
    // The scheme is the client's (http-client.tls.peer-scheme): executors are known by host:port.
    request.url = http.PeerUrl(parsed->Authority(), target);
    const protocol::SigningKey signing{key->key_id, key->secret};
    for (auto& [name, value] : protocol::SignatureHeaders(signing, http::MethodName(method), target, now, body)) {
        request.headers.Set(name, std::move(value));
    }
    if (!body.empty()) request.headers.Set("Content-Type", "application/json");
    request.body = std::move(body);
    // Never a bearer token towards an executor: the signature is the only credential.
    call.bearer_token.clear();
    auto response = co_await http.Send(std::move(request), call);
    co_return response;
}

}  // namespace sched::dispatch
