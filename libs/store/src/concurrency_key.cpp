#include "sched/store/concurrency_key.hpp"

#include <algorithm>

#include "impl/query.hpp"

namespace sched::store {

namespace {

constexpr const char* kColumns = "name, max_running, rate_starts, rate_window_ms, created_at, updated_at";
constexpr std::size_t kMaxName = 64;

struct KeyRow {
    ConcurrencyKey k;
    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, k.name, k.max_running, k.rate_starts, k.rate_window_ms, k.created_at, k.updated_at);
    }
    ConcurrencyKey Finish() const { return k; }
};

struct NameRow {
    std::string name;
    void BindInto(soci::statement& st) { st.exchange(soci::into(name)); }
    std::string Finish() const { return name; }
};

std::optional<ConcurrencyKey> FindByName(soci::session& s, const std::string& name) {
    auto rows =
        impl::SelectRows<KeyRow>(s, std::string("SELECT ") + kColumns + " FROM concurrency_key WHERE name = :name",
                                 [&](soci::statement& st) { st.exchange(soci::use(name, "name")); });
    if (rows.empty()) return std::nullopt;
    return std::move(rows.front());
}

}  // namespace

bool ValidConcurrencyKeyName(std::string_view name) {
    if (name.empty() || name.size() > kMaxName) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
               c == '-';
    });
}

Result<ConcurrencyKey> ConcurrencyKeyRepository::Put(const ConcurrencyKey& key) {
    if (!ValidConcurrencyKeyName(key.name)) {
        return InvalidArgument("concurrency key name: 1 to 64 letters, digits, '.', '_' or '-'");
    }
    return db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<ConcurrencyKey> {
        const std::string now(db_.dialect().NowMs());
        soci::statement update =
            (s.prepare << "UPDATE concurrency_key SET max_running = :max_running, rate_starts = :rate_starts, "
                          "rate_window_ms = :rate_window_ms, updated_at = " +
                              now + " WHERE name = :name",
             soci::use(key.max_running, "max_running"), soci::use(key.rate_starts, "rate_starts"),
             soci::use(key.rate_window_ms, "rate_window_ms"), soci::use(key.name, "name"));
        if (impl::ExecuteAffected(update) == 0) {
            s << "INSERT INTO concurrency_key (name, max_running, rate_starts, rate_window_ms, created_at, "
                 "updated_at) VALUES (:name, :max_running, :rate_starts, :rate_window_ms, " +
                     now + ", " + now + ")",
                soci::use(key.name, "name"), soci::use(key.max_running, "max_running"),
                soci::use(key.rate_starts, "rate_starts"), soci::use(key.rate_window_ms, "rate_window_ms");
        }
        auto stored = FindByName(s, key.name);
        if (!stored) return Internal("concurrency key \"" + key.name + "\" not found after it was written");
        return *stored;
    });
}

Result<ConcurrencyKey> ConcurrencyKeyRepository::Get(const std::string& name) {
    return impl::GetByName(db_, "concurrency key \"" + name + "\"", name, FindByName);
}

Result<std::vector<ConcurrencyKey>> ConcurrencyKeyRepository::List(const std::string& after, int limit) {
    return db_.Run([&](soci::session& s) -> Result<std::vector<ConcurrencyKey>> {
        return impl::SelectRows<KeyRow>(s,
                                        std::string("SELECT ") + kColumns +
                                            " FROM concurrency_key WHERE name > :after ORDER BY name LIMIT " +
                                            std::to_string(std::clamp(limit, 1, 1000)),
                                        [&](soci::statement& st) { st.exchange(soci::use(after, "after")); });
    });
}

Status ConcurrencyKeyRepository::Delete(const std::string& name) {
    return db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Status {
        if (!FindByName(s, name)) return NotFound("concurrency key \"" + name + "\" not found");
        // Checked inside the write transaction, as a calendar's users are.
        const auto users =
            impl::SelectRows<NameRow>(s, "SELECT name FROM job WHERE concurrency_key = :name ORDER BY id LIMIT 20",
                                      [&](soci::statement& st) { st.exchange(soci::use(name, "name")); });
        if (!users.empty()) {
            std::string list;
            for (const auto& user : users) list += (list.empty() ? "" : ", ") + user;
            return FailedPrecondition("concurrency key \"" + name + "\" is used by jobs: " + list +
                                      (users.size() == 20 ? ", ..." : ""));
        }
        s << "DELETE FROM concurrency_key WHERE name = :name", soci::use(name, "name");
        // Its seats and start times go with it: a key created again under the name starts empty.
        const std::string seats = "key:" + name;
        const std::string starts = "rate:" + name;
        s << "DELETE FROM concurrency_slot WHERE scope = :seats OR scope = :starts", soci::use(seats, "seats"),
            soci::use(starts, "starts");
        return Status::Ok();
    });
}

Result<std::int64_t> ConcurrencyKeyRepository::Count() {
    return impl::CountRows(db_, "concurrency_key");
}

std::map<std::string, ConcurrencyKey> ConcurrencyKeyRepository::Find(soci::session& s,
                                                                     const std::set<std::string>& names) {
    std::string list;
    for (const auto& name : names) {
        if (ValidConcurrencyKeyName(name)) list += (list.empty() ? "'" : ", '") + name + "'";
    }
    std::map<std::string, ConcurrencyKey> out;
    if (list.empty()) return out;
    // Valid names hold no quote: inlined, one statement whatever the count.
    for (auto& key : impl::SelectRows<KeyRow>(
             s, std::string("SELECT ") + kColumns + " FROM concurrency_key WHERE name IN (" + list + ")",
             [](soci::statement&) {})) {
        std::string name = key.name;
        out.emplace(std::move(name), std::move(key));
    }
    return out;
}

}  // namespace sched::store
