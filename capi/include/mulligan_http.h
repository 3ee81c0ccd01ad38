/* mulligan_http.h — the resilient HTTP client of the mulligan C ABI (over
 * libcurl): a client with its retry policy and options, requests, and their
 * responses.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. A program may include just this header (it includes
 * mulligan_retry.h for the policy and the enumerations). Compiles as C99 and
 * as C++.
 */
#ifndef MULLIGAN_HTTP_H_
#define MULLIGAN_HTTP_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_retry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* HTTP client                                                                */
/* ========================================================================== */

/**
 * A resilient HTTP client on libcurl: retries per its policy, honours
 * Retry-After, trims each attempt to the deadline, and applies the method
 * rules (GET, HEAD, OPTIONS, TRACE, PUT, DELETE are retried; POST and PATCH
 * only with an idempotency key or when nothing was sent). Connections are
 * kept alive between attempts and calls. Waits are real sleeps.
 *
 * Thread-safety: mulligan_http_request() may be called from many threads at
 * once on one client.
 * @since 0.1
 */
typedef struct mulligan_http_client mulligan_http_client;

/**
 * The result of one mulligan_http_request() call: the last attempt's status,
 * headers and body plus what the retry loop did.
 *
 * Thread-safety: immutable; safe to read from many threads.
 * @since 0.1
 */
typedef struct mulligan_http_response mulligan_http_response;

/**
 * Creates an HTTP client (attempt timeout 30000 ms unless the policy sets
 * one, connect timeout 10000 ms, TLS verification on, User-Agent "mulligan").
 * @param out  OUT: the new client; NULL on failure. Free with
 *             mulligan_http_client_destroy().
 * @param default_policy  the retry policy of every request, copied (it may be
 *                        destroyed afterwards); NULL for the defaults.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY,
 *         MULLIGAN_E_INTERNAL (libcurl could not be initialised).
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_client_create(mulligan_http_client **out,
                                             const mulligan_retry_policy *default_policy);

/**
 * Destroys a client and closes its connections. NULL is a no-op.
 * REQUIRES: no request is running on it. Responses stay valid.
 * @param client  the client, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_http_client_destroy(mulligan_http_client *client);

/**
 * Sends a request, retrying per the client's policy, and blocks until the
 * retry loop stops.
 *
 * A response that arrived counts as success even when its status is an error:
 * after retries give up on a 503 the call returns MULLIGAN_OK with status 503
 * and stop reason MULLIGAN_STOP_ATTEMPTS_EXHAUSTED. When the LAST attempt got
 * no response, the call returns MULLIGAN_E_TRANSPORT, MULLIGAN_E_TIMEOUT or
 * MULLIGAN_E_DEADLINE_EXCEEDED and STILL sets *out to a response with status
 * 0 whose error kind, attempts, elapsed time and stop reason say what
 * happened. *out is NULL only when no attempt ran (invalid arguments, no
 * memory).
 *
 * @param client  the client.
 * @param method  an HTTP method token ("GET", "POST", ...); NULL for "GET".
 * @param url  an absolute http:// or https:// URL (not NULL). Credentials in
 *             it ("http://user:password@host/") are sent (as Basic
 *             authentication), but never to another origin after a redirect,
 *             and error texts show the URL with them masked.
 * @param headers  `header_count` strings "Name: value"; copied. May be NULL
 *                 when header_count is 0.
 * @param header_count  number of headers.
 * @param body  `body_len` bytes sent as the body; copied. May be NULL when
 *              body_len is 0.
 * @param body_len  body length in bytes.
 * @param idempotency_key  sent as Idempotency-Key on every attempt, making a
 *                         POST or PATCH replay-safe; NULL for none. Must be
 *                         a key mulligan's idempotency server side accepts
 *                         (mulligan_idempotency_key_parse with the default
 *                         max_length, 255): 1 to 255
 *                         printable ASCII characters, no quote or backslash,
 *                         no leading or trailing space.
 * @param out  OUT: the response (see above); free with
 *             mulligan_http_response_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (bad argument, no attempt
 *         made), MULLIGAN_E_TRANSPORT, MULLIGAN_E_TIMEOUT,
 *         MULLIGAN_E_DEADLINE_EXCEEDED, MULLIGAN_E_NO_MEMORY,
 *         MULLIGAN_E_INTERNAL.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_request(mulligan_http_client *client, const char *method,
                                       const char *url, const char *const *headers,
                                       size_t header_count, const void *body, size_t body_len,
                                       const char *idempotency_key,
                                       mulligan_http_response **out);

/**
 * Returns the final HTTP status (the last attempt's), or 0 when the last
 * attempt got no response (or resp is NULL).
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_response_status(const mulligan_http_response *resp);

/**
 * Returns the body of the last response.
 * @param resp  the response.
 * @param len  OUT, may be NULL: the body length in bytes.
 * @return the bytes, followed by a NUL that len does not count (the body may
 *         itself contain NULs); never NULL for a valid response. Borrowed:
 *         valid until mulligan_http_response_destroy(resp).
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_http_response_body(const mulligan_http_response *resp,
                                                     size_t *len);

/**
 * Returns the value of the first response header named `name`
 * (case-insensitive), or NULL when there is none.
 * @param resp  the response.
 * @param name  the field name.
 * @return borrowed: valid until mulligan_http_response_destroy(resp).
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_http_response_header(const mulligan_http_response *resp,
                                                       const char *name);

/**
 * Returns the number of response header fields.
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_http_response_header_count(const mulligan_http_response *resp);

/**
 * Returns a response header field by position, in received order.
 * @param resp  the response.
 * @param index  in [0, mulligan_http_response_header_count()).
 * @param name  OUT: the field name as received; borrowed like the body.
 * @param value  OUT: the field value; borrowed like the body.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (index out of range or
 *         a NULL pointer; the outputs are then NULL).
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_response_header_at(const mulligan_http_response *resp,
                                                  size_t index, const char **name,
                                                  const char **value);

/**
 * Returns the number of attempts made (1 when the first succeeded).
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_response_attempts(const mulligan_http_response *resp);

/**
 * Returns the time from the start of the first attempt to the end of the
 * last, in ms.
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API double mulligan_http_response_elapsed_ms(const mulligan_http_response *resp);

/**
 * Returns the last attempt's mulligan_error_kind (MULLIGAN_ERROR_NONE when it
 * got a response).
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_response_error_kind(const mulligan_http_response *resp);

/**
 * Returns why the retry loop stopped (a mulligan_stop_reason).
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_response_stop_reason(const mulligan_http_response *resp);

/**
 * Returns the idempotency key sent with every attempt, or NULL when none was.
 * @param resp  the response.
 * @return borrowed: valid until mulligan_http_response_destroy(resp).
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_http_response_idempotency_key(
    const mulligan_http_response *resp);

/**
 * Destroys a response. NULL is a no-op.
 * @param resp  the response, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_http_response_destroy(mulligan_http_response *resp);

/* -------------------------------------------------------------------------- */
/* HTTP client options (mulligan_http_client_create_v2)                       */
/* -------------------------------------------------------------------------- */

/**
 * Settings of an HTTP client beyond its retry policy, set one by one and
 * validated by mulligan_http_client_create_v2(), which copies them (the
 * options may be destroyed or reused afterwards). Defaults: connect timeout
 * 10000 ms, attempt timeout 30000 ms (when the policy sets none), TLS
 * verification on with the system CA bundle, User-Agent "mulligan",
 * redirects not followed (at most 10 when followed), no strict mode, no
 * on_retry callback, no circuit breakers. Proxies always come from the
 * environment (http_proxy, https_proxy, no_proxy), as libcurl reads them.
 *
 * Thread-safety: not thread-safe; fill in on one thread.
 * @since 0.1
 */
typedef struct mulligan_http_options mulligan_http_options;

/**
 * Creates options holding every default.
 * @param out  OUT: the options; free with mulligan_http_options_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_create(mulligan_http_options **out);

/**
 * Destroys options (releasing their on_retry user_data reference). NULL is a
 * no-op.
 * @param opts  the options, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_http_options_destroy(mulligan_http_options *opts);

/**
 * Sets the time allowed to establish a connection, in ms (> 0).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_connect_timeout_ms(mulligan_http_options *opts,
                                                              int64_t ms);

/**
 * Sets the bound on one attempt when the policy sets no attempt timeout, in
 * ms (> 0). Either way it is trimmed to the time left before the deadline.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_attempt_timeout_ms(mulligan_http_options *opts,
                                                              int64_t ms);

/**
 * Turns TLS peer and host name verification on (1, the default) or off (0).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_verify_tls(mulligan_http_options *opts, int verify);

/**
 * Sets a PEM file of CA certificates used instead of the system bundle;
 * NULL restores the default. The path is copied.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_ca_bundle(mulligan_http_options *opts,
                                                     const char *path);

/**
 * Sets the User-Agent sent when a request has none (copied; no CR or LF).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_user_agent(mulligan_http_options *opts,
                                                      const char *user_agent);

/**
 * Follows 3xx redirects (follow = 1) up to max_redirects (0 to 1000; more is
 * a terminal failure, MULLIGAN_ERROR_TERMINAL), or returns them as responses
 * (follow = 0, the default). Only http and https are followed.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_redirects(mulligan_http_options *opts, int follow,
                                                     int max_redirects);

/**
 * Strict mode (1): only GET, HEAD and OPTIONS are replayed once bytes were
 * sent; failures before anything was sent are still retried. Default 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_strict_methods(mulligan_http_options *opts,
                                                          int strict);

/**
 * Which requests are replayed once bytes of them were sent (a failure before
 * anything was sent, such as a refused connection, is retried whatever the
 * rule). Values are pinned (they equal mulligan::HttpMethodRule).
 * @since 0.2
 */
typedef enum mulligan_http_methods {
  /** RFC 9110's idempotent methods (GET, HEAD, OPTIONS, TRACE, PUT, DELETE)
   *  plus any request with an Idempotency-Key. The default. */
  MULLIGAN_HTTP_METHODS_IDEMPOTENT = 0,
  /** GET, HEAD and OPTIONS only, keyed or not (strict mode). */
  MULLIGAN_HTTP_METHODS_STRICT = 1,
  /** GET, HEAD and OPTIONS, plus any request with an Idempotency-Key
   *  ("safe by default"). */
  MULLIGAN_HTTP_METHODS_SAFE = 2,
  /** Every method (urllib3's allowed_methods=None). */
  MULLIGAN_HTTP_METHODS_ALL = 3,
  /** Exactly the methods of mulligan_http_options_set_allowed_methods()
   *  (urllib3's allowed_methods list); a key adds none. */
  MULLIGAN_HTTP_METHODS_ALLOWED = 4
} mulligan_http_methods;

/**
 * Sets the method rule (default MULLIGAN_HTTP_METHODS_IDEMPOTENT). Strict
 * mode (mulligan_http_options_set_strict_methods) still wins when on.
 * @param rule  a mulligan_http_methods value.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts, unknown rule).
 * @since 0.2
 */
MULLIGAN_API int mulligan_http_options_set_method_rule(mulligan_http_options *opts, int rule);

/**
 * Replays exactly `methods` (copied; case-sensitive, e.g. "GET", "PUT") and
 * sets the rule to MULLIGAN_HTTP_METHODS_ALLOWED; count 0 replays none (only
 * failures before anything was sent are retried).
 * @param methods  `count` NUL-terminated HTTP method tokens (NULL when count is 0).
 * @param count  0 to 64.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (a NULL or non-token
 *         method, count > 64) or MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_http_options_set_allowed_methods(mulligan_http_options *opts,
                                                           const char *const *methods,
                                                           size_t count);

/**
 * Guards each origin (scheme://host:port) with a circuit breaker that opens
 * after `failure_threshold` consecutive failures (0 turns breakers off, the
 * default) and admits a probe after `reset_timeout_ms`. The breaker is checked
 * before every attempt; an open one ends the call with
 * MULLIGAN_E_CIRCUIT_OPEN. breaker_per_attempt = 0 records one result per
 * call (after its retries), 1 records every attempt. (0.1 headers called this
 * parameter per_attempt; a parameter name is no part of the API or ABI.)
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_breaker(mulligan_http_options *opts,
                                                   int failure_threshold,
                                                   int64_t reset_timeout_ms,
                                                   int breaker_per_attempt);

/**
 * What an HTTP client keys its circuit breakers by (mulligan_http_options_set_breaker_key()).
 * Values are pinned; append only. (A key function is C++ and Python only.)
 * @since 0.2
 */
typedef enum mulligan_breaker_key {
  /** "scheme://host:port": one breaker per server (the default). */
  MULLIGAN_BREAKER_KEY_ORIGIN = 0,
  /** The host name alone, lower case: one breaker for every port of a host. */
  MULLIGAN_BREAKER_KEY_HOST = 1,
  /** The origin and the path, without query or fragment: one per URL. */
  MULLIGAN_BREAKER_KEY_PATH = 2,
  /** The origin and the first matching path template (else the origin). */
  MULLIGAN_BREAKER_KEY_PATH_TEMPLATE = 3
} mulligan_breaker_key;

/**
 * Chooses what the client's breakers are keyed by (with
 * mulligan_http_options_set_breaker(); the metrics stay by origin).
 * MULLIGAN_BREAKER_KEY_PATH_TEMPLATE needs at least one template
 * (mulligan_http_options_add_breaker_key_template()) when the client is
 * created. A refusal's last error names the breaker by its key ("circuit
 * breaker 'http://127.0.0.1:8080/down' is open; ...").
 * @param opts  the options.
 * @param kind  a mulligan_breaker_key.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL, or a kind out of range).
 * @since 0.2
 */
MULLIGAN_API int mulligan_http_options_set_breaker_key(mulligan_http_options *opts, int kind);

/**
 * Appends a path template for MULLIGAN_BREAKER_KEY_PATH_TEMPLATE; templates
 * are tried in order. Syntax: '/'-separated segments starting with '/'; a
 * segment "{name}" matches exactly one non-empty segment, "{name...}" as the
 * last segment one or more; any other segment matches itself exactly
 * (case-sensitive). "/users/{id}" matches "/users/42", not "/users/42/".
 * @param opts  the options.
 * @param path_template  NUL-terminated UTF-8, copied.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL, or a malformed
 *         template: the last error says why).
 * @since 0.2
 */
MULLIGAN_API int mulligan_http_options_add_breaker_key_template(mulligan_http_options *opts,
                                                                const char *path_template);

/**
 * Retry budgets per origin (scheme://host:port). By default every origin of
 * a client gets its own gRPC A6 token bucket (max_tokens 100, token_ratio
 * 0.5: a failed attempt takes 1 token, a success adds 0.5, a retry is
 * allowed only while tokens > 50). A retry the budget refuses ends the call
 * at once: the last response (its status, with stop reason
 * MULLIGAN_STOP_BUDGET) or the last error stays the result. First attempts
 * are never refused. Each setter below replaces the per-origin budget's kind
 * and parameters; mulligan_http_options_disable_retry_budget turns budgets
 * off. Validated here (the last error names the field).
 * Thread-safety: as every options setter (not thread-safe).
 */

/**
 * Per-origin gRPC A6 token buckets: 0 < max_tokens <= 1000, token_ratio > 0
 * (3 decimals kept).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.4
 */
MULLIGAN_API int mulligan_http_options_set_token_bucket_budget(mulligan_http_options *opts,
                                                               double max_tokens,
                                                               double token_ratio);

/**
 * Per-origin AWS standard-mode (2020) retry quotas: capacity > 0, every cost
 * >= 0 (AWS's defaults: 500, 5, 10, 5, 1).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.4
 */
MULLIGAN_API int mulligan_http_options_set_quota_budget(mulligan_http_options *opts,
                                                        int64_t capacity, int64_t retry_cost,
                                                        int64_t timeout_cost,
                                                        int64_t throttling_cost,
                                                        int64_t no_retry_increment);

/**
 * Per-origin Finagle ratio budgets: retries at most `percent` (0 to 1) of
 * the calls of the last ttl_ms (1000 to 60000 ms), plus a floor of
 * min_retries_per_second (>= 0) (Finagle's defaults: 10000, 0.2, 10).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.4
 */
MULLIGAN_API int mulligan_http_options_set_ratio_budget(mulligan_http_options *opts,
                                                        int64_t ttl_ms, double percent,
                                                        double min_retries_per_second);

/**
 * Turns the per-origin retry budgets off: every call retries as its policy
 * says. A later set_*_budget turns them on again.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.4
 */
MULLIGAN_API int mulligan_http_options_disable_retry_budget(mulligan_http_options *opts);

/* Hedged requests (issue 18; gRPC A6 hedgingPolicy, "The Tail at Scale").
 * With hedging on, mulligan_http_request() of a replay-safe request (GET,
 * HEAD, OPTIONS, TRACE, PUT, DELETE, or any request carrying an
 * Idempotency-Key, sent unchanged on every copy) sends up to max_attempts
 * copies: copy k+1 starts delay_ms after copy k (or, with a quantile, that
 * quantile of recent winners' latencies), at once after copy k failed
 * retryably, later when the server pushed back (Retry-After). The copies run
 * as transfers of one libcurl multi handle on the calling thread (no thread
 * per copy), each a one-attempt call of the client's pipeline for the origin
 * (its breaker admits and judges it); the retry budget grants every extra
 * copy. The first acceptable response wins; the other copies are aborted
 * (their connections closed, never reused mid-request) and counted
 * cancelled (mulligan_hedges_total, mulligan_hedge_cancelled_total), neither
 * success nor failure, not charged to the breaker or the budget. Copies are
 * not retried; the response's attempts count the copies started. Other
 * requests (a POST without a key) are sent as without hedging. Validated by
 * each setter (the last error names the field, "hedging: max_attempts must
 * be >= 2 ..."). Default: off.
 * Thread-safety: as every options setter (not thread-safe).
 */

/**
 * Turns hedging on with at most max_attempts copies per request (>= 2; above
 * 5 is 5, as gRPC A6 says) and a fixed delay of delay_ms (>= 0; 0 starts every
 * copy at once; a delay longer than the clock's range, up to INT64_MAX, never
 * starts a second copy) between the starts of two copies. Keeps a quantile set by
 * mulligan_http_options_set_hedging_quantile().
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (unchanged then).
 * @since 0.6
 */
MULLIGAN_API int mulligan_http_options_set_hedging(mulligan_http_options *opts,
                                                   int max_attempts, int64_t delay_ms);

/**
 * Makes the hedging delay the nearest-rank `quantile` (in (0, 1], e.g. 0.95)
 * of the latencies of the last `window` (1 to 100000) winning copies, once
 * `min_samples` (1 to window) are known; until then the fixed delay applies.
 * Turns hedging on (2 copies, delay 0) if it was off.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (unchanged then).
 * @since 0.6
 */
MULLIGAN_API int mulligan_http_options_set_hedging_quantile(mulligan_http_options *opts,
                                                            double quantile, int window,
                                                            int min_samples);

/**
 * Turns hedging off (the default).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.6
 */
MULLIGAN_API int mulligan_http_options_disable_hedging(mulligan_http_options *opts);

/**
 * What an on_retry callback is told before each wait. Grows only at the end;
 * read struct_size before any field added after 0.1.
 * @since 0.1
 */
typedef struct mulligan_http_retry_event {
  /** sizeof(mulligan_http_retry_event) of the library that filled it. */
  uint32_t struct_size;
  /** The attempt that just failed (1 for the first). */
  int attempt;
  /** The wait before the next attempt, in ms. */
  double delay_ms;
  /** The failure's mulligan_error_kind, MULLIGAN_ERROR_NONE for a response. */
  int error_kind;
  /** The response's HTTP status, or 0. */
  int http_status;
  /** 1 when the delay came from a Retry-After header. */
  int from_retry_after;
} mulligan_http_retry_event;

/**
 * Called before each wait between attempts, on the requesting thread. Return
 * 0 to go on; any other value stops the retries at once and the request
 * returns MULLIGAN_E_CALLBACK. Must not longjmp or throw.
 * @since 0.1
 */
typedef int (*mulligan_http_retry_fn)(const mulligan_http_retry_event *event, void *user_data);

/**
 * Sets the on_retry callback (NULL removes it). `free_user_data`, when not
 * NULL, is called with `user_data` once neither these options nor any client
 * created from them needs it any more.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_on_retry(mulligan_http_options *opts,
                                                    mulligan_http_retry_fn fn, void *user_data,
                                                    void (*free_user_data)(void *));

/**
 * Creates an HTTP client like mulligan_http_client_create(), with `opts`.
 * @param out  OUT: the new client; NULL on failure.
 * @param default_policy  the retry policy of every request, copied; NULL for
 *                        the defaults.
 * @param opts  the options, copied; NULL for the defaults.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY,
 *         MULLIGAN_E_INTERNAL.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_client_create_v2(mulligan_http_client **out,
                                                const mulligan_retry_policy *default_policy,
                                                const mulligan_http_options *opts);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_HTTP_H_ */
