// Every route's query string is checked against the parameters the route declares (Routes::Add):
// an unknown parameter is a 400 naming it, on every route, before its handler runs.

#include <set>

#include "web_test_base.hpp"

namespace sched::web::testing {
namespace {

class QueryParamsApiTest : public WebApiTest {};

// A concrete path for a route pattern: every {param} filled with something plausible.
std::string Concrete(std::string pattern) {
    for (auto open = pattern.find('{'); open != std::string::npos; open = pattern.find('{')) {
        const auto close = pattern.find('}', open);
        const std::string name = pattern.substr(open + 1, close - open - 1);
        const std::string value = name == "id" ? "1" : name == "path..." ? "index.html" : "demo";
        pattern.replace(open, close - open + 1, value);
    }
    return pattern;
}

TEST_P(QueryParamsApiTest, EveryRouteRefusesAnUnknownQueryParameterNamingIt) {
    std::set<std::string> checked;
    for (const auto& route : routes_) {
        if (route.any_query) continue;  // the UI's static files
        const std::string path = Concrete(route.pattern);
        auto r = Call(route.method, path + "?verbose=1", route.method == http::Method::kGet ? "" : "{}");
        EXPECT_EQ(r.status, 400) << route.pattern << ": " << r.body;
        EXPECT_EQ(ErrorField(r), "verbose") << route.pattern << ": " << r.body;
        // A declared parameter next to an unknown one: still the unknown one is named.
        if (!route.query.empty()) {
            auto mixed = Call(route.method, path + "?" + route.query.front() + "=&verbose=1");
            EXPECT_EQ(ErrorField(mixed), "verbose") << route.pattern << ": " << mixed.body;
        }
        checked.insert(route.pattern);
    }
    // The routes that used to ignore their query string are among them.
    for (const char* pattern :
         {"/api/v1/cluster", "/api/v1/tokens", "/api/v1/whoami", "/api/v1/jobs/{id}", "/api/v1/apps/{app}/signing-keys",
          "/api/v1/jobs/{id}/next", "/api/v1/locks/{key}", "/api/v1/callback"}) {
        EXPECT_TRUE(checked.contains(pattern)) << pattern;
    }
    EXPECT_GT(checked.size(), 40u);
}

TEST_P(QueryParamsApiTest, UnknownParametersAreCheckedOnlyAfterTheToken) {
    // A caller without a valid token learns nothing about a route's parameters.
    EXPECT_EQ(Get("/api/v1/whoami?verbose=1", "").status, 401);
    EXPECT_EQ(Get("/api/v1/whoami?verbose=1", "wrong").status, 401);
    EXPECT_EQ(Get("/api/v1/whoami").status, 200);
}

SCHED_DB_TEST_SUITE(QueryParamsApiTest);

}  // namespace
}  // namespace sched::web::testing
