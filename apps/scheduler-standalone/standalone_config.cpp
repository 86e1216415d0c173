#include "standalone_config.hpp"

#include <charconv>

namespace sched::standalone {

std::pair<std::string, unsigned short> ParseListen(const std::string& key, const std::string& value) {
    const auto colon = value.rfind(':');
    const auto bad = [&] {
        return ConfigError(key, "expected host:port like \"127.0.0.1:8080\", got \"" + value + "\"");
    };
    if (colon == std::string::npos || colon == 0) throw bad();
    std::string host = value.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    const std::string port_text = value.substr(colon + 1);
    unsigned int port = 0;
    auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || p != port_text.data() + port_text.size() || port > 65535) throw bad();
    return {host, static_cast<unsigned short>(port)};
}

StandaloneConfig StandaloneConfig::FromYaml(const ConfigNode& root) {
    StandaloneConfig c;
    c.node_id = root.String("node-id", "");
    auto http = root.Child("http");
    std::tie(c.listen_host, c.listen_port) = ParseListen("http.listen", http.String("listen", "127.0.0.1:8080"));
    c.database = db::DatabaseConfig::FromYaml(root.Child("database"), "sqlite://data/scheduler.db");
    c.log = LogConfig::FromYaml(root.Child("log"));
    root.RejectUnknownKeys();
    return c;
}

StandaloneConfig StandaloneConfig::Load(const std::filesystem::path& file) {
    return FromYaml(ConfigNode::LoadFile(file));
}

}  // namespace sched::standalone
