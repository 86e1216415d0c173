#pragma once

/// The one way to include Asio in this project (Beast: sched/common/beast.hpp, which includes this).
///
/// Boost 1.74 with g++ 12 needs <utility> before any Asio header; clang needs co_await support
/// switched on explicitly. Boost 1.74 has no default completion tokens, no as_tuple and no
/// deferred: always pass `net::use_awaitable`.
///
/// Only the parts of Asio the project uses, not <boost/asio.hpp> (all of Asio), and no Beast:
/// this header reaches most heavy translation units (every coroutine handler), and each of those
/// parsed Beast and all of Asio for nothing. Add a header here when code needs another part.

#include <utility>

#if defined(__clang__) && !defined(BOOST_ASIO_HAS_CO_AWAIT)
#define BOOST_ASIO_HAS_CO_AWAIT 1
#endif

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/asio/write.hpp>

namespace sched {
namespace net = boost::asio;
using tcp = boost::asio::ip::tcp;
}  // namespace sched
