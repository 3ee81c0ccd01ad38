/* mulligan_outbox.h — the durable outbox in the mulligan C ABI: a queue of
 * calls that must eventually happen (a webhook, a payment capture, a job),
 * kept in an SQLite file so that they survive a restart of the process
 * (issue 21; DESIGN.md section 4, "outbox"). One function per operation of
 * the C++ mulligan::Outbox (core/include/mulligan/outbox/outbox.h).
 *
 * An entry's life:
 *
 *   mulligan_outbox_enqueue()  writes the entry (one transaction) before any
 *       attempt, with one Idempotency-Key for its whole life, state pending,
 *       due now;
 *   mulligan_outbox_claim()    leases due entries to a worker for a
 *       visibility timeout (Amazon SQS's term). A lease that expires
 *       unfinished (the worker crashed) counts as a failed, retryable attempt
 *       ("lease expired, worker W") and the policy reschedules the entry, so
 *       that a poison entry (one whose delivery kills every worker) ends dead
 *       after max_attempts instead of being retried forever;
 *   mulligan_outbox_complete() the attempt succeeded: the entry is done;
 *   mulligan_outbox_fail()     the attempt failed: the retry policy decides,
 *       as in mulligan_retry_session_on_outcome(), whether the entry is
 *       pending again after a delay or dead (a dead letter, history kept).
 *
 * A worker's loop:
 *
 *   mulligan_outbox_lease *leases[16];
 *   size_t n = 0;
 *   mulligan_outbox_claim(box, "worker-1", 16, -1.0, leases, &n);
 *   for (size_t i = 0; i < n; ++i) {
 *     mulligan_outbox_entry_info e = MULLIGAN_OUTBOX_ENTRY_INFO_INIT;
 *     mulligan_outbox_lease_info(leases[i], &e);
 *     if (deliver(e.job, e.payload, e.payload_len, e.idempotency_key) == 0)
 *       mulligan_outbox_complete(box, leases[i], 0);
 *     else {
 *       mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
 *       o.error_kind = MULLIGAN_ERROR_RETRYABLE;
 *       mulligan_outbox_fail(box, leases[i], &o, "handler failed", 0, NULL);
 *     }
 *     mulligan_outbox_lease_destroy(leases[i]);
 *   }
 *
 * Delivery is at least once: an attempt that reached the receiver just
 * before its worker crashed is made again after the lease expires, with the
 * same Idempotency-Key, so a receiver that deduplicates (mulligan's
 * idempotency store, Stripe's API) applies it exactly once.
 *
 * Durability (https://www.sqlite.org/wal.html, /pragma.html#pragma_synchronous):
 * the file is in WAL mode. With MULLIGAN_OUTBOX_SYNC_FULL (the default) every
 * transaction is fsync'ed before enqueue, complete or fail returns, so an
 * entry whose enqueue returned MULLIGAN_OK survives a power loss. With
 * MULLIGAN_OUTBOX_SYNC_NORMAL it survives a crash of the process, but the
 * last commits may be lost on a power loss (never corrupting the file).
 *
 * Times: the outbox reads the calendar (wall-clock) time of its clock
 * (mulligan_outbox_options_set_clock(); the system clock by default; a fake
 * clock starts at 2024-01-01T00:00:00Z = 1704067200000 ms), because stored
 * times must keep their meaning across restarts. Instants are int64_t
 * milliseconds since the Unix epoch (names end in `_unix_ms`, rounded down);
 * durations are double milliseconds (names end in `_ms`).
 *
 * Errors: MULLIGAN_E_INVALID_ARGUMENT for a bad argument or option (the last
 * error names it); MULLIGAN_E_OUTBOX when SQLite failed (read-only file,
 * full disk or size cap, not an outbox, lost lease): the last error names
 * the file and SQLite's own text. An enqueue that returns an error wrote
 * nothing; one that returns MULLIGAN_OK wrote the entry (never a silent
 * drop).
 *
 * Thread-safety: a mulligan_outbox is internally synchronized (one SQLite
 * connection behind a mutex, each operation one transaction): many threads
 * may share one. Many processes may open the same file (each write is a
 * BEGIN IMMEDIATE transaction, which SQLite serializes across processes).
 * Options are not thread-safe (one thread at a time); leases, entries and
 * histories are immutable copies that many threads may read.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. A program may include just this header (it includes
 * mulligan_status.h and mulligan_retry.h). Compiles as C99 and as C++.
 * Everything here exists since 0.6.
 */
#ifndef MULLIGAN_OUTBOX_H_
#define MULLIGAN_OUTBOX_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_status.h"
#include "mulligan_retry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Enumerations                                                               */
/* ========================================================================== */

/**
 * What an entry holds. Values are stored in the file; append only (they equal
 * mulligan::OutboxKind).
 * @since 0.6
 */
typedef enum mulligan_outbox_kind {
  /** An HTTP request: method, URL, headers, body. */
  MULLIGAN_OUTBOX_HTTP = 0,
  /** A named job with a payload, run by the caller's handler for the name. */
  MULLIGAN_OUTBOX_JOB = 1
} mulligan_outbox_kind;

/**
 * Where an entry is in its life. Values are stored in the file; append only
 * (they equal mulligan::OutboxState).
 * @since 0.6
 */
typedef enum mulligan_outbox_state {
  /** Waiting for its next attempt (due at next_attempt_at_unix_ms). */
  MULLIGAN_OUTBOX_PENDING = 0,
  /** Held by a worker until lease_expires_at_unix_ms. */
  MULLIGAN_OUTBOX_LEASED = 1,
  /** Delivered (mulligan_outbox_complete()). */
  MULLIGAN_OUTBOX_DONE = 2,
  /** Given up: a dead letter; its stop_reason says why. */
  MULLIGAN_OUTBOX_DEAD = 3
} mulligan_outbox_state;

/**
 * How often SQLite fsyncs (PRAGMA synchronous; see the file comment). Values
 * equal mulligan::OutboxSync.
 * @since 0.6
 */
typedef enum mulligan_outbox_sync {
  /** Every commit is on disk before the operation returns. Default. */
  MULLIGAN_OUTBOX_SYNC_FULL = 0,
  /** Survives a process crash; the last commits may be lost on power loss. */
  MULLIGAN_OUTBOX_SYNC_NORMAL = 1
} mulligan_outbox_sync;

/**
 * Returns the name of an entry state: "pending", "leased", "done", "dead".
 * @param state  any int; unknown values give "unknown".
 * @return never NULL; static storage.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API const char *mulligan_outbox_state_str(int state);

/**
 * The size of a buffer that holds any entry's Idempotency-Key and its NUL
 * (keys are at most 255 bytes of printable ASCII).
 * @since 0.6
 */
#define MULLIGAN_OUTBOX_KEY_SIZE 256

/**
 * The most entries one mulligan_outbox_enqueue_many() call takes (2^20): a
 * bound on the one transaction and on the memory it copies.
 * @since 0.6
 */
#define MULLIGAN_OUTBOX_MAX_BATCH 1048576

/* ========================================================================== */
/* Options and opening                                                        */
/* ========================================================================== */

/**
 * A mutable bag of outbox settings, read by mulligan_outbox_open().
 * Defaults: create the file when absent, MULLIGAN_OUTBOX_SYNC_FULL, busy
 * timeout 5000 ms, lease timeout 30000 ms, the default retry options
 * (mulligan_retry_options_create(): 3 attempts, exponential from 200 ms,
 * full jitter, cap 10000 ms), no size cap, metrics name = the path, the
 * system clock.
 *
 * Each setter validates its single value and returns MULLIGAN_OK or
 * MULLIGAN_E_INVALID_ARGUMENT naming it (the options are then unchanged),
 * or MULLIGAN_E_INVALID_ARGUMENT for a NULL handle.
 *
 * Thread-safety: not thread-safe; use from one thread at a time. The options
 * may be destroyed right after mulligan_outbox_open().
 * @since 0.6
 */
typedef struct mulligan_outbox_options mulligan_outbox_options;

/**
 * Creates outbox options holding every default.
 * @param out  OUT: the new options; NULL on failure. Free with
 *             mulligan_outbox_options_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_options_create(mulligan_outbox_options **out);

/**
 * Destroys options. NULL is a no-op.
 * @param opts  the options, or NULL.
 * @since 0.6
 */
MULLIGAN_API void mulligan_outbox_options_destroy(mulligan_outbox_options *opts);

/**
 * Sets whether mulligan_outbox_open() may create an absent file (default 1).
 * With 0 an absent file is MULLIGAN_E_OUTBOX "no such file", so that a
 * mistyped path makes no database (what inspection and repair tools want).
 * @param opts  the options.
 * @param create  a boolean.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_options_set_create(mulligan_outbox_options *opts, int create);

/**
 * Sets the fsync policy (default MULLIGAN_OUTBOX_SYNC_FULL).
 * @param opts  the options.
 * @param sync  a mulligan_outbox_sync value.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_options_set_sync(mulligan_outbox_options *opts, int sync);

/**
 * Sets how long a write waits for another connection's transaction before
 * failing with MULLIGAN_E_OUTBOX "database is locked" (default 5000 ms;
 * SQLite's busy_timeout, whole milliseconds).
 * @param opts  the options.
 * @param busy_timeout_ms  finite, >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_options_set_busy_timeout_ms(mulligan_outbox_options *opts,
                                                             double busy_timeout_ms);

/**
 * Sets the visibility timeout mulligan_outbox_claim() gives when its caller
 * passes none (default 30000 ms).
 * @param opts  the options.
 * @param lease_timeout_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_options_set_lease_timeout_ms(mulligan_outbox_options *opts,
                                                              double lease_timeout_ms);

/**
 * Sets the retry policy of every entry: max_attempts (attempts per entry,
 * counted across restarts and lease expiries), backoff, jitter, seed,
 * Retry-After rules and classification; the deadline bounds an entry's age
 * (it is dead-lettered rather than retried at or after created_at +
 * deadline) and the attempt timeout is the worker's bound on one delivery
 * (mulligan_outbox_lease_attempt_timeout_ms()). Default: the defaults of
 * mulligan_retry_options_create(). The whole policy is validated by
 * mulligan_outbox_open().
 * @param opts  the options.
 * @param retry  the retry options (not NULL); copied, so they may be
 *               destroyed right after this call.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_options_set_retry(mulligan_outbox_options *opts,
                                                   const mulligan_retry_options *retry);

/**
 * Sets a cap on the file's size in bytes (SQLite's max_page_count, rounded
 * down to whole pages, at least the pages already used): an enqueue that
 * would grow past it fails with MULLIGAN_E_OUTBOX "database or disk is
 * full", the error a full disk gives, and writes nothing. Default 0 (none).
 * @param opts  the options.
 * @param max_size_bytes  >= 0; 0 means no cap.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_options_set_max_size_bytes(mulligan_outbox_options *opts,
                                                            int64_t max_size_bytes);

/**
 * Sets the name metrics export this outbox under (the `outbox` label of
 * mulligan_outbox_*); default "" meaning the path.
 * @param opts  the options.
 * @param name  UTF-8, not NULL (copied); "" for the path.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_options_set_name(mulligan_outbox_options *opts,
                                                  const char *name);

/**
 * Sets the clock whose calendar time every operation reads (its `now`).
 * @param opts  the options.
 * @param clock  a fake clock (tests), or NULL for the system clock.
 *               Borrowed: it must outlive every outbox opened with these
 *               options.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_options_set_clock(mulligan_outbox_options *opts,
                                                   const mulligan_clock *clock);

/**
 * The durable outbox over one SQLite file. See the file comment.
 * Thread-safety: thread-safe; share one between threads freely.
 * @since 0.6
 */
typedef struct mulligan_outbox mulligan_outbox;

/**
 * Opens (creating when absent, unless the options say not to) the outbox at
 * `path`: sets WAL mode, synchronous, busy_timeout and the size cap, and
 * creates the tables. A file is an outbox when it holds the outbox's schema
 * marker; an empty database (or a new file) becomes one; a database holding
 * other tables is refused, so the outbox never adds its tables to another
 * program's file. A file that can only be opened read-only still opens:
 * every write then fails with MULLIGAN_E_OUTBOX saying the file is
 * read-only.
 * A `path` of the form redis://[[user]:password@]host[:port][/db] (or
 * rediss://) opens instead the Redis Streams outbox named by
 * mulligan_outbox_options_set_name() (required) on that server, with the
 * key prefix "mulligan" and the RedisState's default bounds (README,
 * "Durable outbox"; mulligan/outbox/redis_outbox.h): the same operations,
 * shared by workers on many machines. The sync option "full" then requires
 * the server to fsync every write (appendonly yes, appendfsync always;
 * otherwise MULLIGAN_E_OUTBOX naming the settings); the size cap must be 0.
 * Messages name the server without its credentials. (Redis: added in 0.6.)
 * (The pair of the handle is open/close, as for a file; it plays the part of
 * the create/destroy pair of the conventions.)
 * @param path  the database file, UTF-8, not NULL nor empty; or a Redis
 *              URL (above).
 * @param opts  the options, or NULL for every default.
 * @param out  OUT: the outbox; NULL on failure. Free with
 *             mulligan_outbox_close().
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT naming a bad argument or
 *         option ("outbox option lease_timeout must be > 0", "retry.stop");
 *         MULLIGAN_E_OUTBOX when the file cannot be opened or is not an
 *         outbox (the message names the file and SQLite's text), or the
 *         Redis server cannot be reached within its bounds;
 *         MULLIGAN_E_NO_MEMORY.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_open(const char *path, const mulligan_outbox_options *opts,
                                      mulligan_outbox **out);

/**
 * Closes the outbox (the last connection to a file checkpoints its WAL).
 * NULL is a no-op. Leases and entries taken from it stay readable and must
 * still be destroyed, but must not be passed to another call on it.
 * REQUIRES: no other thread is using the outbox.
 * @param box  the outbox, or NULL.
 * @since 0.6
 */
MULLIGAN_API void mulligan_outbox_close(mulligan_outbox *box);

/* ========================================================================== */
/* Enqueue                                                                    */
/* ========================================================================== */

/**
 * What mulligan_outbox_enqueue() writes. Initialise it with
 * MULLIGAN_OUTBOX_SPEC_INIT, then set the fields of its kind. Every pointer
 * is borrowed for the call only (the bytes are copied into the file). The
 * struct only grows at the end; struct_size tells the library which version
 * it got.
 * @since 0.6
 */
typedef struct mulligan_outbox_spec {
  /** sizeof(mulligan_outbox_spec) as compiled by the caller. */
  uint32_t struct_size;
  /** A mulligan_outbox_kind. */
  int kind;
  /** HTTP: the method ("POST"; an RFC 9110 token) and the absolute URL,
   *  both required. NULL for a job. */
  const char *method;
  const char *url;
  /** HTTP: `header_count` names and values, in order (NULL when 0). Names
   *  hold no ':' nor control byte, values no CR, LF or NUL; an
   *  Idempotency-Key header is refused (the entry's own key is sent). */
  const char *const *header_names;
  const char *const *header_values;
  size_t header_count;
  /** HTTP: the body bytes (NULL only with body_len 0). */
  const void *body;
  size_t body_len;
  /** Job: the handler's name (required, not empty). NULL for HTTP. */
  const char *job;
  /** Job: the payload bytes (NULL only with payload_len 0). */
  const void *payload;
  size_t payload_len;
  /** The entry's Idempotency-Key: printable ASCII without spaces, at most
   *  255 bytes, unique in the outbox (a key already there is refused with
   *  MULLIGAN_E_INVALID_ARGUMENT, so a caller that enqueues twice with its
   *  own key enqueues once). NULL or "": a fresh UUID v4 from the OS CSPRNG. */
  const char *idempotency_key;
} mulligan_outbox_spec;

/** Initialiser for mulligan_outbox_spec: an HTTP entry with nothing set.
 *  @since 0.6 */
#define MULLIGAN_OUTBOX_SPEC_INIT                                                         \
  { (uint32_t)sizeof(mulligan_outbox_spec), MULLIGAN_OUTBOX_HTTP, NULL, NULL, NULL, NULL, \
    0, NULL, 0, NULL, NULL, 0, NULL }

/**
 * Validates `spec`, then writes the entry in one transaction, due now.
 * @param box  the outbox.
 * @param spec  the entry (not NULL).
 * @param out_id  OUT, may be NULL: the entry's id (> 0); 0 on failure.
 * @param key_buf  OUT, may be NULL: the entry's Idempotency-Key and a NUL
 *                 ("" on failure).
 * @param key_buf_size  the size of key_buf: at least MULLIGAN_OUTBOX_KEY_SIZE
 *                      when key_buf is not NULL (checked before anything is
 *                      written).
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT naming the bad field or
 *         argument (nothing written); MULLIGAN_E_OUTBOX when SQLite cannot
 *         write: read-only file, full disk or size cap (nothing written);
 *         MULLIGAN_E_NO_MEMORY.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_enqueue(mulligan_outbox *box, const mulligan_outbox_spec *spec,
                                         int64_t *out_id, char *key_buf, size_t key_buf_size);

/**
 * Writes `count` entries in one transaction (one fsync with
 * MULLIGAN_OUTBOX_SYNC_FULL), all or none: the first bad spec, a key already
 * there (or given twice) or an SQLite error writes nothing.
 * @param box  the outbox.
 * @param specs  `count` entries (not NULL unless count is 0).
 * @param count  how many, at most MULLIGAN_OUTBOX_MAX_BATCH (more is
 *               MULLIGAN_E_INVALID_ARGUMENT, and nothing is written, not even
 *               out_ids); 0 writes nothing and returns MULLIGAN_OK.
 * @param out_ids  OUT, may be NULL: room for `count` ids, filled in the order
 *                 given (all 0 on failure). Read the keys with
 *                 mulligan_outbox_get().
 * @return as mulligan_outbox_enqueue(); when a spec's pointers or kind are
 *         refused the message names its index ("specs[2]: ...").
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_enqueue_many(mulligan_outbox *box,
                                              const mulligan_outbox_spec *specs, size_t count,
                                              int64_t *out_ids);

/* ========================================================================== */
/* Entries                                                                    */
/* ========================================================================== */

/**
 * A copy of one stored entry (mulligan_outbox_get(), mulligan_outbox_list()).
 * Read it with mulligan_outbox_entry_info_get(); free it with
 * mulligan_outbox_entry_destroy(). It does not change when the file does.
 * Thread-safety: immutable; may be read from many threads.
 * @since 0.6
 */
typedef struct mulligan_outbox_entry mulligan_outbox_entry;

/**
 * One leased entry and the proof of holding it (mulligan_outbox_claim()).
 * Read its entry with mulligan_outbox_lease_info(); free it with
 * mulligan_outbox_lease_destroy().
 * Thread-safety: immutable; may be read from many threads.
 * @since 0.6
 */
typedef struct mulligan_outbox_lease mulligan_outbox_lease;

/**
 * The fields of an entry, filled in by mulligan_outbox_entry_info_get() or
 * mulligan_outbox_lease_info(). Initialise it with
 * MULLIGAN_OUTBOX_ENTRY_INFO_INIT (the library checks struct_size). Every
 * pointer is borrowed from the entry or lease it was read from and stays
 * valid until that is destroyed; strings are NUL-terminated ("" when
 * absent), byte fields may hold NULs (use their lengths).
 * @since 0.6
 */
typedef struct mulligan_outbox_entry_info {
  /** sizeof(mulligan_outbox_entry_info) as compiled by the caller. */
  uint32_t struct_size;
  /** The entry's id (> 0), in enqueue order. */
  int64_t id;
  /** A mulligan_outbox_kind and a mulligan_outbox_state. For a lease the
   *  state is MULLIGAN_OUTBOX_LEASED (as of the claim). */
  int kind;
  int state;
  /** The entry's Idempotency-Key, the same for its whole life. */
  const char *idempotency_key;
  /** Attempts recorded so far: failures, successes and leases that expired
   *  unfinished. For a lease, the attempt being made is attempts + 1. */
  int attempts;
  /** Times mulligan_outbox_claim() handed the entry out. */
  int leases;
  /** When it was enqueued, and when its next attempt is due. */
  int64_t created_at_unix_ms;
  int64_t next_attempt_at_unix_ms;
  /** Leased: the worker's name and when its lease ends ("" and 0 when not
   *  leased). */
  const char *lease_owner;
  int64_t lease_expires_at_unix_ms;
  /** Done or dead: when (else 0), and why: "succeeded" for a done entry;
   *  for a dead one a stop reason name ("attempts_exhausted", "terminal",
   *  "retry_after_too_long", "deadline") or "manual" ("" otherwise). */
  int64_t finished_at_unix_ms;
  const char *stop_reason;
  /** HTTP: the method, the URL, `header_count` names and values (arrays of
   *  NUL-terminated strings; NULL when 0) and the body. */
  const char *method;
  const char *url;
  const char *const *header_names;
  const char *const *header_values;
  size_t header_count;
  const void *body;
  size_t body_len;
  /** Job: the handler's name and the payload. */
  const char *job;
  const void *payload;
  size_t payload_len;
} mulligan_outbox_entry_info;

/** Initialiser for mulligan_outbox_entry_info. @since 0.6 */
#define MULLIGAN_OUTBOX_ENTRY_INFO_INIT                                                      \
  { (uint32_t)sizeof(mulligan_outbox_entry_info), 0, 0, 0, NULL, 0, 0, 0, 0, NULL, 0, 0, NULL, \
    NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, NULL, 0 }

/**
 * Reads an entry's fields.
 * @param entry  the entry (not NULL).
 * @param out  OUT: the fields (not NULL; struct_size set).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_entry_info_get(const mulligan_outbox_entry *entry,
                                                mulligan_outbox_entry_info *out);

/**
 * Destroys an entry. NULL is a no-op.
 * @param entry  the entry, or NULL.
 * @since 0.6
 */
MULLIGAN_API void mulligan_outbox_entry_destroy(mulligan_outbox_entry *entry);

/**
 * Returns the entry with `id`.
 * @param box  the outbox.
 * @param id  an entry id.
 * @param out  OUT: a copy of the entry; NULL on failure.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT ("no outbox entry <id>",
 *         or a NULL argument); MULLIGAN_E_OUTBOX (SQLite failed);
 *         MULLIGAN_E_NO_MEMORY.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_get(mulligan_outbox *box, int64_t id,
                                     mulligan_outbox_entry **out);

/**
 * Lists up to `max_entries` entries, oldest first, in one state or all.
 * @param box  the outbox.
 * @param state  a mulligan_outbox_state, or -1 for every state.
 * @param max_entries  >= 1; also the room in `out`.
 * @param out  OUT: room for `max_entries` entries, filled with `*count` new
 *             entries (each freed with mulligan_outbox_entry_destroy()).
 * @param count  OUT: how many were filled; 0 on failure.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT; MULLIGAN_E_OUTBOX;
 *         MULLIGAN_E_NO_MEMORY (nothing is filled on failure).
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_list(mulligan_outbox *box, int state, size_t max_entries,
                                      mulligan_outbox_entry **out, size_t *count);

/* ========================================================================== */
/* Claim, complete, fail                                                      */
/* ========================================================================== */

/**
 * Leases up to `max_entries` due entries to `worker`: pending ones whose
 * next attempt is due now, the longest due first, each until now + the lease
 * timeout; filled in id (enqueue) order, none when nothing is due. First, in
 * the same transaction, every lease expired now is recorded as a failed,
 * retryable attempt ("lease expired, worker W") and the policy decides as
 * mulligan_outbox_fail() does: pending after the backoff delay (so that
 * entry is leased by this call only when the delay is zero), or dead
 * ("attempts_exhausted", "deadline").
 * @param box  the outbox.
 * @param worker  a name for the listings (lease_owner), not NULL.
 * @param max_entries  >= 1 and <= INT_MAX; also the room in `out`.
 * @param lease_timeout_ms  the visibility timeout: finite and > 0, or any
 *                          negative value for the outbox's lease timeout
 *                          option. 0 and NaN are MULLIGAN_E_INVALID_ARGUMENT.
 * @param out  OUT: room for `max_entries` leases, filled with `*count` new
 *             leases (each freed with mulligan_outbox_lease_destroy()).
 * @param count  OUT: how many were filled; 0 on failure.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT; MULLIGAN_E_OUTBOX
 *         (SQLite failed: nothing was leased); MULLIGAN_E_NO_MEMORY.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_claim(mulligan_outbox *box, const char *worker,
                                       size_t max_entries, double lease_timeout_ms,
                                       mulligan_outbox_lease **out, size_t *count);

/**
 * Reads the leased entry's fields (as of the claim).
 * @param lease  the lease (not NULL).
 * @param out  OUT: the fields (not NULL; struct_size set).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_lease_info(const mulligan_outbox_lease *lease,
                                            mulligan_outbox_entry_info *out);

/**
 * Returns the bound on this delivery in ms: the retry policy's attempt
 * timeout, or -1.0 when it has none (or lease is NULL, which also sets the
 * last error).
 * @param lease  the lease.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API double mulligan_outbox_lease_attempt_timeout_ms(const mulligan_outbox_lease *lease);

/**
 * Destroys a lease (it does not release the entry: an unfinished lease
 * expires). NULL is a no-op.
 * @param lease  the lease, or NULL.
 * @since 0.6
 */
MULLIGAN_API void mulligan_outbox_lease_destroy(mulligan_outbox_lease *lease);

/**
 * Records a successful attempt of a leased entry and marks it done.
 * Accepted even when the lease expired or passed to another worker (the
 * delivery did happen, and the receiver saw the same key), and when the
 * expiry of this very lease made the entry dead (not leased since).
 * @param box  the outbox that made the lease, or another open on the same
 *             file.
 * @param lease  the lease (not NULL).
 * @param http_status  the response's status in [100, 599], or 0 (a job).
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (also: a lease made by an
 *         outbox on another file); MULLIGAN_E_OUTBOX (the entry is unknown or
 *         dead otherwise, or SQLite failed).
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_complete(mulligan_outbox *box,
                                          const mulligan_outbox_lease *lease, int http_status);

/**
 * Records the successes of `count` leased entries in one transaction (one
 * fsync with MULLIGAN_OUTBOX_SYNC_FULL): a worker's group commit. Each is
 * judged as mulligan_outbox_complete() judges it; the first error rolls the
 * whole batch back (nothing recorded).
 * @param box  the outbox that made the leases.
 * @param leases  `count` leases (none NULL; the array not NULL unless 0).
 * @param http_statuses  `count` statuses as for mulligan_outbox_complete(),
 *                       or NULL for all 0.
 * @param count  how many; 0 records nothing.
 * @return as mulligan_outbox_complete().
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_complete_many(mulligan_outbox *box,
                                               const mulligan_outbox_lease *const *leases,
                                               const int *http_statuses, size_t count);

/**
 * What mulligan_outbox_fail() decided. Initialise it with
 * MULLIGAN_OUTBOX_FAILURE_INIT (the library checks struct_size).
 * @since 0.6
 */
typedef struct mulligan_outbox_failure {
  /** sizeof(mulligan_outbox_failure) as compiled by the caller. */
  uint32_t struct_size;
  /** MULLIGAN_OUTBOX_PENDING (retried at next_attempt_at_unix_ms) or
   *  MULLIGAN_OUTBOX_DEAD. */
  int state;
  /** Pending: when the next attempt is due; dead: 0. */
  int64_t next_attempt_at_unix_ms;
  /** Pending: the wait decided (ms); dead: 0. */
  double delay_ms;
  /** Dead: a mulligan_stop_reason (MULLIGAN_STOP_ATTEMPTS_EXHAUSTED,
   *  _TERMINAL, _DEADLINE, _RETRY_AFTER_TOO_LONG); pending:
   *  MULLIGAN_STOP_NONE. */
  int reason;
  /** The attempt number just recorded (1 for the first). */
  int attempt;
} mulligan_outbox_failure;

/** Initialiser for mulligan_outbox_failure. @since 0.6 */
#define MULLIGAN_OUTBOX_FAILURE_INIT \
  { (uint32_t)sizeof(mulligan_outbox_failure), MULLIGAN_OUTBOX_PENDING, 0, 0.0, MULLIGAN_STOP_NONE, 0 }

/**
 * Records a failed attempt of a leased entry and applies the retry policy,
 * exactly as mulligan_retry_session_on_outcome() decides: classification,
 * backoff and jitter, Retry-After (outcome->retry_after_ms), the deadline
 * (the entry's age). With a seed, the jitter of attempt n of entry id is
 * drawn from the seed, the id and n, so a schedule is reproducible across
 * restarts.
 * @param box  the outbox that made the lease.
 * @param lease  the lease (not NULL).
 * @param outcome  the attempt's outcome (not NULL, MULLIGAN_OUTCOME_INIT'ed);
 *                 a success is MULLIGAN_E_INVALID_ARGUMENT (call
 *                 mulligan_outbox_complete()). A terminal outcome
 *                 (MULLIGAN_ERROR_TERMINAL, a 404) dead-letters the entry.
 * @param message  the text the history keeps ("HTTP 503", "ValueError: x"),
 *                 or NULL for "".
 * @param http_status  0, or a status in [100, 599] that the history records
 *                     for an outcome that does not carry it (a keyed 409
 *                     with Retry-After the caller turned into a classified
 *                     failure); 0 records outcome->http_status.
 * @param out  OUT, may be NULL: the decision (struct_size set).
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (also: a lease made by an
 *         outbox on another file); MULLIGAN_E_OUTBOX ("lease lost": the lease
 *         expired, or the entry was leased again since and another worker
 *         owns its schedule; or SQLite failed).
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_fail(mulligan_outbox *box, const mulligan_outbox_lease *lease,
                                      const mulligan_outcome *outcome, const char *message,
                                      int http_status, mulligan_outbox_failure *out);

/* ========================================================================== */
/* Attempt history                                                            */
/* ========================================================================== */

/**
 * An entry's attempt history as read by mulligan_outbox_history_get(): a
 * copy, first attempt first. Thread-safety: immutable.
 * @since 0.6
 */
typedef struct mulligan_outbox_history mulligan_outbox_history;

/**
 * One recorded attempt. Initialise it with MULLIGAN_OUTBOX_ATTEMPT_INIT (the
 * library checks struct_size).
 * @since 0.6
 */
typedef struct mulligan_outbox_attempt {
  /** sizeof(mulligan_outbox_attempt) as compiled by the caller. */
  uint32_t struct_size;
  /** 1 for the first. */
  int attempt;
  /** When complete or fail recorded it (the claim, for an expired lease). */
  int64_t at_unix_ms;
  /** The HTTP status the attempt got, or 0. */
  int http_status;
  /** A mulligan_error_kind (MULLIGAN_ERROR_NONE for a response or a
   *  success; MULLIGAN_ERROR_TIMEOUT for an expired lease). */
  int error_kind;
  /** A mulligan_classification. */
  int classification;
  /** The caller's text, or "lease expired, worker W". Borrowed from the
   *  history: valid until it is destroyed. */
  const char *message;
  /** The wait decided after it in ms (0 when it ended the entry). */
  double delay_ms;
} mulligan_outbox_attempt;

/** Initialiser for mulligan_outbox_attempt. @since 0.6 */
#define MULLIGAN_OUTBOX_ATTEMPT_INIT \
  { (uint32_t)sizeof(mulligan_outbox_attempt), 0, 0, 0, MULLIGAN_ERROR_NONE, 0, NULL, 0.0 }

/**
 * Reads the attempt history of entry `id` (`mulligan outbox dead` shows it).
 * @param box  the outbox.
 * @param id  an entry id; an unknown id gives an empty history.
 * @param out  OUT: the history; NULL on failure. Free with
 *             mulligan_outbox_history_destroy().
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT; MULLIGAN_E_OUTBOX;
 *         MULLIGAN_E_NO_MEMORY.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_history_get(mulligan_outbox *box, int64_t id,
                                             mulligan_outbox_history **out);

/**
 * Returns how many attempts a history holds (0 for NULL, which also sets the
 * last error).
 * @param history  the history.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API size_t mulligan_outbox_history_size(const mulligan_outbox_history *history);

/**
 * Reads attempt `index` (0 for the first) of a history.
 * @param history  the history (not NULL).
 * @param index  < mulligan_outbox_history_size(history).
 * @param out  OUT: the attempt (not NULL; struct_size set).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_history_at(const mulligan_outbox_history *history, size_t index,
                                            mulligan_outbox_attempt *out);

/**
 * Destroys a history. NULL is a no-op.
 * @param history  the history, or NULL.
 * @since 0.6
 */
MULLIGAN_API void mulligan_outbox_history_destroy(mulligan_outbox_history *history);

/* ========================================================================== */
/* Repair and metrics                                                         */
/* ========================================================================== */

/**
 * Makes a dead entry pending again, due now, with its attempt count and
 * history kept and a fresh budget of max_attempts from here (the command's
 * `mulligan outbox retry`).
 * @param box  the outbox.
 * @param id  a dead entry's id.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (unknown or not dead);
 *         MULLIGAN_E_OUTBOX (SQLite failed).
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_retry(mulligan_outbox *box, int64_t id);

/**
 * Deletes the entries in `state` and their history.
 * @param box  the outbox.
 * @param state  MULLIGAN_OUTBOX_DONE or MULLIGAN_OUTBOX_DEAD (live states are
 *               refused with MULLIGAN_E_INVALID_ARGUMENT).
 * @param out_removed  OUT, may be NULL: how many were deleted; 0 on failure.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT; MULLIGAN_E_OUTBOX.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_purge(mulligan_outbox *box, int state, int64_t *out_removed);

/**
 * Counts for metrics (mulligan_outbox_* in Prometheus terms). Initialise it
 * with MULLIGAN_OUTBOX_STATS_INIT (the library checks struct_size).
 * @since 0.6
 */
typedef struct mulligan_outbox_stats {
  /** sizeof(mulligan_outbox_stats) as compiled by the caller. */
  uint32_t struct_size;
  /** Entries pending or leased (the queue's depth), and per state. */
  int64_t depth;
  int64_t pending;
  int64_t leased;
  int64_t done;
  int64_t dead;
  /** Age now of the oldest entry neither done nor dead, in ms (0 when none). */
  double oldest_age_ms;
  /** Deliveries (completions) and dead letters since the file was made
   *  (kept across restarts and purges). */
  int64_t deliveries;
  int64_t dead_letters;
  /** Failed attempts recorded by mulligan_outbox_fail(), and leases that
   *  expired unfinished (each an attempt). */
  int64_t failures;
  int64_t lease_expiries;
} mulligan_outbox_stats;

/** Initialiser for mulligan_outbox_stats. @since 0.6 */
#define MULLIGAN_OUTBOX_STATS_INIT \
  { (uint32_t)sizeof(mulligan_outbox_stats), 0, 0, 0, 0, 0, 0.0, 0, 0, 0, 0 }

/**
 * Reads the counts and the oldest entry's age now.
 * @param box  the outbox.
 * @param out  OUT: the counts (not NULL; struct_size set).
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT; MULLIGAN_E_OUTBOX.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API int mulligan_outbox_stats_get(mulligan_outbox *box, mulligan_outbox_stats *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_OUTBOX_H_ */
