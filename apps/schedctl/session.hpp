#pragma once

/// What every schedctl command works with: the options the command line gave, the API client
/// for the resolved server and token, the output format and the streams, and the helpers that
/// call the API and print its answers. A command fails by throwing CliError; RunCli prints it
/// as "schedctl: <message>" and exits 1.

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api_client.hpp"
#include "apply.hpp"
#include "sched/api/alerts.hpp"
#include "sched/api/calendars.hpp"
#include "sched/api/jobs.hpp"
#include "sched/api/page.hpp"
#include "sched/api/view.hpp"
#include "sched/api/workflows.hpp"

namespace sched::ctl {

/// A usage, file, connection or API error: printed as "schedctl: <what>", exit code 1.
class CliError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// The command line after parsing. Options a command does not take stay empty.
struct Options {
    std::string server;
    std::string config_path;
    std::string output = "table";
    std::string timeout = "10s";
    std::string file;
    bool dry_run = false;
    bool prune = false;
    std::optional<std::string> job, status, limit, name, role, apps, note, since, actor, action;
    std::optional<std::string> from, to, parallel;  // jobs backfill
    std::optional<std::string> params, from_step;   // workflows trigger, rerun
    std::optional<std::string> rule;                // alerts deliveries
    /// The command's arguments after its name ("7" in `jobs get 7`).
    std::vector<std::string> args;
};

/// Where the API is and who calls it (ResolveTarget in cli.cpp).
struct Target {
    http::Url server;
    std::string token;
    Micros timeout{};
    std::vector<std::string> warnings;
};

class Session {
  public:
    Session(Options options, const Target& target, std::ostream& out, std::ostream& err);

    const Options& options() const { return o_; }
    std::ostream& out() { return out_; }
    std::ostream& err() { return err_; }
    bool Json() const { return o_.output == "json"; }

    /// The call's reply, any status; a transport failure throws.
    ApiReply Call(http::Method method, const std::string& path, const std::optional<nlohmann::json>& body = {});
    /// The call's reply when it is 2xx; otherwise throws "<METHOD> <path>: HTTP 404 ...".
    ApiReply CallOk(http::Method method, const std::string& path, const std::optional<nlohmann::json>& body = {});
    /// ApiClient::Call as an ApiCall, for ApplyPlan.
    ApiCall Caller();

    /// The answer read as its view: a 2xx answer that is not one throws, naming the field.
    template <api::ViewType V>
    static V Read(const ApiReply& reply, http::Method method, const std::string& path) {
        auto view = api::FromJson<V>(reply.json);
        if (!view.ok()) {
            throw CliError(std::string(http::MethodName(method)) + " " + path +
                           ": unexpected answer: " + view.status().message());
        }
        return std::move(*view);
    }
    template <api::ViewType V>
    V CallFor(http::Method method, const std::string& path, const std::optional<nlohmann::json>& body = {}) {
        return Read<V>(CallOk(method, path, body), method, path);
    }

    /// Calls the API; -o json prints the answer as it came, otherwise `text` writes what a
    /// person reads from the answer's view V. Returns 0.
    template <api::ViewType V, typename Text>
    int AnswerWith(http::Method method, const std::string& path, const std::optional<nlohmann::json>& body,
                   Text&& text) {
        const ApiReply reply = CallOk(method, path, body);
        if (Json()) {
            PrintJson(reply);
        } else {
            text(Read<V>(reply, method, path));
        }
        return 0;
    }
    /// The same for an answer whose fields are not read (a delete, a pause); `text` writes the
    /// line a person reads.
    int Answer(const ApiReply& reply, const std::function<void()>& text);
    /// -o json: the answer; otherwise every field of it as a FIELD / VALUE table.
    int AnswerObject(const ApiReply& reply);

    /// The answer as it came (-o json): indented JSON, or the body's text.
    void PrintJson(const ApiReply& reply);
    /// `items` as {"items": [...]} (-o json of a list read page by page).
    void PrintItems(const nlohmann::json& items);

    /// Every page of a list route (GET base + "&cursor=..."), at most `max_pages`: the items as
    /// they came (for -o json and the plans) and as views.
    template <api::ViewType V>
    struct Listed {
        nlohmann::json items = nlohmann::json::array();
        std::vector<V> views;
    };
    template <api::ViewType V>
    Listed<V> ListAll(const std::string& base, int max_pages) {
        Listed<V> out;
        std::string cursor;
        // Bounded so that a server answering cursors forever stops.
        for (int page = 0; page < max_pages; ++page) {
            std::string path = base;
            if (!cursor.empty()) path += "&cursor=" + QueryEscape(cursor);
            const ApiReply reply = CallOk(http::Method::kGet, path);
            auto read = Read<api::Page<V>>(reply, http::Method::kGet, path);
            for (const auto& item : reply.json["items"]) out.items.push_back(item);
            for (auto& view : read.items) out.views.push_back(std::move(view));
            if (!read.next_cursor || read.next_cursor->empty()) return out;
            cursor = *read.next_cursor;
        }
        throw CliError("GET " + base.substr(0, base.find('?')) + ": more than " + std::to_string(max_pages) + " pages");
    }
    /// Every job (at most 500 pages of 200); `query` is added to the path ("&q=nightly").
    Listed<api::JobView> ListAllJobs(const std::string& query = "");
    /// Every calendar (the API holds at most 1000).
    Listed<api::CalendarView> ListAllCalendars();
    /// Every workflow (at most 50 pages of 200).
    Listed<api::WorkflowView> ListAllWorkflows();
    /// Every alert rule (at most 50 pages of 200; the rules' cursor is a number, not a string).
    Listed<api::AlertRuleView> ListAllAlertRules();

    /// The command's `index`th argument as an id (digits only), or throws "<what>: missing ID" /
    /// "<what>: ID: expected a positive integer, got "x"".
    std::string IdArgument(std::size_t index, const std::string& what) const;
    /// The argument at `index`, "" when absent.
    std::string Argument(std::size_t index) const;
    /// --job: an id as given, or the id of the job with exactly that name.
    std::string JobIdOf(const std::string& job);
    /// An id as given, or the id of the calendar with exactly that name.
    std::string CalendarIdOf(const std::string& id_or_name);
    /// "&limit=N" from --limit (digits, at most 4), "" without it.
    std::string LimitQuery() const;

  private:
    Options o_;
    std::ostream& out_;
    std::ostream& err_;
    ApiClient api_;
};

/// Throws CliError "<what> (see schedctl --help)".
[[noreturn]] void Usage(const std::string& what);

}  // namespace sched::ctl
