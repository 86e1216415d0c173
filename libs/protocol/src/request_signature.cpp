#include "sched/protocol/request_signature.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>

#include "sched/common/crypto.hpp"
#include "sched/http/message.hpp"

namespace sched::protocol {

namespace {

constexpr std::size_t kMaxKeyIdLength = 128;

Status Unauthenticated(std::string message) {
    return {Code::kUnauthenticated, std::move(message)};
}

std::string Upper(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::toupper(c); });
    return out;
}

}  // namespace

std::string CanonicalString(std::string_view method, std::string_view target, std::int64_t timestamp_ms,
                            std::string_view key_id, std::string_view body) {
    std::string out;
    out.reserve(160 + target.size() + key_id.size());
    out.append(kSignatureVersion).append("\n");
    out.append(Upper(method)).append("\n");
    out.append(target).append("\n");
    out.append(std::to_string(timestamp_ms)).append("\n");
    out.append(key_id).append("\n");
    out.append(crypto::Sha256Hex(body));
    return out;
}

std::string Signature(const SigningKey& key, std::string_view method, std::string_view target,
                      std::int64_t timestamp_ms, std::string_view body) {
    return std::string(kSignatureVersion) + "=" +
           crypto::HmacSha256Hex(key.secret, CanonicalString(method, target, timestamp_ms, key.id, body));
}

std::vector<std::pair<std::string, std::string>> SignatureHeaders(const SigningKey& key, std::string_view method,
                                                                  std::string_view target, std::int64_t timestamp_ms,
                                                                  std::string_view body) {
    return {{std::string(kKeyIdHeader), key.id},
            {std::string(kTimestampHeader), std::to_string(timestamp_ms)},
            {std::string(kSignatureHeader), Signature(key, method, target, timestamp_ms, body)}};
}

SignedRequest SignedRequestOf(const http::Request& req) {
    return {.method = req.method_text,
            .target = req.target,
            .body = req.body,
            .key_id = req.headers.Get(kKeyIdHeader),
            .timestamp = req.headers.Get(kTimestampHeader),
            .signature = req.headers.Get(kSignatureHeader)};
}

Status VerifySignature(const SignedRequest& request, const std::vector<SigningKey>& keys, std::int64_t now_ms,
                       Micros window) {
    const auto missing = [](std::string_view header) {
        return Unauthenticated("missing " + std::string(header) +
                               " header: calls to an executor must be signed by the cluster (docs/protocol.md)");
    };
    if (!request.key_id) return missing(kKeyIdHeader);
    if (!request.timestamp) return missing(kTimestampHeader);
    if (!request.signature) return missing(kSignatureHeader);
    const std::string prefix = std::string(kSignatureVersion) + "=";
    if (!request.signature->starts_with(prefix)) {
        return Unauthenticated(std::string(kSignatureHeader) + ": unsupported scheme (expected \"" + prefix +
                               "<hex>\")");
    }
    std::int64_t timestamp = 0;
    const std::string_view ts = *request.timestamp;
    const auto [ptr, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), timestamp);
    if (ts.empty() || ts.size() > 19 || ec != std::errc() || ptr != ts.data() + ts.size()) {
        return Unauthenticated(std::string(kTimestampHeader) + ": expected epoch milliseconds");
    }
    const auto window_ms = std::chrono::duration_cast<std::chrono::milliseconds>(window).count();
    const std::int64_t skew = timestamp - now_ms;
    if (skew > window_ms || skew < -window_ms) {
        return Unauthenticated(std::string(kTimestampHeader) + ": " + std::to_string(skew) +
                               " ms away from the cluster clock, outside the window of " + std::to_string(window_ms) +
                               " ms (a replay, or a clock offset not learnt yet)");
    }
    if (request.key_id->size() > kMaxKeyIdLength) return Unauthenticated(std::string(kKeyIdHeader) + ": too long");
    const auto key =
        std::find_if(keys.begin(), keys.end(), [&](const SigningKey& k) { return k.id == *request.key_id; });
    if (key == keys.end()) {
        return Unauthenticated(std::string(kKeyIdHeader) + ": unknown signing key \"" + std::string(*request.key_id) +
                               "\" (not one of this app's current keys)");
    }
    const std::string expected = Signature(*key, request.method, request.target, timestamp, request.body);
    if (!crypto::ConstantTimeEqual(expected, *request.signature)) {
        return Unauthenticated(std::string(kSignatureHeader) +
                               ": does not match (wrong key, or the method, target, timestamp or body changed)");
    }
    return Status::Ok();
}

std::string AddressedTarget(std::string_view target, std::string_view instance) {
    std::string out(target);
    out += target.find('?') == std::string_view::npos ? '?' : '&';
    out.append(kInstanceParam).append("=").append(http::PercentEncode(instance, ":"));
    return out;
}

Status VerifyAddressee(std::string_view target, std::string_view instance) {
    const auto question = target.find('?');
    if (question == std::string_view::npos) return Status::Ok();
    std::string_view rest = target.substr(question + 1);
    std::optional<std::string> addressed;
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
        const auto eq = pair.find('=');
        if (pair.substr(0, eq) != kInstanceParam) continue;
        const std::string param(kInstanceParam);
        if (addressed) return Unauthenticated(param + ": named more than once");
        const std::string_view value = eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
        auto decoded = value.size() <= 3 * kMaxInstanceLength ? http::PercentDecode(value, false) : std::nullopt;
        if (!decoded || decoded->size() > kMaxInstanceLength) return Unauthenticated(param + ": malformed");
        addressed = std::move(*decoded);
    }
    if (!addressed || *addressed == instance) return Status::Ok();
    return Unauthenticated(std::string(kInstanceParam) + ": the call is addressed to instance \"" + *addressed +
                           "\", not to this one (" + std::string(instance) +
                           "): a signed call is valid only at the instance it was sent to");
}

}  // namespace sched::protocol
