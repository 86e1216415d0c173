#pragma once

/// TLS settings of sched::http::Server (the `tls:` sub-section of a server section) and of
/// sched::http::HttpClient (the process-wide `http-client.tls:` section). Plain structs: option
/// structs of other components hold them without including Asio, Beast or OpenSSL.

#include <string>

#include "sched/common/config.hpp"
#include "sched/common/duration.hpp"

namespace sched::http {

/// The oldest protocol version a peer may negotiate. Older versions (SSL 3, TLS 1.0, 1.1) are
/// never offered or accepted.
enum class TlsVersion { k1_2, k1_3 };

/// YAML keys of a server's `tls:` section (e.g. `http.tls`), each optional:
///
///     cert-file: ""          # PEM certificate chain (leaf first); set together with key-file
///                            # to serve HTTPS; both empty: plain HTTP
///     key-file: ""           # PEM private key of the certificate
///     client-ca-file: ""     # PEM CA bundle; when set, every client must present a certificate
///                            # signed by it (mutual TLS), else the handshake fails
///     min-version: "1.2"     # "1.2" or "1.3"
///     reload-check: 5s       # how often the files' modification times are compared; a change
///                            # loads them again (as SIGHUP does) for new connections
///
/// Fixed, not configurable: no renegotiation, no compression, TLS 1.2 only with ECDHE
/// (forward-secret) AEAD suites, no session tickets.
struct ServerTlsOptions {
    std::string cert_file;
    std::string key_file;
    std::string client_ca_file;
    TlsVersion min_version = TlsVersion::k1_2;
    Micros reload_check = std::chrono::seconds(5);

    bool enabled() const { return !cert_file.empty(); }

    /// Reads the keys above from `node` (absent keys keep `defaults`). Throws ConfigError
    /// naming the key when only one of cert-file and key-file is set, when client-ca-file is set
    /// without them, or for a bad min-version. The files are read by the server at start.
    static ServerTlsOptions FromYaml(const ConfigNode& node, const ServerTlsOptions& defaults);
};

/// YAML keys of the `http-client.tls:` section, read once per process (ClientTlsOptions::
/// FromConfig) and used by every HttpClient of the process for its https:// URLs:
///
///     ca-file: ""            # PEM CA bundle that server certificates must chain to; empty:
///                            # the system store (/etc/ssl/certs)
///     cert-file: ""          # PEM client certificate, for servers that require one
///                            # (client-ca-file); set together with key-file
///     key-file: ""           # PEM private key of the client certificate
///     min-version: "1.2"     # "1.2" or "1.3"
///     peer-scheme: http      # http or https: how peers known only by host:port are called
///                            # (executors, other trigger nodes); https needs their servers
///                            # to have tls: set. URLs written in full keep their own scheme.
///
/// Peer verification and host-name checking (SNI, and the certificate's names or IP addresses
/// against the URL's host) are always on for https; there is no switch to turn them off.
struct ClientTlsOptions {
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
    TlsVersion min_version = TlsVersion::k1_2;
    bool https_peers = false;  ///< peer-scheme: https

    /// Reads the keys above from `node`. Throws ConfigError naming the key when only one of
    /// cert-file and key-file is set or for a bad min-version.
    static ClientTlsOptions FromYaml(const ConfigNode& node);
    /// The process-wide section: FromYaml(root.Child("http-client").Child("tls")).
    static ClientTlsOptions FromConfig(const ConfigNode& root);
};

}  // namespace sched::http
