// schedctl alerts ...: list, get, create, update, delete, test, deliveries (admin tokens).

#include "alert_file.hpp"
#include "commands.hpp"
#include "job_file.hpp"
#include "sched/api/alerts.hpp"
#include "table.hpp"

namespace sched::ctl {
namespace {

std::string RulePath(const std::string& id) {
    return "/api/v1/alert-rules/" + id;
}

// The rule of `-f FILE`, or throws naming the file and the field.
nlohmann::json ReadRuleFile(Session& s, const std::string& what) {
    const std::string& file = s.options().file;
    if (file.empty()) Usage(what + ": -f FILE is required");
    auto text = ReadBoundedFile(file);
    if (!text.ok()) throw CliError(text.status().message());
    auto doc = ParseAlertRuleDocument(*text, file);
    if (!doc.ok()) throw CliError(doc.status().message());
    return std::move(*doc);
}

std::string Events(const std::vector<std::string>& events) {
    std::string out;
    for (const auto& e : events) out += (out.empty() ? "" : ",") + e;
    return out;
}

int List(Session& s) {
    const auto [items, rules] = s.ListAllAlertRules();
    if (s.Json()) {
        s.PrintItems(items);
        return 0;
    }
    s.out() << RenderRows({"ID", "NAME", "JOB", "EVENTS", "IN A ROW", "URL", "ENABLED", "VERSION"}, rules,
                          [&](const auto& r) {
                              return TableRow{Cell(r.id),
                                              SanitizeCell(r.name),
                                              r.job_id ? Cell(*r.job_id) : "(every job)",
                                              Events(r.events),
                                              Cell(r.consecutive_failures),
                                              SanitizeCell(r.url),
                                              Cell(r.enabled),
                                              Cell(r.version)};
                          });
    return 0;
}

int Get(Session& s) {
    return s.AnswerObject(s.CallOk(http::Method::kGet, RulePath(s.IdArgument(0, "alerts get"))));
}

int Create(Session& s) {
    return s.AnswerWith<api::AlertRuleView>(http::Method::kPost, "/api/v1/alert-rules",
                                            ReadRuleFile(s, "alerts create"), [&](const api::AlertRuleView& rule) {
                                                s.out() << "alert rule " << rule.id << " created ("
                                                        << SanitizeCell(rule.name) << ")\n";
                                            });
}

// The file's fields over the rule as read now: like `jobs update`, a file need only hold what
// changes; without a version in it, the one read now (a change between the read and the PUT is
// still a 409).
int Update(Session& s) {
    const std::string id = s.IdArgument(0, "alerts update");
    const nlohmann::json fields = ReadRuleFile(s, "alerts update");
    const ApiReply current = s.CallOk(http::Method::kGet, RulePath(id));
    const nlohmann::json body = MergeAlertRuleUpdate(current.json, fields);
    return s.AnswerWith<api::AlertRuleView>(
        http::Method::kPut, RulePath(id), body, [&](const api::AlertRuleView& rule) {
            s.out() << "alert rule " << id << " updated (version " << rule.version << ")\n";
        });
}

int Delete(Session& s) {
    const std::string id = s.IdArgument(0, "alerts delete");
    return s.Answer(s.CallOk(http::Method::kDelete, RulePath(id)),
                    [&] { s.out() << "alert rule " << id << " deleted\n"; });
}

int Test(Session& s) {
    const std::string id = s.IdArgument(0, "alerts test");
    return s.AnswerWith<api::AlertDeliveryView>(
        http::Method::kPost, RulePath(id) + "/test", std::nullopt, [&](const api::AlertDeliveryView& d) {
            s.out() << "test delivery " << d.id << " of alert rule " << id
                    << " queued: the master sends it (see schedctl alerts deliveries --rule " << id << ")\n";
        });
}

int Deliveries(Session& s) {
    std::string query = s.LimitQuery();
    if (const auto& rule = s.options().rule) {
        const bool digits = !rule->empty() && rule->size() <= 18 && (*rule)[0] != '0' &&
                            rule->find_first_not_of("0123456789") == std::string::npos;
        if (!digits)
            throw CliError("--rule: expected a rule's id (a positive integer), got \"" + SanitizeCell(*rule) + "\"");
        query += "&rule_id=" + *rule;
    }
    if (const auto& status = s.options().status) query += "&status=" + QueryEscape(*status);
    const std::string path = "/api/v1/alert-deliveries" + (query.empty() ? std::string() : "?" + query.substr(1));
    return s.AnswerWith<api::ItemList<api::AlertDeliveryView>>(
        http::Method::kGet, path, std::nullopt, [&](const api::ItemList<api::AlertDeliveryView>& list) {
            s.out() << RenderRows(
                {"ID", "RULE", "JOB", "FIRE", "EVENT", "STATUS", "ATTEMPTS", "CREATED", "DELIVERED", "LAST ERROR"},
                list.items, [&](const auto& d) {
                    return TableRow{Cell(d.id),
                                    Cell(d.rule_id),
                                    d.test ? "(test)" : Cell(d.job_id),
                                    d.test ? "-" : Cell(d.fire_id),
                                    d.event,
                                    d.status,
                                    Cell(d.attempts),
                                    TimeCell(d.created_at_ms),
                                    TimeCell(d.delivered_at_ms),
                                    SanitizeCell(Cell(d.last_error))};
                });
        });
}

}  // namespace

void AddAlertsCommands(CLI::App& app, CommandLine& line) {
    CLI::App* alerts =
        AddFamily(app, "alerts", "alerts: webhooks called when jobs' fires end with given events (admin)");
    Options& o = line.options;
    OnlyFor(*alerts, "--rule", "--rule: only alerts deliveries takes a rule", line);
    const auto add = [&](const std::string& name, const std::string& description, Command command, bool takes_id) {
        CLI::App* sub = AddCommand(*alerts, name, description, line, std::move(command));
        if (takes_id) TakesArguments(*sub, "ID", line, "the alert rule's id");
        return sub;
    };
    add("list", "every alert rule", List, false);
    add("get", "one alert rule (its secret never comes back)", Get, true);
    AddFileOption(*add("create", "an alert rule from -f FILE", Create, false), line,
                  "the rule, YAML or JSON: name, job_id, events, url, secret, ...");
    AddFileOption(*add("update", "change an alert rule with -f FILE", Update, true), line,
                  "the fields to change, YAML or JSON; secret and version: optional");
    add("delete", "delete an alert rule and its deliveries", Delete, true);
    add("test", "queue one test delivery to the rule's webhook", Test, true);
    CLI::App* deliveries = add("deliveries", "alert deliveries, newest first", Deliveries, false);
    AddValue(*deliveries, "--rule", o.rule, "only this rule's (its id)");
    AddValue(*deliveries, "--status", o.status, "pending, delivered or failed");
    AddValue(*deliveries, "--limit", o.limit, "at most N deliveries");
}

}  // namespace sched::ctl
