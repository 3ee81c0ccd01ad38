// core/src/http/client_config.cc — HttpClientOptionsFromConfig (see
// mulligan/http/client_config.h).
#include "mulligan/http/client_config.h"

#include <memory>
#include <string>
#include <utility>

#include "mulligan/breaker/registry.h"

namespace mulligan {
inline namespace v0 {

Result<HttpClientOptions> HttpClientOptionsFromConfig(const PolicyRegistry& registry,
                                                      std::string_view name) {
  const std::shared_ptr<const ConfigSnapshot> snapshot = registry.Snapshot();
  auto found = snapshot->clients.find(name);
  if (found == snapshot->clients.end()) return registry.Client(name).status();
  const ClientSettings& c = found->second;
  HttpClientOptions options;
  options.connect_timeout = c.connect_timeout;
  options.attempt_timeout = c.attempt_timeout;
  options.verify_tls = c.verify_tls;
  options.user_agent = c.user_agent;
  options.breaker_key = c.breaker_key;
  // The loader checked that both names exist in the same snapshot.
  if (!c.policy.empty()) options.retry = snapshot->policies.at(c.policy)->options();
  if (!c.breaker.empty()) {
    BreakerRegistryOptions breakers;
    breakers.breaker = snapshot->breakers.at(c.breaker);
    breakers.breaker.name.clear();  // each breaker is named after its key
    Result<std::unique_ptr<BreakerRegistry>> created = BreakerRegistry::Create(breakers);
    if (!created.ok()) return created.status();
    options.breakers = std::shared_ptr<BreakerRegistry>(std::move(created).value());
  }
  return options;
}

}  // namespace v0
}  // namespace mulligan
