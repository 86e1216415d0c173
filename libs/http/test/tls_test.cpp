#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "sched/common/testing/config_error.hpp"
#include "sched/http/client.hpp"
#include "sched/http/server.hpp"
#include "sched/http/testing/test_pki.hpp"
#include "sched/http/testing/test_server.hpp"

namespace sched::http {
namespace {

using namespace std::chrono_literals;
using testing::BlockingClient;
using testing::LoopbackOptions;
using testing::TestPki;
using testing::TestServer;
using testing::WaitFor;

Router HelloRouter() {
    Router router;
    router.Add(Method::kGet, "/hello", [](Request&) { return Response::Text("hello over tls\n"); });
    return router;
}

ServerOptions TlsOptions(const TestPki::Files& files) {
    ServerOptions o = LoopbackOptions();
    o.tls.cert_file = files.cert;
    o.tls.key_file = files.key;
    return o;
}

ClientOptions Trusting(const std::string& ca_file) {
    ClientOptions o;
    o.tls.ca_file = ca_file;
    o.connect_timeout = 5s;
    return o;
}

// Trusting(ca_file) that also presents the client certificate `files`.
ClientOptions Presenting(const std::string& ca_file, const TestPki::Files& files) {
    ClientOptions o = Trusting(ca_file);
    o.tls.cert_file = files.cert;
    o.tls.key_file = files.key;
    return o;
}

std::string HttpsUrl(const TestServer& server, const std::string& host = "127.0.0.1") {
    return "https://" + host + ":" + std::to_string(server.port()) + "/hello";
}

// The message of a call expected to fail, or a note that it succeeded.
std::string FailureOf(const Result<ClientResponse>& r) {
    return r.ok() ? "succeeded with " + std::to_string(r->status) : r.status().message();
}

TEST(Tls, RoundTripVerifiesTheServerByIpAndByName) {
    TestPki pki;
    TestServer server(HelloRouter(), TlsOptions(pki.Issue("server", "node-1", {"127.0.0.1", "localhost"})));
    BlockingClient client(Trusting(pki.ca_file()));
    for (const std::string host : {"127.0.0.1", "localhost"}) {
        auto r = client.Get(HttpsUrl(server, host));
        ASSERT_TRUE(r.ok()) << host << ": " << r.status().message();
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->body, "hello over tls\n");
    }
    // Keep-alive works over TLS: the second call to 127.0.0.1 reuses the first connection.
    ASSERT_TRUE(client.Get(HttpsUrl(server)).ok());
    EXPECT_EQ(client.Stats().connections_opened, 2U);
    EXPECT_EQ(client.Stats().connections_reused, 1U);
    EXPECT_EQ(server.Stats().tls_handshake_failures, 0U);
}

TEST(Tls, PlainHttpClientGetsNoResponseFromATlsServer) {
    TestPki pki;
    TestServer server(HelloRouter(), TlsOptions(pki.Issue("server", "node-1", {"127.0.0.1"})));
    BlockingClient client;
    auto r = client.Get("http://127.0.0.1:" + std::to_string(server.port()) + "/hello", {.timeout = 3s});
    EXPECT_FALSE(r.ok() && r->status == 200) << FailureOf(r);
}

TEST(Tls, ServerSignedByAnotherCaIsRefused) {
    TestPki pki;
    TestPki other("another CA");
    TestServer server(HelloRouter(), TlsOptions(pki.Issue("server", "node-1", {"127.0.0.1"})));
    BlockingClient client(Trusting(other.ca_file()));
    auto r = client.Get(HttpsUrl(server));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kUnavailable);
    EXPECT_NE(FailureOf(r).find("certificate verify failed: unable to get local issuer certificate"), std::string::npos)
        << FailureOf(r);
    EXPECT_TRUE(WaitFor([&] { return server.Stats().tls_handshake_failures == 1; }));
}

TEST(Tls, ExpiredServerCertificateIsRefused) {
    TestPki pki;
    TestServer server(HelloRouter(), TlsOptions(pki.Issue("server", "node-1", {"127.0.0.1"}, /*expired=*/true)));
    BlockingClient client(Trusting(pki.ca_file()));
    auto r = client.Get(HttpsUrl(server));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(FailureOf(r).find("certificate verify failed: certificate has expired"), std::string::npos)
        << FailureOf(r);
}

TEST(Tls, CertificateForAnotherHostIsRefused) {
    TestPki pki;
    TestServer server(HelloRouter(), TlsOptions(pki.Issue("server", "node-9", {"node-9.example", "10.9.9.9"})));
    BlockingClient client(Trusting(pki.ca_file()));
    auto by_ip = client.Get(HttpsUrl(server));
    ASSERT_FALSE(by_ip.ok());
    EXPECT_NE(FailureOf(by_ip).find("certificate verify failed: IP address mismatch"), std::string::npos)
        << FailureOf(by_ip);
    auto by_name = client.Get(HttpsUrl(server, "localhost"));
    ASSERT_FALSE(by_name.ok());
    EXPECT_NE(FailureOf(by_name).find("certificate verify failed: hostname mismatch"), std::string::npos)
        << FailureOf(by_name);
}

TEST(Tls, ClientCertificateIsRequiredWhenClientCaIsSet) {
    TestPki pki;
    TestPki other("another CA");
    ServerOptions options = TlsOptions(pki.Issue("server", "node-1", {"127.0.0.1"}));
    options.tls.client_ca_file = pki.ca_file();
    TestServer server(HelloRouter(), options);

    BlockingClient anonymous(Trusting(pki.ca_file()));
    auto refused = anonymous.Get(HttpsUrl(server));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(FailureOf(refused).find("no client certificate was presented"), std::string::npos) << FailureOf(refused);

    BlockingClient stranger(Presenting(pki.ca_file(), other.Issue("client", "stranger", {})));
    auto also_refused = stranger.Get(HttpsUrl(server));
    EXPECT_FALSE(also_refused.ok() && also_refused->status == 200) << FailureOf(also_refused);

    BlockingClient member(Presenting(pki.ca_file(), pki.Issue("client", "cluster", {})));
    auto r = member.Get(HttpsUrl(server));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->status, 200);
}

TEST(Tls, ReloadServesTheNewCertificateToNewConnectionsAndKeepsOpenOnes) {
    TestPki old_pki("old CA");
    TestPki new_pki("new CA");
    const auto files = old_pki.Issue("server", "node-1", {"127.0.0.1"});
    ServerOptions options = TlsOptions(files);
    options.tls.reload_check = 1h;  // only the explicit reload below
    TestServer server(HelloRouter(), options);

    BlockingClient kept(Trusting(old_pki.ca_file()));
    ASSERT_TRUE(kept.Get(HttpsUrl(server)).ok());

    const auto replacement = new_pki.Issue("server", "node-1", {"127.0.0.1"});
    std::filesystem::copy_file(replacement.cert, files.cert, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(replacement.key, files.key, std::filesystem::copy_options::overwrite_existing);
    ASSERT_TRUE(server.ReloadTls().ok());

    // The open keep-alive connection still works with the old certificate...
    auto again = kept.Get(HttpsUrl(server));
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(kept.Stats().connections_reused, 1U);
    // ...while a new connection gets the new one.
    BlockingClient new_trust(Trusting(new_pki.ca_file()));
    auto fresh = new_trust.Get(HttpsUrl(server));
    ASSERT_TRUE(fresh.ok()) << fresh.status().message();
    BlockingClient old_trust(Trusting(old_pki.ca_file()));
    auto stale = old_trust.Get(HttpsUrl(server));
    ASSERT_FALSE(stale.ok());
    EXPECT_NE(FailureOf(stale).find("certificate verify failed"), std::string::npos) << FailureOf(stale);
}

TEST(Tls, ChangedFilesAreReloadedAndABadOneKeepsThePreviousCertificate) {
    TestPki old_pki("old CA");
    TestPki new_pki("new CA");
    const auto files = old_pki.Issue("server", "node-1", {"127.0.0.1"});
    ServerOptions options = TlsOptions(files);
    options.tls.reload_check = 100ms;
    TestServer server(HelloRouter(), options);

    // A broken certificate file: the reload fails naming it and the old certificate stays.
    { std::ofstream(files.cert) << "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"; }
    const Status bad = server.ReloadTls();
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.message().find(files.cert), std::string::npos) << bad.message();
    EXPECT_NE(bad.message().find("tls.cert-file"), std::string::npos) << bad.message();
    BlockingClient old_trust(Trusting(old_pki.ca_file()));
    ASSERT_TRUE(old_trust.Get(HttpsUrl(server)).ok());

    // A good pair written in place is picked up by the modification-time check.
    const auto replacement = new_pki.Issue("server", "node-1", {"127.0.0.1"});
    std::filesystem::copy_file(replacement.key, files.key, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(replacement.cert, files.cert, std::filesystem::copy_options::overwrite_existing);
    EXPECT_TRUE(WaitFor(
        [&] {
            BlockingClient new_trust(Trusting(new_pki.ca_file()));
            return new_trust.Get(HttpsUrl(server)).ok();
        },
        10s, 50ms));
}

TEST(Tls, ReloadAllTlsReloadsEveryTlsServerOfTheProcess) {
    TestPki old_pki("old CA");
    TestPki new_pki("new CA");
    const auto first = old_pki.Issue("first", "node-1", {"127.0.0.1"});
    const auto second = old_pki.Issue("second", "node-2", {"127.0.0.1"});
    ServerOptions one = TlsOptions(first);
    ServerOptions two = TlsOptions(second);
    one.tls.reload_check = two.tls.reload_check = 1h;  // only ReloadAllTls (what SIGHUP calls)
    TestServer a(HelloRouter(), one);
    TestServer b(HelloRouter(), two);
    TestServer plain(HelloRouter());  // no TLS: left alone
    for (const auto* files : {&first, &second}) {
        const auto replacement = new_pki.Issue("next", "node", {"127.0.0.1"});
        std::filesystem::copy_file(replacement.cert, files->cert, std::filesystem::copy_options::overwrite_existing);
        std::filesystem::copy_file(replacement.key, files->key, std::filesystem::copy_options::overwrite_existing);
    }
    ReloadAllTls();
    BlockingClient client(Trusting(new_pki.ca_file()));
    for (const TestServer* server : {&a, &b}) {
        auto r = client.Get(HttpsUrl(*server));
        EXPECT_TRUE(r.ok()) << FailureOf(r);
    }
    EXPECT_TRUE(client.Get(plain.Url("/hello")).ok());
}

TEST(Tls, ServerWithAnUnusableCertificateFailsToStartNamingTheFile) {
    TestPki pki;
    auto files = pki.Issue("server", "node-1", {"127.0.0.1"});
    auto other = pki.Issue("other", "node-2", {"127.0.0.1"});
    ServerOptions options = TlsOptions(files);
    options.tls.key_file = other.key;  // does not match the certificate
    net::io_context io;
    Server server(io.get_executor(), options, HelloRouter());
    try {
        server.Listen();
        FAIL() << "Listen() accepted a key that does not match the certificate";
    } catch (const std::runtime_error& e) {
        // OpenSSL refuses the key as it loads it (it checks it against the certificate).
        EXPECT_NE(std::string(e.what()).find("tls.key-file \"" + other.key + "\": cannot load the private key"),
                  std::string::npos)
            << e.what();
    }
}

TEST(Tls, UnusableClientCaFileFailsTheCallNamingIt) {
    ClientOptions options = Trusting("/nonexistent/ca.pem");
    EXPECT_NE(CheckClientTls(options.tls).message().find("http-client.tls.ca-file \"/nonexistent/ca.pem\""),
              std::string::npos);
    TestPki pki;
    TestServer server(HelloRouter(), TlsOptions(pki.Issue("server", "node-1", {"127.0.0.1"})));
    BlockingClient client(options);
    auto r = client.Get(HttpsUrl(server));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
    EXPECT_NE(FailureOf(r).find("\"/nonexistent/ca.pem\": cannot read: No such file"), std::string::npos)
        << FailureOf(r);
    EXPECT_EQ(server.Stats().connections_accepted, 0U);
}

TEST(TlsOptions, HalfConfiguredPairsAreRefusedNamingTheKey) {
    const auto error_of = [](const std::string& yaml) {
        return sched::testing::ConfigErrorOf(
            [&] { (void)ServerOptions::FromYaml(ConfigNode::LoadString(yaml).Child("http")); });
    };
    EXPECT_EQ(error_of("http:\n  tls:\n    cert-file: a.crt\n").rfind("http.tls.key-file", 0), 0U);
    EXPECT_EQ(error_of("http:\n  tls:\n    key-file: a.key\n").rfind("http.tls.cert-file", 0), 0U);
    EXPECT_EQ(error_of("http:\n  tls:\n    client-ca-file: ca.crt\n").rfind("http.tls.client-ca-file", 0), 0U);
    EXPECT_EQ(error_of("http:\n  tls:\n    cert-file: a\n    key-file: b\n    min-version: \"1.1\"\n")
                  .rfind("http.tls.min-version", 0),
              0U);
    const auto ok = ServerOptions::FromYaml(
        ConfigNode::LoadString("http:\n  tls:\n    cert-file: a\n    key-file: b\n    min-version: \"1.3\"\n")
            .Child("http"));
    EXPECT_TRUE(ok.tls.enabled());
    EXPECT_EQ(ok.tls.min_version, TlsVersion::k1_3);
    const auto client =
        ClientTlsOptions::FromConfig(ConfigNode::LoadString("http-client:\n  tls:\n    ca-file: /etc/sched/ca.crt\n"));
    EXPECT_EQ(client.ca_file, "/etc/sched/ca.crt");
}

}  // namespace
}  // namespace sched::http
