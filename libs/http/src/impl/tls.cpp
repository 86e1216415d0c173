#include "impl/tls.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>

namespace sched::http::impl {

namespace {

// TLS 1.2 suites: ECDHE key exchange (forward secrecy) with AEAD ciphers only. TLS 1.3 suites
// are all forward-secret and AEAD; OpenSSL's default list for them is kept.
constexpr const char* kTls12Ciphers = "ECDHE+AESGCM:ECDHE+CHACHA20";

// The reason of the most recent OpenSSL error, and an empty queue for the next operation (a
// stale entry would be reported by whatever fails next).
std::string TakeOpenSslError() {
    unsigned long last = 0;
    while (const unsigned long e = ERR_get_error()) last = e;
    if (last == 0) return "unknown OpenSSL error";
    std::array<char, 256> text{};
    ERR_error_string_n(last, text.data(), text.size());
    const char* reason = ERR_reason_error_string(last);
    return reason != nullptr ? reason : text.data();
}

// OpenSSL reports a missing or unreadable file as "system lib"; say which it is instead.
std::string Unreadable(const std::string& file) {
    std::ifstream in(file);
    if (in) return "";
    return std::strerror(errno);
}

// "<key> "<file>": <what>: <OpenSSL's reason>", or "... cannot read: <why>" when the file itself
// cannot be read. Called right after the failed call, while its error is the queue's last.
std::string FileError(const std::string& key, const std::string& file, const std::string& what) {
    const std::string unreadable = Unreadable(file);
    const std::string reason = TakeOpenSslError();
    return key + " \"" + file + "\": " + (unreadable.empty() ? what + ": " + reason : "cannot read: " + unreadable);
}

// Which file failed to load (its option's name) and how.
struct FileFailure {
    std::string key;
    std::string file;
    std::string what;
};

// Loads the certificate chain of `cert_file` and the key of `key_file` into `ctx` and checks that
// they belong together; the first failure, if any, with OpenSSL's error still queued.
std::optional<FileFailure> UseCertificateAndKey(SSL_CTX* ctx, const std::string& cert_file,
                                                const std::string& key_file) {
    if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
        return FileFailure{"cert-file", cert_file, "cannot load the certificate chain"};
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
        return FileFailure{"key-file", key_file, "cannot load the private key"};
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        return FileFailure{"key-file", key_file, "the key does not match cert-file \"" + cert_file + "\""};
    }
    return std::nullopt;
}

void CommonSettings(SSL_CTX* ctx, TlsVersion min_version) {
    SSL_CTX_set_min_proto_version(ctx, min_version == TlsVersion::k1_3 ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_cipher_list(ctx, kTls12Ciphers);
}

}  // namespace

Result<std::shared_ptr<ssl::context>> MakeServerContext(const ServerTlsOptions& options) {
    ERR_clear_error();
    auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
    SSL_CTX* ctx = context->native_handle();
    CommonSettings(ctx, options.min_version);
    // Connections are cheap to re-establish between peers that keep them alive; session tickets
    // would only add a key to rotate and a way around a client-certificate change.
    SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    SSL_CTX_set_num_tickets(ctx, 0);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    const auto fail = [](const std::string& key, const std::string& file, const std::string& what) {
        return InvalidArgument("tls." + FileError(key, file, what));
    };
    if (auto failed = UseCertificateAndKey(ctx, options.cert_file, options.key_file)) {
        return fail(failed->key, failed->file, failed->what);
    }
    if (!options.client_ca_file.empty()) {
        if (SSL_CTX_load_verify_locations(ctx, options.client_ca_file.c_str(), nullptr) != 1) {
            return fail("client-ca-file", options.client_ca_file, "cannot load the CA certificates");
        }
        // The CA names sent in the CertificateRequest, so that a client holding several
        // certificates can pick the right one.
        STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.client_ca_file.c_str());
        if (names == nullptr) return fail("client-ca-file", options.client_ca_file, "no CA certificate in the file");
        SSL_CTX_set_client_CA_list(ctx, names);
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    return context;
}

std::shared_ptr<ssl::context> MakeClientContext(const ClientTlsOptions& options) {
    ERR_clear_error();
    auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
    SSL_CTX* ctx = context->native_handle();
    CommonSettings(ctx, options.min_version);
    const auto fail = [](const std::string& key, const std::string& file, const std::string& what) {
        return std::runtime_error("http-client.tls." + FileError(key, file, what));
    };
    if (!options.ca_file.empty()) {
        if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
            throw fail("ca-file", options.ca_file, "cannot load the CA certificates");
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        throw std::runtime_error("http-client.tls: cannot load the system CA store: " + TakeOpenSslError());
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    if (!options.cert_file.empty()) {
        if (auto failed = UseCertificateAndKey(ctx, options.cert_file, options.key_file)) {
            throw fail(failed->key, failed->file, failed->what);
        }
    }
    return context;
}

bool SetPeerHost(TlsStream& stream, const std::string& host) {
    SSL* ssl = stream.native_handle();
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    // The check runs inside OpenSSL's chain verification (not as ssl::host_name_verification's
    // callback, which refuses without recording why): a mismatch is then reported as
    // X509_V_ERR_HOSTNAME_MISMATCH / IP_ADDRESS_MISMATCH and TlsErrorText can name it.
    boost::system::error_code ec;
    net::ip::make_address(host, ec);
    if (!ec) return X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) == 1;  // no SNI for addresses (RFC 6066)
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return SSL_set1_host(ssl, host.c_str()) == 1 && SSL_set_tlsext_host_name(ssl, host.c_str()) == 1;
}

std::string TlsErrorText(TlsStream& stream, const beast::error_code& ec, bool client_without_cert) {
    if (ec == ssl::error::stream_truncated) return "the peer closed the TLS connection without close_notify";
    if (ec.category() != net::error::get_ssl_category()) return ec.message();
    const auto code = static_cast<unsigned long>(ec.value());
    const char* reason = ERR_reason_error_string(code);
    std::string text = reason != nullptr ? reason : ec.message();
    if (ERR_GET_REASON(code) == SSL_R_CERTIFICATE_VERIFY_FAILED) {
        const long result = SSL_get_verify_result(stream.native_handle());
        if (result != X509_V_OK) text += std::string(": ") + X509_verify_cert_error_string(result);
    }
    // A server that requires a client certificate says so with "certificate required" (TLS 1.3,
    // after our handshake completed) or a bare "handshake failure" (TLS 1.2).
    const int reason_code = ERR_GET_REASON(code);
    if (client_without_cert &&
        (reason_code == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED || reason_code == SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE ||
         reason_code == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE)) {
        text +=
            " (the server refused: no client certificate was presented; set http-client.tls.cert-file and "
            "key-file)";
    }
    return text;
}

}  // namespace sched::http::impl
