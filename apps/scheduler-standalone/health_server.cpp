#include "health_server.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

namespace sched::standalone {

using namespace std::chrono_literals;

struct HealthServer::State : std::enable_shared_from_this<HealthServer::State> {
    State(net::io_context& io, const tcp::endpoint& ep, HealthHandlers h) : acceptor(io, ep), handlers(std::move(h)) {}

    tcp::acceptor acceptor;
    HealthHandlers handlers;

    http::response<http::string_body> Respond(const http::request<http::string_body>& req) {
        http::response<http::string_body> res;
        res.version(req.version());
        res.keep_alive(req.keep_alive());
        res.set(http::field::content_type, "text/plain; charset=utf-8");
        const auto target = std::string(req.target().substr(0, req.target().find('?')));
        if (target != "/healthz" && target != "/readyz" && target != "/metrics") {
            res.result(http::status::not_found);
            res.body() = "not found\n";
        } else if (req.method() != http::verb::get && req.method() != http::verb::head) {
            res.result(http::status::method_not_allowed);
            res.set(http::field::allow, "GET, HEAD");
            res.body() = "method not allowed\n";
        } else if (target == "/healthz") {
            res.result(http::status::ok);
            res.body() = "ok\n";
        } else if (target == "/readyz") {
            const bool ready = handlers.ready && handlers.ready();
            res.result(ready ? http::status::ok : http::status::service_unavailable);
            res.body() = ready ? "ready\n" : "not ready\n";
        } else {
            res.result(http::status::ok);
            res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
            res.body() = handlers.metrics ? handlers.metrics() : "";
        }
        res.prepare_payload();
        return res;
    }

    net::awaitable<void> Serve(tcp::socket socket) {
        beast::tcp_stream stream(std::move(socket));
        beast::flat_buffer buffer;
        try {
            for (;;) {
                // Bounds a slow or idle client: it holds a connection for at most this long.
                stream.expires_after(10s);
                http::request_parser<http::string_body> parser;
                parser.body_limit(64 * 1024);
                co_await http::async_read(stream, buffer, parser, net::use_awaitable);
                auto res = Respond(parser.get());
                stream.expires_after(10s);
                co_await http::async_write(stream, res, net::use_awaitable);
                if (!res.keep_alive() || !acceptor.is_open()) break;
            }
        } catch (const boost::system::system_error& e) {
            if (e.code() != http::error::end_of_stream && e.code() != beast::error::timeout &&
                e.code() != net::error::operation_aborted) {
                spdlog::debug("health connection ended: {}", e.code().message());
            }
        }
        beast::error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    }

    net::awaitable<void> Accept() {
        auto self = shared_from_this();
        while (acceptor.is_open()) {
            try {
                tcp::socket socket = co_await acceptor.async_accept(net::use_awaitable);
                net::co_spawn(acceptor.get_executor(), self->Serve(std::move(socket)), net::detached);
            } catch (const boost::system::system_error& e) {
                if (e.code() == net::error::operation_aborted) break;
                spdlog::warn("accept failed: {}", e.code().message());
            }
        }
    }
};

HealthServer::HealthServer(net::io_context& io, const tcp::endpoint& endpoint, HealthHandlers handlers)
    : state_(std::make_shared<State>(io, endpoint, std::move(handlers))) {}

HealthServer::~HealthServer() {
    Stop();
}

tcp::endpoint HealthServer::local_endpoint() const {
    return state_->acceptor.local_endpoint();
}

void HealthServer::Start() {
    net::co_spawn(state_->acceptor.get_executor(), state_->Accept(), net::detached);
}

void HealthServer::Stop() {
    net::post(state_->acceptor.get_executor(), [state = state_] {
        beast::error_code ignored;
        state->acceptor.close(ignored);
    });
}

}  // namespace sched::standalone
