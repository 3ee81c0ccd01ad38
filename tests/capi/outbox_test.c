/* tests/capi/outbox_test.c — the durable outbox through the C ABI (compiled
 * as C99, POSIX for the temporary directory and the read-only child):
 * enqueue -> claim -> complete, an expired lease handing the entry to
 * another worker, poison entries dead-lettered after max_attempts (failed
 * attempts and expired leases) with their history, retry and purge,
 * metrics, batches and a size cap, threads sharing one outbox, bad input
 * and a read-only file.
 * Every time comes from a fake clock, whose calendar reading starts at
 * 2024-01-01T00:00:00Z; the test never sleeps. (kill -9 durability is
 * tested in the core: tests/core/outbox_test.cc.) */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capi_check.h"
#include "mulligan.h"

/* 2024-01-01T00:00:00Z in ms since the Unix epoch (`date -d 2024-01-01Z +%s`). */
#define T0 1704067200000LL

static char dir[64];
static char path[128];
static int files_made = 0;

static void fresh_path(void) {
  static const char *suffixes[] = {"", "-wal", "-shm"};
  char name[160];
  size_t i;
  for (i = 0; i < 3; ++i) {
    snprintf(name, sizeof name, "%s%s", path, suffixes[i]);
    unlink(name);
  }
  snprintf(path, sizeof path, "%s/outbox-%d.db", dir, ++files_made);
}

/* Retry options: `attempts` attempts, a constant `delay_ms` backoff, no
 * jitter, so that every schedule is exact. */
static mulligan_outbox *open_box(mulligan_clock *clock, int attempts, double delay_ms) {
  mulligan_retry_options *retry = NULL;
  mulligan_outbox_options *opts = NULL;
  mulligan_outbox *box = NULL;
  CHECK_OK(mulligan_retry_options_create(&retry));
  CHECK_OK(mulligan_retry_options_set_max_attempts(retry, attempts));
  CHECK_OK(mulligan_retry_options_set_backoff(retry, MULLIGAN_BACKOFF_CONSTANT));
  CHECK_OK(mulligan_retry_options_set_base_delay_ms(retry, delay_ms));
  CHECK_OK(mulligan_retry_options_set_jitter(retry, MULLIGAN_JITTER_NONE));
  CHECK_OK(mulligan_outbox_options_create(&opts));
  CHECK_OK(mulligan_outbox_options_set_retry(opts, retry));
  mulligan_retry_options_destroy(retry); /* copied */
  CHECK_OK(mulligan_outbox_options_set_clock(opts, clock));
  CHECK_OK(mulligan_outbox_options_set_sync(opts, MULLIGAN_OUTBOX_SYNC_NORMAL));
  CHECK_OK(mulligan_outbox_open(path, opts, &box));
  mulligan_outbox_options_destroy(opts);
  return box;
}

static int64_t enqueue_job(mulligan_outbox *box, const char *job, const char *key) {
  mulligan_outbox_spec spec = MULLIGAN_OUTBOX_SPEC_INIT;
  int64_t id = 0;
  spec.kind = MULLIGAN_OUTBOX_JOB;
  spec.job = job;
  spec.payload = "{}";
  spec.payload_len = 2;
  spec.idempotency_key = key;
  CHECK_OK(mulligan_outbox_enqueue(box, &spec, &id, NULL, 0));
  return id;
}

static mulligan_outbox_entry_info entry_of(mulligan_outbox *box, int64_t id,
                                           mulligan_outbox_entry **keep) {
  mulligan_outbox_entry_info info = MULLIGAN_OUTBOX_ENTRY_INFO_INIT;
  CHECK_OK(mulligan_outbox_get(box, id, keep));
  CHECK_OK(mulligan_outbox_entry_info_get(*keep, &info));
  return info;
}

static mulligan_outbox_stats stats_of(mulligan_outbox *box) {
  mulligan_outbox_stats stats = MULLIGAN_OUTBOX_STATS_INIT;
  CHECK_OK(mulligan_outbox_stats_get(box, &stats));
  return stats;
}

/* Claims with the default lease; returns how many (freeing them). */
static size_t claim_count(mulligan_outbox *box, const char *worker) {
  mulligan_outbox_lease *leases[4];
  size_t n = 0, i;
  CHECK_OK(mulligan_outbox_claim(box, worker, 4, -1.0, leases, &n));
  for (i = 0; i < n; ++i) mulligan_outbox_lease_destroy(leases[i]);
  return n;
}

static void test_enqueue_claim_complete(void) {
  mulligan_clock *clock = NULL;
  mulligan_outbox *box;
  mulligan_outbox_spec job = MULLIGAN_OUTBOX_SPEC_INIT, http = MULLIGAN_OUTBOX_SPEC_INIT;
  const char *names[] = {"Content-Type", "X-Tenant"};
  const char *values[] = {"application/json", "acme"};
  char key[MULLIGAN_OUTBOX_KEY_SIZE];
  int64_t job_id = 0, http_id = 0, dup_id = 5, removed = 0;
  mulligan_outbox_lease *leases[8];
  mulligan_outbox_entry *entries[8];
  mulligan_outbox_entry *entry = NULL;
  mulligan_outbox_entry_info a = MULLIGAN_OUTBOX_ENTRY_INFO_INIT;
  mulligan_outbox_entry_info b = MULLIGAN_OUTBOX_ENTRY_INFO_INIT;
  mulligan_outbox_stats stats;
  size_t n = 0, i;
  int statuses[1] = {201};

  CHECK_OK(mulligan_clock_create_fake(&clock));
  fresh_path();
  box = open_box(clock, 3, 100);

  job.kind = MULLIGAN_OUTBOX_JOB;
  job.job = "send_email";
  job.payload = "to\0bob"; /* bytes, with a NUL inside */
  job.payload_len = 6;
  job.idempotency_key = "order-7";
  CHECK_OK(mulligan_outbox_enqueue(box, &job, &job_id, key, sizeof key));
  CHECK_INT(job_id, 1);
  CHECK_STR(key, "order-7");

  http.method = "POST";
  http.url = "https://api.example.com/charges";
  http.header_names = names;
  http.header_values = values;
  http.header_count = 2;
  http.body = "{\"amount\":42}";
  http.body_len = 13;
  CHECK_OK(mulligan_outbox_enqueue(box, &http, &http_id, key, sizeof key));
  CHECK_INT(http_id, 2);
  CHECK_INT(strlen(key), 36); /* a fresh UUID v4 */
  CHECK_INT(key[14], '4');

  /* One key for the entry's whole life: enqueuing it again writes nothing. */
  CHECK_FAILS(mulligan_outbox_enqueue(box, &job, &dup_id, NULL, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "order-7");
  CHECK_INT(dup_id, 0);

  CHECK_OK(mulligan_clock_advance_ms(clock, 1500));
  stats = stats_of(box);
  CHECK_INT(stats.depth, 2);
  CHECK_INT(stats.pending, 2);
  CHECK_NEAR(stats.oldest_age_ms, 1500.0, 0.0);

  CHECK_OK(mulligan_outbox_claim(box, "w1", 8, -1.0, leases, &n));
  CHECK_INT(n, 2);
  CHECK_OK(mulligan_outbox_lease_info(leases[0], &a));
  CHECK_OK(mulligan_outbox_lease_info(leases[1], &b));
  CHECK_INT(a.id, 1);
  CHECK_INT(a.kind, MULLIGAN_OUTBOX_JOB);
  CHECK_INT(a.state, MULLIGAN_OUTBOX_LEASED);
  CHECK_STR(a.idempotency_key, "order-7");
  CHECK_INT(a.attempts, 0);
  CHECK_INT(a.leases, 1);
  CHECK_STR(a.lease_owner, "w1");
  CHECK_INT(a.created_at_unix_ms, T0);
  CHECK_INT(a.lease_expires_at_unix_ms, T0 + 1500 + 30000); /* the default lease */
  CHECK_STR(a.job, "send_email");
  CHECK_INT(a.payload_len, 6);
  CHECK(memcmp(a.payload, "to\0bob", 6) == 0);
  CHECK_INT(b.id, 2);
  CHECK_INT(b.kind, MULLIGAN_OUTBOX_HTTP);
  CHECK_STR(b.method, "POST");
  CHECK_STR(b.url, "https://api.example.com/charges");
  CHECK_INT(b.header_count, 2);
  CHECK_STR(b.header_names[1], "X-Tenant");
  CHECK_STR(b.header_values[0], "application/json");
  CHECK_INT(b.body_len, 13);
  CHECK(memcmp(b.body, "{\"amount\":42}", 13) == 0);
  CHECK_NEAR(mulligan_outbox_lease_attempt_timeout_ms(leases[0]), -1.0, 0.0);
  CHECK_INT(claim_count(box, "w2"), 0); /* both held by w1 */
  stats = stats_of(box);
  CHECK_INT(stats.leased, 2);
  CHECK_INT(stats.depth, 2);

  CHECK_OK(mulligan_clock_advance_ms(clock, 250));
  CHECK_OK(mulligan_outbox_complete(box, leases[0], 0));
  CHECK_OK(mulligan_outbox_complete_many(box, (const mulligan_outbox_lease *const *)&leases[1],
                                         statuses, 1));
  for (i = 0; i < n; ++i) mulligan_outbox_lease_destroy(leases[i]);

  a = entry_of(box, job_id, &entry);
  CHECK_INT(a.state, MULLIGAN_OUTBOX_DONE);
  CHECK_INT(a.attempts, 1);
  CHECK_INT(a.finished_at_unix_ms, T0 + 1750);
  CHECK_STR(a.stop_reason, "succeeded");
  mulligan_outbox_entry_destroy(entry);

  stats = stats_of(box);
  CHECK_INT(stats.depth, 0);
  CHECK_INT(stats.done, 2);
  CHECK_INT(stats.deliveries, 2);
  CHECK_NEAR(stats.oldest_age_ms, 0.0, 0.0);

  CHECK_OK(mulligan_outbox_list(box, MULLIGAN_OUTBOX_DONE, 8, entries, &n));
  CHECK_INT(n, 2);
  for (i = 0; i < n; ++i) {
    CHECK_OK(mulligan_outbox_entry_info_get(entries[i], &a));
    CHECK_INT(a.id, (int64_t)i + 1);
    mulligan_outbox_entry_destroy(entries[i]);
  }
  CHECK_OK(mulligan_outbox_list(box, MULLIGAN_OUTBOX_PENDING, 8, entries, &n));
  CHECK_INT(n, 0);
  CHECK_OK(mulligan_outbox_purge(box, MULLIGAN_OUTBOX_DONE, &removed));
  CHECK_INT(removed, 2);
  CHECK_OK(mulligan_outbox_list(box, -1, 8, entries, &n));
  CHECK_INT(n, 0);
  CHECK_INT(stats_of(box).deliveries, 2); /* kept across purges */

  mulligan_outbox_close(box);
  mulligan_clock_destroy(clock);
}

static void test_expired_lease_hands_over(void) {
  mulligan_clock *clock = NULL;
  mulligan_outbox *box;
  mulligan_outbox_lease *held[1], *taken[1];
  mulligan_outbox_entry *entry = NULL;
  mulligan_outbox_entry_info info = MULLIGAN_OUTBOX_ENTRY_INFO_INIT;
  mulligan_outcome outcome = MULLIGAN_OUTCOME_INIT;
  size_t n = 0;
  int64_t id;

  CHECK_OK(mulligan_clock_create_fake(&clock));
  fresh_path();
  box = open_box(clock, 3, 200);
  id = enqueue_job(box, "capture", "pay-1");

  CHECK_OK(mulligan_outbox_claim(box, "A", 1, 1000.0, held, &n));
  CHECK_INT(n, 1);
  CHECK_OK(mulligan_clock_advance_ms(clock, 999));
  CHECK_INT(claim_count(box, "B"), 0); /* A's lease still runs */
  CHECK_OK(mulligan_clock_advance_ms(clock, 1));
  /* Expired now: counted as a failed attempt, due again after the 200 ms
   * backoff, so not leased by this call. */
  CHECK_INT(claim_count(box, "B"), 0);
  info = entry_of(box, id, &entry);
  CHECK_INT(info.state, MULLIGAN_OUTBOX_PENDING);
  CHECK_INT(info.attempts, 1);
  CHECK_INT(info.next_attempt_at_unix_ms, T0 + 1000 + 200);
  mulligan_outbox_entry_destroy(entry);
  CHECK_INT(stats_of(box).lease_expiries, 1);

  CHECK_OK(mulligan_clock_advance_ms(clock, 200));
  CHECK_OK(mulligan_outbox_claim(box, "B", 1, -1.0, taken, &n));
  CHECK_INT(n, 1);
  CHECK_OK(mulligan_outbox_lease_info(taken[0], &info));
  CHECK_INT(info.id, id);
  CHECK_STR(info.idempotency_key, "pay-1"); /* the same key on every delivery */
  CHECK_STR(info.lease_owner, "B");
  CHECK_INT(info.attempts, 1);
  CHECK_INT(info.leases, 2);

  /* A, back from the dead, no longer owns the schedule. */
  outcome.error_kind = MULLIGAN_ERROR_CONNECTION_RESET;
  CHECK_FAILS(mulligan_outbox_fail(box, held[0], &outcome, "reset", 0, NULL), MULLIGAN_E_OUTBOX,
              "lease lost");
  CHECK_OK(mulligan_outbox_complete(box, taken[0], 200));
  info = entry_of(box, id, &entry);
  CHECK_INT(info.state, MULLIGAN_OUTBOX_DONE);
  CHECK_INT(info.attempts, 2);
  mulligan_outbox_entry_destroy(entry);

  mulligan_outbox_lease_destroy(held[0]);
  mulligan_outbox_lease_destroy(taken[0]);
  mulligan_outbox_close(box);
  mulligan_clock_destroy(clock);
}

/* Claims `id`'s one due entry and fails it with an HTTP 503. */
static mulligan_outbox_failure fail_503(mulligan_outbox *box, int64_t id) {
  mulligan_outbox_lease *lease[1];
  mulligan_outbox_entry_info info = MULLIGAN_OUTBOX_ENTRY_INFO_INIT;
  mulligan_outbox_failure failure = MULLIGAN_OUTBOX_FAILURE_INIT;
  mulligan_outcome outcome = MULLIGAN_OUTCOME_INIT;
  size_t n = 0;
  outcome.http_status = 503;
  CHECK_OK(mulligan_outbox_claim(box, "w", 1, -1.0, lease, &n));
  CHECK_INT(n, 1);
  if (n != 1) return failure;
  CHECK_OK(mulligan_outbox_lease_info(lease[0], &info));
  CHECK_INT(info.id, id);
  CHECK_OK(mulligan_outbox_fail(box, lease[0], &outcome, "HTTP 503", 0, &failure));
  mulligan_outbox_lease_destroy(lease[0]);
  return failure;
}

static void test_poison_entries_are_dead_lettered(void) {
  mulligan_clock *clock = NULL;
  mulligan_outbox *box;
  mulligan_outbox_entry *entry = NULL;
  mulligan_outbox_entry_info info;
  mulligan_outbox_failure f;
  mulligan_outbox_stats stats;
  mulligan_outbox_lease *lease[1];
  mulligan_outcome not_found = MULLIGAN_OUTCOME_INIT;
  mulligan_outbox_history *history = NULL;
  mulligan_outbox_attempt attempt = MULLIGAN_OUTBOX_ATTEMPT_INIT;
  size_t n = 0;
  int64_t failing, crashing, missing, removed = 0;
  int round;

  CHECK_OK(mulligan_clock_create_fake(&clock));
  fresh_path();
  box = open_box(clock, 3, 100);

  /* Failed attempts: pending after 100 ms twice, dead at the third. */
  failing = enqueue_job(box, "webhook", "fails");
  f = fail_503(box, failing);
  CHECK_INT(f.state, MULLIGAN_OUTBOX_PENDING);
  CHECK_INT(f.attempt, 1);
  CHECK_NEAR(f.delay_ms, 100.0, 0.0);
  CHECK_INT(f.next_attempt_at_unix_ms, T0 + 100);
  CHECK_INT(f.reason, MULLIGAN_STOP_NONE);
  CHECK_INT(claim_count(box, "w"), 0); /* not due yet */
  CHECK_OK(mulligan_clock_advance_ms(clock, 100));
  f = fail_503(box, failing);
  CHECK_INT(f.state, MULLIGAN_OUTBOX_PENDING);
  CHECK_INT(f.attempt, 2);
  CHECK_INT(f.next_attempt_at_unix_ms, T0 + 200);
  CHECK_OK(mulligan_clock_advance_ms(clock, 100));
  f = fail_503(box, failing);
  CHECK_INT(f.state, MULLIGAN_OUTBOX_DEAD);
  CHECK_INT(f.attempt, 3);
  CHECK_INT(f.reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  CHECK_NEAR(f.delay_ms, 0.0, 0.0);
  info = entry_of(box, failing, &entry);
  CHECK_INT(info.state, MULLIGAN_OUTBOX_DEAD);
  CHECK_STR(info.stop_reason, "attempts_exhausted");
  CHECK_INT(info.attempts, 3);
  CHECK_INT(info.finished_at_unix_ms, T0 + 200);
  mulligan_outbox_entry_destroy(entry);

  /* A poison entry kills its worker every time: each expired lease is an
   * attempt, and the third ends it. The clock is at T0 + 200. */
  crashing = enqueue_job(box, "webhook", "crashes");
  for (round = 1; round <= 3; ++round) {
    CHECK_INT(claim_count(box, "doomed"), 1); /* the worker dies holding it */
    CHECK_OK(mulligan_clock_advance_ms(clock, 30000));
    CHECK_INT(claim_count(box, "next"), 0);
    info = entry_of(box, crashing, &entry);
    CHECK_INT(info.attempts, round);
    CHECK_INT(info.state, round < 3 ? MULLIGAN_OUTBOX_PENDING : MULLIGAN_OUTBOX_DEAD);
    mulligan_outbox_entry_destroy(entry);
    CHECK_OK(mulligan_clock_advance_ms(clock, 100));
  }
  info = entry_of(box, crashing, &entry);
  CHECK_STR(info.stop_reason, "attempts_exhausted");
  mulligan_outbox_entry_destroy(entry);

  /* The history kept with the dead letters. */
  CHECK_OK(mulligan_outbox_history_get(box, failing, &history));
  CHECK_INT(mulligan_outbox_history_size(history), 3);
  for (round = 0; round < 3; ++round) {
    attempt.struct_size = sizeof attempt;
    CHECK_OK(mulligan_outbox_history_at(history, (size_t)round, &attempt));
    CHECK_INT(attempt.attempt, round + 1);
    CHECK_INT(attempt.at_unix_ms, T0 + 100 * round);
    CHECK_INT(attempt.http_status, 503);
    CHECK_INT(attempt.error_kind, MULLIGAN_ERROR_NONE);
    CHECK_INT(attempt.classification, MULLIGAN_CLASSIFICATION_RETRYABLE);
    CHECK_STR(attempt.message, "HTTP 503");
    CHECK_NEAR(attempt.delay_ms, round < 2 ? 100.0 : 0.0, 0.0);
  }
  CHECK_FAILS(mulligan_outbox_history_at(history, 3, &attempt), MULLIGAN_E_INVALID_ARGUMENT,
              "index must be < 3, got 3");
  mulligan_outbox_history_destroy(history);
  CHECK_OK(mulligan_outbox_history_get(box, crashing, &history));
  CHECK_INT(mulligan_outbox_history_size(history), 3);
  CHECK_OK(mulligan_outbox_history_at(history, 0, &attempt));
  CHECK_STR(attempt.message, "lease expired, worker doomed");
  CHECK_INT(attempt.error_kind, MULLIGAN_ERROR_TIMEOUT);
  CHECK_INT(attempt.at_unix_ms, T0 + 200 + 30000);
  mulligan_outbox_history_destroy(history);
  CHECK_OK(mulligan_outbox_history_get(box, 99, &history));
  CHECK_INT(mulligan_outbox_history_size(history), 0);
  mulligan_outbox_history_destroy(history);
  CHECK_INT(mulligan_outbox_history_size(NULL), 0);

  /* A terminal outcome (404) dead-letters at once. */
  missing = enqueue_job(box, "webhook", "missing");
  not_found.http_status = 404;
  CHECK_OK(mulligan_outbox_claim(box, "w", 1, -1.0, lease, &n));
  CHECK_INT(n, 1);
  f.struct_size = sizeof f;
  CHECK_OK(mulligan_outbox_fail(box, lease[0], &not_found, "HTTP 404", 0, &f));
  CHECK_INT(f.state, MULLIGAN_OUTBOX_DEAD);
  CHECK_INT(f.reason, MULLIGAN_STOP_TERMINAL);
  mulligan_outbox_lease_destroy(lease[0]);

  stats = stats_of(box);
  CHECK_INT(stats.dead, 3);
  CHECK_INT(stats.dead_letters, 3);
  CHECK_INT(stats.failures, 4);
  CHECK_INT(stats.lease_expiries, 3);
  CHECK_INT(stats.depth, 0);

  /* `mulligan outbox retry`: pending again, due now, history kept. */
  CHECK_OK(mulligan_outbox_retry(box, missing));
  info = entry_of(box, missing, &entry);
  CHECK_INT(info.state, MULLIGAN_OUTBOX_PENDING);
  CHECK_INT(info.attempts, 1);
  mulligan_outbox_entry_destroy(entry);
  CHECK_INT(claim_count(box, "w"), 1);
  CHECK_FAILS(mulligan_outbox_retry(box, missing), MULLIGAN_E_INVALID_ARGUMENT, "");
  CHECK_OK(mulligan_outbox_purge(box, MULLIGAN_OUTBOX_DEAD, &removed));
  CHECK_INT(removed, 2);
  CHECK_INT(stats_of(box).dead_letters, 3);

  mulligan_outbox_close(box);
  mulligan_clock_destroy(clock);
}

static void test_bad_input(void) {
  mulligan_clock *clock = NULL;
  mulligan_outbox *box = NULL;
  mulligan_outbox_options *opts = NULL;
  mulligan_outbox_spec spec = MULLIGAN_OUTBOX_SPEC_INIT;
  mulligan_outbox_lease *leases[2];
  mulligan_outbox_entry *entries[2];
  mulligan_outbox_entry *entry = NULL;
  mulligan_outbox_stats stats = MULLIGAN_OUTBOX_STATS_INIT;
  mulligan_outcome success = MULLIGAN_OUTCOME_INIT;
  char small[8];
  size_t n = 7;
  int64_t id = 7;
  FILE *junk;

  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK_STR(mulligan_status_str(MULLIGAN_E_OUTBOX), "outbox error");
  CHECK_INT(MULLIGAN_E_OUTBOX, 17);
  CHECK_STR(mulligan_outbox_state_str(MULLIGAN_OUTBOX_DEAD), "dead");
  CHECK_STR(mulligan_outbox_state_str(MULLIGAN_OUTBOX_LEASED), "leased");
  CHECK_STR(mulligan_outbox_state_str(9), "unknown");

  /* NULL handles and paths. */
  CHECK_FAILS(mulligan_outbox_open(NULL, NULL, &box), MULLIGAN_E_INVALID_ARGUMENT,
              "path must not be NULL");
  CHECK(box == NULL);
  CHECK_FAILS(mulligan_outbox_open("x.db", NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "out must not be NULL");
  CHECK_FAILS(mulligan_outbox_open("", NULL, &box), MULLIGAN_E_INVALID_ARGUMENT,
              "path must not be empty");
  CHECK_FAILS(mulligan_outbox_enqueue(NULL, &spec, &id, NULL, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "box must not be NULL");
  CHECK_INT(id, 0);
  CHECK_FAILS(mulligan_outbox_claim(NULL, "w", 1, -1.0, leases, &n), MULLIGAN_E_INVALID_ARGUMENT,
              "box must not be NULL");
  CHECK_INT(n, 0);
  CHECK_FAILS(mulligan_outbox_complete(NULL, NULL, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "box must not be NULL");
  CHECK_FAILS(mulligan_outbox_stats_get(NULL, &stats), MULLIGAN_E_INVALID_ARGUMENT,
              "box must not be NULL");
  CHECK_FAILS(mulligan_outbox_get(NULL, 1, &entry), MULLIGAN_E_INVALID_ARGUMENT,
              "box must not be NULL");
  CHECK_FAILS(mulligan_outbox_options_set_lease_timeout_ms(NULL, 1), MULLIGAN_E_INVALID_ARGUMENT,
              "opts must not be NULL");
  CHECK(mulligan_outbox_lease_attempt_timeout_ms(NULL) < 0);
  CHECK(strstr(mulligan_last_error(), "lease must not be NULL") != NULL);
  mulligan_outbox_close(NULL);
  mulligan_outbox_lease_destroy(NULL);
  mulligan_outbox_entry_destroy(NULL);
  mulligan_outbox_options_destroy(NULL);

  /* Options: a zero lease, a negative busy timeout, bad enums. */
  CHECK_OK(mulligan_outbox_options_create(&opts));
  CHECK_FAILS(mulligan_outbox_options_set_lease_timeout_ms(opts, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "lease_timeout_ms must be a finite number > 0, got 0");
  CHECK_FAILS(mulligan_outbox_options_set_lease_timeout_ms(opts, NAN),
              MULLIGAN_E_INVALID_ARGUMENT, "lease_timeout_ms");
  CHECK_FAILS(mulligan_outbox_options_set_busy_timeout_ms(opts, -1),
              MULLIGAN_E_INVALID_ARGUMENT, "busy_timeout_ms must be a finite number >= 0");
  CHECK_FAILS(mulligan_outbox_options_set_sync(opts, 5), MULLIGAN_E_INVALID_ARGUMENT,
              "sync must be");
  CHECK_FAILS(mulligan_outbox_options_set_max_size_bytes(opts, -1), MULLIGAN_E_INVALID_ARGUMENT,
              "max_size_bytes must be >= 0, got -1");
  CHECK_FAILS(mulligan_outbox_options_set_retry(opts, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "retry must not be NULL");
  CHECK_FAILS(mulligan_outbox_options_set_name(opts, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "name must not be NULL");

  /* create = 0 never makes a file; a file that is not a database is refused. */
  fresh_path();
  CHECK_OK(mulligan_outbox_options_set_create(opts, 0));
  CHECK_FAILS(mulligan_outbox_open(path, opts, &box), MULLIGAN_E_OUTBOX, path);
  CHECK(box == NULL);
  CHECK(access(path, F_OK) != 0);
  junk = fopen(path, "wb");
  CHECK(junk != NULL);
  if (junk != NULL) {
    fputs("this is not an SQLite database, just some text long enough to be a header.\n"
          "this is not an SQLite database, just some text long enough to be a header.\n",
          junk);
    fclose(junk);
  }
  CHECK_FAILS(mulligan_outbox_open(path, opts, &box), MULLIGAN_E_OUTBOX, "not a database");
  CHECK(box == NULL);
  mulligan_outbox_options_destroy(opts);

  /* Bad calls on a good outbox. */
  fresh_path();
  box = open_box(clock, 3, 100);
  CHECK_FAILS(mulligan_outbox_claim(box, "w", 1, 0.0, leases, &n), MULLIGAN_E_INVALID_ARGUMENT,
              "lease_timeout_ms must be a finite number > 0, got 0");
  CHECK_FAILS(mulligan_outbox_claim(box, "w", 1, NAN, leases, &n), MULLIGAN_E_INVALID_ARGUMENT,
              "lease_timeout_ms");
  CHECK_FAILS(mulligan_outbox_claim(box, "w", 0, -1.0, leases, &n), MULLIGAN_E_INVALID_ARGUMENT,
              "max_entries must be in [1, ");
  CHECK_FAILS(mulligan_outbox_claim(box, NULL, 1, -1.0, leases, &n), MULLIGAN_E_INVALID_ARGUMENT,
              "worker must not be NULL");
  CHECK_FAILS(mulligan_outbox_list(box, 4, 2, entries, &n), MULLIGAN_E_INVALID_ARGUMENT,
              "state must be a mulligan_outbox_state or -1, got 4");
  CHECK_FAILS(mulligan_outbox_purge(box, MULLIGAN_OUTBOX_PENDING, NULL),
              MULLIGAN_E_INVALID_ARGUMENT, "");
  CHECK_FAILS(mulligan_outbox_get(box, 99, &entry), MULLIGAN_E_INVALID_ARGUMENT,
              "no outbox entry 99");
  CHECK(entry == NULL);

  spec.kind = 7;
  CHECK_FAILS(mulligan_outbox_enqueue(box, &spec, NULL, NULL, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "spec->kind must be");
  spec.kind = MULLIGAN_OUTBOX_JOB;
  CHECK_FAILS(mulligan_outbox_enqueue(box, &spec, NULL, NULL, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "job");
  spec.job = "j";
  spec.payload_len = 3;
  CHECK_FAILS(mulligan_outbox_enqueue(box, &spec, NULL, NULL, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "spec->payload must not be NULL when spec->payload_len is 3");
  spec.payload_len = 0;
  CHECK_FAILS(mulligan_outbox_enqueue(box, &spec, NULL, small, sizeof small),
              MULLIGAN_E_INVALID_ARGUMENT, "key_buf_size must be at least");
  spec.struct_size = 4;
  CHECK_FAILS(mulligan_outbox_enqueue(box, &spec, NULL, NULL, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "MULLIGAN_OUTBOX_SPEC_INIT");
  spec.struct_size = sizeof spec;
  stats.struct_size = 0;
  CHECK_FAILS(mulligan_outbox_stats_get(box, &stats), MULLIGAN_E_INVALID_ARGUMENT,
              "MULLIGAN_OUTBOX_STATS_INIT");
  /* None of the refused enqueues wrote anything. */
  stats.struct_size = sizeof stats;
  CHECK_OK(mulligan_outbox_stats_get(box, &stats));
  CHECK_INT(stats.pending, 0);

  CHECK_OK(mulligan_outbox_enqueue(box, &spec, &id, NULL, 0));
  CHECK_OK(mulligan_outbox_claim(box, "w", 2, 5000.0, leases, &n));
  CHECK_INT(n, 1);
  CHECK_FAILS(mulligan_outbox_fail(box, leases[0], &success, "ok?", 0, NULL),
              MULLIGAN_E_INVALID_ARGUMENT, "");
  CHECK_FAILS(mulligan_outbox_complete(box, leases[0], 42), MULLIGAN_E_INVALID_ARGUMENT,
              "http_status must be 0 or in [100, 599], got 42");
  CHECK_OK(mulligan_outbox_complete(box, leases[0], 0));
  mulligan_outbox_lease_destroy(leases[0]);

  mulligan_outbox_close(box);
  mulligan_clock_destroy(clock);
}

static void test_enqueue_many_and_size_cap(void) {
  mulligan_clock *clock = NULL;
  mulligan_outbox *box;
  mulligan_outbox_options *opts = NULL;
  mulligan_outbox_spec specs[3] = {MULLIGAN_OUTBOX_SPEC_INIT, MULLIGAN_OUTBOX_SPEC_INIT,
                                   MULLIGAN_OUTBOX_SPEC_INIT};
  mulligan_outbox_entry *entry = NULL;
  mulligan_outbox_entry_info info;
  static char payload[4096];
  int64_t ids[3] = {9, 9, 9};
  int written = 0, rc = MULLIGAN_OK, i;

  CHECK_OK(mulligan_clock_create_fake(&clock));
  fresh_path();
  box = open_box(clock, 3, 100);
  for (i = 0; i < 3; ++i) {
    specs[i].kind = MULLIGAN_OUTBOX_JOB;
    specs[i].job = "batch";
  }
  specs[1].idempotency_key = "second";
  CHECK_OK(mulligan_outbox_enqueue_many(box, specs, 3, ids));
  CHECK_INT(ids[0], 1);
  CHECK_INT(ids[1], 2);
  CHECK_INT(ids[2], 3);
  info = entry_of(box, 2, &entry);
  CHECK_STR(info.idempotency_key, "second");
  mulligan_outbox_entry_destroy(entry);
  /* All or none: "second" is there already, so nothing is written. */
  specs[0].idempotency_key = "fresh";
  CHECK_FAILS(mulligan_outbox_enqueue_many(box, specs, 2, ids), MULLIGAN_E_INVALID_ARGUMENT,
              "second");
  CHECK_INT(ids[0], 0);
  CHECK_INT(stats_of(box).pending, 3);
  specs[1].kind = 5;
  CHECK_FAILS(mulligan_outbox_enqueue_many(box, specs, 2, ids), MULLIGAN_E_INVALID_ARGUMENT,
              "specs[1]: spec->kind");
  CHECK_OK(mulligan_outbox_enqueue_many(box, NULL, 0, NULL));
  /* Past the batch bound: refused before anything is touched (ids keeps
   * what it held: ids has room for 3, not for the count). */
  ids[0] = 77;
  CHECK_FAILS(mulligan_outbox_enqueue_many(box, specs, (size_t)MULLIGAN_OUTBOX_MAX_BATCH + 1, ids),
              MULLIGAN_E_INVALID_ARGUMENT,
              "count must be at most 1048576 (MULLIGAN_OUTBOX_MAX_BATCH), got 1048577");
  CHECK_INT(ids[0], 77);
  CHECK_INT(stats_of(box).pending, 3);
  mulligan_outbox_close(box);

  /* A size cap fills as a full disk does: MULLIGAN_E_OUTBOX, and every
   * entry whose enqueue returned MULLIGAN_OK is there, and only those. */
  fresh_path();
  CHECK_OK(mulligan_outbox_options_create(&opts));
  CHECK_OK(mulligan_outbox_options_set_clock(opts, clock));
  CHECK_OK(mulligan_outbox_options_set_max_size_bytes(opts, 128 * 1024));
  CHECK_OK(mulligan_outbox_open(path, opts, &box));
  mulligan_outbox_options_destroy(opts);
  specs[0].idempotency_key = NULL;
  specs[0].payload = payload;
  specs[0].payload_len = sizeof payload;
  for (i = 0; i < 1000 && rc == MULLIGAN_OK; ++i) {
    memset(payload, 'a' + i % 26, sizeof payload);
    rc = mulligan_outbox_enqueue(box, &specs[0], NULL, NULL, 0);
    if (rc == MULLIGAN_OK) ++written;
  }
  CHECK_INT(rc, MULLIGAN_E_OUTBOX);
  CHECK(strstr(mulligan_last_error(), "full") != NULL);
  CHECK(written > 5);
  CHECK(written < 1000);
  CHECK_INT(stats_of(box).pending, written);
  mulligan_outbox_close(box);
  mulligan_clock_destroy(clock);
}

/* Four threads share one outbox: every entry is leased to exactly one of
 * them and delivered once. */
#define SHARED_ENTRIES 400
#define SHARED_THREADS 4

static mulligan_outbox *shared_box;
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static int seen[SHARED_ENTRIES + 1];
static int worker_errors = 0;

static void *shared_worker(void *arg) {
  mulligan_outbox_lease *leases[10];
  mulligan_outbox_entry_info info = MULLIGAN_OUTBOX_ENTRY_INFO_INIT;
  size_t n = 0, i;
  int bad = 0;
  (void)arg;
  for (;;) {
    if (mulligan_outbox_claim(shared_box, "t", 10, -1.0, leases, &n) != MULLIGAN_OK) ++bad;
    if (n == 0) break;
    if (mulligan_outbox_complete_many(shared_box, (const mulligan_outbox_lease *const *)leases,
                                      NULL, n) != MULLIGAN_OK) {
      ++bad;
    }
    for (i = 0; i < n; ++i) {
      if (mulligan_outbox_lease_info(leases[i], &info) != MULLIGAN_OK || info.id < 1 ||
          info.id > SHARED_ENTRIES) {
        ++bad;
      } else {
        pthread_mutex_lock(&seen_mu);
        ++seen[info.id];
        pthread_mutex_unlock(&seen_mu);
      }
      mulligan_outbox_lease_destroy(leases[i]);
    }
  }
  pthread_mutex_lock(&seen_mu);
  worker_errors += bad;
  pthread_mutex_unlock(&seen_mu);
  return NULL;
}

static void test_threads_share_one_outbox(void) {
  mulligan_clock *clock = NULL;
  static mulligan_outbox_spec specs[SHARED_ENTRIES];
  mulligan_outbox_spec spec = MULLIGAN_OUTBOX_SPEC_INIT;
  mulligan_outbox_stats stats;
  pthread_t threads[SHARED_THREADS];
  int i, once = 0;

  CHECK_OK(mulligan_clock_create_fake(&clock));
  fresh_path();
  shared_box = open_box(clock, 3, 100);
  spec.kind = MULLIGAN_OUTBOX_JOB;
  spec.job = "shared";
  for (i = 0; i < SHARED_ENTRIES; ++i) specs[i] = spec;
  CHECK_OK(mulligan_outbox_enqueue_many(shared_box, specs, SHARED_ENTRIES, NULL));
  for (i = 0; i < SHARED_THREADS; ++i)
    CHECK_INT(pthread_create(&threads[i], NULL, shared_worker, NULL), 0);
  for (i = 0; i < SHARED_THREADS; ++i) CHECK_INT(pthread_join(threads[i], NULL), 0);
  CHECK_INT(worker_errors, 0);
  for (i = 1; i <= SHARED_ENTRIES; ++i) once += seen[i] == 1;
  CHECK_INT(once, SHARED_ENTRIES);
  stats = stats_of(shared_box);
  CHECK_INT(stats.deliveries, SHARED_ENTRIES);
  CHECK_INT(stats.done, SHARED_ENTRIES);
  CHECK_INT(stats.depth, 0);
  mulligan_outbox_close(shared_box);
  mulligan_clock_destroy(clock);
}

/* A file the process cannot write (as root, whom permissions do not stop,
 * after switching to the nobody user in a child): open works, enqueue fails
 * with MULLIGAN_E_OUTBOX naming the file and "read-only", nothing is lost. */
static void test_read_only_file(void) {
  mulligan_clock *clock = NULL;
  mulligan_outbox *box;
  mulligan_outbox_entry *entries[4];
  size_t n = 0, i;
  pid_t pid;
  int status = 0;

  CHECK_OK(mulligan_clock_create_fake(&clock));
  fresh_path();
  box = open_box(clock, 3, 100);
  enqueue_job(box, "kept", "kept-1");
  mulligan_outbox_close(box); /* the last connection checkpoints the WAL */
  CHECK_INT(chmod(dir, 0755), 0);
  CHECK_INT(chmod(path, 0444), 0);

  fflush(NULL);
  pid = fork();
  if (pid == 0) {
    mulligan_outbox *ro = NULL;
    mulligan_outbox_spec spec = MULLIGAN_OUTBOX_SPEC_INIT;
    int64_t id = 5;
    int rc;
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(90);
    if (mulligan_outbox_open(path, NULL, &ro) != MULLIGAN_OK) {
      fprintf(stderr, "open: %s\n", mulligan_last_error());
      _exit(10);
    }
    spec.kind = MULLIGAN_OUTBOX_JOB;
    spec.job = "lost?";
    rc = mulligan_outbox_enqueue(ro, &spec, &id, NULL, 0);
    fprintf(stderr, "enqueue on a read-only file: %d (%s): %s\n", rc, mulligan_status_str(rc),
            mulligan_last_error());
    if (rc != MULLIGAN_E_OUTBOX) _exit(11);
    if (strstr(mulligan_last_error(), "read-only") == NULL) _exit(12);
    if (strstr(mulligan_last_error(), path) == NULL) _exit(13);
    if (id != 0) _exit(14);
    mulligan_outbox_close(ro);
    _exit(0);
  }
  CHECK(pid > 0);
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK_INT(WEXITSTATUS(status), 0);

  CHECK_INT(chmod(path, 0644), 0);
  box = open_box(clock, 3, 100);
  CHECK_OK(mulligan_outbox_list(box, -1, 4, entries, &n));
  CHECK_INT(n, 1);
  for (i = 0; i < n; ++i) mulligan_outbox_entry_destroy(entries[i]);
  mulligan_outbox_close(box);
  mulligan_clock_destroy(clock);
}

int main(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/mulligan-outbox-capi-XXXXXX", tmp != NULL ? tmp : "/tmp");
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  test_enqueue_claim_complete();
  test_expired_lease_hands_over();
  test_poison_entries_are_dead_lettered();
  test_bad_input();
  test_enqueue_many_and_size_cap();
  test_threads_share_one_outbox();
  test_read_only_file();
  fresh_path(); /* removes the last file */
  rmdir(dir);
  return CHECK_REPORT();
}
