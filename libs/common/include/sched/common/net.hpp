#pragma once

/// The one way to include Asio and Beast in this project.
///
/// Boost 1.74 with g++ 12 needs <utility> before any Asio header; clang needs co_await support
/// switched on explicitly. Boost 1.74 has no default completion tokens, no as_tuple and no
/// deferred: always pass `net::use_awaitable` (STYLE "Async").

#include <utility>

#if defined(__clang__) && !defined(BOOST_ASIO_HAS_CO_AWAIT)
#define BOOST_ASIO_HAS_CO_AWAIT 1
#endif

#include <boost/asio.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace sched {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
}  // namespace sched
