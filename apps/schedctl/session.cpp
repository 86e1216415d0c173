#include "session.hpp"

#include "table.hpp"

namespace sched::ctl {
namespace {

bool IsId(const std::string& text) {
    return !text.empty() && text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

void Usage(const std::string& what) {
    throw CliError(what + " (see schedctl --help)");
}

Session::Session(Options options, const Target& target, std::ostream& out, std::ostream& err)
    : o_(std::move(options)), out_(out), err_(err), api_(target.server, target.token, target.timeout) {}

ApiReply Session::Call(http::Method method, const std::string& path, const std::optional<nlohmann::json>& body) {
    auto r = api_.Call(method, path, body);
    if (!r.ok()) throw CliError(r.status().message());
    return *r;
}

ApiReply Session::CallOk(http::Method method, const std::string& path, const std::optional<nlohmann::json>& body) {
    ApiReply reply = Call(method, path, body);
    if (!reply.ok()) throw CliError(std::string(http::MethodName(method)) + " " + path + ": " + DescribeError(reply));
    return reply;
}

ApiCall Session::Caller() {
    return [this](http::Method method, const std::string& path, const std::optional<nlohmann::json>& body) {
        return api_.Call(method, path, body);
    };
}

int Session::Answer(const ApiReply& reply, const std::function<void()>& text) {
    if (Json()) {
        PrintJson(reply);
    } else {
        text();
    }
    return 0;
}

int Session::AnswerObject(const ApiReply& reply) {
    if (Json()) {
        PrintJson(reply);
        return 0;
    }
    std::vector<std::vector<std::string>> rows;
    if (reply.json.is_object()) {
        for (const auto& [key, value] : reply.json.items()) {
            const bool is_time = key.size() > 5 && (key.ends_with("_time") || key.ends_with("_at"));
            rows.push_back({key, is_time ? TimeCell(reply.json, key) : CellText(value)});
        }
    }
    out_ << RenderTable({"FIELD", "VALUE"}, rows);
    return 0;
}

void Session::PrintJson(const ApiReply& reply) {
    if (reply.body.empty()) return;  // 204 No Content
    if (reply.json.is_null()) {
        out_ << SanitizeCell(reply.body) << "\n";
    } else {
        out_ << reply.json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
}

void Session::PrintItems(const nlohmann::json& items) {
    out_ << nlohmann::json{{"items", items}}.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

Session::Listed<api::JobView> Session::ListAllJobs(const std::string& query) {
    return ListAll<api::JobView>("/api/v1/jobs?limit=200" + query, 500);
}

Session::Listed<api::CalendarView> Session::ListAllCalendars() {
    return ListAll<api::CalendarView>("/api/v1/calendars?limit=200", 50);
}

Session::Listed<api::WorkflowView> Session::ListAllWorkflows() {
    return ListAll<api::WorkflowView>("/api/v1/workflows?limit=200", 50);
}

Session::Listed<api::AlertRuleView> Session::ListAllAlertRules() {
    constexpr int kMaxPages = 50;  // a server holds few rules; only stops one answering cursors forever
    Listed<api::AlertRuleView> out;
    std::string cursor;
    for (int page = 0; page < kMaxPages; ++page) {
        const std::string path = "/api/v1/alert-rules?limit=200" + (cursor.empty() ? "" : "&cursor=" + cursor);
        const ApiReply reply = CallOk(http::Method::kGet, path);
        auto read = Read<api::AlertRulePageView>(reply, http::Method::kGet, path);
        for (const auto& item : reply.json["items"]) out.items.push_back(item);
        for (auto& rule : read.items) out.views.push_back(std::move(rule));
        if (!read.next_cursor) return out;
        cursor = std::to_string(*read.next_cursor);
    }
    throw CliError("GET /api/v1/alert-rules: more than " + std::to_string(kMaxPages) + " pages");
}

std::string Session::Argument(std::size_t index) const {
    return index < o_.args.size() ? o_.args[index] : std::string();
}

std::string Session::IdArgument(std::size_t index, const std::string& what) const {
    if (o_.args.size() <= index) throw CliError(what + ": missing ID");
    const std::string& id = o_.args[index];
    if (!IsId(id)) throw CliError(what + ": ID: expected a positive integer, got \"" + SanitizeCell(id) + "\"");
    return id;
}

std::string Session::JobIdOf(const std::string& job) {
    if (IsId(job)) return job;
    std::string id;
    for (const auto& j : ListAllJobs("&q=" + QueryEscape(job)).views) {
        if (j.name == job) id = std::to_string(j.id);
    }
    if (id.empty()) throw CliError("--job: no job named \"" + SanitizeCell(job) + "\"");
    return id;
}

std::string Session::CalendarIdOf(const std::string& id_or_name) {
    if (id_or_name.empty()) Usage("calendars: missing ID or NAME");
    if (IsId(id_or_name)) return id_or_name;
    for (const auto& c : ListAllCalendars().views) {
        if (c.name == id_or_name) return std::to_string(c.id);
    }
    throw CliError("calendars: no calendar named \"" + SanitizeCell(id_or_name) + "\"");
}

std::string Session::LimitQuery() const {
    if (!o_.limit) return "";
    const std::string& n = *o_.limit;
    if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos) {
        throw CliError("--limit: expected a positive integer");
    }
    return "&limit=" + n;
}

}  // namespace sched::ctl
