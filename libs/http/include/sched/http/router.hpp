#pragma once

/// Routing by method and path, with path parameters.
///
///     Router router;
///     router.Add(Method::kGet, "/healthz", [](Request&) { return Response::Text("ok\n"); }, Access::kPublic);
///     router.Add(Method::kGet, "/api/v1/jobs/{id}", [&](Request& req) -> net::awaitable<Response> {
///         auto job = co_await jobs.Get(req.PathParam("id"));   // may suspend
///         ...
///     });
///
/// A path that matches no route gets 404; a path that matches only routes of other methods gets
/// 405 with an `Allow` header. HEAD is served by the GET route (the body is dropped).

#include <functional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "sched/common/net.hpp"
#include "sched/http/message.hpp"

namespace sched::http {

/// Whether a route runs the server's auth hook first.
enum class Access { kAuthenticated, kPublic };

/// A route's handler: a coroutine run on the connection's strand. It may co_await other work
/// (e.g. DB calls on a dedicated pool) and must not block the thread. It may move the body out
/// of the request. An exception it throws becomes a 500 with a generic message (and is logged).
using Handler = std::function<net::awaitable<Response>(Request&)>;

/// Routes, added at start-up and read-only afterwards. Not thread-safe while adding; Find is
/// safe from any thread once adding is over.
class Router {
  public:
    /// Adds a route. `fn` is either a coroutine `net::awaitable<Response>(Request&)` or a plain
    /// function `Response(Request&)` (for handlers that never wait). It is stored and must stay
    /// valid for the server's life.
    ///
    /// Pattern segments: literals, `{name}` (exactly one non-empty segment) and, as the last
    /// segment only, `{name...}` (the rest of the path, one or more segments, '/' kept). Literal
    /// segments win over parameters, which win over a rest parameter.
    ///
    /// Throws std::invalid_argument for a malformed pattern or one that duplicates an earlier
    /// route for the same method.
    template <typename Fn>
    Router& Add(Method method, std::string_view pattern, Fn&& fn, Access access = Access::kAuthenticated) {
        if constexpr (std::is_invocable_r_v<net::awaitable<Response>, Fn&, Request&>) {
            return AddHandler(method, pattern, Handler(std::forward<Fn>(fn)), access);
        } else {
            static_assert(std::is_invocable_r_v<Response, Fn&, Request&>,
                          "a handler takes Request& and returns Response or net::awaitable<Response>");
            return AddHandler(
                method, pattern,
                [f = std::forward<Fn>(fn)](Request& req) mutable -> net::awaitable<Response> { co_return f(req); },
                access);
        }
    }

    /// A route as added: its method and pattern ("/api/v1/jobs/{id}"), e.g. a metric's labels.
    struct RouteInfo {
        Method method;
        std::string_view pattern;
    };
    /// Every route in the order added; a Match's `route` indexes it. Valid while the Router lives.
    std::vector<RouteInfo> Routes() const;

    /// The outcome of routing one request.
    struct Match {
        const Handler* handler = nullptr;  ///< null when no route serves this method and path
        std::size_t route = 0;             ///< the index in Routes() of the route found (with handler)
        Access access = Access::kAuthenticated;
        std::vector<std::pair<std::string, std::string>> params;  ///< percent-decoded
        std::string allow;  ///< when only the method is wrong: the Allow header ("GET, HEAD, POST")
    };

    /// Finds the most specific route for `method` and the raw (not decoded) `path`.
    Match Find(Method method, std::string_view path) const;

  private:
    struct Segment {
        enum class Kind { kLiteral, kParam, kRest };
        Kind kind;
        std::string text;  // the literal, or the parameter's name
    };
    struct Route {
        Method method;
        std::string pattern;
        std::vector<Segment> segments;
        Handler handler;
        Access access;
    };

    Router& AddHandler(Method method, std::string_view pattern, Handler handler, Access access);
    static bool Matches(const Route& route, const std::vector<std::string_view>& parts,
                        std::vector<std::pair<std::string, std::string>>* params);
    static bool MoreSpecific(const Route& a, const Route& b);

    std::vector<Route> routes_;
};

}  // namespace sched::http
