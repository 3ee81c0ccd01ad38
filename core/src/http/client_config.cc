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
  // The client's "budget": a budgets entry shared by every origin (built
  // once by the registry, shared by name), or null: no budget; absent keeps
  // the per-origin default. A policy's "budget" applies when the client
  // names none (a client's own "budget" wins).
  const std::string* budget = &c.budget;
  if (budget->empty() && !c.budget_off && !c.policy.empty()) {
    auto named = snapshot->policy_limits.find(c.policy);
    if (named != snapshot->policy_limits.end()) budget = &named->second.budget;
  }
  if (c.budget_off) {
    options.retry_budget.reset();
  } else if (!budget->empty()) {
    Result<std::shared_ptr<RetryBudget>> shared = registry.BudgetNamed(*budget);
    if (!shared.ok()) return shared.status();
    options.shared_budget = std::move(shared).value();
  }
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
