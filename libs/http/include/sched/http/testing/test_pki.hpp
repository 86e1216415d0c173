#pragma once

/// Certificates for TLS tests (target sched::http_testing, tests only): a CA and certificates it
/// signs, generated with OpenSSL's C API (EC P-256, SHA-256) and written as PEM files into a
/// fresh temporary directory that the destructor removes.

#include <string>
#include <vector>

namespace sched::http::testing {

class TestPki {
  public:
    /// Creates the directory and a self-signed CA named `ca_name`. Throws std::runtime_error
    /// when OpenSSL or the file system fails.
    explicit TestPki(std::string ca_name = "sched test CA");
    ~TestPki();
    TestPki(const TestPki&) = delete;
    TestPki& operator=(const TestPki&) = delete;

    struct Files {
        std::string cert;  ///< PEM certificate path
        std::string key;   ///< PEM private key path
    };

    /// The CA certificate's path (what a peer trusts).
    const std::string& ca_file() const { return ca_.cert; }
    const std::string& dir() const { return dir_; }

    /// Issues a certificate for `common_name` with `alt_names` as subjectAltName entries (each
    /// an IP address or a DNS name), usable for server and client authentication, valid from an
    /// hour ago for a day; `expired`: valid only from two days ago until yesterday. Written as
    /// `<file_stem>.crt` / `<file_stem>.key` (overwriting a previous pair of that stem).
    Files Issue(const std::string& file_stem, const std::string& common_name, const std::vector<std::string>& alt_names,
                bool expired = false);

  private:
    std::string dir_;
    Files ca_;
    long serial_ = 1;
};

}  // namespace sched::http::testing
