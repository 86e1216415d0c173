#include "sched/common/config.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace sched {

namespace {

std::string Quote(const std::string& s) {
    return "\"" + s + "\"";
}

}  // namespace

ConfigNode::ConfigNode(std::shared_ptr<Document> doc, YAML::Node node, std::string path)
    : doc_(std::move(doc)), node_(std::move(node)), path_(std::move(path)) {}

ConfigNode ConfigNode::LoadFile(const std::filesystem::path& file) {
    std::ifstream in(file);
    if (!in) throw ConfigError("", "cannot read config file " + file.string() + ": " + std::strerror(errno));
    std::stringstream text;
    text << in.rdbuf();
    return LoadString(text.str(), file.string());
}

ConfigNode ConfigNode::LoadString(const std::string& yaml, const std::string& source) {
    auto doc = std::make_shared<Document>();
    doc->source = source;
    try {
        doc->root = YAML::Load(yaml);
    } catch (const YAML::Exception& e) {
        // yaml-cpp's marks are 0-based; editors count from 1.
        throw ConfigError("", source + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                                  ": invalid YAML: " + e.msg);
    }
    if (!doc->root || doc->root.IsNull()) doc->root = YAML::Node(YAML::NodeType::Map);
    if (!doc->root.IsMap()) throw ConfigError("", source + ": the top level must be a map of keys");
    YAML::Node root = doc->root;
    return ConfigNode(std::move(doc), root, "");
}

std::string ConfigNode::ChildPath(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

bool ConfigNode::Has(std::string_view key) const {
    return node_.IsMap() && node_[std::string(key)].IsDefined();
}

std::optional<YAML::Node> ConfigNode::Lookup(std::string_view key) const {
    doc_->read.insert(ChildPath(key));
    if (!node_.IsMap()) return std::nullopt;
    YAML::Node n = node_[std::string(key)];
    // An explicit null ("key:" with nothing after it) means "use the default".
    if (!n.IsDefined() || n.IsNull()) return std::nullopt;
    return n;
}

std::string ConfigNode::Scalar(std::string_view key, const YAML::Node& n) const {
    if (!n.IsScalar()) throw ConfigError(ChildPath(key), "expected a single value, got a list or map");
    return n.Scalar();
}

ConfigNode ConfigNode::Child(std::string_view key) const {
    auto n = Lookup(key);
    if (!n) return ConfigNode(doc_, YAML::Node(YAML::NodeType::Map), ChildPath(key));
    if (!n->IsMap()) throw ConfigError(ChildPath(key), "expected a map of keys");
    return ConfigNode(doc_, *n, ChildPath(key));
}

std::string ConfigNode::String(std::string_view key, const std::string& fallback) const {
    auto n = Lookup(key);
    return n ? Scalar(key, *n) : fallback;
}

std::int64_t ConfigNode::Int(std::string_view key, std::int64_t fallback, std::int64_t min, std::int64_t max) const {
    auto n = Lookup(key);
    if (!n) return fallback;
    const std::string text = Scalar(key, *n);
    const std::string want = "expected an integer in " + std::to_string(min) + ".." + std::to_string(max);
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE) {
        throw ConfigError(ChildPath(key), want + ", got " + Quote(text));
    }
    if (v < min || v > max) throw ConfigError(ChildPath(key), want + ", got " + text);
    return v;
}

bool ConfigNode::Bool(std::string_view key, bool fallback) const {
    auto n = Lookup(key);
    if (!n) return fallback;
    const std::string text = Scalar(key, *n);
    if (text == "true") return true;
    if (text == "false") return false;
    throw ConfigError(ChildPath(key), "expected true or false, got " + Quote(text));
}

Micros ConfigNode::Duration(std::string_view key, Micros fallback, Micros min, Micros max) const {
    auto n = Lookup(key);
    if (!n) return fallback;
    const std::string text = Scalar(key, *n);
    auto d = ParseDuration(text);
    if (!d.ok()) throw ConfigError(ChildPath(key), d.status().message());
    if (*d < min || *d > max) {
        throw ConfigError(ChildPath(key), "expected a duration between " + FormatDuration(min) + " and " +
                                              FormatDuration(max) + ", got " + Quote(text));
    }
    return *d;
}

std::string ConfigNode::Enum(std::string_view key, const std::string& fallback,
                             const std::vector<std::string>& allowed) const {
    const std::string v = String(key, fallback);
    for (const auto& a : allowed) {
        if (a == v) return v;
    }
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    throw ConfigError(ChildPath(key), "expected one of " + list + ", got " + Quote(v));
}

std::vector<std::string> ConfigNode::StringList(std::string_view key, const std::vector<std::string>& fallback) const {
    auto n = Lookup(key);
    if (!n) return fallback;
    if (n->IsScalar()) return {n->Scalar()};
    if (!n->IsSequence()) throw ConfigError(ChildPath(key), "expected a list of strings");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < n->size(); ++i) {
        const YAML::Node item = (*n)[i];
        if (!item.IsScalar()) {
            throw ConfigError(ChildPath(key) + "[" + std::to_string(i) + "]", "expected a string");
        }
        out.push_back(item.Scalar());
    }
    return out;
}

void ConfigNode::CheckUnknown(const YAML::Node& node, const std::string& path) const {
    if (!node.IsMap()) return;
    for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>();
        const std::string full = path.empty() ? key : path + "." + key;
        if (!doc_->read.contains(full)) throw ConfigError(full, "unknown key");
        CheckUnknown(kv.second, full);
    }
}

void ConfigNode::RejectUnknownKeys() const {
    CheckUnknown(node_, path_);
}

std::optional<std::string> EnvOverride(const char* name) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
}

}  // namespace sched
