/* mulligan_idempotency.h — idempotency keys in the mulligan C ABI: a fresh
 * key for a client, the parser of an Idempotency-Key header, and the server's
 * bounded store of keys (reserve, complete or release, replay).
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. A program may include just this header (it includes
 * mulligan_status.h). Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_IDEMPOTENCY_H_
#define MULLIGAN_IDEMPOTENCY_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Idempotency store (server side)                                            */
/* ========================================================================== */

/*
 * The server side of idempotency keys (DESIGN.md section 4, the IETF draft
 * "The Idempotency-Key HTTP Header Field", Stripe's behaviour). For each
 * request carrying a key:
 *
 *   mulligan_idempotency_store_reserve(store, user, key, fp, fp_len, &r);
 *   switch (mulligan_idempotency_reservation_state(r)) {
 *     case MULLIGAN_IDEMPOTENCY_RESERVED:  run the handler, then
 *         mulligan_idempotency_store_complete(store, r, status, ...) on success
 *         or mulligan_idempotency_store_release(store, r) on failure;
 *     case MULLIGAN_IDEMPOTENCY_REPLAY:    send the stored response
 *         (mulligan_idempotency_reservation_status/_header_at/_body);
 *     case MULLIGAN_IDEMPOTENCY_IN_FLIGHT: answer 409 with Retry-After
 *         (mulligan_idempotency_reservation_retry_after_ms);
 *     case MULLIGAN_IDEMPOTENCY_FINGERPRINT_MISMATCH: answer 422;
 *   }
 *   mulligan_idempotency_reservation_destroy(r);
 */

/**
 * What a reservation found. Values are pinned; append only.
 * @since 0.1
 */
typedef enum mulligan_idempotency_state {
  /** The key was free: run the handler, then complete or release. */
  MULLIGAN_IDEMPOTENCY_RESERVED = 0,
  /** A response is stored for this key and fingerprint: send it. */
  MULLIGAN_IDEMPOTENCY_REPLAY = 1,
  /** Another request holds the key and has not finished: answer 409. */
  MULLIGAN_IDEMPOTENCY_IN_FLIGHT = 2,
  /** The key was used with a different request fingerprint: answer 422. */
  MULLIGAN_IDEMPOTENCY_FINGERPRINT_MISMATCH = 3
} mulligan_idempotency_state;

/**
 * Returns "reserved", "replay", "in_flight" or "fingerprint_mismatch".
 * @param state  any int; unknown values give "unknown".
 * @return never NULL; static storage.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_idempotency_state_str(int state);

/**
 * The longest key accepted by default (Stripe's limit).
 * @since 0.1
 */
#define MULLIGAN_IDEMPOTENCY_MAX_KEY_LENGTH 255

/**
 * Parses an Idempotency-Key header field value into the key: a Structured
 * Fields String (RFC 8941 section 3.3.3: "...", printable ASCII with \" and
 * \\ escapes) or, for Stripe-style clients (mulligan's own client sends a
 * bare UUID), a bare value of printable ASCII without quotes or backslashes.
 * Surrounding spaces are ignored. A server answers 400 when this fails.
 * @param value  the field value, NUL-terminated (not NULL).
 * @param max_length  the longest key accepted; 0 means
 *                    MULLIGAN_IDEMPOTENCY_MAX_KEY_LENGTH.
 * @param buf  OUT: receives the key and a NUL.
 * @param buf_size  strlen(value) + 1 always suffices.
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT (malformed or too long
 *         key, NULL argument, short buffer; mulligan_last_error() says which).
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_key_parse(const char *value, size_t max_length, char *buf,
                                                size_t buf_size);

/**
 * A mutable bag of store settings. Defaults: ttl 86400000 ms (24 h), lease
 * 60000 ms, in-flight Retry-After hint at most 1000 ms, max 100000 entries,
 * max 268435456 bytes (256 MiB), max key length 255, 16 shards.
 *
 * Each setter validates its value and returns MULLIGAN_OK or
 * MULLIGAN_E_INVALID_ARGUMENT (options unchanged).
 * Thread-safety: not thread-safe; use from one thread at a time.
 * @since 0.1
 */
typedef struct mulligan_idempotency_options mulligan_idempotency_options;

/**
 * Creates store options holding every default.
 * @param out  OUT: the new options; NULL on failure. Free with
 *             mulligan_idempotency_options_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_create(mulligan_idempotency_options **out);

/**
 * Destroys options. NULL is a no-op.
 * @param opts  the options, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_idempotency_options_destroy(mulligan_idempotency_options *opts);

/**
 * Sets how long a completed response is replayed (default 86400000 ms).
 * @param opts  the options.
 * @param ttl_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_ttl_ms(mulligan_idempotency_options *opts,
                                                         double ttl_ms);

/**
 * Sets how long a reservation blocks its key before another request may take
 * it over, the handler being presumed dead (default 60000 ms).
 * @param opts  the options.
 * @param lease_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_lease_ms(mulligan_idempotency_options *opts,
                                                           double lease_ms);

/**
 * Sets the cap of the Retry-After hint of MULLIGAN_IDEMPOTENCY_IN_FLIGHT (the
 * hint is the lease's remaining time, at most this; default 1000 ms).
 * @param opts  the options.
 * @param retry_after_ms  finite, >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_in_flight_retry_after_ms(
    mulligan_idempotency_options *opts, double retry_after_ms);

/**
 * Sets the bound on entries, in flight and completed (default 100000).
 * Completed entries are evicted oldest first; in-flight ones never.
 * @param opts  the options.
 * @param max_entries  >= 1.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_max_entries(mulligan_idempotency_options *opts,
                                                              size_t max_entries);

/**
 * Sets the bound on accounted bytes: keys, fingerprints and stored responses
 * plus a fixed per-entry overhead (default 268435456).
 * @param opts  the options.
 * @param max_bytes  >= 1.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_max_bytes(mulligan_idempotency_options *opts,
                                                            size_t max_bytes);

/**
 * Sets the longest key reserve accepts (default 255).
 * @param opts  the options.
 * @param max_key_length  >= 1.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_max_key_length(
    mulligan_idempotency_options *opts, size_t max_key_length);

/**
 * Sets the number of independently locked shards (default 16). Both bounds
 * are split evenly between shards and enforced per shard.
 * @param opts  the options.
 * @param shards  in [1, 1024].
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_shards(mulligan_idempotency_options *opts,
                                                         int shards);

/**
 * A bounded, internally synchronised record of idempotency keys.
 * Thread-safety: thread-safe; every function may be called from many threads.
 * @since 0.1
 */
typedef struct mulligan_idempotency_store mulligan_idempotency_store;

/**
 * The result of one reservation: its state, and the lease (RESERVED), the
 * stored response (REPLAY) or the Retry-After hint (IN_FLIGHT).
 * Thread-safety: immutable apart from the lease that complete/release
 * consume; do not complete or release one reservation from two threads.
 * @since 0.1
 */
typedef struct mulligan_idempotency_reservation mulligan_idempotency_reservation;

/**
 * Creates a store.
 * @param opts  the options, or NULL for every default. May be destroyed
 *              right after this call.
 * @param clock  the clock the store reads for leases and ttls, or NULL for
 *               the system's monotonic clock. Borrowed: must outlive the store.
 * @param out  OUT: the new store; NULL on failure. Free with
 *             mulligan_idempotency_store_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_store_create(const mulligan_idempotency_options *opts,
                                                   const mulligan_clock *clock,
                                                   mulligan_idempotency_store **out);

/**
 * Destroys a store and every stored response. NULL is a no-op.
 * Reservations made from it must not be completed or released afterwards
 * (they may still be read and destroyed).
 * @param store  the store, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_idempotency_store_destroy(mulligan_idempotency_store *store);

/**
 * Looks up (scope, key) and reserves it when free.
 * @param store  the store.
 * @param scope  who the key belongs to (e.g. the authenticated principal), so
 *               that one user's key never replays another's response; NULL
 *               means "" (one shared scope).
 * @param key  the parsed key (see mulligan_idempotency_key_parse), not NULL.
 * @param fingerprint  bytes identifying the request (method, path, body
 *                     digest), compared byte for byte; NULL only with len 0.
 * @param fingerprint_len  its length.
 * @param out  OUT: the reservation; NULL on failure. Free with
 *             mulligan_idempotency_reservation_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (bad key or argument),
 *         MULLIGAN_E_UNAVAILABLE (a new key and the store is full of
 *         in-flight entries: answer 503), MULLIGAN_E_NO_MEMORY;
 *         MULLIGAN_E_STATE_UNAVAILABLE for a store on Redis that cannot
 *         answer (mulligan_state.h, 0.6: it fails closed; answer 503 with
 *         Retry-After and do not run the handler).
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_store_reserve(mulligan_idempotency_store *store,
                                                    const char *scope, const char *key,
                                                    const void *fingerprint,
                                                    size_t fingerprint_len,
                                                    mulligan_idempotency_reservation **out);

/**
 * Stores the handler's response for the reservation's key (ttl from now) and
 * frees the key for replays.
 * @param store  the store that made the reservation.
 * @param reservation  a MULLIGAN_IDEMPOTENCY_RESERVED reservation.
 * @param status  the HTTP status, in [100, 599].
 * @param header_names  `header_count` NUL-terminated names (NULL when 0).
 * @param header_values  `header_count` NUL-terminated values (NULL when 0).
 * @param header_count  number of header fields.
 * @param body  the body bytes (NULL only with body_len 0). Copied.
 * @param body_len  its length.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT when the lease is not held
 *         any more (already completed or released, or expired and taken
 *         over: nothing is stored) or an argument is bad: a status outside
 *         [100, 599], a header name that is not an RFC 9110 token, or a
 *         header value containing CR, LF or NUL (then the lease stays held:
 *         release the reservation, or complete it again with a valid
 *         response); MULLIGAN_E_UNAVAILABLE when the response does not fit the
 *         byte budget (the key is released); MULLIGAN_E_NO_MEMORY;
 *         MULLIGAN_E_STATE_UNAVAILABLE for a store on Redis that cannot
 *         answer (mulligan_state.h, 0.6): nothing is acknowledged; complete
 *         again with the same reservation (a repeat of a complete whose
 *         reply was lost is accepted), or let the lease run out.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_store_complete(
    mulligan_idempotency_store *store, mulligan_idempotency_reservation *reservation, int status,
    const char *const *header_names, const char *const *header_values, size_t header_count,
    const void *body, size_t body_len);

/**
 * Frees the reservation's key without storing anything (the handler failed),
 * so that a retry with the same key runs the handler.
 * @param store  the store that made the reservation.
 * @param reservation  a MULLIGAN_IDEMPOTENCY_RESERVED reservation.
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT when the lease is not
 *         held any more.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_store_release(mulligan_idempotency_store *store,
                                                    mulligan_idempotency_reservation *reservation);

/**
 * Removes every expired entry now (the store also sweeps lazily).
 * @param store  the store.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL store).
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_store_sweep(mulligan_idempotency_store *store);

/**
 * Returns the number of entries (in flight and completed); 0 for NULL.
 * @param store  the store.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_idempotency_store_entries(const mulligan_idempotency_store *store);

/**
 * Returns the number of in-flight entries; 0 for NULL.
 * @param store  the store.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_idempotency_store_in_flight(const mulligan_idempotency_store *store);

/**
 * Returns the accounted bytes (never above the max_bytes option); 0 for NULL.
 * @param store  the store.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_idempotency_store_bytes(const mulligan_idempotency_store *store);

/**
 * Returns the reservation's mulligan_idempotency_state, or -1 for NULL.
 * @param reservation  the reservation.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_reservation_state(
    const mulligan_idempotency_reservation *reservation);

/**
 * Returns the Retry-After hint of an IN_FLIGHT reservation in ms (0 for other
 * states and NULL). Round up to whole seconds for the header.
 * @param reservation  the reservation.
 * @since 0.1
 */
MULLIGAN_API double mulligan_idempotency_reservation_retry_after_ms(
    const mulligan_idempotency_reservation *reservation);

/**
 * Returns the stored HTTP status of a REPLAY reservation (0 otherwise).
 * @param reservation  the reservation.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_reservation_status(
    const mulligan_idempotency_reservation *reservation);

/**
 * Returns the stored body of a REPLAY reservation (NULL otherwise).
 * @param reservation  the reservation.
 * @param len  OUT (may be NULL): the body's length in bytes (0 otherwise).
 * @return borrowed, NUL-terminated (the body may itself hold NULs): valid
 *         until mulligan_idempotency_reservation_destroy(reservation), even
 *         if the entry is evicted meanwhile.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_idempotency_reservation_body(
    const mulligan_idempotency_reservation *reservation, size_t *len);

/**
 * Returns the number of stored header fields of a REPLAY reservation.
 * @param reservation  the reservation.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_idempotency_reservation_header_count(
    const mulligan_idempotency_reservation *reservation);

/**
 * Returns a stored header field of a REPLAY reservation by position.
 * @param reservation  the reservation.
 * @param index  < mulligan_idempotency_reservation_header_count().
 * @param name  OUT: the field name (borrowed, like the body).
 * @param value  OUT: the field value (borrowed, like the body).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL argument, index
 *         out of range).
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_reservation_header_at(
    const mulligan_idempotency_reservation *reservation, size_t index, const char **name,
    const char **value);

/**
 * Destroys a reservation. NULL is a no-op. Destroying a RESERVED reservation
 * that was neither completed nor released leaves its key in flight until the
 * lease runs out; release it first.
 * @param reservation  the reservation, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_idempotency_reservation_destroy(
    mulligan_idempotency_reservation *reservation);

/**
 * The size of a buffer that holds an idempotency key and its NUL (a UUID in
 * canonical form is 36 characters).
 * @since 0.1
 */
#define MULLIGAN_IDEMPOTENCY_KEY_SIZE 37

/**
 * Writes a fresh idempotency key: a random (version 4) UUID in canonical
 * lower-case form, drawn from the operating system's CSPRNG.
 * @param buf  OUT: receives the key and a NUL.
 * @param buf_size  at least MULLIGAN_IDEMPOTENCY_KEY_SIZE.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL or short buffer).
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_key_new(char *buf, size_t buf_size);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_IDEMPOTENCY_H_ */
