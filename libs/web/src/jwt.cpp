#include "sched/web/jwt.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include <array>
#include <vector>

#include "sched/http/message.hpp"

namespace sched::web {

namespace {

enum class KeyType { kRsa, kEcP256 };

struct Key {
    std::string kid;
    KeyType type = KeyType::kRsa;
    std::optional<std::string> alg;  // the key's own "alg", when it names one
    std::shared_ptr<EVP_PKEY> pkey;
};

// A JWS part is never legitimately larger than the token; a key's numbers not larger than an
// 8192-bit modulus.
constexpr std::size_t kMaxKeyNumberBytes = 1024;
constexpr int kMinRsaBits = 2048;

int Base64Value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

struct PkeyFree {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};

// EVP_PKEY_fromdata for RSA (n, e big-endian) or EC P-256 (uncompressed point).
std::shared_ptr<EVP_PKEY> FromData(const char* type, OSSL_PARAM_BLD* bld) {
    OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
    if (params == nullptr) return nullptr;
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
    EVP_PKEY* pkey = nullptr;
    if (ctx != nullptr && EVP_PKEY_fromdata_init(ctx) == 1) {
        if (EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1) pkey = nullptr;
    }
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    return std::shared_ptr<EVP_PKEY>(pkey, PkeyFree());
}

std::shared_ptr<EVP_PKEY> RsaKey(const std::string& n, const std::string& e) {
    BIGNUM* bn_n = BN_bin2bn(reinterpret_cast<const unsigned char*>(n.data()), static_cast<int>(n.size()), nullptr);
    BIGNUM* bn_e = BN_bin2bn(reinterpret_cast<const unsigned char*>(e.data()), static_cast<int>(e.size()), nullptr);
    OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
    std::shared_ptr<EVP_PKEY> key;
    if (bn_n != nullptr && bn_e != nullptr && bld != nullptr &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) == 1 &&
        OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) == 1) {
        key = FromData("RSA", bld);
    }
    OSSL_PARAM_BLD_free(bld);
    BN_free(bn_n);
    BN_free(bn_e);
    return key;
}

std::shared_ptr<EVP_PKEY> EcP256Key(const std::string& x, const std::string& y) {
    std::string point = "\x04" + x + y;
    OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
    std::shared_ptr<EVP_PKEY> key;
    if (bld != nullptr && OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) == 1 &&
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()) == 1) {
        key = FromData("EC", bld);
    }
    OSSL_PARAM_BLD_free(bld);
    // fromdata does not check that the point lies on the curve; a public-key check does.
    if (key) {
        EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_pkey(nullptr, key.get(), nullptr);
        const bool on_curve = ctx != nullptr && EVP_PKEY_public_check(ctx) == 1;
        EVP_PKEY_CTX_free(ctx);
        if (!on_curve) key.reset();
    }
    return key;
}

// The raw r||s of a JWS ES256 signature as the DER ECDSA-Sig-Value OpenSSL verifies.
std::optional<std::string> EcdsaRawToDer(std::string_view raw) {
    if (raw.size() != 64) return std::nullopt;
    ECDSA_SIG* sig = ECDSA_SIG_new();
    BIGNUM* r = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()), 32, nullptr);
    BIGNUM* s = BN_bin2bn(reinterpret_cast<const unsigned char*>(raw.data()) + 32, 32, nullptr);
    if (sig == nullptr || r == nullptr || s == nullptr || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(sig);
        return std::nullopt;
    }
    unsigned char* der = nullptr;
    const int len = i2d_ECDSA_SIG(sig, &der);
    ECDSA_SIG_free(sig);  // owns r and s now
    if (len <= 0) return std::nullopt;
    std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(len));
    OPENSSL_free(der);
    return out;
}

bool DigestVerify(EVP_PKEY* pkey, std::string_view data, std::string_view signature) {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    bool ok = ctx != nullptr && EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr, pkey) == 1 &&
              EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                               reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

Status Refuse(std::string message) {
    return Status(Code::kUnauthenticated, std::move(message));
}

// A NumericDate claim: an integer (or a number with a fraction, truncated), or nullopt.
std::optional<std::int64_t> NumericDate(const nlohmann::json& payload, const char* name) {
    const auto it = payload.find(name);
    if (it == payload.end()) return std::nullopt;
    if (it->is_number_integer()) return it->get<std::int64_t>();
    if (it->is_number_float()) {
        const double v = it->get<double>();
        if (v > -1e15 && v < 1e15) return static_cast<std::int64_t>(v);
    }
    return std::nullopt;
}

}  // namespace

struct JwkSet::Impl {
    std::vector<Key> keys;
};

JwkSet::JwkSet() : impl_(std::make_shared<const Impl>()) {}

std::size_t JwkSet::size() const {
    return impl_->keys.size();
}

bool JwkSet::HasKey(std::string_view kid) const {
    for (const auto& k : impl_->keys) {
        if (k.kid == kid) return true;
    }
    return false;
}

std::optional<std::string> Base64UrlDecode(std::string_view text, std::size_t max_bytes) {
    if (text.size() > max_bytes) return std::nullopt;
    while (!text.empty() && text.back() == '=') text.remove_suffix(1);
    if (text.size() % 4 == 1) return std::nullopt;
    std::string out;
    out.reserve(text.size() * 3 / 4);
    std::uint32_t acc = 0;
    int bits = 0;
    for (const char c : text) {
        const int v = Base64Value(c);
        if (v < 0) return std::nullopt;
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += static_cast<char>((acc >> bits) & 0xff);
        }
    }
    return out;
}

std::string Base64UrlEncode(std::string_view bytes) {
    static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    out.reserve((bytes.size() * 4 + 2) / 3);
    std::uint32_t acc = 0;
    int bits = 0;
    for (const char c : bytes) {
        acc = (acc << 8) | static_cast<unsigned char>(c);
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out += kAlphabet[(acc >> bits) & 0x3f];
        }
    }
    if (bits > 0) out += kAlphabet[(acc << (6 - bits)) & 0x3f];
    return out;
}

Result<JwkSet> JwkSet::Parse(std::string_view json, const JwtLimits& limits) {
    if (json.size() > limits.max_jwks_bytes) {
        return InvalidArgument("jwks: larger than " + std::to_string(limits.max_jwks_bytes) + " bytes");
    }
    auto doc = http::ParseJson(json, http::JsonLimits{.max_depth = 8});
    if (!doc.ok()) return InvalidArgument("jwks: " + doc.status().message());
    if (!doc->is_object() || !doc->contains("keys") || !(*doc)["keys"].is_array()) {
        return InvalidArgument("jwks: expected an object with a \"keys\" array");
    }
    const auto& list = (*doc)["keys"];
    if (list.size() > limits.max_keys) {
        return InvalidArgument("jwks: more than " + std::to_string(limits.max_keys) + " keys");
    }
    auto impl = std::make_shared<Impl>();
    for (std::size_t i = 0; i < list.size(); ++i) {
        const auto& k = list[i];
        const std::string where = "jwks: keys[" + std::to_string(i) + "]";
        if (!k.is_object()) return InvalidArgument(where + ": expected an object");
        const auto str = [&](const char* name) -> std::optional<std::string> {
            const auto it = k.find(name);
            if (it == k.end() || !it->is_string()) return std::nullopt;
            return it->get<std::string>();
        };
        if (auto use = str("use"); use && *use != "sig") continue;
        const auto kty = str("kty");
        if (!kty) return InvalidArgument(where + ".kty: required");
        Key key;
        key.kid = str("kid").value_or("");
        key.alg = str("alg");
        const auto number = [&](const char* name) -> Result<std::string> {
            auto text = str(name);
            if (!text) return InvalidArgument(where + "." + name + ": required");
            auto bytes = Base64UrlDecode(*text, kMaxKeyNumberBytes * 4 / 3 + 4);
            if (!bytes || bytes->empty()) return InvalidArgument(where + "." + name + ": not base64url");
            return *bytes;
        };
        if (*kty == "RSA") {
            auto n = number("n");
            if (!n.ok()) return n.status();
            auto e = number("e");
            if (!e.ok()) return e.status();
            key.type = KeyType::kRsa;
            key.pkey = RsaKey(*n, *e);
            if (!key.pkey) return InvalidArgument(where + ": not a valid RSA public key");
            if (EVP_PKEY_get_bits(key.pkey.get()) < kMinRsaBits) {
                return InvalidArgument(where + ": RSA keys need at least " + std::to_string(kMinRsaBits) + " bits");
            }
        } else if (*kty == "EC") {
            if (str("crv").value_or("") != "P-256") continue;  // ES384/ES512 keys: not ours to use
            auto x = number("x");
            if (!x.ok()) return x.status();
            auto y = number("y");
            if (!y.ok()) return y.status();
            if (x->size() != 32 || y->size() != 32) return InvalidArgument(where + ": P-256 x and y are 32 bytes");
            key.type = KeyType::kEcP256;
            key.pkey = EcP256Key(*x, *y);
            if (!key.pkey) return InvalidArgument(where + ": not a point on P-256");
        } else {
            continue;
        }
        impl->keys.push_back(std::move(key));
    }
    JwkSet set;
    set.impl_ = std::move(impl);
    return set;
}

Result<nlohmann::json> VerifyJwt(std::string_view token, const JwkSet& keys, const JwtCheck& check,
                                 const JwtLimits& limits) {
    if (token.size() > limits.max_token_bytes) {
        return Refuse("token: longer than " + std::to_string(limits.max_token_bytes) + " bytes");
    }
    const auto dot1 = token.find('.');
    const auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
    if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
        return Refuse("token: expected three base64url parts separated by '.'");
    }
    const auto header_b64 = token.substr(0, dot1);
    const auto payload_b64 = token.substr(dot1 + 1, dot2 - dot1 - 1);
    const auto signature_b64 = token.substr(dot2 + 1);
    const auto header_text = Base64UrlDecode(header_b64, limits.max_token_bytes);
    const auto payload_text = Base64UrlDecode(payload_b64, limits.max_token_bytes);
    const auto signature = Base64UrlDecode(signature_b64, limits.max_token_bytes);
    if (!header_text || !payload_text || !signature) return Refuse("token: a part is not base64url");
    auto header = http::ParseJson(*header_text, http::JsonLimits{.max_depth = 4});
    if (!header.ok() || !header->is_object()) return Refuse("token: the header is not a JSON object");
    const auto alg_it = header->find("alg");
    if (alg_it == header->end() || !alg_it->is_string()) return Refuse("token: the header has no alg");
    const std::string alg = alg_it->get<std::string>();
    KeyType want;
    if (alg == "RS256") {
        want = KeyType::kRsa;
    } else if (alg == "ES256") {
        want = KeyType::kEcP256;
    } else {
        // Checked before any key is touched: "none" and HS256 (an RSA public key used as an HMAC
        // secret) must never reach a verifier.
        return Refuse("alg \"" + alg.substr(0, 32) + "\" is not accepted (only RS256 and ES256)");
    }
    std::optional<std::string> kid;
    if (const auto it = header->find("kid"); it != header->end()) {
        if (!it->is_string()) return Refuse("token: kid is not a string");
        kid = it->get<std::string>();
    }
    if (const auto it = header->find("crit"); it != header->end()) {
        return Refuse("token: critical header extensions are not supported");
    }
    const Key* key = nullptr;
    if (kid) {
        for (const auto& k : keys.impl().keys) {
            if (k.kid == *kid) key = &k;
        }
        if (key == nullptr) return Status(Code::kNotFound, "unknown key id \"" + kid->substr(0, 64) + "\"");
    } else {
        // Without a kid, only an unambiguous key of the right type will do.
        int candidates = 0;
        for (const auto& k : keys.impl().keys) {
            if (k.type == want) {
                key = &k;
                ++candidates;
            }
        }
        if (candidates != 1) return Refuse("token: no kid, and the key set has no single " + alg + " key");
    }
    if (key->type != want || (key->alg && *key->alg != alg)) {
        return Refuse("alg " + alg + " does not match key \"" + key->kid + "\"");
    }
    std::string sig_bytes = *signature;
    if (want == KeyType::kEcP256) {
        auto der = EcdsaRawToDer(sig_bytes);
        if (!der) return Refuse("signature does not verify (ES256 signatures are 64 bytes)");
        sig_bytes = std::move(*der);
    }
    if (!DigestVerify(key->pkey.get(), token.substr(0, dot2), sig_bytes)) {
        return Refuse("signature does not verify");
    }
    auto payload = http::ParseJson(*payload_text, http::JsonLimits{.max_depth = 8});
    if (!payload.ok() || !payload->is_object()) return Refuse("token: the payload is not a JSON object");
    const auto& p = *payload;
    const auto iss = p.find("iss");
    if (iss == p.end() || !iss->is_string() || iss->get<std::string>() != check.issuer) {
        return Refuse("wrong issuer (expected \"" + check.issuer + "\")");
    }
    bool audience_ok = false;
    if (const auto aud = p.find("aud"); aud != p.end()) {
        if (aud->is_string()) audience_ok = aud->get<std::string>() == check.audience;
        if (aud->is_array()) {
            for (const auto& a : *aud) audience_ok = audience_ok || (a.is_string() && a == check.audience);
        }
    }
    if (!audience_ok) return Refuse("wrong audience (expected \"" + check.audience + "\")");
    const std::int64_t skew = check.clock_skew.count();
    const auto exp = NumericDate(p, "exp");
    if (!exp) return Refuse("token: exp is required");
    if (check.now_s > *exp + skew) return Refuse("token expired");
    if (const auto nbf = NumericDate(p, "nbf"); nbf && check.now_s + skew < *nbf) {
        return Refuse("token not yet valid (nbf)");
    }
    if (const auto iat = NumericDate(p, "iat"); iat && check.now_s + skew < *iat) {
        return Refuse("token issued in the future (iat)");
    }
    if (check.nonce) {
        const auto nonce = p.find("nonce");
        if (nonce == p.end() || !nonce->is_string() || nonce->get<std::string>() != *check.nonce) {
            return Refuse("nonce missing or different from the sign-in's");
        }
    }
    return std::move(*payload);
}

}  // namespace sched::web
