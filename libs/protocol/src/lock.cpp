#include "sched/protocol/lock.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "sched/http/json.hpp"

namespace sched::protocol {

namespace {

constexpr std::array<std::string_view, 3> kAcquireFields = {"app", "lease_ms", "wait_ms"};
constexpr std::array<std::string_view, 4> kExtendFields = {"app", "owner", "epoch", "lease_ms"};
constexpr std::array<std::string_view, 3> kReleaseFields = {"app", "owner", "epoch"};

// A field this version does not know, as a 400 naming it.
template <std::size_t N>
std::optional<http::ApiError> UnknownField(const nlohmann::json& body, const std::array<std::string_view, N>& known) {
    if (!body.is_object()) return std::nullopt;  // JsonFields reports the type
    for (const auto& [key, value] : body.items()) {
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            return http::ApiError{Code::kInvalidArgument, key + ": unknown field", key};
        }
    }
    return std::nullopt;
}

// `app`: nullopt when absent or null; anything but a string is a problem (an empty string is
// read as given: the server's app-name check refuses it).
std::optional<std::string> ReadApp(const nlohmann::json& body, http::JsonFields& f) {
    if (!f.ok() || !body.is_object()) return std::nullopt;
    const auto it = body.find("app");
    if (it == body.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) {
        f.Fail("app", "expected a string");
        return std::nullopt;
    }
    return it->get<std::string>();
}

void WriteApp(nlohmann::json& body, const std::optional<std::string>& app) {
    if (app) body["app"] = *app;
}

nlohmann::json AppOrNull(const std::optional<std::string>& app) {
    return app ? nlohmann::json(*app) : nlohmann::json(nullptr);
}

// An optional integer of an answer: nullopt when absent, null or not an integer.
std::optional<std::int64_t> OptionalInt(const nlohmann::json& body, std::string_view key) {
    const auto it = body.find(key);
    if (it == body.end() || !it->is_number_integer()) return std::nullopt;
    return it->get<std::int64_t>();
}

}  // namespace

nlohmann::json ToJson(const LockAcquireRequest& request) {
    nlohmann::json body = {{"lease_ms", request.lease_ms}, {"wait_ms", request.wait_ms}};
    WriteApp(body, request.app);
    return body;
}

Parsed<LockAcquireRequest> ParseLockAcquireRequest(const nlohmann::json& body, const LockLimits& limits) {
    Parsed<LockAcquireRequest> out;
    if ((out.error = UnknownField(body, kAcquireFields))) return out;
    http::JsonFields f(body);
    out.value.lease_ms = f.Int("lease_ms", {.min = 1, .max = limits.max_lease_ms});
    out.value.wait_ms = f.Int("wait_ms", 0, {.min = 0, .max = limits.max_wait_ms});
    out.value.app = ReadApp(body, f);
    out.error = f.error();
    return out;
}

nlohmann::json ToJson(const LockExtendRequest& request) {
    nlohmann::json body = {{"owner", request.owner}, {"epoch", request.epoch}, {"lease_ms", request.lease_ms}};
    WriteApp(body, request.app);
    return body;
}

Parsed<LockExtendRequest> ParseLockExtendRequest(const nlohmann::json& body, const LockLimits& limits) {
    Parsed<LockExtendRequest> out;
    if ((out.error = UnknownField(body, kExtendFields))) return out;
    http::JsonFields f(body);
    out.value.owner = f.String("owner");
    out.value.epoch = f.Int("epoch", {.min = 1});
    out.value.lease_ms = f.Int("lease_ms", {.min = 1, .max = limits.max_lease_ms});
    out.value.app = ReadApp(body, f);
    out.error = f.error();
    return out;
}

nlohmann::json ToJson(const LockReleaseRequest& request) {
    nlohmann::json body = {{"owner", request.owner}, {"epoch", request.epoch}};
    WriteApp(body, request.app);
    return body;
}

Parsed<LockReleaseRequest> ParseLockReleaseRequest(const nlohmann::json& body) {
    Parsed<LockReleaseRequest> out;
    if ((out.error = UnknownField(body, kReleaseFields))) return out;
    http::JsonFields f(body);
    out.value.owner = f.String("owner");
    out.value.epoch = f.Int("epoch", {.min = 1});
    out.value.app = ReadApp(body, f);
    out.error = f.error();
    return out;
}

nlohmann::json ToJson(const LockHolding& holding) {
    nlohmann::json body = {{"key", holding.key},
                           {"app", AppOrNull(holding.app)},
                           {"owner", holding.owner},
                           {"epoch", holding.epoch},
                           {"lease_ms", holding.lease_ms}};
    if (holding.waited_ms) body["waited_ms"] = *holding.waited_ms;
    body["lease_until_ms"] = holding.lease_until_ms ? nlohmann::json(*holding.lease_until_ms) : nlohmann::json(nullptr);
    return body;
}

Parsed<LockHolding> ReadLockHolding(const nlohmann::json& body) {
    Parsed<LockHolding> out;
    http::JsonFields f(body);
    LockHolding& h = out.value;
    h.owner = f.String("owner");
    h.epoch = f.Int("epoch", {.min = 1});
    out.error = f.error();
    if (!out.ok()) return out;
    if (const auto it = body.find("key"); it != body.end() && it->is_string()) h.key = it->get<std::string>();
    if (const auto it = body.find("app"); it != body.end() && it->is_string()) h.app = it->get<std::string>();
    h.lease_ms = OptionalInt(body, "lease_ms").value_or(0);
    h.waited_ms = OptionalInt(body, "waited_ms");
    h.lease_until_ms = OptionalInt(body, "lease_until_ms");
    return out;
}

nlohmann::json ToJson(const LockReleased& released) {
    return {{"key", released.key},
            {"app", AppOrNull(released.app)},
            {"released", true},
            {"epoch", released.epoch ? nlohmann::json(*released.epoch) : nlohmann::json(nullptr)}};
}

nlohmann::json ToJson(const LockState& state) {
    return {{"key", state.key},
            {"app", AppOrNull(state.app)},
            {"held", state.held},
            {"owner", state.owner ? nlohmann::json(*state.owner) : nlohmann::json(nullptr)},
            {"epoch", state.epoch},
            {"lease_until_ms", state.lease_until_ms},
            {"remaining_ms", state.remaining_ms},
            {"now_ms", state.now_ms}};
}

}  // namespace sched::protocol
