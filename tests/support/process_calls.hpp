#pragma once

// Small pieces the process tests share: a config file written for a process under test, a
// graceful stop of one, and a JSON call to a node's API with a bearer token and its answer
// (header-only).

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "sched/common/status.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/http/client.hpp"

namespace sched::testing {

/// Writes `text` to `dir / name` and returns that file's path.
inline std::string WriteFile(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
    const auto path = dir / name;
    std::ofstream(path) << text;
    return path.string();
}

/// Stops `child` (SIGTERM, SIGKILL after `grace`) and forgets it; nothing when there is none.
inline void StopChild(std::unique_ptr<ChildProcess>& child,
                      std::chrono::milliseconds grace = std::chrono::seconds(10)) {
    if (!child) return;
    (void)child->Stop(grace);
    child.reset();
}

/// A call sent with `token` as its bearer token, all of it within 10 s.
inline http::CallOptions AsBearer(const std::string& token) {
    http::CallOptions call;
    call.bearer_token = token;
    call.timeout = std::chrono::seconds(10);
    return call;
}

/// A request to `url` with `body` as its JSON body (none when null).
inline http::ClientRequest JsonRequest(http::Method method, const std::string& url, const nlohmann::json& body) {
    http::ClientRequest request{.method = method, .url = url};
    if (!body.is_null()) {
        request.body = body.dump();
        request.headers.Set("Content-Type", "application/json");
    }
    return request;
}

/// A call's answer as JSON, for checks and their messages: the body parsed; {"body": <text>} when
/// the body is not JSON; {"transport": <error>} when the call got no answer.
inline nlohmann::json AnswerJson(const Result<http::ClientResponse>& r) {
    if (!r.ok()) return {{"transport", r.status().ToString()}};
    auto j = r->Json();
    return j.ok() ? *j : nlohmann::json{{"body", r->body}};
}

}  // namespace sched::testing
