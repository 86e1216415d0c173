// The OpenAPI document (libs/web/assets/openapi.json) against the server that serves it: every
// route the server registers is documented with its role, every documented operation is served,
// and the document's enums are the code's.

#include <algorithm>
#include <cctype>
#include <set>

#include "impl/workflows.hpp"
#include "sched/common/config.hpp"
#include "sched/common/job_vocabulary.hpp"
#include "sched/cron/cron_expression.hpp"
#include "sched/model/workflow_progress.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/token.hpp"
#include "sched/web/web_service.hpp"
#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

using http::Method;

std::string Lower(std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// "/ui/{path...}" (router) -> "/ui/{path}" (OpenAPI path template).
std::string DocPath(std::string pattern) {
    for (auto pos = pattern.find("...}"); pos != std::string::npos; pos = pattern.find("...}")) pattern.erase(pos, 3);
    return pattern;
}

class OpenApiTest : public db::testing::DbTest {
  protected:
    void SetUpDatabase() override {
        WebServiceConfig config;
        config.api.token = kClusterToken;
        config.http = http::testing::LoopbackOptions();
        config.database.url = test_db().url();
        config.io_threads = 1;
        config.db_threads = 2;
        service_ = std::make_unique<WebService>(config);
        Status started = service_->Start();
        ASSERT_TRUE(started.ok()) << started.ToString();
        auto doc = client_.Get(Url("/api/v1/openapi.json"));
        ASSERT_TRUE(doc.ok() && doc->status == 200);
        auto parsed = doc->Json();
        ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
        doc_ = *parsed;
    }
    void TearDown() override {
        service_.reset();
        DbTest::TearDown();
    }
    std::string Url(const std::string& path) const {
        return "http://127.0.0.1:" + std::to_string(service_->port()) + path;
    }

    std::unique_ptr<WebService> service_;
    http::testing::BlockingClient client_;
    nlohmann::json doc_;
};

TEST_P(OpenApiTest, EveryServedRouteIsDocumentedWithItsRoleAndEveryDocumentedRouteIsServed) {
    ASSERT_EQ(doc_["openapi"].get<std::string>().rfind("3.", 0), 0u);
    const auto& paths = doc_["paths"];
    std::set<std::pair<std::string, std::string>> served;
    for (const auto& route : service_->routes()) {
        const std::string path = DocPath(route.pattern);
        const std::string method = Lower(http::MethodName(route.method));
        served.insert({path, method});
        ASSERT_TRUE(paths.contains(path)) << "served but not documented: " << path;
        ASSERT_TRUE(paths[path].contains(method)) << "served but not documented: " << method << " " << path;
        const auto& op = paths[path][method];
        EXPECT_EQ(op.value("x-role", ""), PermissionName(route.permission)) << method << " " << path;
        // Public operations say so to OpenAPI tools too; the others inherit the bearer scheme.
        EXPECT_EQ(op.contains("security") && op["security"].empty(), route.permission == Permission::kPublic)
            << method << " " << path;
        if (route.permission != Permission::kPublic) {
            EXPECT_TRUE(op["responses"].contains("401")) << method << " " << path;
            // Any token may call a kAnyToken route: it has no 403 to document.
            EXPECT_EQ(op["responses"].contains("403"), route.permission != Permission::kAnyToken)
                << method << " " << path;
        }
    }
    for (const auto& [path, ops] : paths.items()) {
        for (const auto& [method, op] : ops.items()) {
            if (method == "parameters") continue;
            // The node's own routes (/status) are served by the trigger and standalone apps, which
            // compose this module with a TriggerNode; the web module alone does not serve them.
            if (op.contains("x-served-by")) continue;
            EXPECT_TRUE(served.count({path, method})) << "documented but not served: " << method << " " << path;
        }
    }
}

// The query parameters each route takes (Routes::Add refuses any other) are the ones its
// operation documents, so the document cannot promise a filter the server refuses or hide one.
TEST_P(OpenApiTest, EveryOperationDocumentsTheQueryParametersItsRouteTakes) {
    const auto& shared = doc_["components"].value("parameters", nlohmann::json::object());
    for (const auto& route : service_->routes()) {
        if (route.any_query) continue;
        const std::string path = DocPath(route.pattern);
        const std::string method = Lower(http::MethodName(route.method));
        if (!doc_["paths"].contains(path) || !doc_["paths"][path].contains(method)) continue;  // the test above
        std::set<std::string> documented;
        for (const auto* list : {&doc_["paths"][path], &doc_["paths"][path][method]}) {
            for (auto p : list->value("parameters", nlohmann::json::array())) {
                if (p.contains("$ref")) {
                    const auto ref = p["$ref"].get<std::string>();
                    p = shared.value(ref.substr(ref.rfind('/') + 1), nlohmann::json::object());
                }
                if (p.value("in", "") == "query") documented.insert(p.value("name", ""));
            }
        }
        const std::set<std::string> taken(route.query.begin(), route.query.end());
        EXPECT_EQ(documented, taken) << method << " " << path;
    }
}

TEST_P(OpenApiTest, EveryDocumentedOperationReachesAHandler) {
    // Over HTTP, so this checks the running server itself, not a list it keeps: no documented
    // operation may meet the router's own 404 ("no route") or 405.
    for (const auto& [path, ops] : doc_["paths"].items()) {
        std::string target = path;
        for (const auto& [param, value] :
             {std::pair<std::string, std::string>{"{id}", "1"}, {"{path}", "index.html"}, {"{key}", "k"}}) {
            if (auto pos = target.find(param); pos != std::string::npos) target.replace(pos, param.size(), value);
        }
        for (const auto& [method, op] : ops.items()) {
            if (op.contains("x-served-by")) continue;
            http::ClientRequest req;
            for (const Method m : {Method::kGet, Method::kPost, Method::kPut, Method::kDelete, Method::kPatch}) {
                if (Lower(http::MethodName(m)) == method) req.method = m;
            }
            req.url = Url(target);
            if (req.method == Method::kPost || req.method == Method::kPut) req.body = "{}";
            http::CallOptions call;
            call.bearer_token = kClusterToken;
            auto r = client_.Send(req, call);
            ASSERT_TRUE(r.ok()) << method << " " << target;
            EXPECT_NE(r->status, 405) << method << " " << target << ": " << r->body;
            EXPECT_EQ(r->body.find("no route for"), std::string::npos) << method << " " << target << ": " << r->body;
        }
    }
}

// Client generators name their methods after operationId: every operation has one, unique,
// in lowerCamelCase.
TEST_P(OpenApiTest, EveryOperationHasAUniqueOperationId) {
    std::set<std::string> seen;
    std::size_t operations = 0;
    for (const auto& [path, ops] : doc_["paths"].items()) {
        for (const auto& [method, op] : ops.items()) {
            if (method == "parameters") continue;
            ++operations;
            ASSERT_TRUE(op.contains("operationId")) << method << " " << path;
            const std::string id = op["operationId"];
            EXPECT_TRUE(seen.insert(id).second) << "operationId " << id << " is used twice";
            ASSERT_FALSE(id.empty()) << method << " " << path;
            EXPECT_TRUE(std::islower(static_cast<unsigned char>(id[0]))) << id;
            EXPECT_EQ(id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
                      std::string::npos)
                << id;
        }
    }
    EXPECT_EQ(seen.size(), operations);
}

TEST_P(OpenApiTest, CreatesDocumentLocationAndInternalRoutesAreMarked) {
    std::set<std::string> tags;
    for (const auto& tag : doc_["tags"]) tags.insert(tag["name"].get<std::string>());
    std::size_t internal = 0;
    for (const auto& [path, ops] : doc_["paths"].items()) {
        const bool is_internal = path.rfind("/internal/", 0) == 0;
        for (const auto& [method, op] : ops.items()) {
            if (method == "parameters") continue;
            // Every operation is grouped under a declared tag (generators name clients after them).
            ASSERT_TRUE(op.contains("tags") && !op["tags"].empty()) << method << " " << path;
            for (const auto& tag : op["tags"]) EXPECT_TRUE(tags.count(tag.get<std::string>())) << tag << " " << path;
            // Node-to-node routes say so, and only they do.
            EXPECT_EQ(op.value("x-internal", false), is_internal) << method << " " << path;
            const bool tagged_internal =
                std::find(op["tags"].begin(), op["tags"].end(), nlohmann::json("internal")) != op["tags"].end();
            EXPECT_EQ(tagged_internal, is_internal) << method << " " << path;
            if (is_internal) {
                ++internal;
                EXPECT_TRUE(op.contains("x-served-by")) << method << " " << path;
            }
            if (op["responses"].contains("201")) {
                EXPECT_TRUE(op["responses"]["201"]["headers"].contains("Location")) << method << " " << path;
            }
        }
    }
    EXPECT_EQ(internal, 4u)
        << "POST /internal/v1/fires, /internal/v1/election/nudge, /internal/v1/master/wake and /internal/v1/runs/ended";
    EXPECT_TRUE(doc_["paths"].contains("/status"));
}

TEST_P(OpenApiTest, TheDocumentsEnumsAreTheCodes) {
    const auto& schemas = doc_["components"]["schemas"];
    // The job vocabulary: the document lists each table's names, in its order, for Job and JobInput.
    const auto vocabulary = [&](const char* field, const auto& table) {
        const std::vector<std::string> names(table.names().begin(), table.names().end());
        for (const char* schema : {"Job", "JobInput"}) {
            EXPECT_EQ(schemas[schema]["properties"][field]["enum"].template get<std::vector<std::string>>(), names)
                << schema << "." << field;
        }
    };
    vocabulary("schedule_type", kScheduleTypeNames);
    vocabulary("misfire_policy", kMisfirePolicyNames);
    vocabulary("routing", kRoutingNames);
    vocabulary("block_strategy", kBlockStrategyNames);
    // The enums of codes: `count` names, the name of each code in the codes' order.
    const auto codes = [&](const char* schema, const char* field, std::size_t count, const auto& name_of) {
        const std::vector<std::string> names = schemas[schema]["properties"][field]["enum"];
        ASSERT_EQ(names.size(), count) << schema << "." << field;
        for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(names[i], name_of(i)) << schema << "." << field;
    };
    codes("Fire", "status", 9, [](std::size_t i) { return model::FireStatusName(static_cast<model::FireStatus>(i)); });
    codes("Fire", "kind", 6, [](std::size_t i) { return model::FireKindName(static_cast<model::FireKind>(i)); });
    codes("Fire", "reason", 14, [](std::size_t i) { return model::FireReasonName(static_cast<model::FireReason>(i)); });
    codes("TokenInput", "role", 4, [](std::size_t i) { return store::RoleName(static_cast<store::Role>(i)); });
    // The job schema lists exactly the fields the API accepts on create and update.
    std::set<std::string> input;
    for (const auto& [k, v] : schemas["JobInput"]["properties"].items()) input.insert(k);
    EXPECT_EQ(input.size(), 29u);
    // The DST choices are the cron library's names.
    std::vector<std::string> gaps = schemas["JobInput"]["properties"]["dst_gap"]["enum"];
    ASSERT_EQ(gaps.size(), 3u);
    for (std::size_t i = 0; i < gaps.size(); ++i) EXPECT_EQ(gaps[i], cron::DstGapName(static_cast<cron::DstGap>(i)));
    std::vector<std::string> overlaps = schemas["JobInput"]["properties"]["dst_overlap"]["enum"];
    ASSERT_EQ(overlaps.size(), 4u);
    for (std::size_t i = 0; i < overlaps.size(); ++i) {
        EXPECT_EQ(overlaps[i], cron::DstOverlapName(static_cast<cron::DstOverlap>(i)));
    }
    EXPECT_FALSE(schemas["JobInput"]["additionalProperties"].get<bool>());
}

TEST_P(OpenApiTest, TheWorkflowSchemasAreTheCodes) {
    const auto& schemas = doc_["components"]["schemas"];
    const auto names = [](const auto& table) {
        return std::vector<std::string>(table.names().begin(), table.names().end());
    };
    EXPECT_EQ(schemas["WorkflowEdge"]["properties"]["condition"]["enum"].get<std::vector<std::string>>(),
              names(model::kEdgeConditionNames));
    EXPECT_EQ(schemas["WorkflowRun"]["properties"]["status"]["enum"].get<std::vector<std::string>>(),
              names(model::kWorkflowRunStatusNames));
    EXPECT_EQ(schemas["WorkflowRun"]["properties"]["kind"]["enum"].get<std::vector<std::string>>(),
              names(model::kWorkflowRunKindNames));
    EXPECT_EQ(schemas["WorkflowRunStep"]["properties"]["state"]["enum"].get<std::vector<std::string>>(),
              names(model::kStepStateNames));
    for (const char* field : {"schedule_type", "misfire_policy"}) {
        EXPECT_EQ(schemas["WorkflowInput"]["properties"][field]["enum"],
                  schemas["JobInput"]["properties"][field]["enum"])
            << field;
    }
    // The input schema lists exactly the fields the API reads; Workflow adds the read-only ones.
    std::set<std::string> input;
    for (const auto& [k, v] : schemas["WorkflowInput"]["properties"].items()) input.insert(k);
    EXPECT_EQ(input, std::set<std::string>(impl::kWorkflowFields.begin(), impl::kWorkflowFields.end()));
    std::set<std::string> shape;
    for (const auto& [k, v] : schemas["Workflow"]["properties"].items()) shape.insert(k);
    std::set<std::string> expected(impl::kWorkflowFields.begin(), impl::kWorkflowFields.end());
    expected.insert(impl::kWorkflowReadOnly.begin(), impl::kWorkflowReadOnly.end());
    EXPECT_EQ(shape, expected);
}

SCHED_DB_TEST_SUITE(OpenApiTest);

}  // namespace
}  // namespace sched::web::testing
