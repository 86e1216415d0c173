#pragma once

/// The one way to include Beast in this project: net.hpp (Asio) plus Beast's core and HTTP, with
/// the `beast` and `bhttp` aliases.
///
/// Beast is slow to compile, so only the code that speaks HTTP on the wire includes this:
/// libs/http's server.cpp and client.cpp, and tests that drive a server with raw Beast requests.
/// Handler code sees plain structs (sched/http/message.hpp) and sched/http/router.hpp, which
/// need only net.hpp.

#include "sched/common/net.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace sched {
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
}  // namespace sched
