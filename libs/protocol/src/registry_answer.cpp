#include "sched/protocol/registry_answer.hpp"

#include "sched/http/json.hpp"

namespace sched::protocol {

std::vector<std::string> OwnCapabilities() {
    return {kCapabilities.begin(), kCapabilities.end()};
}

nlohmann::json ToJson(const HeartbeatAnswer& answer) {
    nlohmann::json out = {{"registered", true}};
    if (answer.signing) {
        nlohmann::json keys = nlohmann::json::array();
        for (const auto& k : answer.signing->keys) {
            keys.push_back({{"id", k.id}, {"secret", k.secret}, {"active_from_ms", k.active_from_ms}});
        }
        out["signing"] = {{"keys", std::move(keys)}, {"server_time_ms", answer.signing->server_time_ms}};
    }
    if (!answer.capabilities.empty()) out["capabilities"] = answer.capabilities;
    return out;
}

Parsed<HeartbeatAnswer> ReadHeartbeatAnswer(const nlohmann::json& body) {
    Parsed<HeartbeatAnswer> out;
    if (!body.is_object()) {
        out.error = http::ApiError{Code::kInvalidArgument, "body: expected an object", "body"};
        return out;
    }
    // Lenient: a capability this build cannot read is one it does not use.
    if (const auto caps = body.find("capabilities"); caps != body.end() && caps->is_array()) {
        for (const auto& c : *caps) {
            if (out.value.capabilities.size() == kMaxCapabilities) break;
            if (c.is_string() && c.get_ref<const std::string&>().size() <= kMaxCapabilityChars) {
                out.value.capabilities.push_back(c.get<std::string>());
            }
        }
    }
    const auto signing = body.find("signing");
    // An older server sends no keys: that changes nothing on the instance.
    if (signing == body.end() || signing->is_null()) return out;
    http::JsonFields f(*signing, "signing");
    KeyDelivery delivery;
    delivery.server_time_ms = f.Int("server_time_ms");
    const auto keys = signing->is_object() ? signing->find("keys") : signing->end();
    if (f.ok() && (keys == signing->end() || !keys->is_array())) f.Fail("keys", "expected an array of keys");
    if (f.ok() && keys->size() > kMaxDeliveredKeys) {
        f.Fail("keys", "at most " + std::to_string(kMaxDeliveredKeys) + " keys");
    }
    for (std::size_t i = 0; f.ok() && i < keys->size(); ++i) {
        http::JsonFields k((*keys)[i], "signing.keys[" + std::to_string(i) + "]");
        DeliveredKey key{.id = k.String("id"), .secret = k.String("secret"), .active_from_ms = 0};
        key.active_from_ms = k.Int("active_from_ms", 0);
        for (const auto& [name, text] : {std::pair{"id", &key.id}, std::pair{"secret", &key.secret}}) {
            if (k.ok() && text->size() > kMaxKeyFieldBytes) {
                k.Fail(name, "at most " + std::to_string(kMaxKeyFieldBytes) + " bytes");
            }
        }
        if (!k.ok()) {
            out.error = k.error();
            return out;
        }
        delivery.keys.push_back(std::move(key));
    }
    if (!f.ok()) {
        out.error = f.error();
        return out;
    }
    out.value.signing = std::move(delivery);
    return out;
}

nlohmann::json ToJson(const DeregisterAnswer&) {
    return {{"deregistered", true}};
}

}  // namespace sched::protocol
