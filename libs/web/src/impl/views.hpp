#pragma once

// The API's views of stored rows (sched/api: one field table per answer, the OpenAPI document's
// schemas), and their JSON.

#include <optional>

#include <nlohmann/json.hpp>

#include "sched/api/fires.hpp"
#include "sched/api/jobs.hpp"
#include "sched/api/tokens.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/store/registry.hpp"
#include "sched/store/token.hpp"

namespace sched::web::impl {

/// Schema Job; `last_fire` (the job's newest fire: id, status, kind, scheduled_time,
/// finished_at) when given.
api::JobView JobViewOf(const model::Job& job, const std::optional<model::Fire>& last_fire = std::nullopt);
nlohmann::json JobJson(const model::Job& job, const std::optional<model::Fire>& last_fire = std::nullopt);
/// Schema Fire, with lag_ms (dispatched_at - due_at) and duration_ms (finished_at - started_at,
/// or - dispatched_at when the executor never reported a start).
api::FireView FireViewOf(const model::Fire& fire);
nlohmann::json FireJson(const model::Fire& fire);
/// Stored params (text) as the API answers them: text that parses as JSON (what the API stores
/// for a JSON value) as that value; anything else (rows from before JSON params, free text) as
/// the string.
nlohmann::json ParamsJson(const std::string& text);
/// Schema Token (never the secret or its hash).
api::TokenView TokenViewOf(const store::ApiToken& token);
nlohmann::json TokenJson(const store::ApiToken& token);

}  // namespace sched::web::impl
