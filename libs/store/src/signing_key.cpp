#include "sched/store/signing_key.hpp"

#include "impl/query.hpp"
#include "sched/common/crypto.hpp"

namespace sched::store {

namespace {

constexpr std::size_t kSecretBytes = 32;  // 256 bits
constexpr std::size_t kKeyIdBytes = 8;

// A key and the DB clock, read by the same statement.
struct KeyRow {
    SigningKey k;
    std::int64_t db_now_ms = 0;
    std::pair<SigningKey, std::int64_t> Finish() { return {k, db_now_ms}; }
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, k.app, k.generation, k.key_id, k.secret, k.active_from_ms, k.created_at_ms, db_now_ms);
    }
};

std::int64_t DbNowMs(soci::session& s, const db::Dialect& dialect) {
    std::int64_t now = 0;
    s << "SELECT " + std::string(dialect.NowMs()), soci::into(now);
    return now;
}

// Inserts generation `generation` of `app`, active from DB now + `delay_ms`. Returns the rows
// inserted: 0 when that generation exists already (a concurrent creator or rotator won).
long long InsertKey(soci::session& s, const db::Dialect& dialect, const std::string& app, std::int64_t generation,
                    std::int64_t delay_ms) {
    const std::string key_id = "k-" + crypto::RandomHex(kKeyIdBytes);
    const std::string secret = crypto::RandomHex(kSecretBytes);
    const std::string now(dialect.NowMs());
    soci::statement st =
        (s.prepare << dialect.InsertIfAbsent(
             "signing_key (app, generation, key_id, secret, active_from_ms, created_at_ms) VALUES (:app, :gen, :kid, "
             ":secret, " +
             now + " + :delay, " + now + ")"),
         soci::use(app, "app"), soci::use(generation, "gen"), soci::use(key_id, "kid"), soci::use(secret, "secret"),
         soci::use(delay_ms, "delay"));
    return db::ExecuteInsertIfAbsent(st);
}

}  // namespace

const SigningKey* AppSigningKeys::SigningAt(std::int64_t now_ms) const {
    for (const auto& k : keys) {
        if (k.active_from_ms <= now_ms) return &k;
    }
    return nullptr;
}

AppSigningKeys ReadAppKeys(soci::session& s, const db::Dialect& dialect, const std::string& app) {
    // The clock rides on the keys' own SELECT: every heartbeat and every node's cache refresh
    // reads both, and an app without keys (read once, before its first key) costs one more.
    const auto rows = impl::SelectRows<KeyRow>(
        s,
        "SELECT app, generation, key_id, secret, active_from_ms, created_at_ms, " + std::string(dialect.NowMs()) +
            " FROM signing_key WHERE app = :app ORDER BY generation DESC",
        [&](soci::statement& st) { st.exchange(soci::use(app, "app")); });
    AppSigningKeys out;
    for (const auto& [key, now] : rows) {
        out.keys.push_back(key);
        out.db_now_ms = now;
    }
    if (rows.empty()) out.db_now_ms = DbNowMs(s, dialect);
    return out;
}

Result<AppSigningKeys> SigningKeyRepository::List(const std::string& app) {
    return db_.Run([&](soci::session& s) { return ReadAppKeys(s, db_.dialect(), app); });
}

Result<AppSigningKeys> SigningKeyRepository::EnsureForApp(const std::string& app) {
    auto listed = List(app);
    if (!listed.ok() || !listed->keys.empty()) return listed;
    auto created = db_.Run([&](soci::session& s) { return InsertKey(s, db_.dialect(), app, 1, 0); });
    if (!created.ok()) return created.status();
    // Whoever won the insert, the row is there now.
    return List(app);
}

Result<AppSigningKeys> SigningKeyRepository::Rotate(const std::string& app, std::int64_t grace_ms,
                                                    std::int64_t settle_ms) {
    auto rotated = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<bool> {
        const AppSigningKeys read = ReadAppKeys(s, db_.dialect(), app);
        const auto& keys = read.keys;
        const std::int64_t now = read.db_now_ms;
        if (keys.empty()) {
            return NotFound("app " + app + " has no signing key: no executor of it has registered yet");
        }
        if (keys.front().active_from_ms > now) {
            return FailedPrecondition("the previous rotation of app " + app + " is still in its grace: key " +
                                      keys.front().key_id + " becomes the signing key in " +
                                      std::to_string(keys.front().active_from_ms - now) + " ms");
        }
        if (keys.size() > 1 && now - keys.front().active_from_ms < settle_ms) {
            return FailedPrecondition("key " + keys.front().key_id + " of app " + app + " has signed for only " +
                                      std::to_string(now - keys.front().active_from_ms) +
                                      " ms: nodes may still cache the key a rotation would remove; retry in " +
                                      std::to_string(settle_ms - (now - keys.front().active_from_ms)) + " ms");
        }
        // Keep the signing key (the newest, active), drop the one before it: at most two remain.
        const std::int64_t current = keys.front().generation;
        s << "DELETE FROM signing_key WHERE app = :app AND generation < :gen", soci::use(app, "app"),
            soci::use(current, "gen");
        return InsertKey(s, db_.dialect(), app, current + 1, grace_ms) == 1;
    });
    if (!rotated.ok()) return rotated.status();
    if (!*rotated) return Aborted("a concurrent rotation of app " + app + " won; list the keys again");
    return List(app);
}

std::optional<AppSigningKeys> SigningKeyCache::Fresh(const std::string& app) const {
    std::lock_guard lock(mu_);
    const auto it = entries_.find(app);
    if (it == entries_.end() || std::chrono::steady_clock::now() - it->second.read_at >= max_age_) return std::nullopt;
    return it->second.keys;
}

Result<AppSigningKeys> SigningKeyCache::Get(db::Database& db, const std::string& app) {
    if (auto fresh = Fresh(app)) return *fresh;
    const auto wall_ms = [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
    };
    const std::int64_t before = wall_ms();
    auto read = SigningKeyRepository(db).EnsureForApp(app);
    const std::int64_t after = wall_ms();
    std::lock_guard lock(mu_);
    if (!read.ok()) {
        const auto it = entries_.find(app);
        if (it != entries_.end()) return it->second.keys;
        return read.status();
    }
    // The DB clock was read somewhere inside [before, after]: its midpoint is the best guess.
    offset_ms_ = read->db_now_ms - (before + after) / 2;
    entries_[app] = Entry{*read, std::chrono::steady_clock::now()};
    return *read;
}

std::int64_t SigningKeyCache::DbNowMs() const {
    const std::int64_t wall =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    std::lock_guard lock(mu_);
    return wall + offset_ms_;
}

}  // namespace sched::store
