// schedctl executors list, cluster status, tokens ..., audit.

#include <algorithm>
#include <chrono>

#include "commands.hpp"
#include "sched/api/audit.hpp"
#include "sched/api/cluster.hpp"
#include "sched/api/tokens.hpp"
#include "sched/common/duration.hpp"
#include "table.hpp"

namespace sched::ctl {
namespace {

int Executors(Session& s) {
    return s.AnswerWith<api::ExecutorListView>(
        http::Method::kGet, "/api/v1/executors", std::nullopt, [&](const api::ExecutorListView& executors) {
            s.out() << RenderRows({"APP", "ADDRESS", "ALIVE", "RUNNING", "CAPACITY", "HEARTBEAT AGE MS", "HANDLERS"},
                                  executors.items, [&](const auto& e) {
                                      return TableRow{e.app,           e.address,        Cell(e.alive),
                                                      Cell(e.running), Cell(e.capacity), Cell(e.heartbeat_age_ms),
                                                      Cell(e.handlers)};
                                  });
        });
}

int ClusterStatus(Session& s) {
    return s.AnswerWith<api::ClusterView>(http::Method::kGet, "/api/v1/cluster", std::nullopt,
                                          [&](const api::ClusterView& c) { s.out() << ClusterStatusText(c); });
}

int TokensList(Session& s) {
    return s.AnswerWith<api::ItemList<api::TokenView>>(
        http::Method::kGet, "/api/v1/tokens", std::nullopt, [&](const api::ItemList<api::TokenView>& tokens) {
            s.out() << RenderRows({"ID", "NAME", "ROLE", "APPS", "CREATED", "LAST USED", "REVOKED"}, tokens.items,
                                  [&](const auto& t) {
                                      return TableRow{Cell(t.id),
                                                      t.name,
                                                      t.role,
                                                      Cell(t.apps),
                                                      TimeCell(t.created_at),
                                                      TimeCell(t.last_used_at),
                                                      TimeCell(t.revoked_at)};
                                  });
        });
}

int TokensCreate(Session& s) {
    const Options& o = s.options();
    if (!o.name || !o.role) Usage("tokens create: --name and --role are required");
    nlohmann::json body = {{"name", *o.name}, {"role", *o.role}};
    if (o.apps) {
        nlohmann::json apps = nlohmann::json::array();
        const std::string& list = *o.apps;
        for (std::size_t start = 0; start <= list.size();) {
            const std::size_t comma = list.find(',', start);
            const std::string app = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            if (app.empty()) throw CliError("--apps: expected app names separated by commas");
            apps.push_back(app);
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
        body["apps"] = apps;
    }
    return s.AnswerWith<api::NewTokenView>(
        http::Method::kPost, "/api/v1/tokens", body, [&](const api::NewTokenView& token) {
            s.out() << "token " << token.id << " created (" << SanitizeCell(token.name) << ", " << token.role << ")\n"
                    << "secret (shown only now): " << SanitizeCell(token.token) << "\n";
        });
}

int TokensRevoke(Session& s) {
    const std::string id = s.IdArgument(0, "tokens revoke");
    return s.Answer(s.CallOk(http::Method::kDelete, "/api/v1/tokens/" + id),
                    [&] { s.out() << "token " << id << " revoked\n"; });
}

// The fields whose values differ between an entry's before and after ("enabled, paused"), or
// the pause note; at most a line's worth.
std::string AuditChanges(const api::AuditEntryView& entry) {
    const auto& before = entry.before;
    const auto& after = entry.after;
    if (!before.is_object() || !after.is_object()) return "";
    std::string out;
    for (auto it = after.begin(); it != after.end(); ++it) {
        if (it.key() == "version" || it.key() == "updated_at") continue;
        if (before.contains(it.key()) && before[it.key()] == it.value()) continue;
        out += (out.empty() ? "" : ", ") + it.key();
    }
    if (after.contains("paused") && after["paused"].is_object()) {
        const std::string note = after["paused"].value("note", std::string());
        if (!note.empty()) out += " (note: " + note + ")";
    }
    if (out.size() > 120) out = out.substr(0, 117) + "...";
    return SanitizeCell(out);
}

// "&since=<epoch ms>" from --since: epoch ms as given, or a duration back from now.
std::string SinceQuery(const std::string& since) {
    if (!since.empty() && since.size() <= 18 && since.find_first_not_of("0123456789") == std::string::npos) {
        return "&since=" + since;
    }
    auto ago = ParseDuration(since);
    if (!ago.ok() || ago->count() <= 0) {
        throw CliError("--since: expected a duration such as 24h or epoch milliseconds, got \"" + SanitizeCell(since) +
                       "\"");
    }
    // The local clock: a window of "the last day" needs no better than seconds.
    const auto now =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch());
    const auto from = now - std::chrono::duration_cast<std::chrono::milliseconds>(*ago);
    return "&since=" + std::to_string(std::max<std::int64_t>(0, from.count()));
}

int Audit(Session& s) {
    const Options& o = s.options();
    std::string query;
    if (o.job) query += "&target_kind=job&target_id=" + s.JobIdOf(*o.job);
    if (o.actor) query += "&actor=" + QueryEscape(*o.actor);
    if (o.action) query += "&action=" + QueryEscape(*o.action);
    if (o.since) query += SinceQuery(*o.since);
    query += s.LimitQuery();
    const std::string path = "/api/v1/audit" + (query.empty() ? std::string() : "?" + query.substr(1));
    return s.AnswerWith<api::Page<api::AuditEntryView>>(
        http::Method::kGet, path, std::nullopt, [&](const api::Page<api::AuditEntryView>& page) {
            s.out() << RenderRows({"ID", "AT", "ACTOR", "ROLE", "ACTION", "TARGET", "NAME", "CHANGED"}, page.items,
                                  [&](const auto& e) {
                                      return TableRow{Cell(e.id),    TimeCell(e.at), e.actor.name,
                                                      e.actor.role,  e.action,       e.target.kind + " " + e.target.id,
                                                      e.target.name, AuditChanges(e)};
                                  });
        });
}

}  // namespace

std::string ClusterStatusText(const api::ClusterView& c) {
    std::string out = "leader: " + SanitizeCell(Cell(c.leader)) + "  epoch: " + Cell(c.epoch) +
                      "  lease remaining ms: " + Cell(c.lease_remaining_ms) + "\n";
    // One shard is the whole cluster, which the line above already says.
    if (c.shard_count > 1) {
        std::vector<std::vector<std::string>> shards;
        shards.reserve(c.shards.size());
        for (const auto& shard : c.shards) {
            shards.push_back({Cell(shard.shard), Cell(shard.leader), Cell(shard.epoch), TimeCell(shard.held_since)});
        }
        out += "shards: " + Cell(c.shard_count) + "\n" + RenderTable({"SHARD", "LEADER", "EPOCH", "SINCE"}, shards);
    }
    return out +
           RenderRows({"NODE", "ADDRESS", "STATE", "ALIVE", "STARTED", "LAST HEARTBEAT"}, c.nodes, [&](const auto& n) {
               return TableRow{n.node_id,
                               n.address,
                               n.state,
                               Cell(n.alive),
                               TimeCell(n.started_at_ms),
                               TimeCell(n.last_heartbeat_ms)};
           });
}

void AddClusterCommands(CLI::App& app, CommandLine& line) {
    Options& o = line.options;
    CLI::App* executors = AddFamily(app, "executors", "the executor instances registered by business services");
    AddCommand(*executors, "list", "every instance, alive or not", line, Executors);
    CLI::App* cluster = AddFamily(app, "cluster", "the trigger nodes");
    AddCommand(*cluster, "status", "the leader, its epoch and lease, each shard's leader, then the nodes", line,
               ClusterStatus);

    CLI::App* tokens = AddFamily(app, "tokens", "API tokens (admin)");
    AddCommand(*tokens, "list", "every token (never secrets)", line, TokensList);
    CLI::App* create = AddCommand(*tokens, "create", "a token; prints its secret, only this once", line, TokensCreate);
    AddValue(*create, "--name", o.name, "the token's name");
    AddValue(*create, "--role", o.role, "admin, operator, viewer or executor");
    AddValue(*create, "--apps", o.apps, "an executor token's apps: a,b");
    TakesArguments(*AddCommand(*tokens, "revoke", "revoke a token", line, TokensRevoke), "ID", line, "the token's id");

    CLI::App* audit = AddCommand(app, "audit", "the audit log, newest first", line, Audit);
    AddValue(*audit, "--job", o.job, "a job's name or id: its history");
    AddValue(*audit, "--actor", o.actor, "a token's name");
    AddValue(*audit, "--action", o.action, "create, update, delete, pause, ...");
    AddValue(*audit, "--since", o.since, "a duration back from now (24h) or epoch ms");
    AddValue(*audit, "--limit", o.limit, "at most N entries");
}

}  // namespace sched::ctl
