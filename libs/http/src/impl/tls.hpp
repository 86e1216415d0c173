#pragma once

// OpenSSL contexts and error texts shared by server.cpp and client.cpp (the only files that
// include Asio's SSL layer).

#include <memory>
#include <string>

#include <boost/asio/ssl.hpp>

#include "sched/common/beast.hpp"
#include "sched/common/status.hpp"
#include "sched/http/tls_options.hpp"

namespace sched::http::impl {

namespace ssl = boost::asio::ssl;

/// A TLS stream over a connection's tcp_stream, which stays owned by the connection and keeps
/// applying its timeouts (expires_after) to every read and write the TLS layer makes.
using TlsStream = ssl::stream<beast::tcp_stream&>;

/// A server context with the certificate chain, key and (optional) client CA of `options`.
/// kInvalidArgument names the file that could not be used and OpenSSL's reason.
Result<std::shared_ptr<ssl::context>> MakeServerContext(const ServerTlsOptions& options);

/// A client context verifying peers against options.ca_file (else the system store), with the
/// client certificate when one is configured. Throws std::runtime_error naming the file and the
/// key that could not be used (a start-up error).
std::shared_ptr<ssl::context> MakeClientContext(const ClientTlsOptions& options);

/// Prepares `stream` for a handshake with `host`: SNI (names only) and the check that the
/// certificate names `host` (a DNS name or an IP address). False when OpenSSL refused.
bool SetPeerHost(TlsStream& stream, const std::string& host);

/// The cause of a failed TLS operation in words: the certificate verification result when the
/// handshake failed on it ("certificate verify failed: certificate has expired"), else
/// OpenSSL's reason ("tlsv13 alert certificate required"). `client_without_cert`: this side is
/// a client that has no certificate, so a refusal alert from the server gets a hint saying so.
std::string TlsErrorText(TlsStream& stream, const beast::error_code& ec, bool client_without_cert = false);

}  // namespace sched::http::impl
