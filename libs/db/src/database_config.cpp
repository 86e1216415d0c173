#include "sched/db/database_config.hpp"

namespace sched::db {

DatabaseConfig DatabaseConfig::FromYaml(const ConfigNode& node, const std::string& default_url) {
    DatabaseConfig c;
    const std::string text = node.String("url", default_url);
    auto url = ParseDbUrl(text);
    if (!url.ok()) {
        // The parser's messages start with "database url: "; the key path says that already.
        std::string why = url.status().message();
        if (why.rfind("database url: ", 0) == 0) why = why.substr(14);
        throw ConfigError(node.path().empty() ? "url" : node.path() + ".url", why);
    }
    c.url = *url;
    ApplyPasswordFromEnv(c.url);
    c.connect_retry_for = node.Duration("connect-retry-for", c.connect_retry_for, Micros{0}, std::chrono::hours(24));
    const std::string key = node.path().empty() ? "topology" : node.path() + ".topology";
    auto topology = ParseTopology(node.String("topology", std::string(TopologyName(c.topology))));
    if (!topology.ok()) throw ConfigError(key, topology.status().message());
    c.topology = *topology;
    if (c.topology == Topology::kGalera && c.url.backend != Backend::kMySql) {
        throw ConfigError(key, "galera needs a mysql:// database.url");
    }
    return c;
}

}  // namespace sched::db
