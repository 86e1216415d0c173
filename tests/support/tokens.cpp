#include "tokens.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "sched/common/testing/child_process.hpp"
#include "sched/store/token.hpp"
#include "sched/web/auth.hpp"
#include "sched/web/sha256.hpp"

namespace sched::testing {

std::string StoreExecutorToken(db::Database& db, const std::string& name, const std::vector<std::string>& apps) {
    const std::string secret = "sched_" + web::NewSecret(32);
    auto created = store::TokenRepository(db).Create(name, store::Role::kExecutor, web::Sha256Hex(secret), apps);
    if (!created.ok()) throw std::runtime_error("cannot store token " + name + ": " + created.status().ToString());
    return secret;
}

std::string CreateExecutorToken(unsigned short port, const std::string& admin_token, const std::string& name,
                                const std::vector<std::string>& apps) {
    const nlohmann::json body = {{"name", name}, {"role", "executor"}, {"apps", apps}};
    const auto [status, answer] = HttpCall(port, "POST", "/api/v1/tokens", body.dump(), admin_token);
    if (status != 201) {
        throw std::runtime_error("POST /api/v1/tokens: HTTP " + std::to_string(status) + " " + answer);
    }
    return nlohmann::json::parse(answer).at("token").get<std::string>();
}

}  // namespace sched::testing
