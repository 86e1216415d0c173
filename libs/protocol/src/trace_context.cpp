#include "sched/protocol/trace_context.hpp"

#include <algorithm>

#include "sched/common/crypto.hpp"

namespace sched::protocol {

namespace {

bool IsLowerHex(std::string_view s) {
    for (const char c : s) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

bool AllZero(std::string_view s) {
    return s.find_first_not_of('0') == std::string_view::npos;
}

// The first `digits` hex digits of SHA-256(`seed`); an all-zero prefix (2^-64 at worst) ends in
// 1 instead, since the specification makes an all-zero id invalid.
std::string HashId(const std::string& seed, std::size_t digits) {
    std::string id = crypto::Sha256Hex(seed).substr(0, digits);
    if (AllZero(id)) id.back() = '1';
    return id;
}

}  // namespace

std::string TraceContext::TraceParent() const {
    return "00-" + trace_id + "-" + span_id + (sampled ? "-01" : "-00");
}

TraceContext FireTrace(std::int64_t fire_id, std::int64_t job_id, std::int64_t scheduled_ms, std::int64_t attempt) {
    TraceContext t;
    t.trace_id = HashId(
        "sched-fire/" + std::to_string(fire_id) + "/" + std::to_string(job_id) + "/" + std::to_string(scheduled_ms),
        32);
    t.span_id = HashId("sched-run/" + t.trace_id + "/" + std::to_string(attempt), 16);
    return t;
}

std::optional<TraceContext> ParseTraceParent(std::string_view value) {
    if (value.size() < kTraceParentLength) return std::nullopt;
    const std::string_view version = value.substr(0, 2);
    if (!IsLowerHex(version) || version == "ff") return std::nullopt;
    // A later version may append fields after a dash; version 00 has exactly these 55 characters.
    if (version == "00" ? value.size() != kTraceParentLength
                        : value.size() > kTraceParentLength && value[kTraceParentLength] != '-') {
        return std::nullopt;
    }
    if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
    const std::string_view trace_id = value.substr(3, 32);
    const std::string_view span_id = value.substr(36, 16);
    const std::string_view flags = value.substr(53, 2);
    if (!IsLowerHex(trace_id) || !IsLowerHex(span_id) || !IsLowerHex(flags)) return std::nullopt;
    if (AllZero(trace_id) || AllZero(span_id)) return std::nullopt;
    TraceContext t;
    t.trace_id = std::string(trace_id);
    t.span_id = std::string(span_id);
    t.sampled = (std::stoi(std::string(flags), nullptr, 16) & 1) != 0;
    return t;
}

std::optional<std::string> CheckTraceState(std::string_view value) {
    if (value.size() > kMaxTraceStateLength) {
        return "at most " + std::to_string(kMaxTraceStateLength) + " characters";
    }
    int members = 0;
    std::size_t from = 0;
    while (from <= value.size()) {
        const std::size_t comma = std::min(value.find(',', from), value.size());
        std::string_view member = value.substr(from, comma - from);
        from = comma + 1;
        while (!member.empty() && (member.front() == ' ' || member.front() == '\t')) member.remove_prefix(1);
        while (!member.empty() && (member.back() == ' ' || member.back() == '\t')) member.remove_suffix(1);
        if (member.empty()) continue;
        if (++members > 32) return std::string("at most 32 list members");
        const std::size_t eq = member.find('=');
        if (eq == std::string_view::npos) return "expected key=value, got \"" + std::string(member) + "\"";
        const std::string_view key = member.substr(0, eq);
        const std::string_view val = member.substr(eq + 1);
        const auto key_char = [](char c) {
            return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' || c == '/' ||
                   c == '@';
        };
        const bool key_ok = !key.empty() && key.size() <= 256 &&
                            ((key[0] >= 'a' && key[0] <= 'z') || (key[0] >= '0' && key[0] <= '9')) &&
                            std::all_of(key.begin(), key.end(), key_char) &&
                            std::count(key.begin(), key.end(), '@') <= 1;
        if (!key_ok) return "bad key \"" + std::string(key) + "\"";
        const bool value_ok =
            !val.empty() && val.size() <= 256 && val.back() != ' ' &&
            std::all_of(val.begin(), val.end(), [](char c) { return c >= 0x20 && c <= 0x7e && c != ',' && c != '='; });
        if (!value_ok) return "bad value of key \"" + std::string(key) + "\"";
    }
    return std::nullopt;
}

}  // namespace sched::protocol
