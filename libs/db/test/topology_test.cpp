#include "sched/db/topology.hpp"

#include <gtest/gtest.h>

#include "sched/db/database_config.hpp"

namespace sched::db {
namespace {

ServerFacts Single() {
    ServerFacts f;
    f.binlog_format = "ROW";
    return f;
}

ServerFacts GaleraNode(std::string cluster = "Primary", std::string state = "Synced") {
    ServerFacts f = Single();
    f.wsrep_on = true;
    f.log_bin = true;
    f.wsrep_cluster_status = std::move(cluster);
    f.wsrep_local_state = std::move(state);
    return f;
}

void ExpectRefused(const ServerFacts& f, Topology declared, const std::string& says) {
    const Status s = CheckTopology(f, declared);
    EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
    EXPECT_NE(s.message().find(says), std::string::npos) << s.message();
}

TEST(CheckTopology, AWritableSingleServerAndASyncedPrimaryGaleraNodeAsDeclaredPass) {
    EXPECT_TRUE(CheckTopology(Single(), Topology::kSingle).ok());
    EXPECT_TRUE(CheckTopology(GaleraNode(), Topology::kGalera).ok());
    EXPECT_TRUE(CheckServing(GaleraNode(), Topology::kGalera).ok());
}

TEST(CheckTopology, EachBrokenRuleIsRefusedWithWhatWasFoundAndWhatToDo) {
    ServerFacts read_only = Single();
    read_only.read_only = true;
    ExpectRefused(read_only, Topology::kSingle, "read_only = ON");
    ExpectRefused(read_only, Topology::kSingle, "writable primary");

    ServerFacts replica = Single();
    replica.replica = true;
    ExpectRefused(replica, Topology::kSingle, "replica");

    ExpectRefused(GaleraNode(), Topology::kSingle, "declare database.topology: galera");
    ExpectRefused(Single(), Topology::kGalera, "not a Galera node");
    ExpectRefused(GaleraNode("non-Primary"), Topology::kGalera, "wsrep_cluster_status = non-Primary");
    ExpectRefused(GaleraNode("Primary", "Joined"), Topology::kGalera, "not Synced");

    ServerFacts statement = Single();
    statement.log_bin = true;
    statement.binlog_format = "STATEMENT";
    ExpectRefused(statement, Topology::kSingle, "binlog_format = ROW");
    statement.log_bin = false;  // not logged: nothing to refuse
    EXPECT_TRUE(CheckTopology(statement, Topology::kSingle).ok());
}

TEST(CheckServing, AGaleraNodeOutsideThePrimaryComponentIsNotReady) {
    const Status s = CheckServing(GaleraNode("non-Primary"), Topology::kGalera);
    EXPECT_EQ(s.code(), Code::kUnavailable);
    EXPECT_NE(s.message().find("primary component"), std::string::npos) << s.message();
    EXPECT_EQ(CheckServing(GaleraNode("Primary", "Donor/Desynced"), Topology::kGalera).code(), Code::kUnavailable);
}

TEST(DatabaseConfig, TopologyIsReadAndCheckedAgainstTheUrl) {
    auto root = ConfigNode::LoadString("database:\n  url: \"mysql://u@h/db\"\n  topology: galera\n");
    EXPECT_EQ(DatabaseConfig::FromYaml(root.Child("database"), "").topology, Topology::kGalera);
    auto plain = ConfigNode::LoadString("database:\n  url: \"mysql://u@h/db\"\n");
    EXPECT_EQ(DatabaseConfig::FromYaml(plain.Child("database"), "").topology, Topology::kSingle);
    auto sqlite = ConfigNode::LoadString("database:\n  url: \"sqlite://x.db\"\n  topology: galera\n");
    EXPECT_THROW(DatabaseConfig::FromYaml(sqlite.Child("database"), ""), ConfigError);
    auto bad = ConfigNode::LoadString("database:\n  url: \"mysql://u@h/db\"\n  topology: multi\n");
    try {
        (void)DatabaseConfig::FromYaml(bad.Child("database"), "");
        ADD_FAILURE() << "topology: multi accepted";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find("database.topology"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace sched::db
