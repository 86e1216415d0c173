#pragma once

/// API tokens as the API answers them (schemas Token and NewToken; docs/api.md "Tokens and
/// roles"): never the secret's hash, and the secret itself only in the answer that created it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/api/view.hpp"

namespace sched::api {

/// Schema Token.
struct TokenView {
    std::int64_t id = 0;
    std::string name;
    std::string role;
    std::int64_t created_at = 0;
    std::optional<std::int64_t> last_used_at;
    std::optional<std::int64_t> revoked_at;
    std::optional<std::vector<std::string>> apps;  ///< an executor token's apps; null for the other roles
    std::optional<std::string> created_by;         ///< its creator as the audit log names them; null when unknown

    SCHED_API_FIELDS(TokenView, id, name, role, created_at, last_used_at, revoked_at, apps, created_by)
};

/// Schema NewToken: the answer of POST /api/v1/tokens, the one time the secret is shown.
struct NewTokenView : TokenView {
    std::string token;

    static constexpr auto Fields() {
        return std::tuple_cat(TokenView::Fields(), std::tuple{Field("token", &NewTokenView::token)});
    }
};

}  // namespace sched::api
