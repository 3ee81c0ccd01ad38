// capi/src/state.cc — the shared-state part of the C ABI (mulligan_state.h):
// a state handle over mulligan::RedisState, and the parts made on it (a
// breaker shared through RedisSharedBreaker, a rate limiter from
// CreateRedisRateLimiter, an idempotency store from RedisIdempotencyStore).
// Thin extern "C" shims: every rule is the core's (core/include/mulligan/
// state/, limits/redis_rate_limiter.h, idempotency/redis_store.h); this file
// checks the C input and converts it. Without MULLIGAN_CAPI_REDIS (a build
// with MULLIGAN_BUILD_REDIS=OFF) the symbols exist and opening a state says
// the library has no Redis. (Added in 0.6.)

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan_state.h"

#ifdef MULLIGAN_CAPI_REDIS
#include "mulligan/idempotency/redis_store.h"
#include "mulligan/limits/redis_rate_limiter.h"
#include "mulligan/state/redis.h"
#include "mulligan/state/redis_breaker.h"
#endif

#ifdef MULLIGAN_CAPI_REDIS
struct mulligan_state {
  std::shared_ptr<mulligan::RedisState> impl;
};
#else
struct mulligan_state {};
#endif

namespace {

using mulligan::capi_internal::CheckStructSize;
using mulligan::capi_internal::CopyTruncated;
using mulligan::capi_internal::SetError;

// The first published sizes (0.6) of the caller-initialised structs.
constexpr size_t kStateOptionsSizeV0_6 = sizeof(mulligan_state_options);
constexpr size_t kStateHealthSizeV0_6 = sizeof(mulligan_state_health);
constexpr size_t kBreakerSharingSizeV0_6 = sizeof(mulligan_breaker_sharing);

// Copies `text` into the caller's buffer and reports its full length.
[[maybe_unused]] int CopyOut(const std::string& text, char* buf, size_t size, size_t* out_len) {
  if (buf == nullptr && size != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "buf must not be NULL when size is %zu", size);
  }
  CopyTruncated(text, buf, size);
  if (out_len != nullptr) *out_len = text.size();
  return MULLIGAN_OK;
}

#ifdef MULLIGAN_CAPI_REDIS

// Converts the C options (already size-checked, or NULL) into the core's.
int StateOptionsFromC(const char* url, const mulligan_state_options* in,
                      mulligan::RedisStateOptions* out) {
  out->url = url;
  if (in == nullptr) return MULLIGAN_OK;
  if (in->prefix != nullptr) out->prefix = in->prefix;
  const struct {
    const char* name;
    double ms;
    mulligan::Duration* field;
  } bounds[] = {{"connect_timeout_ms", in->connect_timeout_ms, &out->connect_timeout},
                {"command_timeout_ms", in->command_timeout_ms, &out->command_timeout}};
  for (const auto& b : bounds) {
    if (!mulligan::capi_internal::CheckMs(b.name, b.ms, true)) return MULLIGAN_E_INVALID_ARGUMENT;
    *b.field = mulligan::internal::DurationFromMillis(b.ms);
  }
  out->connect_timeout_name = "connect_timeout_ms";
  out->command_timeout_name = "command_timeout_ms";
  // The state only reads its clock (Now, WallNow): the const is kept in spirit.
  out->clock = in->clock != nullptr
                   ? const_cast<mulligan::Clock*>(mulligan::capi_internal::ClockOf(in->clock))
                   : nullptr;
  return MULLIGAN_OK;
}

#endif  // MULLIGAN_CAPI_REDIS

// The error of every part when the library has no Redis.
[[maybe_unused]] int NoRedis(const char* what) {
  return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                  "%s: this libmulligan was built without Redis (MULLIGAN_BUILD_REDIS=OFF)", what);
}

}  // namespace

extern "C" {

int mulligan_state_open(mulligan_state** out, const char* url, const mulligan_state_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(url);
  if (opts != nullptr) {
    if (int rc = CheckStructSize("opts", opts->struct_size, kStateOptionsSizeV0_6,
                                 "MULLIGAN_STATE_OPTIONS_INIT")) {
      return rc;
    }
  }
#ifdef MULLIGAN_CAPI_REDIS
  mulligan::RedisStateOptions options;
  if (int rc = StateOptionsFromC(url, opts, &options)) return rc;
  auto state = mulligan::RedisState::Create(options);
  if (!state.ok()) return SetError(state.status());
  *out = new mulligan_state{std::move(state).value()};
  return MULLIGAN_OK;
#else
  return NoRedis("mulligan_state_open");
#endif
  MULLIGAN_CAPI_END
}

void mulligan_state_destroy(mulligan_state* state) {
  MULLIGAN_CAPI_BEGIN
  delete state;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_state_health_get(const mulligan_state* state, mulligan_state_health* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(state);
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckStructSize("out", out->struct_size, kStateHealthSizeV0_6,
                               "MULLIGAN_STATE_HEALTH_INIT")) {
    return rc;
  }
#ifdef MULLIGAN_CAPI_REDIS
  const mulligan::StateBackendHealth h = state->impl->Health();
  out->reachable = h.reachable ? 1 : 0;
  out->round_trips = h.round_trips;
  out->failures = h.failures;
  out->reconnects = h.reconnects;
  return MULLIGAN_OK;
#else
  return NoRedis("mulligan_state_health_get");
#endif
  MULLIGAN_CAPI_END
}

int mulligan_state_endpoint(const mulligan_state* state, char* buf, size_t size, size_t* out_len) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(state);
#ifdef MULLIGAN_CAPI_REDIS
  return CopyOut(state->impl->endpoint(), buf, size, out_len);
#else
  (void)buf, (void)size, (void)out_len;
  return NoRedis("mulligan_state_endpoint");
#endif
  MULLIGAN_CAPI_END
}

int mulligan_state_last_error(const mulligan_state* state, char* buf, size_t size,
                              size_t* out_len) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(state);
#ifdef MULLIGAN_CAPI_REDIS
  return CopyOut(state->impl->Health().last_error, buf, size, out_len);
#else
  (void)buf, (void)size, (void)out_len;
  return NoRedis("mulligan_state_last_error");
#endif
  MULLIGAN_CAPI_END
}

int mulligan_breaker_share(mulligan_breaker* breaker, mulligan_state* state) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  MULLIGAN_CHECK_NOT_NULL(state);
#ifdef MULLIGAN_CAPI_REDIS
  if (breaker->sharing != nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "mulligan_breaker_share: breaker \"%s\" is already shared",
                    breaker->impl->name().c_str());
  }
  if (breaker->clock != &state->impl->clock()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "mulligan_breaker_share: the breaker and the state must read the same clock "
                    "(the breaker options' clock and mulligan_state_options.clock)");
  }
  auto shared = mulligan::RedisSharedBreaker::Create(state->impl, breaker->impl);
  if (!shared.ok()) return SetError(shared.status());
  breaker->sharing = std::shared_ptr<mulligan::RedisSharedBreaker>(std::move(shared).value());
  return MULLIGAN_OK;
#else
  return NoRedis("mulligan_breaker_share");
#endif
  MULLIGAN_CAPI_END
}

int mulligan_breaker_sharing_get(const mulligan_breaker* breaker, mulligan_breaker_sharing* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckStructSize("out", out->struct_size, kBreakerSharingSizeV0_6,
                               "MULLIGAN_BREAKER_SHARING_INIT")) {
    return rc;
  }
  const uint32_t size = out->struct_size;
  std::memset(out, 0, std::min<size_t>(size, sizeof(*out)));
  out->struct_size = size;
#ifdef MULLIGAN_CAPI_REDIS
  if (breaker->sharing == nullptr) return MULLIGAN_OK;
  const auto* shared = static_cast<const mulligan::RedisSharedBreaker*>(breaker->sharing.get());
  const mulligan::RedisSharedBreakerHealth h = shared->Health();
  out->shared = h.shared ? 1 : 0;
  out->subscribed = h.subscribed ? 1 : 0;
  out->epoch = h.epoch;
  out->published = h.published;
  out->publish_failures = h.publish_failures;
  out->applied = h.applied;
#endif
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_rate_limiter_create_shared(mulligan_rate_limiter** out, mulligan_state* state,
                                        const char* name, double rate, double burst,
                                        double max_wait_ms, int penalize_retry_after) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(state);
  MULLIGAN_CHECK_NOT_NULL(name);
  mulligan::RateLimiterOptions options;
  if (int rc = mulligan::capi_internal::RateLimiterOptionsFromC(name, rate, burst, max_wait_ms,
                                                                penalize_retry_after, &options)) {
    return rc;
  }
#ifdef MULLIGAN_CAPI_REDIS
  auto created = mulligan::CreateRedisRateLimiter(state->impl, std::move(options));
  if (!created.ok()) return SetError(created.status());
  *out = new mulligan_rate_limiter{std::move(created).value()};
  return MULLIGAN_OK;
#else
  return NoRedis("mulligan_rate_limiter_create_shared");
#endif
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_store_create_shared(const mulligan_idempotency_options* opts,
                                             mulligan_state* state,
                                             mulligan_idempotency_store** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(state);
#ifdef MULLIGAN_CAPI_REDIS
  const mulligan::IdempotencyStoreOptions options =
      opts != nullptr ? opts->impl : mulligan::IdempotencyStoreOptions{};
  auto store = mulligan::RedisIdempotencyStore::Create(state->impl, options);
  if (!store.ok()) return SetError(store.status());
  auto handle = std::make_unique<mulligan_idempotency_store>();
  handle->impl = std::move(store).value();
  handle->clock = &state->impl->clock();
  *out = handle.release();
  return MULLIGAN_OK;
#else
  (void)opts;
  return NoRedis("mulligan_idempotency_store_create_shared");
#endif
  MULLIGAN_CAPI_END
}

}  // extern "C"
