#pragma once

/// A stand-in for the web module in tests (target sched::client_testing, tests only): a real
/// HTTP server on 127.0.0.1 that records what executors send to the registry and callback
/// endpoints, checking the bearer token like the real one, and answers heartbeats with signing
/// keys and its clock like the real one (docs/protocol.md "Key delivery").

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sched/http/client.hpp"
#include "sched/http/testing/test_server.hpp"
#include "sched/protocol/request_signature.hpp"

namespace sched::client::testing {

/// The key FakeWeb hands out unless told otherwise.
protocol::SigningKey TestSigningKey();

/// Epoch milliseconds of this host's wall clock.
std::int64_t WallMs();

/// A request signed as a node signs it: `key`, the timestamp (default: now), the target taken
/// from `url`.
http::ClientRequest SignedRequest(const protocol::SigningKey& key, http::Method method, const std::string& url,
                                  std::string body = "", std::optional<std::int64_t> timestamp_ms = std::nullopt);

class FakeWeb {
  public:
    /// Listens on 127.0.0.1:`port` (0 = any free port).
    explicit FakeWeb(std::string token, std::uint16_t port = 0);
    ~FakeWeb();

    std::uint16_t port() const { return port_; }
    /// "http://127.0.0.1:<port>"
    std::string Url() const;
    /// Stops serving (the port is then refused, like a web module that is down). Idempotent.
    void Stop();

    std::vector<nlohmann::json> Heartbeats() const;
    std::vector<nlohmann::json> Deregistrations() const;
    /// Every result received, flattened from the batches, in arrival order.
    std::vector<nlohmann::json> Results() const;
    /// The results for one fire.
    std::vector<nlohmann::json> ResultsFor(std::int64_t fire_id) const;
    std::size_t CallbackRequests() const;

    /// The keys the next heartbeat answers carry (default {TestSigningKey()}).
    void SetSigningKeys(std::vector<protocol::SigningKey> keys);
    /// The clock the heartbeat answers report: this host's plus `offset_ms` (a skewed cluster).
    void SetClockOffset(std::int64_t offset_ms);
    /// The capabilities the heartbeat answers advertise (default none: an older web module).
    /// Without result-traceparent, a callback whose result carries `traceparent` is refused
    /// 400 naming it, as a web module before the field refuses an unknown field.
    void SetCapabilities(std::vector<std::string> capabilities);

  private:
    mutable std::mutex mu_;
    std::vector<nlohmann::json> heartbeats_;
    std::vector<nlohmann::json> deregistrations_;
    std::vector<nlohmann::json> results_;
    std::size_t callback_requests_ = 0;
    std::vector<protocol::SigningKey> signing_keys_{TestSigningKey()};
    std::int64_t clock_offset_ms_ = 0;
    std::vector<std::string> capabilities_;
    std::uint16_t port_ = 0;
    std::unique_ptr<http::testing::TestServer> server_;
};

}  // namespace sched::client::testing
