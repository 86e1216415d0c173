#include "sched/store/token.hpp"

#include <array>

#include <nlohmann/json.hpp>

#include "impl/json_strings.hpp"
#include "impl/query.hpp"

namespace sched::store {

namespace {

constexpr std::array<std::string_view, 4> kRoleNames = {"admin", "operator", "viewer", "executor"};

constexpr const char* kColumns =
    "SELECT id, name, role, created_at, last_used_at, revoked_at, app_scope, created_by FROM api_token";

// NULL is an executor token from before scopes existed: every app, as migration 002 records it.
// Anything unreadable is no app at all, so a damaged row can only deny.
std::vector<std::string> ScopeFromColumn(const std::optional<std::string>& text) {
    if (!text) return {std::string(kAllApps)};
    return impl::JsonStrings(*text);
}

struct TokenRow {
    ApiToken t;
    std::string role;
    impl::NullableInt64 last_used;
    impl::NullableInt64 revoked;
    impl::NullableString app_scope;
    impl::NullableString created_by;

    void BindInto(soci::statement& st) {
        impl::IntoColumns(st, t.id, t.name, role, t.created_at, last_used, revoked, app_scope, created_by);
    }
    ApiToken Finish() {
        // Stored values come only from this code; an unknown role means a corrupted row.
        auto r = ParseRole(role);
        if (!r) throw std::runtime_error("token " + std::to_string(t.id) + ": unknown role in database");
        ApiToken out = t;
        out.role = *r;
        out.last_used_at = last_used.get();
        out.revoked_at = revoked.get();
        out.created_by = created_by.get();
        if (out.role == Role::kExecutor) out.apps = ScopeFromColumn(app_scope.get());
        return out;
    }
};

}  // namespace

std::string_view RoleName(Role r) {
    return kRoleNames[static_cast<std::size_t>(r)];
}

std::optional<Role> ParseRole(std::string_view name) {
    for (std::size_t i = 0; i < kRoleNames.size(); ++i) {
        if (kRoleNames[i] == name) return static_cast<Role>(i);
    }
    return std::nullopt;
}

Result<ApiToken> TokenRepository::Create(const std::string& name, Role role, const std::string& token_hash,
                                         const std::vector<std::string>& apps, const std::string& created_by) {
    auto id = db_.InTransaction(db::TxMode::kWrite, [&](soci::session& s) -> Result<std::int64_t> {
        const std::string role_name(RoleName(role));
        impl::NullableString scope;
        if (role == Role::kExecutor) scope.set(nlohmann::json(apps).dump());
        impl::NullableString by;
        if (!created_by.empty()) by.set(created_by);
        s << "INSERT INTO api_token (name, token_hash, role, created_at, app_scope, created_by) VALUES (:name, :hash, "
             ":role, " +
                 std::string(db_.dialect().NowMs()) + ", :scope, :by)",
            soci::use(name, "name"), soci::use(token_hash, "hash"), soci::use(role_name, "role"),
            impl::Use(scope, "scope"), impl::Use(by, "by");
        long long new_id = 0;
        if (!s.get_last_insert_id("api_token", new_id)) return Internal("no id for the new token");
        return static_cast<std::int64_t>(new_id);
    });
    if (!id.ok()) return id.status();
    return db_.Run([&](soci::session& s) -> Result<ApiToken> {
        auto tokens = impl::SelectRows<TokenRow>(s, std::string(kColumns) + " WHERE id = :id",
                                                 [&](soci::statement& st) { st.exchange(soci::use(*id, "id")); });
        if (tokens.empty()) return Internal("token vanished after insert");
        return tokens.front();
    });
}

Result<ApiToken> TokenRepository::FindActive(const std::string& token_hash) {
    return db_.Run([&](soci::session& s) -> Result<ApiToken> {
        auto tokens =
            impl::SelectRows<TokenRow>(s, std::string(kColumns) + " WHERE token_hash = :hash AND revoked_at IS NULL",
                                       [&](soci::statement& st) { st.exchange(soci::use(token_hash, "hash")); });
        if (tokens.empty()) return NotFound("no active token with that secret");
        return tokens.front();
    });
}

Result<std::vector<ApiToken>> TokenRepository::List() {
    return db_.Run([&](soci::session& s) {
        return impl::SelectRows<TokenRow>(s, std::string(kColumns) + " ORDER BY id", [](soci::statement&) {});
    });
}

Status TokenRepository::Revoke(std::int64_t id) {
    return db_.Run([&](soci::session& s) -> Status {
        soci::statement st = (s.prepare << "UPDATE api_token SET revoked_at = " + std::string(db_.dialect().NowMs()) +
                                               " WHERE id = :id AND revoked_at IS NULL",
                              soci::use(id, "id"));
        if (impl::ExecuteAffected(st) == 0) return NotFound("token " + std::to_string(id) + " not found or revoked");
        return Status::Ok();
    });
}

Status TokenRepository::Touch(std::int64_t id) {
    return db_.Run([&](soci::session& s) {
        s << "UPDATE api_token SET last_used_at = " + std::string(db_.dialect().NowMs()) + " WHERE id = :id",
            soci::use(id, "id");
    });
}

}  // namespace sched::store
