#include "sched/protocol/fires_notice.hpp"

#include <string>
#include <unordered_set>

#include "sched/http/error_body.hpp"

namespace sched::protocol {

namespace {

constexpr const char* kEpoch = "epoch";
constexpr const char* kFireIds = "fire_ids";
constexpr const char* kDueAt = "due_at";
constexpr const char* kShard = "shard";
constexpr const char* kFill = "fill";
constexpr const char* kPlanned = "planned";
constexpr int kMaxShardIndex = 63;

// A field name from the request, as an error names it: bounded, so a hostile key cannot make
// the answer (or a log line) as large as the body.
std::string ShownField(const std::string& key) {
    constexpr std::size_t kMax = 64;
    return key.size() <= kMax ? key : key.substr(0, kMax) + "...";
}

template <typename Message = FiresNotice>
Parsed<Message> Bad(std::string field, const std::string& problem) {
    std::string message = field + ": " + problem;
    return {.value = {}, .error = http::ApiError{Code::kInvalidArgument, std::move(message), std::move(field)}};
}

// An array of at most kMaxNoticeFires integers >= `min` into `out`, or what is wrong with it
// (`unit` names the items in the bound's message, `expected` is the message for a bad item).
std::optional<std::string> ReadIntegers(const nlohmann::json& value, std::int64_t min, const char* unit,
                                        const char* expected, std::vector<std::int64_t>& out) {
    if (!value.is_array()) return "expected an array of integers";
    if (value.size() > kMaxNoticeFires) return "at most " + std::to_string(kMaxNoticeFires) + " " + unit;
    out.reserve(value.size());
    for (const auto& item : value) {
        if (!item.is_number_integer() || item.get<std::int64_t>() < min) return std::string(expected);
        out.push_back(item.get<std::int64_t>());
    }
    return std::nullopt;
}

}  // namespace

FiresNotice MakeFiresNotice(std::int64_t epoch, const std::vector<NoticedFire>& fires, int shard) {
    FiresNotice notice{.epoch = epoch, .shard = shard, .fire_ids = {}, .due_at = std::vector<std::int64_t>()};
    notice.fire_ids.reserve(fires.size());
    notice.due_at->reserve(fires.size());
    for (const auto& f : fires) {
        notice.fire_ids.push_back(f.id);
        notice.due_at->push_back(f.due_at);
        if (f.fill) notice.fill.push_back(f.id);
        if (f.planned) notice.planned.push_back(f.id);
    }
    return notice;
}

std::optional<std::vector<NoticedFire>> NoticedFires(const FiresNotice& notice) {
    if (!notice.due_at || notice.due_at->size() != notice.fire_ids.size()) return std::nullopt;
    const std::unordered_set<std::int64_t> fill(notice.fill.begin(), notice.fill.end());
    const std::unordered_set<std::int64_t> planned(notice.planned.begin(), notice.planned.end());
    std::vector<NoticedFire> fires;
    fires.reserve(notice.fire_ids.size());
    for (std::size_t i = 0; i < notice.fire_ids.size(); ++i) {
        const std::int64_t id = notice.fire_ids[i];
        fires.push_back(
            {.id = id, .due_at = (*notice.due_at)[i], .fill = fill.contains(id), .planned = planned.contains(id)});
    }
    return fires;
}

namespace {

bool Refused(int status, const std::string& body, std::string_view field) {
    if (status != 400) return false;
    const auto json = nlohmann::json::parse(body, nullptr, false);
    const auto error = http::ParseErrorBody(json);
    return error && error->field == field;
}

}  // namespace

bool RefusedDueAt(int status, const std::string& body) {
    return Refused(status, body, kDueAt);
}

bool RefusedFill(int status, const std::string& body) {
    return Refused(status, body, kFill);
}

bool RefusedPlanned(int status, const std::string& body) {
    return Refused(status, body, kPlanned);
}

nlohmann::json ToJson(const FiresNotice& notice) {
    nlohmann::json out = {{kEpoch, notice.epoch}, {kFireIds, notice.fire_ids}};
    if (notice.due_at) out[kDueAt] = *notice.due_at;
    // Absent for shard 0: a single-shard cluster's notices are what nodes without shards read.
    if (notice.shard > 0) out[kShard] = notice.shard;
    if (!notice.fill.empty()) out[kFill] = notice.fill;
    if (!notice.planned.empty()) out[kPlanned] = notice.planned;
    return out;
}

Parsed<FiresNotice> ParseFiresNotice(const nlohmann::json& body) {
    if (!body.is_object()) return Bad("body", "expected a JSON object {epoch, fire_ids}");
    FiresNotice n;
    for (auto it = body.begin(); it != body.end(); ++it) {
        const std::string& key = it.key();
        const nlohmann::json& value = it.value();
        if (key == kEpoch) {
            if (!value.is_number_integer() || value.get<std::int64_t>() < 1) {
                return Bad(kEpoch, "expected an integer >= 1");
            }
            n.epoch = value.get<std::int64_t>();
        } else if (key == kFireIds) {
            if (auto problem = ReadIntegers(value, 1, "ids", "expected an array of integers >= 1", n.fire_ids)) {
                return Bad(kFireIds, *problem);
            }
        } else if (key == kShard) {
            if (!value.is_number_integer() || value.get<std::int64_t>() < 0 ||
                value.get<std::int64_t>() > kMaxShardIndex) {
                return Bad(kShard, "expected an integer 0.." + std::to_string(kMaxShardIndex));
            }
            n.shard = value.get<int>();
        } else if (key == kDueAt) {
            std::vector<std::int64_t> due;
            if (auto problem = ReadIntegers(value, 0, "times", "expected an array of integers >= 0 (epoch ms)", due)) {
                return Bad(kDueAt, *problem);
            }
            n.due_at = std::move(due);
        } else if (key == kFill) {
            if (auto problem = ReadIntegers(value, 1, "ids", "expected an array of integers >= 1", n.fill)) {
                return Bad(kFill, *problem);
            }
        } else if (key == kPlanned) {
            if (auto problem = ReadIntegers(value, 1, "ids", "expected an array of integers >= 1", n.planned)) {
                return Bad(kPlanned, *problem);
            }
        } else {
            return Bad(ShownField(key), "unknown field");
        }
    }
    for (const char* required : {kEpoch, kFireIds}) {
        if (!body.contains(required)) return Bad(required, "required");
    }
    if (n.due_at && n.due_at->size() != n.fire_ids.size()) {
        return Bad(kDueAt, "expected one time per id of fire_ids (" + std::to_string(n.fire_ids.size()) + ")");
    }
    return {.value = std::move(n), .error = std::nullopt};
}

nlohmann::json ToJson(const RunsEnded& ended) {
    return {{kFireIds, ended.fire_ids}};
}

Parsed<RunsEnded> ParseRunsEnded(const nlohmann::json& body) {
    if (!body.is_object()) return Bad<RunsEnded>("body", "expected a JSON object {fire_ids}");
    RunsEnded ended;
    for (auto it = body.begin(); it != body.end(); ++it) {
        if (it.key() != kFireIds) return Bad<RunsEnded>(ShownField(it.key()), "unknown field");
        if (auto problem = ReadIntegers(it.value(), 1, "ids", "expected an array of integers >= 1", ended.fire_ids)) {
            return Bad<RunsEnded>(kFireIds, *problem);
        }
    }
    if (!body.contains(kFireIds)) return Bad<RunsEnded>(kFireIds, "required");
    return {.value = std::move(ended), .error = std::nullopt};
}

}  // namespace sched::protocol
