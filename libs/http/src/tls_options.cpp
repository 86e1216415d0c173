#include "sched/http/tls_options.hpp"

namespace sched::http {

namespace {

std::string KeyPath(const ConfigNode& node, const std::string& key) {
    return node.path().empty() ? key : node.path() + "." + key;
}

TlsVersion ReadVersion(const ConfigNode& node, TlsVersion fallback) {
    const std::string v = node.Enum("min-version", fallback == TlsVersion::k1_3 ? "1.3" : "1.2", {"1.2", "1.3"});
    return v == "1.3" ? TlsVersion::k1_3 : TlsVersion::k1_2;
}

// A certificate without its key (or the reverse) is a half-done configuration: refusing it at
// start beats serving plain HTTP or presenting no client certificate by surprise.
void RequirePair(const ConfigNode& node, const std::string& cert, const std::string& key) {
    if (cert.empty() && !key.empty()) throw ConfigError(KeyPath(node, "cert-file"), "required when key-file is set");
    if (!cert.empty() && key.empty()) throw ConfigError(KeyPath(node, "key-file"), "required when cert-file is set");
}

}  // namespace

ServerTlsOptions ServerTlsOptions::FromYaml(const ConfigNode& node, const ServerTlsOptions& defaults) {
    ServerTlsOptions o = defaults;
    o.cert_file = node.String("cert-file", o.cert_file);
    o.key_file = node.String("key-file", o.key_file);
    o.client_ca_file = node.String("client-ca-file", o.client_ca_file);
    o.min_version = ReadVersion(node, o.min_version);
    o.reload_check = node.Duration("reload-check", o.reload_check, std::chrono::milliseconds(100));
    RequirePair(node, o.cert_file, o.key_file);
    if (!o.client_ca_file.empty() && o.cert_file.empty()) {
        throw ConfigError(KeyPath(node, "client-ca-file"), "needs cert-file and key-file (it only applies to TLS)");
    }
    return o;
}

ClientTlsOptions ClientTlsOptions::FromYaml(const ConfigNode& node) {
    ClientTlsOptions o;
    o.ca_file = node.String("ca-file", o.ca_file);
    o.cert_file = node.String("cert-file", o.cert_file);
    o.key_file = node.String("key-file", o.key_file);
    o.min_version = ReadVersion(node, o.min_version);
    o.https_peers = node.Enum("peer-scheme", "http", {"http", "https"}) == "https";
    RequirePair(node, o.cert_file, o.key_file);
    return o;
}

ClientTlsOptions ClientTlsOptions::FromConfig(const ConfigNode& root) {
    return FromYaml(root.Child("http-client").Child("tls"));
}

}  // namespace sched::http
