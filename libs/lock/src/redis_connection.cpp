#include "impl/redis_connection.hpp"

#include <hiredis.h>
#include <sys/time.h>

#include <algorithm>
#include <cerrno>

#include <spdlog/spdlog.h>

namespace sched::lock::impl {

namespace {

using Steady = std::chrono::steady_clock;

constexpr auto kFirstReconnectDelay = std::chrono::milliseconds(50);
constexpr auto kMaxReconnectDelay = std::chrono::seconds(1);

timeval ToTimeval(Micros d) {
    const long long us = std::max<long long>(d.count(), 1000);
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(us / 1000000);
    tv.tv_usec = static_cast<suseconds_t>(us % 1000000);
    return tv;
}

RedisReply Convert(const redisReply& r) {
    RedisReply out;
    switch (r.type) {
        case REDIS_REPLY_INTEGER:
            out.type = RedisReply::Type::kInteger;
            out.integer = r.integer;
            break;
        case REDIS_REPLY_STRING:
            out.type = RedisReply::Type::kString;
            out.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_STATUS:
            out.type = RedisReply::Type::kStatus;
            out.str.assign(r.str, r.len);
            break;
        case REDIS_REPLY_ARRAY:
            out.type = RedisReply::Type::kArray;
            out.elements.reserve(r.elements);
            for (std::size_t i = 0; i < r.elements; ++i) out.elements.push_back(Convert(*r.element[i]));
            break;
        default:
            out.type = RedisReply::Type::kNil;
            break;
    }
    return out;
}

bool StartsWith(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// An error reply: the server is up and the connection is in a known state.
Status FromErrorReply(const std::string& where, std::string_view message) {
    const std::string m = where + ": " + std::string(message);
    // Transient server states: retry later.
    for (std::string_view p : {"LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "READONLY"}) {
        if (StartsWith(message, p)) return Unavailable(m);
    }
    if (StartsWith(message, "NOAUTH") || StartsWith(message, "WRONGPASS") ||
        StartsWith(message, "ERR invalid password") || StartsWith(message, "ERR AUTH") ||
        StartsWith(message, "ERR Client sent AUTH")) {
        return {Code::kUnauthenticated, m};
    }
    return Internal(m);
}

}  // namespace

RedisConnection::RedisConnection(RedisServerAddress address, RedisOptions options)
    : address_(std::move(address)), options_(std::move(options)) {}

RedisConnection::~RedisConnection() {
    std::lock_guard lock(mu_);
    DropLocked();
}

std::uint64_t RedisConnection::commands() const {
    std::lock_guard lock(mu_);
    return commands_;
}

void RedisConnection::DropLocked() {
    if (ctx_ != nullptr) redisFree(ctx_);
    ctx_ = nullptr;
    sha_.clear();
}

Status RedisConnection::ConnectLocked() {
    const auto now = Steady::now();
    if (now < next_connect_) {
        return Unavailable(
            "redis " + address_.ToString() + ": down (" + last_connect_error_.message() +
            "), next connect attempt in " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(next_connect_ - now).count()) + " ms");
    }
    Status s = [&]() -> Status {
        ctx_ = redisConnectWithTimeout(address_.host.c_str(), address_.port, ToTimeval(options_.connect_timeout));
        if (ctx_ == nullptr) return Unavailable("redis " + address_.ToString() + ": cannot allocate a connection");
        if (ctx_->err != 0) {
            const bool timed_out = ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EINPROGRESS);
            std::string m = "redis " + address_.ToString() + ": connect: " + ctx_->errstr;
            return timed_out ? DeadlineExceeded(m) : Unavailable(m);
        }
        redisSetTimeout(ctx_, ToTimeval(options_.timeout));
        redisEnableKeepAlive(ctx_);
        if (!options_.password.empty()) {
            auto r = CommandLocked({"AUTH", options_.password});
            if (!r.ok()) return r.status();
        }
        if (options_.db != 0) {
            auto r = CommandLocked({"SELECT", std::to_string(options_.db)});
            if (!r.ok()) return r.status();
        }
        return Status::Ok();
    }();
    if (!s.ok()) {
        DropLocked();
        ++connect_failures_;
        auto delay = kFirstReconnectDelay * (1 << std::min(connect_failures_ - 1, 5));
        next_connect_ = Steady::now() + std::min<Micros>(delay, kMaxReconnectDelay);
        if (connect_failures_ == 1) spdlog::warn("{}", s.message());
        last_connect_error_ = s;
        return s;
    }
    if (connect_failures_ > 0) spdlog::info("redis {}: connected again", address_.ToString());
    connect_failures_ = 0;
    next_connect_ = {};
    return Status::Ok();
}

Result<RedisReply> RedisConnection::CommandLocked(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> argvlen;
    argv.reserve(args.size());
    argvlen.reserve(args.size());
    for (const auto& a : args) {
        argv.push_back(a.data());
        argvlen.push_back(a.size());
    }
    ++commands_;
    auto* reply =
        static_cast<redisReply*>(redisCommandArgv(ctx_, static_cast<int>(args.size()), argv.data(), argvlen.data()));
    if (reply == nullptr) {
        // The exchange broke half-way (or timed out): the stream is out of step, so the
        // connection is dropped and the next command reconnects. Whether the command ran is
        // unknown; the scripts are written so that a retry is harmless.
        const bool timed_out = ctx_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
        std::string m = "redis " + address_.ToString() + ": " + args[0] + ": " +
                        (timed_out ? std::string("no reply within ") + FormatDuration(options_.timeout)
                                   : std::string(ctx_->errstr[0] != '\0' ? ctx_->errstr : "connection lost"));
        DropLocked();
        return timed_out ? Result<RedisReply>(DeadlineExceeded(m)) : Result<RedisReply>(Unavailable(m));
    }
    Result<RedisReply> out = reply->type == REDIS_REPLY_ERROR
                                 ? Result<RedisReply>(FromErrorReply("redis " + address_.ToString() + ": " + args[0],
                                                                     std::string_view(reply->str, reply->len)))
                                 : Result<RedisReply>(Convert(*reply));
    freeReplyObject(reply);
    return out;
}

Result<RedisReply> RedisConnection::Command(const std::vector<std::string>& args) {
    std::lock_guard lock(mu_);
    if (ctx_ == nullptr) {
        if (Status s = ConnectLocked(); !s.ok()) return s;
    }
    return CommandLocked(args);
}

Result<RedisReply> RedisConnection::Eval(const RedisScript& script, const std::vector<std::string>& keys,
                                         const std::vector<std::string>& args) {
    std::lock_guard lock(mu_);
    for (int attempt = 0; attempt < 2; ++attempt) {
        if (ctx_ == nullptr) {
            if (Status s = ConnectLocked(); !s.ok()) return s;
        }
        auto sha = sha_.find(script.name);
        if (sha == sha_.end()) {
            auto loaded = CommandLocked({"SCRIPT", "LOAD", script.body});
            if (!loaded.ok()) return loaded.status();
            if (loaded->type != RedisReply::Type::kString) {
                return Internal("redis " + address_.ToString() + ": SCRIPT LOAD did not return a SHA1");
            }
            sha = sha_.emplace(script.name, loaded->str).first;
        }
        std::vector<std::string> cmd{"EVALSHA", sha->second, std::to_string(keys.size())};
        cmd.insert(cmd.end(), keys.begin(), keys.end());
        cmd.insert(cmd.end(), args.begin(), args.end());
        auto r = CommandLocked(cmd);
        if (!r.ok() && r.status().code() == Code::kInternal &&
            r.status().message().find("NOSCRIPT") != std::string::npos) {
            // The server lost its script cache (restart, SCRIPT FLUSH): load it again, once.
            sha_.erase(script.name);
            continue;
        }
        return r;
    }
    return Internal("redis " + address_.ToString() + ": script " + script.name + " keeps disappearing (NOSCRIPT)");
}

}  // namespace sched::lock::impl
