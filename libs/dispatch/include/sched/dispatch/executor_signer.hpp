#pragma once

/// The one way nodes call an executor's `/v1/*` API (run, kill, beat, idle-beat, log): every
/// call is signed with the app's current signing key (sched/protocol/request_signature.hpp,
/// docs/protocol.md "Security") and carries no bearer token, so an executor - or anyone who
/// registers an address - receives nothing that opens the cluster's own APIs. Every call is
/// also addressed to the instance its URL names (`instance=<host:port>` appended to the target,
/// under the signature: protocol::AddressedTarget), so a captured call opens no other instance of
/// the app either.
///
/// Keys come from a SigningKeyCache (read through at most every `refresh` per app, on the DB
/// pool; a cached app costs no DB work and no thread hop). The timestamp is the DB clock:
/// `now_ms` when given (a trigger node's DbTime), else the cache's estimate.
///
/// Thread-safe; share one per process (or per module).

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/db/database.hpp"
#include "sched/http/client.hpp"
#include "sched/store/signing_key.hpp"

namespace sched::dispatch {

class ExecutorSigner {
  public:
    ExecutorSigner(db::DatabaseProvider database, net::thread_pool& db_pool, std::function<std::int64_t()> now_ms = {},
                   Micros refresh = std::chrono::seconds(5));

    /// Sends `method url` with `body` (JSON text, or "" for none) to an executor of `app`,
    /// signed. Errors: kUnavailable when the app's key cannot be read (database down and
    /// nothing cached), kInvalidArgument for a malformed url, else the client's transport errors.
    /// Every argument is taken by value (safe to pass named locals from a coroutine).
    net::awaitable<Result<http::ClientResponse>> Send(http::HttpClient& http, std::string app, http::Method method,
                                                      std::string url, std::string body, http::CallOptions call);

  private:
    net::awaitable<Result<store::AppSigningKeys>> Keys(std::string app);

    db::DatabaseProvider database_;
    net::thread_pool& db_pool_;
    std::function<std::int64_t()> now_ms_;
    std::shared_ptr<store::SigningKeyCache> cache_;
};

}  // namespace sched::dispatch
