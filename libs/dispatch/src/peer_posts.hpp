#pragma once

// What the node-to-node notices of this library (MasterWaker, RunEndsForwarder) share: one POST
// to another node with its answer judged and logged alike, and a round of such POSTs sent at
// once and awaited together.
//
//     RoundPosts round(strand);
//     for (const auto& peer : peers) round.Spawn(PostOne(st, peer));  // each calls PostToPeer
//     co_await round.Wait();

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "sched/common/net.hpp"
#include "sched/common/status.hpp"
#include "sched/http/client.hpp"

namespace sched::dispatch::impl {

/// POSTs `body` to the node at `address` (`path`; `call` carries the cluster token and the
/// timeout). On a 2xx, the answer's JSON object (an empty one when the body is not an object);
/// otherwise the reason, logged at debug (401 and 403, a refused token, at warn) after `what`
/// ("master wake: ..."). A node older than the route answers 404: a failure like another, which
/// the notices tolerate. Never throws.
net::awaitable<Result<nlohmann::json>> PostToPeer(http::HttpClient& http, std::string_view what,
                                                  const std::string& node_id, const std::string& address,
                                                  std::string_view path, nlohmann::json body,
                                                  const http::CallOptions& call);

/// The POSTs of one round, run on `strand` (one step at a time with the rest of the round).
class RoundPosts {
  public:
    explicit RoundPosts(const net::strand<net::any_io_executor>& strand);

    /// Starts `post` on the strand; an exception out of it is logged, not thrown.
    void Spawn(net::awaitable<void> post);
    /// Returns once every spawned POST has ended (at once when none was).
    net::awaitable<void> Wait();

  private:
    struct Shared;
    std::shared_ptr<Shared> shared_;
};

}  // namespace sched::dispatch::impl
