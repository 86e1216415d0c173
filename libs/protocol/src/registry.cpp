#include "sched/protocol/registry.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "sched/http/json.hpp"
#include "sched/http/url.hpp"

namespace sched::protocol {

namespace {

constexpr std::array<std::string_view, 5> kHeartbeatFields = {"app", "address", "handlers", "capacity", "running"};
constexpr std::array<std::string_view, 2> kDeregisterFields = {"app", "address"};
constexpr std::string_view kBeatEpochField = "epoch";

// A field this version does not know, as a 400 naming it (so that a typo or a field of a newer
// protocol is never silently ignored). JsonFields reports a body that is not an object.
template <std::size_t N>
std::optional<http::ApiError> UnknownField(const nlohmann::json& body, const std::array<std::string_view, N>& known) {
    if (!body.is_object()) return std::nullopt;
    for (const auto& [key, value] : body.items()) {
        if (std::find(known.begin(), known.end(), key) == known.end()) {
            return http::ApiError{Code::kInvalidArgument, key + ": unknown field", key};
        }
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::string> AddressProblem(const std::string& address) {
    if (address.size() > kMaxAddressChars) return "at most " + std::to_string(kMaxAddressChars) + " characters";
    const bool chars_ok = std::all_of(address.begin(), address.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':' ||
               c == '[' || c == ']';
    });
    auto parsed = http::HostPort::Parse(address);
    if (!chars_ok || !parsed.ok() || parsed->host.empty() || parsed->port == 0) {
        return "expected host:port (port 1..65535), got \"" + address.substr(0, 64) + "\"";
    }
    return std::nullopt;
}

nlohmann::json ToJson(const Heartbeat& beat) {
    return {{"app", beat.app},
            {"address", beat.address},
            {"handlers", beat.handlers},
            {"capacity", beat.capacity},
            {"running", beat.running}};
}

Parsed<Heartbeat> ParseHeartbeat(const nlohmann::json& body) {
    Parsed<Heartbeat> out;
    if ((out.error = UnknownField(body, kHeartbeatFields))) return out;
    http::JsonFields f(body);
    Heartbeat& e = out.value;
    e.app = f.String("app");
    e.address = f.String("address");
    e.handlers = f.StringList("handlers");
    e.capacity = f.Int("capacity", 0, {.min = 0, .max = kMaxCapacity});
    e.running = f.Int("running", 0, {.min = 0, .max = kMaxCapacity});
    if (f.ok()) {
        if (auto problem = AddressProblem(e.address)) f.Fail("address", *problem);
    }
    if (f.ok() && e.handlers.size() > kMaxHandlers) {
        f.Fail("handlers", "at most " + std::to_string(kMaxHandlers) + " handlers");
    }
    for (const auto& h : e.handlers) {
        if (f.ok() && (h.empty() || h.size() > kMaxHandlerNameBytes)) {
            f.Fail("handlers", "handler names have 1.." + std::to_string(kMaxHandlerNameBytes) + " characters");
        }
    }
    out.error = f.error();
    return out;
}

nlohmann::json ToJson(const BeatAnswer& beat) {
    nlohmann::json body = ToJson(beat.heartbeat);
    body[kBeatEpochField] = beat.epoch;
    return body;
}

Parsed<BeatAnswer> ReadBeatAnswer(const nlohmann::json& body) {
    Parsed<BeatAnswer> out;
    http::JsonFields f(body);
    out.value.epoch = f.Int(kBeatEpochField, 0, {.min = 0});
    if ((out.error = f.error())) return out;
    nlohmann::json heartbeat = body;
    heartbeat.erase(std::string(kBeatEpochField));
    auto parsed = ParseHeartbeat(heartbeat);
    out.value.heartbeat = std::move(parsed.value);
    out.error = std::move(parsed.error);
    return out;
}

nlohmann::json ToJson(const Deregister& d) {
    return {{"app", d.app}, {"address", d.address}};
}

Parsed<Deregister> ParseDeregister(const nlohmann::json& body) {
    Parsed<Deregister> out;
    if ((out.error = UnknownField(body, kDeregisterFields))) return out;
    http::JsonFields f(body);
    out.value.app = f.String("app");
    out.value.address = f.String("address");
    if (f.ok() && out.value.address.size() > kMaxAddressChars) {
        f.Fail("address", "at most " + std::to_string(kMaxAddressChars) + " characters");
    }
    out.error = f.error();
    return out;
}

}  // namespace sched::protocol
