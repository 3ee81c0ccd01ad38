/* mulligan_config.h — configuration in the mulligan C ABI: named retry
 * policies, breaker and client settings loaded from a file, a string, the
 * environment or a gRPC service config, and reloaded atomically.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. A program may include just this header (it includes
 * mulligan_retry.h, mulligan_breaker.h and mulligan_http.h for the handles
 * it fills: retry policies, breaker options, HTTP client options).
 * Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_CONFIG_H_
#define MULLIGAN_CONFIG_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_breaker.h"
#include "mulligan_http.h"
#include "mulligan_retry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Configuration: named policies from a file                                  */
/* ========================================================================== */

/**
 * A registry of named retry policies, circuit breaker settings and client
 * settings, loaded from a mulligan configuration file (JSON; the format is
 * docs/configuration.md, the editor schema schema/mulligan-config.schema.json)
 * or from a gRPC service config (methodConfig[].retryPolicy, gRFC A6).
 *
 * A load or reload replaces everything at once; a failed one keeps the
 * previous configuration. Policies handed out are independent copies, so a
 * call running on one keeps it across reloads.
 *
 * Environment overrides are applied on every load: MULLIGAN_POLICY_<NAME>_
 * {MAX_ATTEMPTS,BACKOFF,BASE_DELAY,MULTIPLIER,MAX_DELAY,JITTER,DEADLINE,
 * ATTEMPT_TIMEOUT}, MULLIGAN_BREAKER_<NAME>_{FAILURE_THRESHOLD,RESET_TIMEOUT,
 * HALF_OPEN_MAX_CALLS}, MULLIGAN_CLIENT_<NAME>_{ATTEMPT_TIMEOUT,
 * CONNECT_TIMEOUT,VERIFY_TLS,USER_AGENT}; <NAME> is the entry's name upper-
 * cased with every character other than A-Z and 0-9 replaced by '_'.
 *
 * Errors: a failed load returns MULLIGAN_E_INVALID_ARGUMENT and
 * mulligan_last_error() lists the problems, one per line, each naming the
 * file, the JSON path and what was expected, e.g.
 *   payments.json: policies.payments.max_delay: expected a duration such as "10s", got -3
 * (invalid JSON: "<file>: line L, column C: invalid JSON: <reason>"). The last
 * error holds at most 1023 bytes; a longer list is cut.
 *
 * Thread-safety: every function may be called from many threads at once on
 * the same handle; loads and reloads are serialized internally.
 * @since 0.1
 */
typedef struct mulligan_config mulligan_config;

/** Which section a name belongs to (mulligan_config_count/name).
 *  @since 0.1 */
typedef enum mulligan_config_section {
  MULLIGAN_CONFIG_POLICIES = 0,
  MULLIGAN_CONFIG_BREAKERS = 1,
  MULLIGAN_CONFIG_CLIENTS = 2
} mulligan_config_section;

/**
 * Creates an empty registry (no names until a load succeeds).
 * @param out  OUT: the registry; NULL on failure. Free with
 *             mulligan_config_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_create(mulligan_config **out);

/**
 * Destroys a registry. NULL is a no-op. Policies obtained from it stay valid.
 * @param config  the registry, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_config_destroy(mulligan_config *config);

/**
 * Loads a configuration file; later reloads read the same path again.
 * @param config  the registry.
 * @param path    the file (UTF-8 path), used as is in messages.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (NULL argument, missing or
 *         unreadable file, invalid JSON, invalid values; see the last error),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_load_file(mulligan_config *config, const char *path);

/**
 * Loads a configuration from JSON text; reloads parse the same text again
 * (re-reading the environment overrides).
 * @param config  the registry.
 * @param json    the text (need not be NUL-terminated); copied.
 * @param len     its length in bytes.
 * @param source  the name used in messages, e.g. "inline.json"; NULL gives
 *                "<string>".
 * @return as mulligan_config_load_file().
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_load_string(mulligan_config *config, const char *json,
                                             size_t len, const char *source);

/**
 * Loads the file named by the MULLIGAN_CONFIG environment variable.
 * @param config  the registry.
 * @return as mulligan_config_load_file(); MULLIGAN_E_INVALID_ARGUMENT with
 *         "MULLIGAN_CONFIG is not set: ..." when it is unset or empty.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_load_env(mulligan_config *config);

/**
 * Loads the last successfully loaded source again, atomically.
 * @param config  the registry.
 * @return as mulligan_config_load_file(); MULLIGAN_E_INVALID_ARGUMENT when
 *         nothing has been loaded yet. On failure the old configuration stays.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_reload(mulligan_config *config);

/**
 * Creates a retry policy from the named entry of the current configuration.
 * @param config  the registry.
 * @param name    the policy's name ("payments", "shop.Payments/Charge").
 * @param out     OUT: a new policy; NULL on failure. The caller owns it and
 *                frees it with mulligan_retry_policy_destroy(); reloads do not
 *                change it.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (NULL argument, or no
 *         policy of that name: the last error lists the known names),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_retry_policy(const mulligan_config *config, const char *name,
                                              mulligan_retry_policy **out);

/**
 * Circuit breaker settings as configured (DESIGN.md section 4 for the
 * meaning of each). Initialise with MULLIGAN_CONFIG_BREAKER_INIT; the struct
 * only grows at the end and struct_size tells the library which version the
 * caller has.
 * @since 0.1
 */
typedef struct mulligan_config_breaker {
  /** sizeof(mulligan_config_breaker) as compiled by the caller. */
  uint32_t struct_size;
  /** Consecutive failures that trip a closed breaker; 0 disables. */
  int failure_threshold;
  /** 0 no window, 1 count-based, 2 time-based. */
  int window;
  int window_size;
  double window_duration_ms;
  int window_buckets;
  /** Percent in (0, 100]. */
  double failure_rate_threshold;
  int minimum_calls;
  /** Negative when unset (no slow calls). */
  double slow_call_duration_ms;
  double slow_call_rate_threshold;
  double reset_timeout_ms;
  double reset_timeout_multiplier;
  double max_reset_timeout_ms;
  int half_open_max_calls;
  double permit_timeout_ms;
  /** The longest the breaker stays half-open, in milliseconds; negative
   *  when unset (no limit). @since 0.2 (a caller compiled against 0.1 has a
   *  smaller struct_size and gets every field but this one) */
  double max_half_open_duration_ms;
} mulligan_config_breaker;

/** Initialiser for mulligan_config_breaker. @since 0.1 */
#define MULLIGAN_CONFIG_BREAKER_INIT \
  { (uint32_t)sizeof(mulligan_config_breaker), 0, 0, 0, 0.0, 0, 0.0, 0, 0.0, 0.0, 0.0, 0.0, \
    0.0, 0, 0.0, 0.0 }

/**
 * Copies the named breaker settings of the current configuration.
 * @param config  the registry.
 * @param name    the breaker's name.
 * @param out     OUT: filled in; its struct_size must be set
 *                (MULLIGAN_CONFIG_BREAKER_INIT).
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (NULL argument, bad
 *         struct_size, unknown name).
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_breaker_get(const mulligan_config *config, const char *name,
                                             mulligan_config_breaker *out);

/**
 * Creates breaker options holding every field of the named breaker of the
 * current configuration (the file's failure_threshold, window...,
 * max_half_open_duration, permit_timeout), named after it and on the
 * system steady clock (mulligan_breaker_options_set_clock() changes that):
 * the way to build a configured breaker without copying each field of
 * mulligan_config_breaker by hand, so a field added later reaches it too.
 * @param config  the registry.
 * @param name    the breaker's name.
 * @param out     OUT: new options; NULL on failure. The caller owns them and
 *                frees them with mulligan_breaker_options_destroy(); reloads
 *                do not change them.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (NULL argument, unknown
 *         name: the last error lists the known ones), MULLIGAN_E_NO_MEMORY.
 * Thread-safety: safe to call while another thread reloads.
 * @since 0.2
 */
MULLIGAN_API int mulligan_config_breaker_options(const mulligan_config *config, const char *name,
                                                 mulligan_breaker_options **out);

/**
 * Creates HTTP client options holding every field of the named client of the
 * current configuration: connect_timeout, attempt_timeout, verify_tls,
 * user_agent and breaker_key, every field of its policy (the default policy
 * of a client made with mulligan_http_client_create_v2() and a NULL
 * default_policy) and every option of its breaker (which guards each key;
 * a later mulligan_http_options_set_breaker() replaces it). The setters of
 * mulligan_http.h may change the options after.
 * @param config  the registry.
 * @param name    the client's name ("clients" section).
 * @param out     OUT: new options; NULL on failure. The caller owns them and
 *                frees them with mulligan_http_options_destroy(); reloads do
 *                not change them.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (NULL argument, unknown
 *         name: the last error lists the known ones), MULLIGAN_E_NO_MEMORY.
 * Thread-safety: safe to call while another thread reloads (one snapshot is
 * read).
 * @since 0.2
 */
MULLIGAN_API int mulligan_config_http_options(const mulligan_config *config, const char *name,
                                              mulligan_http_options **out);

/**
 * Counts the names of one section of the current configuration.
 * @param config   the registry.
 * @param section  a mulligan_config_section.
 * @param out      OUT: the count (0 on failure).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_count(const mulligan_config *config, int section, size_t *out);

/**
 * Copies the index-th name (sorted by byte value) of a section into a
 * caller buffer, snprintf-style: at most size - 1 bytes plus a NUL.
 * A reload between mulligan_config_count() and this call may change the
 * names; an index past the end then fails cleanly.
 * @param config   the registry.
 * @param section  a mulligan_config_section.
 * @param index    0-based.
 * @param buf      the buffer; may be NULL when size is 0.
 * @param size     its size in bytes.
 * @param out_len  OUT (optional, may be NULL): the name's full length in
 *                 bytes, without the NUL; a result >= size means truncated.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (index out of range).
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_name(const mulligan_config *config, int section, size_t index,
                                      char *buf, size_t size, size_t *out_len);

/**
 * Counts the warnings of the current configuration's load (a gRPC
 * maxAttempts above 5 capped at 5, ignored gRPC fields, applied environment
 * overrides).
 * @param config  the registry.
 * @param out     OUT: the count.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_warning_count(const mulligan_config *config, size_t *out);

/**
 * Copies the index-th warning into a caller buffer (as mulligan_config_name()).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (index out of range).
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_warning(const mulligan_config *config, size_t index, char *buf,
                                         size_t size, size_t *out_len);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_CONFIG_H_ */
