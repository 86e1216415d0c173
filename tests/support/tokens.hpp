#pragma once

// API tokens for process tests: what a service needs to run with least privilege, an executor
// token scoped to its app(s) (docs/architecture/trust-model.md).

#include <string>
#include <vector>

#include "sched/db/database.hpp"

namespace sched::testing {

/// Stores an executor token scoped to `apps` straight in `db`'s token table (as the web module
/// would: only its SHA-256) and returns its secret ("sched_" + 64 hex digits). Throws
/// std::runtime_error when the insert fails.
std::string StoreExecutorToken(db::Database& db, const std::string& name, const std::vector<std::string>& apps);

/// Creates an executor token scoped to `apps` through `POST /api/v1/tokens` of the web module
/// (or standalone node) on 127.0.0.1:port with an admin token (the cluster token, say) and
/// returns its secret. Throws std::runtime_error naming the answer unless it is 201.
std::string CreateExecutorToken(unsigned short port, const std::string& admin_token, const std::string& name,
                                const std::vector<std::string>& apps);

}  // namespace sched::testing
