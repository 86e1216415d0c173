// Hardening against the real scheduler-standalone binary: hostile JSON on
// every body route (web, trigger node), lines that never end, and log injection. Set
// SCHED_HARDENING_STANDALONE_BIN to run the same checks against another build.

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sched/common/node_id.hpp"
#include "sched/common/testing/child_process.hpp"
#include "sched/http/testing/test_server.hpp"

#include "../support/scratch_dir.hpp"

namespace sched {
namespace {

using namespace std::chrono_literals;
using http::testing::RawConnection;
using testing::ChildProcess;
using testing::HttpCall;
using testing::PeakRss;

constexpr std::size_t kMiB = 1024 * 1024;

std::string Binary() {
    const char* other = std::getenv("SCHED_HARDENING_STANDALONE_BIN");
    return other != nullptr && *other != '\0' ? other : SCHED_STANDALONE_BIN;
}

std::string Nested(std::size_t depth) {
    return std::string(depth, '[') + std::string(depth, ']');
}

std::string JobBody(const std::string& name, const std::string& params_json) {
    return R"({"name":)" + nlohmann::json(name).dump() +
           R"(,"app":"a","handler":"h","schedule_type":"manual","params":)" + params_json + "}";
}

std::string MessageOf(const std::string& body) {
    const auto j = nlohmann::json::parse(body, nullptr, false);
    if (!j.is_object() || !j.contains("error") || !j["error"]["message"].is_string()) return "";
    return j["error"]["message"];
}

class HardeningProcess : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto config = dir_ / "standalone.yaml";
        std::ofstream(config) << "token: \"" << kToken << "\"\nhttp:\n  listen: \"127.0.0.1:0\"\n  access-log: all\n"
                              << "database:\n  url: \"sqlite://" << (dir_ / "s.db").string()
                              << "\"\nlog:\n  level: info\n";
        process_ = std::make_unique<ChildProcess>(std::vector<std::string>{Binary(), "--config", config.string()},
                                                  dir_.string());
        port_ = ListeningPort(*process_, 20s);
        ASSERT_NE(port_, 0) << process_->stderr_text();
    }
    void TearDown() override {
        if (process_) (void)process_->Stop(10s);
        process_.reset();
    }

    bool Alive() { return !process_->WaitForExit(1ms).has_value(); }
    std::pair<int, std::string> Call(const std::string& method, const std::string& target, const std::string& body) {
        return HttpCall(port_, method, target, body, kToken);
    }

    static constexpr const char* kToken = "hardening-test-token-0123456789";
    testing::ScratchDir scratch_{"sched-hardening-"};
    const std::filesystem::path& dir_ = scratch_.path();
    std::unique_ptr<ChildProcess> process_;
    unsigned short port_ = 0;
};

TEST_F(HardeningProcess, DeepNestingOnEveryJsonBodyRouteIs400AndTheProcessStaysUp) {
    auto [created, job] = Call("POST", "/api/v1/jobs", JobBody("ok", "{}"));
    ASSERT_EQ(created, 201) << job;
    const std::string job_id = std::to_string(nlohmann::json::parse(job)["id"].get<std::int64_t>());

    // The case that used to overflow the stack first: 70,000 levels in `params` of POST and PUT /api/v1/jobs.
    auto [post, post_body] = Call("POST", "/api/v1/jobs", JobBody("x", Nested(70'000)));
    EXPECT_EQ(post, 400) << post_body.substr(0, 300);
    ASSERT_TRUE(Alive()) << "killed by POST /api/v1/jobs\n" << process_->stderr_text();

    // Then every POST/PUT/PATCH route the API documents, and the trigger node's internal routes.
    auto [spec_status, spec_text] = testing::HttpGet(port_, "/api/v1/openapi.json");
    ASSERT_EQ(spec_status, 200);
    const auto spec = nlohmann::json::parse(spec_text);
    struct Route {
        std::string method;
        std::string target;
        bool reads_body;  // the spec's requestBody; the others must ignore the body harmlessly
    };
    std::vector<Route> routes = {{"POST", "/internal/v1/fires", true}};
    for (const auto& [path, methods] : spec["paths"].items()) {
        for (const auto& [method, op] : methods.items()) {
            if (method != "post" && method != "put" && method != "patch") continue;
            std::string target = std::regex_replace(path, std::regex(R"(\{id\})"), job_id);
            target = std::regex_replace(target, std::regex(R"(\{[a-z_]+\})"), "k1");
            std::string upper = method;
            for (auto& c : upper) c = static_cast<char>(std::toupper(c));
            routes.push_back({upper, target, op.contains("requestBody")});
        }
    }
    ASSERT_GE(routes.size(), 10u);
    const std::string deep = Nested(100'000);
    const std::string bodies[] = {JobBody("x", deep), R"({"fire_ids":)" + deep + "}", deep};
    int checked = 0;
    for (const auto& [method, target, reads_body] : routes) {
        for (const auto& body : bodies) {
            auto [status, answer] = Call(method, target, body);
            if (reads_body) {
                ++checked;
                EXPECT_EQ(status, 400) << method << " " << target << ": " << answer.substr(0, 300);
                EXPECT_NE(MessageOf(answer).find("nesting deeper than 64 levels"), std::string::npos)
                    << method << " " << target << ": " << answer.substr(0, 300);
            } else {
                EXPECT_LT(status, 500) << method << " " << target << ": " << answer.substr(0, 300);
            }
            ASSERT_TRUE(Alive()) << "killed by " << method << " " << target << "\n" << process_->stderr_text();
        }
    }
    EXPECT_GE(checked, 3 * 12);
    EXPECT_EQ(testing::HttpGet(port_, "/healthz").first, 200);
}

TEST_F(HardeningProcess, NumberOutOfRangeIs400NamingTheField) {
    auto [status, body] = Call("POST", "/api/v1/jobs", JobBody("x", R"({"x":1e309})"));
    EXPECT_EQ(status, 400) << body;
    EXPECT_EQ(MessageOf(body), "params.x: number out of range (1e309)") << body;
    auto [fires, fires_body] = Call("POST", "/internal/v1/fires", R"({"fire_ids":[1,1e309]})");
    EXPECT_EQ(fires, 400) << fires_body;
    EXPECT_EQ(MessageOf(fires_body), "body: fire_ids[1]: number out of range (1e309)") << fires_body;
    auto [bad, bad_body] = Call("POST", "/api/v1/jobs", R"({"name":"x",)");
    EXPECT_EQ(bad, 400);
    EXPECT_EQ(bad_body.find("json.exception"), std::string::npos) << bad_body;
}

TEST_F(HardeningProcess, UnterminatedChunkLinesEndTheConnectionAndMemoryStaysFlat) {
    const std::string head = "POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    const std::pair<const char*, std::string> cases[] = {
        {"chunk-size line", head + "1"},
        {"chunk extension", head + "5;ext="},
        {"trailer", head + "2\r\n{}\r\n0\r\nX-Trailer: "},
    };
    const std::string filler(64 * 1024, '0');
    for (const auto& [what, prefix] : cases) {
        const std::size_t before = PeakRss(process_->pid());
        ASSERT_GT(before, 0u);
        RawConnection raw(port_);
        auto reader = std::async(std::launch::async, [&raw] { return raw.ReadUntilClose(30s); });
        std::size_t sent = 0;
        if (raw.TrySend(prefix)) {
            while (sent < 50 * kMiB && raw.TrySend(filler)) {
                sent += filler.size();
                if (reader.wait_for(0s) == std::future_status::ready) break;
            }
        }
        const std::string answer = reader.get();
        EXPECT_EQ(answer.rfind("HTTP/1.1 4", 0), 0u) << what << " (" << sent << " bytes sent): " << answer;
        EXPECT_LT(PeakRss(process_->pid()), before + 20 * kMiB) << what << " after " << sent << " bytes";
        ASSERT_TRUE(Alive()) << process_->stderr_text();
    }
    EXPECT_EQ(testing::HttpGet(port_, "/healthz").first, 200);
}

TEST_F(HardeningProcess, ControlCharactersInAJobNameAreEscapedInTheLog) {
    static constexpr char kName[] = "evil\nFORGED 2024-01-01 00:00:00.000 info  [1] web: ok\r\0end";
    const std::string name(kName, sizeof kName - 1);
    auto [status, body] = Call("POST", "/api/v1/jobs", JobBody(name, "{}"));
    ASSERT_EQ(status, 201) << body;
    // The access log writes its line after the response; poll the log for the job's line.
    (void)process_->WaitForStderrLine("FORGED", 2s);
    const std::string& log = process_->stderr_text();
    EXPECT_NE(log.find("evil\\nFORGED 2024-01-01 00:00:00.000 info  [1] web: ok\\r\\x00end"), std::string::npos) << log;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
        EXPECT_NE(line.rfind("FORGED", 0), 0u) << "a forged log line: " << line;
        EXPECT_EQ(line.find('\0'), std::string::npos) << line;
        EXPECT_EQ(line.find('\r'), std::string::npos) << line;
    }
}

TEST_F(HardeningProcess, AccessLogOmitsTheQueryString) {
    EXPECT_EQ(testing::HttpGet(port_, "/api/v1/jobs?token=leaked-secret&limit=1").first, 401);
    (void)process_->WaitForStderrLine("\"GET /api/v1/jobs\"", 2s);
    EXPECT_NE(process_->stderr_text().find("\"GET /api/v1/jobs\" 401"), std::string::npos) << process_->stderr_text();
    EXPECT_EQ(process_->stderr_text().find("leaked-secret"), std::string::npos) << process_->stderr_text();
}

}  // namespace
}  // namespace sched
