// capi/src/http.cc — the HTTP part of the C ABI (mulligan_http.h): the
// resilient HTTP client, its options and responses, shims over
// mulligan::HttpClient.
//
// Failure with a response: when the call ran at least one attempt, the caller
// always gets a response object, also when the return code is not OK (the
// last attempt failed to connect, timed out, or the deadline ended the chain).
// Its status is then 0 and its error kind, attempts, elapsed time and stop
// reason come from mulligan::HttpCallInfo, so a C caller can log how many
// attempts were made before the failure.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capi_internal.h"
#include "internal/ascii.h"
#include "internal/saturating.h"
#include "mulligan/breaker/registry.h"
#include "mulligan/http/client.h"
#include "mulligan/http/client_config.h"

struct mulligan_http_client {
  std::unique_ptr<mulligan::HttpClient> impl;
};

struct mulligan_http_response {
  mulligan::HttpResponse impl;
  // The last attempt's transport failure (kNone when it got a response).
  mulligan::ErrorKind error = mulligan::ErrorKind::kNone;
};

namespace {

using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::SetError;

static_assert(static_cast<int>(mulligan::HttpMethodRule::kIdempotent) ==
                  MULLIGAN_HTTP_METHODS_IDEMPOTENT &&
                  static_cast<int>(mulligan::HttpMethodRule::kStrict) == MULLIGAN_HTTP_METHODS_STRICT &&
                  static_cast<int>(mulligan::HttpMethodRule::kSafe) == MULLIGAN_HTTP_METHODS_SAFE &&
                  static_cast<int>(mulligan::HttpMethodRule::kAll) == MULLIGAN_HTTP_METHODS_ALL &&
                  static_cast<int>(mulligan::HttpMethodRule::kAllowed) ==
                      MULLIGAN_HTTP_METHODS_ALLOWED,
              "mulligan_http_methods equals mulligan::HttpMethodRule");
using mulligan::internal::EqualsIgnoreCase;
using mulligan::internal::IsOws;

// Splits "Name: value" into its parts (value without surrounding OWS).
// Returns MULLIGAN_OK or records why the header is malformed.
int ParseHeader(size_t index, const char* line, mulligan::HttpHeaders* headers) {
  if (line == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "headers[%zu] must not be NULL", index);
  }
  const char* colon = std::strchr(line, ':');
  // The messages never quote the line: its value may be a credential
  // (Authorization, Cookie), and the last error is text that gets logged.
  if (colon == nullptr || colon == line) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "headers[%zu] must be \"Name: value\", got %s", index,
                    colon == nullptr ? "no colon" : "an empty name");
  }
  // CR and LF would let a caller inject header lines; reject them here rather
  // than rely on every transport to do so.
  if (std::strpbrk(line, "\r\n") != nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "headers[%zu] must not contain CR or LF", index);
  }
  std::string name(line, static_cast<size_t>(colon - line));
  for (char c : name) {
    if (IsOws(c)) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "headers[%zu] has whitespace in its name: \"%.200s\"", index,
                      name.c_str());
    }
  }
  // CR and LF were refused above, so this trims exactly the OWS around it.
  const std::string_view value = mulligan::internal::TrimOws(colon + 1);
  headers->emplace_back(std::move(name), std::string(value));
  return MULLIGAN_OK;
}

// Records a NULL-handle failure of a getter.
void NullResponse(const char* func) {
  SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: resp must not be NULL", func);
}

// The caller's on_retry callback and its user_data; the destructor runs
// free_user_data, once the options and every client made from them are gone.
struct RetryCallback {
  mulligan_http_retry_fn fn = nullptr;
  void* user_data = nullptr;
  void (*free_user_data)(void*) = nullptr;
  RetryCallback() = default;
  RetryCallback(const RetryCallback&) = delete;
  RetryCallback& operator=(const RetryCallback&) = delete;
  ~RetryCallback() {
    if (free_user_data != nullptr) free_user_data(user_data);
  }
};

}  // namespace

// The C options: the core's options (without the hook and the registry,
// which are made per client) plus the breaker settings and the callback.
struct mulligan_http_options {
  mulligan::HttpClientOptions impl;
  int breaker_failure_threshold = 0;
  int64_t breaker_reset_timeout_ms = 30000;
  bool breaker_per_attempt = false;
  // Every option of a named breaker of a configuration file
  // (mulligan_config_http_options); replaces the threshold pair above until
  // mulligan_http_options_set_breaker() is called.
  std::optional<mulligan::CircuitBreakerOptions> breaker_options;
  std::shared_ptr<RetryCallback> on_retry;
};

extern "C" {

int mulligan_http_options_create(mulligan_http_options** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = new mulligan_http_options();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_http_options_destroy(mulligan_http_options* opts) {
  MULLIGAN_CAPI_BEGIN
  delete opts;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_http_options_set_connect_timeout_ms(mulligan_http_options* opts, int64_t ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (ms <= 0 || ms > INT64_C(9000000000000)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "connect timeout must be in (0, 9e12] ms, got %lld",
                    static_cast<long long>(ms));
  }
  opts->impl.connect_timeout = std::chrono::milliseconds(ms);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_attempt_timeout_ms(mulligan_http_options* opts, int64_t ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (ms <= 0 || ms > INT64_C(9000000000000)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "attempt timeout must be in (0, 9e12] ms, got %lld",
                    static_cast<long long>(ms));
  }
  opts->impl.attempt_timeout = std::chrono::milliseconds(ms);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_verify_tls(mulligan_http_options* opts, int verify) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.verify_tls = verify != 0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_ca_bundle(mulligan_http_options* opts, const char* path) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.ca_bundle = path != nullptr ? path : "";
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_user_agent(mulligan_http_options* opts, const char* user_agent) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  MULLIGAN_CHECK_NOT_NULL(user_agent);
  if (std::strpbrk(user_agent, "\r\n") != nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "user_agent must not contain CR or LF");
  }
  opts->impl.user_agent = user_agent;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_redirects(mulligan_http_options* opts, int follow,
                                        int max_redirects) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (max_redirects < 0 || max_redirects > 1000) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "max_redirects must be in [0, 1000], got %d",
                    max_redirects);
  }
  opts->impl.follow_redirects = follow != 0;
  opts->impl.max_redirects = max_redirects;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_strict_methods(mulligan_http_options* opts, int strict) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.strict_methods = strict != 0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_method_rule(mulligan_http_options* opts, int rule) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (rule < MULLIGAN_HTTP_METHODS_IDEMPOTENT || rule > MULLIGAN_HTTP_METHODS_ALLOWED) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "rule must be a mulligan_http_methods value (0..4), got %d", rule);
  }
  opts->impl.method_rule = static_cast<mulligan::HttpMethodRule>(rule);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_allowed_methods(mulligan_http_options* opts,
                                              const char* const* methods, size_t count) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (count > 64) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "count must be in [0, 64], got %zu", count);
  }
  std::vector<std::string> list;
  for (size_t i = 0; i < count; ++i) {
    if (methods == nullptr || methods[i] == nullptr) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT, "methods[%zu] must not be NULL", i);
    }
    if (!mulligan::internal::IsToken(methods[i])) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "methods[%zu] must be an HTTP method token, got \"%s\"", i, methods[i]);
    }
    list.emplace_back(methods[i]);
  }
  opts->impl.allowed_methods = std::move(list);
  opts->impl.method_rule = mulligan::HttpMethodRule::kAllowed;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_breaker(mulligan_http_options* opts, int failure_threshold,
                                      int64_t reset_timeout_ms, int per_attempt) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (failure_threshold < 0 || failure_threshold > 1000000) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "failure_threshold must be in [0, 1000000], got %d", failure_threshold);
  }
  if (reset_timeout_ms <= 0 || reset_timeout_ms > INT64_C(9000000000000)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "reset timeout must be in (0, 9e12] ms, got %lld",
                    static_cast<long long>(reset_timeout_ms));
  }
  opts->breaker_failure_threshold = failure_threshold;
  opts->breaker_reset_timeout_ms = reset_timeout_ms;
  opts->breaker_options.reset();
  opts->breaker_per_attempt = per_attempt != 0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_breaker_key(mulligan_http_options* opts, int kind) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (kind < MULLIGAN_BREAKER_KEY_ORIGIN || kind > MULLIGAN_BREAKER_KEY_PATH_TEMPLATE) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "kind must be a mulligan_breaker_key (0..3), got %d", kind);
  }
  opts->impl.breaker_key.kind = static_cast<mulligan::BreakerKeyKind>(kind);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_add_breaker_key_template(mulligan_http_options* opts,
                                                   const char* path_template) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  MULLIGAN_CHECK_NOT_NULL(path_template);
  mulligan::BreakerKeyOptions one;
  one.kind = mulligan::BreakerKeyKind::kPathTemplate;
  one.templates.emplace_back(path_template);
  const mulligan::Status status = mulligan::ValidateBreakerKey(one);
  if (!status.ok()) return SetError(status);
  opts->impl.breaker_key.templates.push_back(std::move(one.templates.front()));
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

namespace {

// Validates `budget` and makes it the per-origin budget of `opts`.
int SetOriginBudget(mulligan_http_options* opts, const mulligan::BudgetOptions& budget) {
  const mulligan::Status status = mulligan::ValidateBudgetOptions(budget);
  if (!status.ok()) return SetError(status);
  opts->impl.retry_budget = budget;
  return MULLIGAN_OK;
}

// Validates and keeps `hedging` (kept unchanged on error).
int SetHedging(mulligan_http_options* opts, const mulligan::HedgingOptions& hedging) {
  const mulligan::Status status = mulligan::ValidateHedgingOptions(hedging);
  if (!status.ok()) return SetError(status);
  opts->impl.hedging = hedging;
  return MULLIGAN_OK;
}

}  // namespace

int mulligan_http_options_set_token_bucket_budget(mulligan_http_options* opts,
                                                  double max_tokens, double token_ratio) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  mulligan::BudgetOptions budget;
  budget.kind = mulligan::BudgetKind::kTokenBucket;
  budget.token_bucket.max_tokens = max_tokens;
  budget.token_bucket.token_ratio = token_ratio;
  return SetOriginBudget(opts, budget);
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_quota_budget(mulligan_http_options* opts, int64_t capacity,
                                           int64_t retry_cost, int64_t timeout_cost,
                                           int64_t throttling_cost, int64_t no_retry_increment) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  mulligan::BudgetOptions budget;
  budget.kind = mulligan::BudgetKind::kQuota;
  budget.quota.capacity = capacity;
  budget.quota.retry_cost = retry_cost;
  budget.quota.timeout_cost = timeout_cost;
  budget.quota.throttling_cost = throttling_cost;
  budget.quota.no_retry_increment = no_retry_increment;
  return SetOriginBudget(opts, budget);
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_ratio_budget(mulligan_http_options* opts, int64_t ttl_ms,
                                           double percent, double min_retries_per_second) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (ttl_ms < 1000 || ttl_ms > 60000) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "ratio.ttl must be in [1000, 60000] ms, got %lld",
                    static_cast<long long>(ttl_ms));
  }
  mulligan::BudgetOptions budget;
  budget.kind = mulligan::BudgetKind::kRatio;
  budget.ratio.ttl = std::chrono::milliseconds(ttl_ms);
  budget.ratio.percent = percent;
  budget.ratio.min_retries_per_second = min_retries_per_second;
  return SetOriginBudget(opts, budget);
  MULLIGAN_CAPI_END
}

int mulligan_http_options_disable_retry_budget(mulligan_http_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.retry_budget.reset();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_hedging(mulligan_http_options* opts, int max_attempts,
                                      int64_t delay_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  mulligan::HedgingOptions hedging = opts->impl.hedging.value_or(mulligan::HedgingOptions{});
  hedging.max_attempts = max_attempts;
  if (delay_ms < 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "hedging: delay_ms must be >= 0, got %lld",
                    static_cast<long long>(delay_ms));
  }
  // Saturating: a delay past the clock's range (INT64_MAX ms) is Duration::max,
  // which starts no extra copy, where std::chrono would overflow.
  hedging.hedging_delay = mulligan::internal::DurationFromMillis(static_cast<double>(delay_ms));
  return SetHedging(opts, hedging);
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_hedging_quantile(mulligan_http_options* opts, double quantile,
                                               int window, int min_samples) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  mulligan::HedgingOptions hedging = opts->impl.hedging.value_or(mulligan::HedgingOptions{});
  hedging.delay_quantile = quantile;
  hedging.quantile_window = window;
  hedging.quantile_min_samples = min_samples;
  return SetHedging(opts, hedging);
  MULLIGAN_CAPI_END
}

int mulligan_http_options_disable_hedging(mulligan_http_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.hedging.reset();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_options_set_on_retry(mulligan_http_options* opts, mulligan_http_retry_fn fn,
                                       void* user_data, void (*free_user_data)(void*)) {
  MULLIGAN_CAPI_BEGIN
  if (opts == nullptr) {
    // The reference is ours from here on: release it even on failure.
    if (free_user_data != nullptr) free_user_data(user_data);
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: opts must not be NULL", __func__);
  }
  if (fn == nullptr) {
    if (free_user_data != nullptr) free_user_data(user_data);
    opts->on_retry.reset();
    return MULLIGAN_OK;
  }
  auto callback = std::make_shared<RetryCallback>();
  callback->fn = fn;
  callback->user_data = user_data;
  callback->free_user_data = free_user_data;
  opts->on_retry = std::move(callback);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_client_create_v2(mulligan_http_client** out,
                                   const mulligan_retry_policy* default_policy,
                                   const mulligan_http_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::HttpClientOptions options;
  if (opts != nullptr) {
    options = opts->impl;
    if (opts->breaker_options) {
      mulligan::BreakerRegistryOptions registry;
      registry.breaker = *opts->breaker_options;
      auto created = mulligan::BreakerRegistry::Create(registry);
      if (!created.ok()) return SetError(created.status());
      options.breakers = std::shared_ptr<mulligan::BreakerRegistry>(std::move(created).value());
      options.breaker_per_attempt = opts->breaker_per_attempt;
    } else if (opts->breaker_failure_threshold > 0) {
      mulligan::BreakerRegistryOptions registry;
      registry.breaker.failure_threshold = opts->breaker_failure_threshold;
      registry.breaker.reset_timeout = std::chrono::milliseconds(opts->breaker_reset_timeout_ms);
      if (registry.breaker.max_reset_timeout < registry.breaker.reset_timeout) {
        registry.breaker.max_reset_timeout = registry.breaker.reset_timeout;
      }
      auto created = mulligan::BreakerRegistry::Create(registry);
      if (!created.ok()) return SetError(created.status());
      options.breakers = std::shared_ptr<mulligan::BreakerRegistry>(std::move(created).value());
      options.breaker_per_attempt = opts->breaker_per_attempt;
    }
    if (std::shared_ptr<RetryCallback> callback = opts->on_retry) {
      // No C++ exception can come back through fn (a C function); a non-zero
      // return cancels the call (MULLIGAN_E_CALLBACK).
      options.on_retry = [callback](mulligan::HttpRetryEvent& e) {
        mulligan_http_retry_event event;
        event.struct_size = sizeof event;
        event.attempt = e.attempt;
        event.delay_ms = DurationToMs(e.delay);
        event.error_kind = static_cast<int>(e.error);
        event.http_status = e.http_status;
        event.from_retry_after = e.from_retry_after ? 1 : 0;
        if (callback->fn(&event, callback->user_data) != 0) e.cancel = true;
      };
    }
  }
  if (default_policy != nullptr) options.retry = default_policy->impl.options();
  auto client = mulligan::HttpClient::Create(options);
  if (!client.ok()) return SetError(client.status());
  *out = new mulligan_http_client{std::move(client).value()};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_config_http_options(const mulligan_config* config, const char* name,
                                 mulligan_http_options** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(config);
  MULLIGAN_CHECK_NOT_NULL(name);
  mulligan::Result<mulligan::HttpClientOptions> options =
      mulligan::HttpClientOptionsFromConfig(*config->impl, name);
  if (!options.ok()) return SetError(options.status());
  auto opts = std::make_unique<mulligan_http_options>();
  opts->impl = std::move(options).value();
  if (opts->impl.breakers) {
    // The C options make a registry per client (mulligan_http_client_create_v2):
    // keep the breaker's options, not the registry.
    opts->breaker_options = opts->impl.breakers->options().breaker;
    opts->impl.breakers.reset();
  }
  *out = opts.release();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_client_create(mulligan_http_client** out,
                                const mulligan_retry_policy* default_policy) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::HttpClientOptions options;
  if (default_policy != nullptr) options.retry = default_policy->impl.options();
  auto client = mulligan::HttpClient::Create(options);
  if (!client.ok()) return SetError(client.status());
  *out = new mulligan_http_client{std::move(client).value()};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_http_client_destroy(mulligan_http_client* client) {
  MULLIGAN_CAPI_BEGIN
  delete client;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_http_request(mulligan_http_client* client, const char* method, const char* url,
                          const char* const* headers, size_t header_count, const void* body,
                          size_t body_len, const char* idempotency_key,
                          mulligan_http_response** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(client);
  MULLIGAN_CHECK_NOT_NULL(url);
  if (headers == nullptr && header_count != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "mulligan_http_request: headers is NULL but header_count is %zu",
                    header_count);
  }
  if (body == nullptr && body_len != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "mulligan_http_request: body is NULL but body_len is %zu", body_len);
  }

  mulligan::HttpRequest request;
  request.method = method != nullptr ? method : "GET";
  request.url = url;
  request.headers.reserve(header_count);
  for (size_t i = 0; i < header_count; ++i) {
    const int rc = ParseHeader(i, headers[i], &request.headers);
    if (rc != MULLIGAN_OK) return rc;
  }
  if (body_len != 0) request.body.assign(static_cast<const char*>(body), body_len);
  if (idempotency_key != nullptr) request.idempotency_key = std::string(idempotency_key);

  mulligan::HttpCallInfo info;
  mulligan::Result<mulligan::HttpResponse> result = client->impl->Send(request, &info);
  if (result.ok()) {
    *out = new mulligan_http_response{std::move(result).value(), mulligan::ErrorKind::kNone};
    return MULLIGAN_OK;
  }
  // The call ran: hand back what is known about it. (Should this allocation
  // fail, the barrier reports NO_MEMORY and *out stays NULL.)
  if (info.attempts > 0) {
    auto* resp = new mulligan_http_response();
    resp->impl.status = 0;
    resp->impl.attempts = info.attempts;
    resp->impl.elapsed = info.elapsed;
    resp->impl.stop_reason = info.stop_reason;
    resp->impl.idempotency_key = info.idempotency_key;
    resp->impl.url = request.url;
    resp->error = info.last_error;
    *out = resp;
  }
  return SetError(result.status());
  MULLIGAN_CAPI_END
}

int mulligan_http_response_status(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0;
  return resp->impl.status;
  MULLIGAN_CAPI_END_RETURN(0)
}

const char* mulligan_http_response_body(const mulligan_http_response* resp, size_t* len) {
  MULLIGAN_CAPI_BEGIN
  if (len != nullptr) *len = 0;
  if (resp == nullptr) return NullResponse(__func__), nullptr;
  if (len != nullptr) *len = resp->impl.body.size();
  return resp->impl.body.c_str();
  MULLIGAN_CAPI_END_RETURN(nullptr)
}

const char* mulligan_http_response_header(const mulligan_http_response* resp, const char* name) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), nullptr;
  if (name == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: name must not be NULL", __func__);
    return nullptr;
  }
  // Searched here rather than with HttpResponse::Header(), which returns a
  // copy: the C caller needs a pointer that lives as long as the response.
  for (const auto& field : resp->impl.headers) {
    if (EqualsIgnoreCase(field.first, name)) return field.second.c_str();
  }
  return nullptr;
  MULLIGAN_CAPI_END_RETURN(nullptr)
}

size_t mulligan_http_response_header_count(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0;
  return resp->impl.headers.size();
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_http_response_header_at(const mulligan_http_response* resp, size_t index,
                                     const char** name, const char** value) {
  MULLIGAN_CAPI_BEGIN
  if (name != nullptr) *name = nullptr;
  if (value != nullptr) *value = nullptr;
  MULLIGAN_CHECK_NOT_NULL(resp);
  MULLIGAN_CHECK_NOT_NULL(name);
  MULLIGAN_CHECK_NOT_NULL(value);
  if (index >= resp->impl.headers.size()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "header index %zu out of range (count %zu)",
                    index, resp->impl.headers.size());
  }
  *name = resp->impl.headers[index].first.c_str();
  *value = resp->impl.headers[index].second.c_str();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_response_attempts(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0;
  return resp->impl.attempts;
  MULLIGAN_CAPI_END_RETURN(0)
}

double mulligan_http_response_elapsed_ms(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0.0;
  return DurationToMs(resp->impl.elapsed);
  MULLIGAN_CAPI_END_RETURN(0.0)
}

int mulligan_http_response_error_kind(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0;
  return static_cast<int>(resp->error);
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_http_response_stop_reason(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0;
  return static_cast<int>(resp->impl.stop_reason);
  MULLIGAN_CAPI_END_RETURN(0)
}

const char* mulligan_http_response_idempotency_key(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), nullptr;
  if (resp->impl.idempotency_key.empty()) return nullptr;
  return resp->impl.idempotency_key.c_str();
  MULLIGAN_CAPI_END_RETURN(nullptr)
}

void mulligan_http_response_destroy(mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  delete resp;
  MULLIGAN_CAPI_END_VOID
}

}  // extern "C"
