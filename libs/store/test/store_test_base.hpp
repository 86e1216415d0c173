#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <soci/soci.h>

#include "sched/db/testing/test_database.hpp"
#include "sched/store/job.hpp"

namespace sched::store {

/// A fresh, migrated database per test, on each backend.
class StoreTest : public db::testing::MigratedDbTest {
  protected:
    /// The statements a MySQL session has run so far (its Questions counter, which counts every
    /// statement, this SHOW included): the difference of two reads less one is what ran between.
    static long long StatementsRun(soci::session& s) {
        std::string name;
        long long value = 0;
        s << "SHOW SESSION STATUS LIKE 'Questions'", soci::into(name), soci::into(value);
        return value;
    }
    /// The rows a MySQL session's `read` examined (its Handler_read_* counters), less what the
    /// SHOW that reads them adds.
    template <typename Read>
    static long long RowsExamined(soci::session& s, Read&& read) {
        const auto handler_reads = [&s] {
            long long sum = 0;
            soci::rowset<soci::row> rows = (s.prepare << "SHOW SESSION STATUS LIKE 'Handler_read%'");
            for (const auto& r : rows) sum += std::stoll(r.get<std::string>(1));
            return sum;
        };
        const long long a = handler_reads();
        const long long overhead = handler_reads() - a;  // the SHOW itself
        const long long before = handler_reads();
        read();
        return handler_reads() - before - overhead;
    }

    /// What `run()` returns, run with the statements it sends on `s` written to `log` (one line
    /// each; the log stream is taken off `s` again whatever happens).
    template <typename F>
    static auto Logged(soci::session& s, std::string& log, F&& run) {
        std::ostringstream out;
        struct Unset {
            soci::session& s;
            ~Unset() { s.set_log_stream(nullptr); }
        } unset{s};
        s.set_log_stream(&out);
        auto result = run();
        log = out.str();
        return result;
    }

    /// A statement `run` ran and SQLite's plan of it (EXPLAIN QUERY PLAN, its details joined by
    /// "; "): SQLite plans without statistics, so its plans are fixed and a test can pin them.
    struct PlannedStatement {
        std::string sql;
        std::string plan;
    };
    /// The SELECTs and UPDATEs `run` ran, in one write transaction, each with its plan.
    std::vector<PlannedStatement> SqlitePlansOf(const std::function<void(soci::session&)>& run) {
        std::ostringstream log;
        auto ran = db().InTransaction(db::TxMode::kWrite, [&](soci::session& s) {
            s.set_log_stream(&log);
            run(s);
            s.set_log_stream(nullptr);
        });
        EXPECT_TRUE(ran.ok()) << ran.ToString();
        std::vector<PlannedStatement> out;
        std::istringstream lines(log.str());
        for (std::string sql; std::getline(lines, sql);) {
            if (sql.rfind("UPDATE", 0) != 0 && sql.rfind("SELECT", 0) != 0) continue;
            std::string plan;
            auto explained = db().Run([&](soci::session& s) {
                soci::rowset<soci::row> rows = (s.prepare << "EXPLAIN QUERY PLAN " + sql);
                for (const auto& row : rows) plan += row.get<std::string>(3) + "; ";
            });
            EXPECT_TRUE(explained.ok()) << explained.ToString() << " for " << sql;
            out.push_back({sql, plan});
        }
        return out;
    }

    /// `job` as created (JobRepository::Create); a failure is reported and gives a job of id 0.
    model::Job CreateJob(const model::Job& job) {
        auto created = JobRepository(db()).Create(job);
        EXPECT_TRUE(created.ok()) << created.status().ToString();
        return created.ok() ? *created : model::Job{};
    }

    /// A manual job `name` of `app` (handler "echo"); its id, 0 if it could not be created.
    std::int64_t CreateManualJob(const std::string& name, const std::string& app) {
        return CreateJob({.name = name, .app = app, .handler = "echo", .schedule_type = sched::ScheduleType::kManual})
            .id;
    }
};

}  // namespace sched::store
