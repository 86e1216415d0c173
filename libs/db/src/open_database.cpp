#include "sched/db/open_database.hpp"

#include "sched/db/migrator.hpp"
#include "sched/db/topology.hpp"

namespace sched::db {

Result<std::shared_ptr<Database>> OpenMigrated(const DatabaseConfig& config, const std::function<bool()>& should_stop) {
    auto db = Database::OpenWithRetry(config.url, config.connect_retry_for, should_stop);
    if (!db.ok()) return db.status();
    if ((*db)->backend() == Backend::kMySql) {
        // Leases, fences and claims are compare-and-set rules that hold only on the topology
        // they were written for (topology.hpp): the check comes before anything is written,
        // migrations included.
        auto facts = ReadServerFacts(**db);
        if (!facts.ok()) return Status(facts.status().code(), "database topology: " + facts.status().message());
        if (Status t = CheckTopology(*facts, config.topology); !t.ok()) return t;
        if (config.topology == Topology::kGalera) (*db)->EnableCausalReads();
    }
    auto migrated = Migrator(**db).Migrate();
    if (!migrated.ok()) return Status(migrated.status().code(), "migrate: " + migrated.status().message());
    return db;
}

}  // namespace sched::db
