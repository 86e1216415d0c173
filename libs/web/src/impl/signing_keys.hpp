#pragma once

// Signing keys on the web module: the heartbeat answer's `signing` object and the admin routes
// (contract: docs/protocol.md "Key delivery" and "Rotation", docs/api.md).

#include "sched/protocol/registry_answer.hpp"
#include "sched/store/signing_key.hpp"

namespace sched::web::impl {

class Routes;

/// The heartbeat answer's `signing` object: every key the app's executors must accept, and the
/// DB clock they keep their offset to.
protocol::KeyDelivery KeyDeliveryOf(const store::AppSigningKeys& keys);

/// GET /api/v1/apps/{app}/signing-keys and POST /api/v1/apps/{app}/signing-keys/rotate (admin).
void AddSigningKeyRoutes(Routes& routes);

}  // namespace sched::web::impl
