// capi/src/config.cc — the configuration part of the C ABI
// (mulligan_config.h), a shim over mulligan::PolicyRegistry
// (mulligan/config/config.h): load a configuration file, reload it, look up
// named retry policies and breaker settings (and breaker options with every
// field), list names and load warnings. The HTTP client options of a named
// client (mulligan_config_http_options) are in http.cc.

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "capi_internal.h"
#include "mulligan/config/config.h"

namespace {

using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::SetError;

int Loaded(const mulligan::Result<mulligan::LoadReport>& report) {
  if (!report.ok()) return SetError(report.status());
  return MULLIGAN_OK;
}

// Copies `text` snprintf-style; *out_len is its full length without the NUL
// (mulligan_config_name()'s protocol).
void CopyOut(const std::string& text, char* buf, size_t size, size_t* out_len) {
  if (out_len != nullptr) *out_len = text.size();
  mulligan::capi_internal::CopyTruncated(text, buf, size);
}

// The sizes of the public structs as shipped first (they only grow).
constexpr size_t kBreakerSizeV0_1 =
    offsetof(mulligan_config_breaker, permit_timeout_ms) + sizeof(double);
constexpr size_t kBreakerSizeV0_2 =
    offsetof(mulligan_config_breaker, max_half_open_duration_ms) + sizeof(double);

}  // namespace

extern "C" {

int mulligan_config_create(mulligan_config** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  *out = new mulligan_config{std::make_shared<mulligan::PolicyRegistry>()};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_config_destroy(mulligan_config* config) {
  MULLIGAN_CAPI_BEGIN
  delete config;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_config_load_file(mulligan_config* config, const char* path) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(config);
  MULLIGAN_CHECK_NOT_NULL(path);
  return Loaded(config->impl->LoadFile(path));
  MULLIGAN_CAPI_END
}

int mulligan_config_load_string(mulligan_config* config, const char* json, size_t len,
                                const char* source) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(config);
  if (json == nullptr && len != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: json must not be NULL", __func__);
  }
  const std::string_view text = json == nullptr ? std::string_view() : std::string_view(json, len);
  return Loaded(config->impl->LoadString(text, source == nullptr ? "<string>" : source));
  MULLIGAN_CAPI_END
}

int mulligan_config_load_env(mulligan_config* config) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(config);
  return Loaded(config->impl->LoadFromEnvironment());
  MULLIGAN_CAPI_END
}

int mulligan_config_reload(mulligan_config* config) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(config);
  return Loaded(config->impl->Reload());
  MULLIGAN_CAPI_END
}

int mulligan_config_retry_policy(const mulligan_config* config, const char* name,
                                 mulligan_retry_policy** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(config);
  MULLIGAN_CHECK_NOT_NULL(name);
  mulligan::Result<std::shared_ptr<const mulligan::RetryPolicy>> policy =
      config->impl->Policy(name);
  if (!policy.ok()) return SetError(policy.status());
  // A copy: the caller's handle is independent of later reloads.
  *out = new mulligan_retry_policy{**policy};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_config_breaker_get(const mulligan_config* config, const char* name,
                                mulligan_config_breaker* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(config);
  MULLIGAN_CHECK_NOT_NULL(name);
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = mulligan::capi_internal::CheckStructSize("out", out->struct_size, kBreakerSizeV0_1,
                                                        "MULLIGAN_CONFIG_BREAKER_INIT")) {
    return rc;
  }
  mulligan::Result<mulligan::CircuitBreakerOptions> found = config->impl->Breaker(name);
  if (!found.ok()) return SetError(found.status());
  const mulligan::CircuitBreakerOptions& o = *found;
  out->failure_threshold = o.failure_threshold;
  out->window = static_cast<int>(o.window);
  out->window_size = o.window_size;
  out->window_duration_ms = DurationToMs(o.window_duration);
  out->window_buckets = o.window_buckets;
  out->failure_rate_threshold = o.failure_rate_threshold;
  out->minimum_calls = o.minimum_calls;
  out->slow_call_duration_ms = o.slow_call_duration ? DurationToMs(*o.slow_call_duration) : -1.0;
  out->slow_call_rate_threshold = o.slow_call_rate_threshold;
  out->reset_timeout_ms = DurationToMs(o.reset_timeout);
  out->reset_timeout_multiplier = o.reset_timeout_multiplier;
  out->max_reset_timeout_ms = DurationToMs(o.max_reset_timeout);
  out->half_open_max_calls = o.half_open_max_calls;
  out->permit_timeout_ms = DurationToMs(o.permit_timeout);
  if (out->struct_size >= kBreakerSizeV0_2) {
    out->max_half_open_duration_ms =
        o.max_half_open_duration ? DurationToMs(*o.max_half_open_duration) : -1.0;
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

namespace {

int Names(const mulligan_config* config, int section, std::vector<std::string>* out) {
  const std::shared_ptr<const mulligan::ConfigSnapshot> s = config->impl->Snapshot();
  switch (section) {
    case MULLIGAN_CONFIG_POLICIES:
      for (const auto& kv : s->policies) out->push_back(kv.first);
      return MULLIGAN_OK;
    case MULLIGAN_CONFIG_BREAKERS:
      for (const auto& kv : s->breakers) out->push_back(kv.first);
      return MULLIGAN_OK;
    case MULLIGAN_CONFIG_CLIENTS:
      for (const auto& kv : s->clients) out->push_back(kv.first);
      return MULLIGAN_OK;
    default:
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "section must be MULLIGAN_CONFIG_POLICIES, _BREAKERS or _CLIENTS, got %d",
                      section);
  }
}

}  // namespace

int mulligan_config_breaker_options(const mulligan_config* config, const char* name,
                                    mulligan_breaker_options** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(config);
  MULLIGAN_CHECK_NOT_NULL(name);
  mulligan::Result<mulligan::CircuitBreakerOptions> found = config->impl->Breaker(name);
  if (!found.ok()) return SetError(found.status());
  *out = new mulligan_breaker_options{*found, nullptr};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_config_count(const mulligan_config* config, int section, size_t* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = 0;
  MULLIGAN_CHECK_NOT_NULL(config);
  std::vector<std::string> names;
  if (int rc = Names(config, section, &names); rc != MULLIGAN_OK) return rc;
  *out = names.size();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_config_name(const mulligan_config* config, int section, size_t index, char* buf,
                         size_t size, size_t* out_len) {
  MULLIGAN_CAPI_BEGIN
  if (out_len != nullptr) *out_len = 0;
  if (buf != nullptr && size > 0) buf[0] = '\0';
  MULLIGAN_CHECK_NOT_NULL(config);
  std::vector<std::string> names;
  if (int rc = Names(config, section, &names); rc != MULLIGAN_OK) return rc;
  if (index >= names.size()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: index %zu out of range (%zu names)",
                    __func__, index, names.size());
  }
  CopyOut(names[index], buf, size, out_len);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_config_warning_count(const mulligan_config* config, size_t* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = 0;
  MULLIGAN_CHECK_NOT_NULL(config);
  *out = config->impl->Snapshot()->warnings.size();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_config_warning(const mulligan_config* config, size_t index, char* buf, size_t size,
                            size_t* out_len) {
  MULLIGAN_CAPI_BEGIN
  if (out_len != nullptr) *out_len = 0;
  if (buf != nullptr && size > 0) buf[0] = '\0';
  MULLIGAN_CHECK_NOT_NULL(config);
  const std::shared_ptr<const mulligan::ConfigSnapshot> s = config->impl->Snapshot();
  if (index >= s->warnings.size()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: index %zu out of range (%zu warnings)",
                    __func__, index, s->warnings.size());
  }
  CopyOut(s->warnings[index], buf, size, out_len);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

}  // extern "C"
