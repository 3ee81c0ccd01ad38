/* mulligan_state.h — shared state on Redis through the mulligan C ABI
 * (issue 16): one state handle, from a redis:// URL, passed to the parts
 * whose state it shares across processes and machines. (Added in 0.6.)
 *
 *   mulligan_state *state = NULL;
 *   mulligan_state_options so = MULLIGAN_STATE_OPTIONS_INIT;
 *   so.prefix = "orders";                        // the service's namespace
 *   mulligan_state_open(&state, "redis://127.0.0.1:6379/0", &so);
 *
 *   mulligan_breaker_share(breaker, state);      // a trip here opens it everywhere
 *   mulligan_rate_limiter_create_shared(&limiter, state, "search", 100, 20, 0, 0);
 *   mulligan_idempotency_store_create_shared(NULL, state, &store);
 *   ...
 *   mulligan_state_destroy(state);               // the parts keep it alive
 *
 * What each part shares, and how stale a process may be, is the core's
 * (README "Shared state on Redis"; core/include/mulligan/state/):
 *   - a shared breaker serves every call from its local breaker (no Redis
 *     round trip per call in any state); trips, half-opens and closes are
 *     written to Redis and published off the caller's thread, and applied
 *     from the other processes within one round trip plus one pub/sub
 *     delivery while subscribed, within poll_interval (1 s) while not;
 *   - a shared rate limiter is one GCRA bucket for every process that uses
 *     the same prefix and name: one Lua script (one round trip) per acquire;
 *   - a shared idempotency store makes one round trip per reserve and one
 *     per complete (Lua scripts: reserve, complete, replay, in flight,
 *     mismatch and ttl each atomic on the server).
 *
 * Redis down, slow or failing over: every command is bounded by
 * command_timeout_ms and every connection step by connect_timeout_ms;
 * reconnects wait for mulligan's own backoff (exponential from 50 ms, full
 * jitter, at most 5 s). Breakers and rate limiters fall back to local state
 * and say so (mulligan_breaker_sharing().shared == 0; the limiter's local
 * fallback rate; mulligan_shared_state_fallback in the metrics); the
 * idempotency store fails closed: reserve and complete return
 * MULLIGAN_E_STATE_UNAVAILABLE, so the caller answers 503 with Retry-After
 * and does not run the handler. Nothing here blocks longer than those
 * bounds.
 *
 * URLs: redis://[[user]:password@]host[:port][/db] (RFC 3986; the user and
 * password percent-decoded; AUTH user password for an ACL user, AUTH
 * password without one). rediss:// (TLS) is refused: Debian 12's hiredis
 * 0.14 has no TLS. No error text, health report or log line holds the user
 * name or password: the endpoint reads redis://host:port/db.
 *
 * A libmulligan built without Redis (CMake MULLIGAN_BUILD_REDIS=OFF) has
 * these symbols too; mulligan_state_open then fails with
 * MULLIGAN_E_INVALID_ARGUMENT saying so.
 *
 * Thread-safety: a state handle is thread-safe (one connection, one round
 * trip at a time; a shared breaker's subscriber holds a second one). The
 * parts made on it keep it alive: mulligan_state_destroy() may come first.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_STATE_H_
#define MULLIGAN_STATE_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_breaker.h"
#include "mulligan_export.h"
#include "mulligan_idempotency.h"
#include "mulligan_limits.h"
#include "mulligan_retry.h"
#include "mulligan_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The options of mulligan_state_open(). Initialise with
 * MULLIGAN_STATE_OPTIONS_INIT (every default), then set what you need. The
 * struct only grows at the end; struct_size tells the library which version
 * the caller compiled.
 * @since 0.6
 */
typedef struct mulligan_state_options {
  /** sizeof(mulligan_state_options) as compiled by the caller. */
  uint32_t struct_size;
  /** The key namespace the processes of one service share: 1 to 64 bytes of
   *  A-Z a-z 0-9 '_' '.' '-'; copied. NULL: "mulligan". Every key is one
   *  Redis Cluster hash tag, {<prefix>:<kind>:<name>}. */
  const char *prefix;
  /** Bound on each connection step (TCP handshake, AUTH, SELECT), ms: in
   *  [1, 3600000]. Default 250. */
  double connect_timeout_ms;
  /** Bound on one command's round trip, ms: in [1, 3600000]. Default 250. */
  double command_timeout_ms;
  /** The clock of the reconnect backoff and of the wall-time anchor that
   *  rate limiters and idempotency records are placed on; NULL: the system
   *  steady clock. A fake clock (mulligan_clock_create) makes ttls and
   *  limiter slots scriptable in tests. Borrowed: must outlive the state and
   *  every part made on it. Breakers shared through this state must read
   *  the same clock. */
  const mulligan_clock *clock;
} mulligan_state_options;

/** Initialiser for mulligan_state_options: every default. @since 0.6 */
#define MULLIGAN_STATE_OPTIONS_INIT \
  { (uint32_t)sizeof(mulligan_state_options), NULL, 250.0, 250.0, NULL }

/**
 * A connection to the Redis server that holds a service's shared state
 * (mulligan::RedisState). Thread-safe.
 * @since 0.6
 */
typedef struct mulligan_state mulligan_state;

/**
 * Validates the URL and options and connects once. A server that cannot be
 * reached is not an error here: the state is returned unreachable
 * (mulligan_state_health) and the parts on it fall back (or, for the
 * idempotency store, fail closed) until a reconnect succeeds.
 * @param out   OUT: the new state; NULL on failure. Free with
 *              mulligan_state_destroy().
 * @param url   redis://[[user]:password@]host[:port][/db], UTF-8, not NULL.
 * @param opts  the options (struct_size set), copied; NULL for every default.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (a NULL argument, a bad
 *         struct_size, a URL that does not parse or is rediss://, a bad
 *         prefix or timeout: the last error names the field and never holds
 *         the password; a library built without Redis); MULLIGAN_E_NO_MEMORY.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_state_open(mulligan_state **out, const char *url,
                                     const mulligan_state_options *opts);

/**
 * Releases the handle. NULL is a no-op. The parts made on the state keep
 * its connection alive until the last of them is destroyed.
 * @since 0.6
 */
MULLIGAN_API void mulligan_state_destroy(mulligan_state *state);

/**
 * What a state reports about itself. Initialise with
 * MULLIGAN_STATE_HEALTH_INIT.
 * @since 0.6
 */
typedef struct mulligan_state_health {
  /** sizeof(mulligan_state_health) as compiled by the caller. */
  uint32_t struct_size;
  /** 1 when the last command or connection attempt succeeded, else 0. */
  int reachable;
  /** Round trips sent (commands and scripts), successful or not. */
  uint64_t round_trips;
  /** Operations refused with MULLIGAN_E_STATE_UNAVAILABLE (connection
   *  down, timeout, error reply, waiting for the reconnect backoff). */
  uint64_t failures;
  /** Connections established after the first one. */
  uint64_t reconnects;
} mulligan_state_health;

/** Initialiser for mulligan_state_health. @since 0.6 */
#define MULLIGAN_STATE_HEALTH_INIT { (uint32_t)sizeof(mulligan_state_health), 0, 0, 0, 0 }

/**
 * Fills *out with a snapshot of the state's health.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (NULL, a bad struct_size).
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_state_health_get(const mulligan_state *state,
                                           mulligan_state_health *out);

/**
 * Copies the state's endpoint, "redis://host:port/db" (never credentials),
 * into buf the snprintf way (at most size - 1 bytes and a NUL).
 * @param buf      the buffer; may be NULL when size is 0.
 * @param out_len  OUT (optional): the full length without the NUL; a value
 *                 >= size means truncated.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (NULL state).
 * @since 0.6
 */
MULLIGAN_API int mulligan_state_endpoint(const mulligan_state *state, char *buf, size_t size,
                                         size_t *out_len);

/**
 * Copies the most recent failure since the last success, e.g. "connect
 * failed (Connection refused)" (empty while healthy; never credentials), as
 * mulligan_state_endpoint() does. The errors of the failed operations
 * themselves (mulligan_last_error) also name the endpoint.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (NULL state).
 * @since 0.6
 */
MULLIGAN_API int mulligan_state_last_error(const mulligan_state *state, char *buf, size_t size,
                                           size_t *out_len);

/**
 * Shares a breaker through `state` under its name (the breaker's options'
 * name: 1 to 200 printable ASCII bytes without '{' or '}'): its trips,
 * half-opens and closes are written to {<prefix>:breaker:<name>} and
 * published, and the other processes' are applied to it (reasons
 * "shared_open" / "shared_close"; a remote change is never echoed). Calls
 * still make no Redis round trip. Sharing lasts until the breaker handle is
 * destroyed (a breaker a pipeline still holds then serves locally); the
 * state's clock and the breaker's must be the same clock.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (a NULL argument, a name
 *         outside the rule, clocks that differ, a handle already shared).
 *         A Redis that cannot be reached is not an error: the breaker serves
 *         locally and shares once it can.
 * Thread-safety: thread-safe, but share a handle once, from one thread.
 * @since 0.6
 */
MULLIGAN_API int mulligan_breaker_share(mulligan_breaker *breaker, mulligan_state *state);

/**
 * What a shared breaker reports about its sharing. Initialise with
 * MULLIGAN_BREAKER_SHARING_INIT.
 * @since 0.6
 */
typedef struct mulligan_breaker_sharing {
  /** sizeof(mulligan_breaker_sharing) as compiled by the caller. */
  uint32_t struct_size;
  /** 1 while the subscription is up and the last write worked; 0: the
   *  breaker serves from its local state alone (or is not shared). */
  int shared;
  /** 1 while the subscriber holds a live subscription. */
  int subscribed;
  /** The newest epoch seen on the key; 0: none. */
  int64_t epoch;
  /** Transitions written to Redis, and writes that failed. */
  uint64_t published;
  uint64_t publish_failures;
  /** Remote transitions applied to this breaker. */
  uint64_t applied;
} mulligan_breaker_sharing;

/** Initialiser for mulligan_breaker_sharing. @since 0.6 */
#define MULLIGAN_BREAKER_SHARING_INIT \
  { (uint32_t)sizeof(mulligan_breaker_sharing), 0, 0, 0, 0, 0, 0 }

/**
 * Fills *out with the sharing's health; a breaker handle that is not shared
 * gives every field 0.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (NULL, a bad struct_size).
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_breaker_sharing_get(const mulligan_breaker *breaker,
                                              mulligan_breaker_sharing *out);

/**
 * Creates a rate limiter whose bucket lives in `state`: every process using
 * the same prefix and `name` shares one rate and burst (GCRA, ITU-T I.371;
 * one Lua script per acquire). The arguments are mulligan_rate_limiter_create's;
 * the processes must agree on rate and burst. While Redis cannot answer,
 * acquire decides locally (the limiter's fallback rate) and the metrics say
 * so. Use it as any limiter (mulligan_rate_limiter_acquire,
 * mulligan_pipeline_options_set_rate_limiter).
 * @param name  1 to 200 printable ASCII bytes without '{' or '}' (the shared
 *              identity), not NULL.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT naming the field;
 *         MULLIGAN_E_NO_MEMORY.
 * Thread-safety: the limiter is thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_rate_limiter_create_shared(mulligan_rate_limiter **out,
                                                     mulligan_state *state, const char *name,
                                                     double rate, double burst,
                                                     double max_wait_ms,
                                                     int penalize_retry_after);

/**
 * Creates an idempotency store whose records live in `state`, shared by
 * every process on the same prefix: reserve, complete, replay, in flight
 * (409 with Retry-After), mismatch (422) and ttl as the local store, each
 * one atomic Lua script (one round trip per reserve, one per complete). It
 * fails closed: while Redis cannot answer, reserve returns
 * MULLIGAN_E_STATE_UNAVAILABLE (answer 503 with Retry-After; do not run the
 * handler). The store reads the state's clock. Of the options, ttl, lease,
 * in_flight_retry_after and max_key_length apply; max_entries, max_bytes
 * and shards bound a local store only (Redis expires records at their ttl).
 * @param opts   the options, or NULL for every default.
 * @param state  the state, not NULL.
 * @param out    OUT: the new store; NULL on failure. Free with
 *               mulligan_idempotency_store_destroy().
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT naming the field;
 *         MULLIGAN_E_NO_MEMORY.
 * Thread-safety: the store is thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_idempotency_store_create_shared(const mulligan_idempotency_options *opts,
                                                          mulligan_state *state,
                                                          mulligan_idempotency_store **out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_STATE_H_ */
