#include "sched/db/db_url.hpp"

#include <cctype>
#include <charconv>

#include "sched/common/config.hpp"
#include "sched/common/percent_encode.hpp"

namespace sched::db {

namespace {

// '+' is itself in a user or password: only %XX escapes are decoded.
Result<std::string> DecodePart(std::string_view s, std::string_view what) {
    auto decoded = PercentDecode(s, false);
    if (!decoded) return InvalidArgument("database url: bad percent-escape in " + std::string(what));
    return *decoded;
}

Status ApplyOption(DbUrl& url, std::string_view key, std::string_view value) {
    const auto bad = [&](const std::string& why) {
        return InvalidArgument("database url: option " + std::string(key) + ": " + why);
    };
    const auto duration = [&](Micros& out) -> Status {
        auto d = ParseDuration(value);
        if (!d.ok()) return bad(d.status().message());
        out = *d;
        return Status::Ok();
    };
    if (key == "pool") {
        int v = 0;
        auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || p != value.data() + value.size() || v < 1 || v > 256) {
            return bad("expected an integer in 1..256, got \"" + std::string(value) + "\"");
        }
        url.pool = v;
        return Status::Ok();
    }
    if (key == "acquire-timeout") return duration(url.acquire_timeout);
    if (key == "connect-timeout") return duration(url.connect_timeout);
    if (key == "read-timeout") return duration(url.read_timeout);
    if (key == "write-timeout") return duration(url.write_timeout);
    if (key == "lock-wait-timeout") return duration(url.lock_wait_timeout);
    if (key == "statement-timeout") return duration(url.statement_timeout);
    if (key == "busy-timeout") return duration(url.busy_timeout);
    return InvalidArgument("database url: unknown option \"" + std::string(key) + "\"");
}

}  // namespace

std::string_view BackendName(Backend b) {
    return b == Backend::kMySql ? "mysql" : "sqlite";
}

Result<DbUrl> ParseDbUrl(std::string_view text) {
    DbUrl url;
    std::string_view rest;
    if (text.starts_with("mysql://")) {
        url.backend = Backend::kMySql;
        rest = text.substr(8);
    } else if (text.starts_with("sqlite://")) {
        url.backend = Backend::kSqlite;
        rest = text.substr(9);
    } else {
        return InvalidArgument("database url: expected mysql://user@host:port/db or sqlite:///path/file.db, got \"" +
                               std::string(text) + "\"");
    }

    std::string_view query;
    if (auto q = rest.find('?'); q != std::string_view::npos) {
        query = rest.substr(q + 1);
        rest = rest.substr(0, q);
    }

    if (url.backend == Backend::kSqlite) {
        if (rest.empty()) return InvalidArgument("database url: sqlite needs a file path (sqlite:///path/file.db)");
        auto path = DecodePart(rest, "path");
        if (!path.ok()) return path.status();
        url.path = *path;
    } else {
        const auto at = rest.rfind('@');
        if (at == std::string_view::npos) return InvalidArgument("database url: mysql needs user@host");
        std::string_view userinfo = rest.substr(0, at);
        std::string_view hostpart = rest.substr(at + 1);
        if (auto colon = userinfo.find(':'); colon != std::string_view::npos) {
            auto pw = DecodePart(userinfo.substr(colon + 1), "password");
            if (!pw.ok()) return pw.status();
            url.password = *pw;
            userinfo = userinfo.substr(0, colon);
        }
        auto user = DecodePart(userinfo, "user");
        if (!user.ok()) return user.status();
        url.user = *user;
        if (url.user.empty()) return InvalidArgument("database url: mysql user is empty");

        const auto slash = hostpart.find('/');
        if (slash == std::string_view::npos || slash + 1 >= hostpart.size()) {
            return InvalidArgument("database url: mysql needs a database name (mysql://user@host:3306/db)");
        }
        url.database = std::string(hostpart.substr(slash + 1));
        for (char c : url.database) {
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
                return InvalidArgument("database url: database name \"" + url.database +
                                       "\" may hold only letters, digits, _ and -");
            }
        }
        std::string_view hostport = hostpart.substr(0, slash);
        if (auto colon = hostport.rfind(':'); colon != std::string_view::npos) {
            std::string_view port = hostport.substr(colon + 1);
            int v = 0;
            auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
            if (ec != std::errc() || p != port.data() + port.size() || v < 1 || v > 65535) {
                return InvalidArgument("database url: port must be 1..65535, got \"" + std::string(port) + "\"");
            }
            url.port = v;
            hostport = hostport.substr(0, colon);
        }
        if (hostport.empty()) return InvalidArgument("database url: mysql host is empty");
        url.host = std::string(hostport);
    }

    while (!query.empty()) {
        const auto amp = query.find('&');
        std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (pair.empty()) continue;
        const auto eq = pair.find('=');
        if (eq == std::string_view::npos) {
            return InvalidArgument("database url: option \"" + std::string(pair) + "\" needs a value (key=value)");
        }
        if (auto s = ApplyOption(url, pair.substr(0, eq), pair.substr(eq + 1)); !s.ok()) return s;
    }
    return url;
}

std::string DbUrl::Redacted() const {
    if (backend == Backend::kSqlite) return "sqlite://" + path;
    std::string out = "mysql://" + user;
    if (!password.empty()) out += ":***";
    out += "@" + host + ":" + std::to_string(port) + "/" + database;
    return out;
}

std::string DbUrl::ToString() const {
    std::string out;
    if (backend == Backend::kSqlite) {
        out = "sqlite://" + PercentEncode(path);
        // Keep the slashes readable: they are legal in the path part.
        std::string readable;
        for (std::size_t i = 0; i < out.size(); ++i) {
            if (out.compare(i, 3, "%2F") == 0) {
                readable += '/';
                i += 2;
            } else {
                readable += out[i];
            }
        }
        out = readable;
    } else {
        out = "mysql://" + PercentEncode(user);
        if (!password.empty()) out += ":" + PercentEncode(password);
        out += "@" + host + ":" + std::to_string(port) + "/" + database;
    }
    const DbUrl defaults;
    std::string query;
    const auto add = [&](const char* key, const std::string& value) {
        query += (query.empty() ? "?" : "&") + std::string(key) + "=" + value;
    };
    if (pool != defaults.pool) add("pool", std::to_string(pool));
    if (acquire_timeout != defaults.acquire_timeout) add("acquire-timeout", FormatDuration(acquire_timeout));
    if (connect_timeout != defaults.connect_timeout) add("connect-timeout", FormatDuration(connect_timeout));
    if (read_timeout != defaults.read_timeout) add("read-timeout", FormatDuration(read_timeout));
    if (write_timeout != defaults.write_timeout) add("write-timeout", FormatDuration(write_timeout));
    if (lock_wait_timeout != defaults.lock_wait_timeout) add("lock-wait-timeout", FormatDuration(lock_wait_timeout));
    if (statement_timeout != defaults.statement_timeout) add("statement-timeout", FormatDuration(statement_timeout));
    if (busy_timeout != defaults.busy_timeout) add("busy-timeout", FormatDuration(busy_timeout));
    return out + query;
}

void ApplyPasswordFromEnv(DbUrl& url) {
    if (auto pw = EnvOverride("SCHED_DB_PASSWORD")) url.password = *pw;
}

}  // namespace sched::db
