#pragma once

/// Carrying out a plan (`schedctl apply`): one API call per created, updated or deleted job,
/// in the plan's order. Updates send the version the plan read; a 409 (someone changed the job
/// since) is reported, never retried with a fresh version, which would overwrite that change
/// unseen.

#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api_client.hpp"
#include "plan.hpp"

namespace sched::ctl {

/// One API call: method, path under the server, optional JSON body (ApiClient::Call's shape).
using ApiCall = std::function<Result<ApiReply>(http::Method method, const std::string& path,
                                               const std::optional<nlohmann::json>& body)>;

/// Makes the plan's changes through `call`, printing "<name>: created|updated|deleted" to
/// `out` and each failure (the API's error, readably) to `err`. A transport failure stops the
/// run (the next calls would fail the same way). Returns the number of failed changes (a
/// transport failure counts every change not made). `kind` is the resource: "job" (under
/// /api/v1/jobs) or "calendar" (/api/v1/calendars, its names printed as "calendar <name>").
int ApplyPlan(const Plan& plan, const ApiCall& call, std::ostream& out, std::ostream& err,
              std::string_view kind = "job");

}  // namespace sched::ctl
