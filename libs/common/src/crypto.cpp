#include "sched/common/crypto.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <memory>
#include <stdexcept>
#include <vector>

namespace sched::crypto {

std::array<std::uint8_t, 32> Sha256(std::string_view data) {
    std::array<std::uint8_t, 32> out{};
    unsigned int len = 0;
    // EVP_Digest is the one-shot EVP call: it picks the provider's implementation (SHA-NI
    // where the CPU has it) and needs no context handling here.
    if (EVP_Digest(data.data(), data.size(), out.data(), &len, EVP_sha256(), nullptr) != 1 || len != out.size()) {
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
    std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
    unsigned int len = 0;
    // An empty key is legal HMAC; OpenSSL wants a non-null pointer for it.
    static constexpr unsigned char kEmpty = 0;
    const void* key_ptr = key.empty() ? static_cast<const void*>(&kEmpty) : static_cast<const void*>(key.data());
    if (HMAC(EVP_sha256(), key_ptr, static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
             data.size(), out.data(), &len) == nullptr ||
        len != 32) {
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
