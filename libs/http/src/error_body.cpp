#include "sched/http/error_body.hpp"

namespace sched::http {

namespace {

std::string StringMember(const nlohmann::json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::optional<Code> ErrorReply::Canonical() const {
    // kOk is not an error code: a body claiming "ok" is not a canonical error.
    for (int c = static_cast<int>(Code::kOk) + 1; c <= static_cast<int>(Code::kUnauthenticated); ++c) {
        if (CodeName(static_cast<Code>(c)) == code) return static_cast<Code>(c);
    }
    return std::nullopt;
}

nlohmann::json ErrorBody(std::string_view code, std::string message, std::string field) {
    nlohmann::json error = {{"code", code}, {"message", std::move(message)}, {"field", nullptr}};
    if (!field.empty()) error["field"] = std::move(field);
    return {{"error", std::move(error)}};
}

std::optional<ErrorReply> ParseErrorBody(const nlohmann::json& body) {
    if (!body.is_object()) return std::nullopt;
    const auto it = body.find("error");
    if (it == body.end() || !it->is_object()) return std::nullopt;
    return ErrorReply{.code = StringMember(*it, "code"),
                      .message = StringMember(*it, "message"),
                      .field = StringMember(*it, "field")};
}

}  // namespace sched::http
