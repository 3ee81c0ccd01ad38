// mulligan/http/client_config.h — an HTTP client configured by name: the
// HttpClientOptions of a named client of a configuration file
// (mulligan/config/config.h, docs/configuration.md), with every field of the
// client, of its policy and of its breaker, so a field added to the file
// reaches every C++ client built this way (and the C ABI's
// mulligan_config_http_options, which calls it).
//
//   mulligan::PolicyRegistry registry;
//   registry.LoadFile("mulligan.json");
//   mulligan::Result<mulligan::HttpClientOptions> options =
//       mulligan::HttpClientOptionsFromConfig(registry, "payments");
//   auto client = mulligan::HttpClient::Create(*options);

#ifndef MULLIGAN_HTTP_CLIENT_CONFIG_H_
#define MULLIGAN_HTTP_CLIENT_CONFIG_H_

#include <string_view>

#include "mulligan/base/status.h"
#include "mulligan/config/config.h"
#include "mulligan/http/client.h"

namespace mulligan {
inline namespace v0 {

// Returns the options of client `name` of the registry's current
// configuration (one snapshot: the client, its policy and its breaker come
// from the same load): connect_timeout, attempt_timeout, verify_tls,
// user_agent and breaker_key from the client; `retry` = every field of its
// policy (the defaults without one); `breakers` = a new registry whose
// breakers have every option of its breaker (none without one);
// `shared_budget` = the registry's shared budget of the client's "budget"
// (PolicyRegistry::BudgetNamed), or of its policy's "budget" when the client
// names none, and `retry_budget` = nullopt for "budget": null (otherwise the
// per-origin default stays; added in 0.4). The other
// options keep their defaults; the caller may change any of them.
// Errors: kInvalidArgument `no client named "x" in <source> (known: ...)`.
// Thread-safety: safe while another thread reloads the registry.
Result<HttpClientOptions> HttpClientOptionsFromConfig(const PolicyRegistry& registry,
                                                      std::string_view name);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_CLIENT_CONFIG_H_
