#include "sched/http/testing/test_pki.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "sched/common/net.hpp"

namespace sched::http::testing {

namespace {

struct KeyFree {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct CertFree {
    void operator()(X509* c) const { X509_free(c); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;
using CertPtr = std::unique_ptr<X509, CertFree>;

void Check(bool ok, const char* what) {
    if (!ok) throw std::runtime_error(std::string("TestPki: ") + what + " failed");
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str());
    Check(ext != nullptr, value.c_str());
    const int added = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    Check(added == 1, "X509_add_ext");
}

// An unsigned certificate for `key`, issued by `issuer` (by itself when `issuer` is null).
CertPtr MakeCert(EVP_PKEY* key, const std::string& common_name, long serial, X509* issuer, bool expired) {
    CertPtr cert(X509_new());
    Check(cert != nullptr, "X509_new");
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
    constexpr long kDay = 24 * 3600;
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), expired ? -2 * kDay : -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), expired ? -kDay : kDay);
    X509_set_pubkey(cert.get(), key);
    X509_NAME* name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(common_name.c_str()),
                               -1, -1, 0);
    X509_set_issuer_name(cert.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
    return cert;
}

void WritePem(const std::string& path, X509* cert, EVP_PKEY* key) {
    FILE* f = std::fopen(path.c_str(), "w");
    Check(f != nullptr, ("open " + path).c_str());
    const bool ok = cert != nullptr ? PEM_write_X509(f, cert) == 1
                                    : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
    std::fclose(f);
    Check(ok, ("write " + path).c_str());
}

// The one PEM object of the file `path`, read by `read` (PEM_read_PrivateKey, PEM_read_X509).
template <typename Ptr, typename T>
Ptr ReadPem(const std::string& path, T* (*read)(FILE*, T**, pem_password_cb*, void*)) {
    FILE* f = std::fopen(path.c_str(), "r");
    Check(f != nullptr, ("open " + path).c_str());
    Ptr object(read(f, nullptr, nullptr, nullptr));
    std::fclose(f);
    Check(object != nullptr, ("read " + path).c_str());
    return object;
}

}  // namespace

TestPki::TestPki(std::string ca_name) {
    std::string pattern = (std::filesystem::temp_directory_path() / "sched-pki-XXXXXX").string();
    Check(::mkdtemp(pattern.data()) != nullptr, "mkdtemp");
    dir_ = pattern;
    KeyPtr key(EVP_EC_gen("P-256"));
    Check(key != nullptr, "EVP_EC_gen");
    CertPtr cert = MakeCert(key.get(), ca_name, serial_++, nullptr, false);
    AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE");
    AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
    AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash");
    Check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "X509_sign");
    ca_ = {dir_ + "/ca.crt", dir_ + "/ca.key"};
    WritePem(ca_.cert, cert.get(), nullptr);
    WritePem(ca_.key, nullptr, key.get());
}

TestPki::~TestPki() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
}

TestPki::Files TestPki::Issue(const std::string& file_stem, const std::string& common_name,
                              const std::vector<std::string>& alt_names, bool expired) {
    KeyPtr ca_key = ReadPem<KeyPtr>(ca_.key, PEM_read_PrivateKey);
    CertPtr ca_cert = ReadPem<CertPtr>(ca_.cert, PEM_read_X509);
    KeyPtr key(EVP_EC_gen("P-256"));
    Check(key != nullptr, "EVP_EC_gen");
    CertPtr cert = MakeCert(key.get(), common_name, serial_++, ca_cert.get(), expired);
    AddExtension(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE");
    AddExtension(cert.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature");
    AddExtension(cert.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth,clientAuth");
    AddExtension(cert.get(), ca_cert.get(), NID_authority_key_identifier, "keyid");
    if (!alt_names.empty()) {
        std::string san;
        for (const auto& n : alt_names) {
            boost::system::error_code ec;
            net::ip::make_address(n, ec);
            san += (san.empty() ? "" : ",") + std::string(ec ? "DNS:" : "IP:") + n;
        }
        AddExtension(cert.get(), ca_cert.get(), NID_subject_alt_name, san);
    }
    Check(X509_sign(cert.get(), ca_key.get(), EVP_sha256()) > 0, "X509_sign");
    Files files{dir_ + "/" + file_stem + ".crt", dir_ + "/" + file_stem + ".key"};
    WritePem(files.key, nullptr, key.get());
    WritePem(files.cert, cert.get(), nullptr);
    return files;
}

}  // namespace sched::http::testing
