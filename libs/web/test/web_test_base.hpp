#pragma once

// A web module on a real HTTP server over a fresh database (SQLite and MariaDB), and a client
// that speaks to it with a chosen token.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sched/db/testing/test_database.hpp"
#include "sched/http/testing/test_server.hpp"
#include "sched/store/fire.hpp"
#include "sched/store/job.hpp"
#include "sched/web/web_api.hpp"

namespace sched::web::testing {

inline constexpr const char* kClusterToken = "cluster-secret";

class WebApiTest : public db::testing::MigratedDbTest {
  protected:
    void SetUpDatabase() override;
    void TearDown() override;
    /// Override to change what the module is built with (called by SetUp).
    virtual WebOptions Options();

    /// A request with `token` ("" = no Authorization header); `body` is sent as is.
    http::ClientResponse Call(http::Method method, const std::string& path, const std::string& body = "",
                              const std::string& token = kClusterToken);
    http::ClientResponse Get(const std::string& path, const std::string& token = kClusterToken) {
        return Call(http::Method::kGet, path, "", token);
    }
    http::ClientResponse Post(const std::string& path, const nlohmann::json& body,
                              const std::string& token = kClusterToken) {
        return Call(http::Method::kPost, path, body.dump(), token);
    }
    http::ClientResponse Put(const std::string& path, const nlohmann::json& body,
                             const std::string& token = kClusterToken) {
        return Call(http::Method::kPut, path, body.dump(), token);
    }
    http::ClientResponse Delete(const std::string& path, const std::string& token = kClusterToken) {
        return Call(http::Method::kDelete, path, "", token);
    }

    /// The response body as JSON (a test failure and null when it is not JSON).
    static nlohmann::json Body(const http::ClientResponse& r);
    /// error.field of an error response ("" when absent or null).
    static std::string ErrorField(const http::ClientResponse& r);
    /// error.field of `r`, a refusal expected to have `status` (a test failure otherwise).
    static std::string RefusedField(const http::ClientResponse& r, int status);

    /// A valid job body: cron every minute, app "demo", handler "echo"; `overrides` win.
    static nlohmann::json JobBody(const std::string& name, const nlohmann::json& overrides = nlohmann::json::object());
    /// Creates a job through the API (asserting 201) and returns its JSON.
    nlohmann::json CreateJob(const std::string& name, const nlohmann::json& overrides = nlohmann::json::object());
    /// Creates an API token with `role` through the API and returns its secret. Executor tokens
    /// get the app scope `apps` (default {"demo"}, the app of JobBody()).
    std::string CreateToken(const std::string& name, const std::string& role,
                            const std::vector<std::string>& apps = {});
    /// Inserts a fire directly and moves it to `status` (pending -> ... by CAS), returning its id.
    std::int64_t InsertFire(std::int64_t job_id, std::int64_t scheduled_time, model::FireStatus status,
                            const std::optional<std::string>& executor_address = std::nullopt);
    /// The database clock, epoch ms.
    std::int64_t DbNowMs();

    std::string Url(const std::string& path) const { return server_->Url(path); }

    net::thread_pool db_pool_{2};
    std::shared_ptr<db::Database> pool_db_;
    std::unique_ptr<http::testing::TestServer> server_;
    std::vector<RouteInfo> routes_;
    http::testing::BlockingClient client_;
};

}  // namespace sched::web::testing
