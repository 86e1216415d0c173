#include "sched/store/audit.hpp"

#include "store_test_base.hpp"

namespace sched::store {
namespace {

class AuditRepositoryTest : public StoreTest {
  protected:
    AuditEntry Entry(const std::string& actor, const std::string& action, const std::string& kind,
                     const std::string& id) {
        AuditEntry e;
        e.actor = actor;
        e.actor_role = "operator";
        e.actor_token_id = 7;
        e.action = action;
        e.target_kind = kind;
        e.target_id = id;
        e.target_name = kind + "-" + id;
        return e;
    }
};

TEST_P(AuditRepositoryTest, RecordsAndListsNewestFirstWithBeforeAfter) {
    AuditRepository audit(db());
    auto e = Entry("alice", "update", "job", "1");
    e.before_json = R"({"enabled":true})";
    e.after_json = R"({"enabled":false})";
    auto first = audit.Record(e);
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    auto second = audit.Record(Entry("bob", "delete", "job", "1"));
    ASSERT_TRUE(second.ok());
    auto all = audit.List({});
    ASSERT_TRUE(all.ok()) << all.status().ToString();
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0].id, *second);
    EXPECT_EQ((*all)[0].actor, "bob");
    EXPECT_FALSE((*all)[0].before_json.has_value());
    EXPECT_EQ((*all)[1].before_json, R"({"enabled":true})");
    EXPECT_EQ((*all)[1].after_json, R"({"enabled":false})");
    EXPECT_EQ((*all)[1].actor_role, "operator");
    EXPECT_EQ((*all)[1].actor_token_id, 7);
    EXPECT_EQ((*all)[1].target_name, "job-1");
    EXPECT_GT((*all)[1].at_ms, 1'600'000'000'000);
}

TEST_P(AuditRepositoryTest, FiltersAndCursor) {
    AuditRepository audit(db());
    ASSERT_TRUE(audit.Record(Entry("alice", "create", "job", "1")).ok());
    ASSERT_TRUE(audit.Record(Entry("alice", "pause", "job", "2")).ok());
    ASSERT_TRUE(audit.Record(Entry("bob", "revoke", "token", "1")).ok());
    ASSERT_TRUE(audit.Record(Entry("alice", "resume", "job", "2")).ok());

    AuditFilter f;
    f.target_kind = "job";
    f.target_id = "2";
    auto job2 = audit.List(f);
    ASSERT_EQ(job2->size(), 2u);
    EXPECT_EQ((*job2)[0].action, "resume");
    EXPECT_EQ((*job2)[1].action, "pause");

    AuditFilter by_actor;
    by_actor.actor = "bob";
    EXPECT_EQ(audit.List(by_actor)->size(), 1u);
    AuditFilter by_action;
    by_action.action = "create";
    EXPECT_EQ(audit.List(by_action)->size(), 1u);

    AuditFilter page;
    page.limit = 3;
    auto p1 = audit.List(page);
    ASSERT_EQ(p1->size(), 3u);
    page.before_id = p1->back().id;
    auto p2 = audit.List(page);
    ASSERT_EQ(p2->size(), 1u);
    EXPECT_EQ(p2->front().action, "create");

    AuditFilter future;
    future.since_ms = p1->front().at_ms + 3'600'000;
    EXPECT_TRUE(audit.List(future)->empty());
    AuditFilter past;
    past.until_ms = p1->front().at_ms - 3'600'000;
    EXPECT_TRUE(audit.List(past)->empty());
    AuditFilter window;
    window.since_ms = p1->front().at_ms - 3'600'000;
    window.until_ms = p1->front().at_ms + 3'600'000;
    EXPECT_EQ(audit.List(window)->size(), 4u);
}

TEST_P(AuditRepositoryTest, PurgeBeforeDeletesOldEntriesInBoundedBatches) {
    AuditRepository audit(db());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(audit.Record(Entry("alice", "update", "job", "1")).ok());
    // Age two of them by an hour, as if written long ago.
    auto aged = db().Run([](soci::session& s) {
        s << "UPDATE audit_log SET at_ms = at_ms - 3600000 WHERE id IN (SELECT id FROM (SELECT id FROM audit_log "
             "ORDER BY id LIMIT 3) AS oldest)";
        std::int64_t now = 0;
        s << "SELECT MAX(at_ms) FROM audit_log", soci::into(now);
        return now;
    });
    ASSERT_TRUE(aged.ok()) << aged.status().ToString();
    const std::int64_t cutoff = *aged - 1'800'000;
    auto first = db().InTransaction(db::TxMode::kWrite,
                                    [&](soci::session& s) { return AuditRepository::PurgeBefore(s, cutoff, 2); });
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(*first, 2);
    auto second = db().InTransaction(db::TxMode::kWrite,
                                     [&](soci::session& s) { return AuditRepository::PurgeBefore(s, cutoff, 2); });
    EXPECT_EQ(*second, 1);
    auto third = db().InTransaction(db::TxMode::kWrite,
                                    [&](soci::session& s) { return AuditRepository::PurgeBefore(s, cutoff, 2); });
    EXPECT_EQ(*third, 0);
    EXPECT_EQ(audit.List({})->size(), 2u);
}

SCHED_DB_TEST_SUITE(AuditRepositoryTest);

}  // namespace
}  // namespace sched::store
