#include "sched/common/crypto.hpp"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <memory>
#include <stdexcept>
#include <vector>

namespace sched::crypto {

namespace {

// OpenSSL 3 looks an algorithm up in its providers' tables (under a lock) on every call that
// names it implicitly (EVP_sha256() in EVP_Digest, HMAC()); fetching it once is what crypto(7)
// ("Performance") recommends. Each request a trigger node signs to an executor computes one
// SHA-256 and one HMAC; the signing was 6 % of the nodes' CPU at 1,000 fires/s spread.
// Fetched algorithms are immutable and shared by every thread; they live as long as the process.
const EVP_MD* Sha256Md() {
    static EVP_MD* const md = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
    if (md == nullptr) throw std::runtime_error("libcrypto: SHA2-256 is not available");
    return md;
}

// An HMAC-SHA256 context with its digest set and no key: each MAC starts from a copy of it, so
// the digest is not looked up by name again. The template itself is only ever read (copied).
const EVP_MAC_CTX* HmacSha256Template() {
    static EVP_MAC_CTX* const ctx = [] {
        EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
        EVP_MAC_CTX* made = mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr;
        EVP_MAC_free(mac);  // the context holds its own reference
        char digest[] = "SHA2-256";
        const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                     OSSL_PARAM_construct_end()};
        if (made == nullptr || EVP_MAC_CTX_set_params(made, params) != 1) {
            throw std::runtime_error("libcrypto: HMAC-SHA256 is not available");
        }
        return made;
    }();
    return ctx;
}

}  // namespace

std::array<std::uint8_t, 32> Sha256(std::string_view data) {
    std::array<std::uint8_t, 32> out{};
    unsigned int len = 0;
    // EVP_Digest is the one-shot EVP call: the provider's implementation (SHA-NI where the CPU
    // has it), no context handling here.
    if (EVP_Digest(data.data(), data.size(), out.data(), &len, Sha256Md(), nullptr) != 1 || len != out.size()) {
        throw std::runtime_error("libcrypto: SHA-256 failed");
    }
    return out;
}

std::string HexEncode(std::string_view bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (const char c : bytes) {
        const auto b = static_cast<unsigned char>(c);
        out += kHex[b >> 4];
        out += kHex[b & 0xf];
    }
    return out;
}

std::string Sha256Hex(std::string_view data) {
    const auto digest = Sha256(data);
    return HexEncode(std::string_view(reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string HmacSha256Hex(std::string_view key, std::string_view data) {
    std::array<unsigned char, 32> out{};
    std::size_t len = 0;
    const std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(EVP_MAC_CTX_dup(HmacSha256Template()),
                                                                        &EVP_MAC_CTX_free);
    // An empty key is legal HMAC; OpenSSL wants a non-null pointer for it.
    static constexpr unsigned char kEmpty = 0;
    const auto* key_ptr = key.empty() ? &kEmpty : reinterpret_cast<const unsigned char*>(key.data());
    if (ctx == nullptr || EVP_MAC_init(ctx.get(), key_ptr, key.size(), nullptr) != 1 ||
        EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1 ||
        EVP_MAC_final(ctx.get(), out.data(), &len, out.size()) != 1 || len != out.size()) {
        throw std::runtime_error("libcrypto: HMAC-SHA256 failed");
    }
    return HexEncode(std::string_view(reinterpret_cast<const char*>(out.data()), len));
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    if (a.empty()) return true;
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string RandomHex(std::size_t bytes) {
    std::vector<unsigned char> buf(bytes);
    if (bytes > 0 && RAND_bytes(buf.data(), static_cast<int>(bytes)) != 1) {
        throw std::runtime_error("libcrypto: RAND_bytes failed (no entropy source?)");
    }
    return HexEncode(std::string_view(reinterpret_cast<const char*>(buf.data()), buf.size()));
}

}  // namespace sched::crypto
