#include "sched/http/json.hpp"

namespace sched::http {

namespace {

std::string TypeOf(const nlohmann::json& v) {
    // nlohmann calls every number "number"; callers asking for an integer need to see 1.5 apart.
    if (v.is_number_float()) return "a fractional number";
    if (v.is_number()) return "a number";
    if (v.is_string()) return "a string";
    if (v.is_boolean()) return "a boolean";
    if (v.is_array()) return "an array";
    if (v.is_object()) return "an object";
    return "null";
}

}  // namespace

std::optional<std::string> DumpWithin(const nlohmann::json& value, std::size_t max_bytes) {
    // A lower bound of the serialised size (every byte of every string and key, one per
    // scalar and bracket), with an explicit stack: the value may be as deep as the parser allowed.
    std::size_t bound = 0;
    std::vector<const nlohmann::json*> stack{&value};
    while (!stack.empty() && bound <= max_bytes) {
        const nlohmann::json* v = stack.back();
        stack.pop_back();
        if (v->is_object()) {
            bound += 2;
            for (auto it = v->begin(); it != v->end(); ++it) {
                bound += it.key().size() + 4;
                stack.push_back(&it.value());
            }
        } else if (v->is_array()) {
            bound += 2;
            for (const auto& item : *v) {
                bound += 1;
                stack.push_back(&item);
            }
        } else if (v->is_string()) {
            bound += v->get_ref<const std::string&>().size() + 2;
        } else {
            bound += 1;
        }
    }
    if (bound > max_bytes) return std::nullopt;
    std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (text.size() > max_bytes) return std::nullopt;
    return text;
}

JsonFields::JsonFields(const nlohmann::json& value, std::string prefix) : value_(value), prefix_(std::move(prefix)) {
    if (!value_.is_object()) {
        const std::string field = prefix_.empty() ? std::string("body") : prefix_;
        error_ = ApiError{Code::kInvalidArgument, field + ": expected a JSON object, got " + TypeOf(value_), field};
    }
}

std::string JsonFields::FieldPath(std::string_view key) const {
    return prefix_.empty() ? std::string(key) : prefix_ + "." + std::string(key);
}

void JsonFields::Fail(std::string_view key, std::string message) {
    if (error_) return;
    const std::string field = FieldPath(key);
    error_ = ApiError{Code::kInvalidArgument, field + ": " + std::move(message), field};
}

const nlohmann::json* JsonFields::Find(std::string_view key, bool required) {
    if (error_) return nullptr;
    const auto it = value_.find(key);
    if (it == value_.end() || it->is_null()) {
        if (required) Fail(key, "required");
        return nullptr;
    }
    return &*it;
}

std::int64_t JsonFields::Int(std::string_view key, IntRange range) {
    const nlohmann::json* v = Find(key, true);
    if (v == nullptr) return 0;
    const auto fallback = range.min > 0 ? range.min : (range.max < 0 ? range.max : 0);
    const std::string range_text = (range.min == IntRange{}.min && range.max == IntRange{}.max)
                                       ? std::string()
                                       : " in " + std::to_string(range.min) + ".." + std::to_string(range.max);
    if (!v->is_number_integer()) {
        Fail(key, "expected an integer" + range_text + ", got " + TypeOf(*v));
        return fallback;
    }
    std::int64_t n = 0;
    if (v->is_number_unsigned()) {
        const auto u = v->get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            Fail(key, "expected an integer" + range_text + ", got " + std::to_string(u));
            return fallback;
        }
        n = static_cast<std::int64_t>(u);
    } else {
        n = v->get<std::int64_t>();
    }
    if (n < range.min || n > range.max) {
        Fail(key, "expected an integer" + range_text + ", got " + std::to_string(n));
        return fallback;
    }
    return n;
}

std::int64_t JsonFields::Int(std::string_view key, std::int64_t fallback, IntRange range) {
    if (Find(key, false) == nullptr) return fallback;
    return Int(key, range);
}

std::string JsonFields::String(std::string_view key) {
    const nlohmann::json* v = Find(key, true);
    if (v == nullptr) return {};
    if (!v->is_string()) {
        Fail(key, "expected a string, got " + TypeOf(*v));
        return {};
    }
    auto s = v->get<std::string>();
    if (s.empty()) Fail(key, "must not be empty");
    return s;
}

std::string JsonFields::String(std::string_view key, std::string fallback) {
    const nlohmann::json* v = Find(key, false);
    if (v == nullptr) return fallback;
    if (!v->is_string()) {
        Fail(key, "expected a string, got " + TypeOf(*v));
        return fallback;
    }
    return v->get<std::string>();
}

bool JsonFields::Bool(std::string_view key, bool fallback) {
    const nlohmann::json* v = Find(key, false);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) {
        Fail(key, "expected true or false, got " + TypeOf(*v));
        return fallback;
    }
    return v->get<bool>();
}

std::string JsonFields::Enum(std::string_view key, std::string fallback,
                             std::initializer_list<std::string_view> allowed) {
    std::string s = String(key, fallback);
    if (!ok()) return fallback;
    for (const auto a : allowed) {
        if (a == s) return s;
    }
    std::string list;
    for (const auto a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    Fail(key, "expected one of " + list + ", got \"" + s + "\"");
    return fallback;
}

nlohmann::json JsonFields::Value(std::string_view key, nlohmann::json fallback) {
    const nlohmann::json* v = Find(key, false);
    if (v == nullptr) return fallback;
    return *v;
}

std::vector<std::string> JsonFields::StringList(std::string_view key) {
    const nlohmann::json* v = Find(key, true);
    if (v == nullptr) return {};
    if (!v->is_array()) {
        Fail(key, "expected an array of strings, got " + TypeOf(*v));
        return {};
    }
    std::vector<std::string> out;
    for (std::size_t i = 0; i < v->size(); ++i) {
        const auto& item = (*v)[i];
        if (!item.is_string()) {
            Fail(std::string(key) + "[" + std::to_string(i) + "]", "expected a string, got " + TypeOf(item));
            return {};
        }
        out.push_back(item.get<std::string>());
    }
    return out;
}

}  // namespace sched::http
