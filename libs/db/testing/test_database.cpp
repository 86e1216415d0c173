#include "sched/db/testing/test_database.hpp"

#include <cstdlib>

#include "sched/common/config.hpp"
#include "sched/common/node_id.hpp"
#include "sched/db/migrator.hpp"

namespace sched::db::testing {

Result<std::unique_ptr<TestDatabase>> TestDatabase::Create(Backend backend) {
    std::unique_ptr<TestDatabase> t(new TestDatabase());
    if (backend == Backend::kSqlite) {
        t->temp_dir_ = std::filesystem::temp_directory_path() / ("sched-test-" + RandomHex(12));
        std::filesystem::create_directories(t->temp_dir_);
        t->url_.backend = Backend::kSqlite;
        t->url_.path = (t->temp_dir_ / "scheduler.db").string();
        return t;
    }
    const auto env = EnvOverride("SCHED_TEST_MYSQL_URL");
    if (!env) return Unavailable("SCHED_TEST_MYSQL_URL is not set (scripts/test.sh starts a MariaDB and sets it)");
    auto admin = ParseDbUrl(*env);
    if (!admin.ok()) return InvalidArgument("SCHED_TEST_MYSQL_URL: " + admin.status().message());
    admin->pool = 1;
    t->admin_url_ = *admin;
    auto admin_db = Database::Open(t->admin_url_);
    if (!admin_db.ok()) return admin_db.status();
    const std::string name = "t_" + RandomHex(12);
    auto created = (*admin_db)->Run([&](soci::session& s) { s << "CREATE DATABASE " + name; });
    if (!created.ok()) return created;
    t->url_ = *admin;
    t->url_.database = name;
    t->url_.pool = 8;
    return t;
}

TestDatabase::~TestDatabase() {
    db_.reset();
    std::error_code ec;
    if (!temp_dir_.empty()) std::filesystem::remove_all(temp_dir_, ec);
    if (url_.backend == Backend::kMySql) {
        if (auto admin = Database::Open(admin_url_); admin.ok()) {
            (void)(*admin)->Run([&](soci::session& s) { s << "DROP DATABASE IF EXISTS " + url_.database; });
        }
    }
}

Database& TestDatabase::db() {
    if (!db_) db_ = OpenAnother();
    return *db_;
}

std::shared_ptr<Database> TestDatabase::OpenAnother() const {
    auto db = Database::Open(url_);
    if (!db.ok()) throw std::runtime_error("test database: " + db.status().ToString());
    return *db;
}

void DbTest::SetUp() {
    auto t = TestDatabase::Create(GetParam());
    if (!t.ok()) {
        const char* require = std::getenv("SCHED_REQUIRE_MYSQL");
        if (GetParam() == Backend::kMySql && t.status().code() == Code::kUnavailable &&
            (require == nullptr || std::string(require) != "1")) {
            GTEST_SKIP() << t.status().message();
        }
        FAIL() << "cannot create the test database: " << t.status().ToString();
    }
    test_db_ = std::move(*t);
    if (Migrated()) {
        auto migrated = Migrator(db()).Migrate();
        ASSERT_TRUE(migrated.ok()) << migrated.status().ToString();
    }
    SetUpDatabase();
}

std::string BackendParamName(const ::testing::TestParamInfo<Backend>& info) {
    return info.param == Backend::kMySql ? "MySql" : "Sqlite";
}

}  // namespace sched::db::testing
