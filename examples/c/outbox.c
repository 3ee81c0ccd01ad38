/* examples/c/outbox.c — the durable outbox from C (mulligan_outbox.h): write
 * a job before its first attempt, then one worker pass: claim the due
 * entries, deliver each, complete or fail it. The file keeps the entries
 * (and the counts) across runs; each run enqueues one job.
 *
 *   cc outbox.c $(pkg-config --cflags --libs mulligan) -o outbox && ./outbox jobs.db
 */
#include <stdio.h>
#include <string.h>

#include <mulligan.h>

static int send_email(const void *payload, size_t len, const char *key) {
  printf("send_email %.*s (Idempotency-Key %s)\n", (int)len, (const char *)payload, key);
  return 0; /* 0: delivered */
}

int main(int argc, char **argv) {
  mulligan_outbox *box = NULL;
  mulligan_outbox_spec spec = MULLIGAN_OUTBOX_SPEC_INIT;
  mulligan_outbox_stats stats = MULLIGAN_OUTBOX_STATS_INIT;
  mulligan_outbox_lease *leases[16];
  char key[MULLIGAN_OUTBOX_KEY_SIZE];
  size_t n = 0, i;

  if (mulligan_outbox_open(argc > 1 ? argv[1] : "outbox.db", NULL, &box) != MULLIGAN_OK) {
    fprintf(stderr, "open: %s\n", mulligan_last_error());
    return 1;
  }
  spec.kind = MULLIGAN_OUTBOX_JOB;
  spec.job = "send_email";
  spec.payload = "{\"to\":\"bob@example.com\"}";
  spec.payload_len = strlen(spec.payload);
  if (mulligan_outbox_enqueue(box, &spec, NULL, key, sizeof key) != MULLIGAN_OK) {
    fprintf(stderr, "enqueue: %s\n", mulligan_last_error()); /* nothing was written */
    mulligan_outbox_close(box);
    return 1;
  }

  /* One worker pass: lease up to 16 due entries for the default 30 s. */
  if (mulligan_outbox_claim(box, "worker-1", 16, -1.0, leases, &n) != MULLIGAN_OK)
    fprintf(stderr, "claim: %s\n", mulligan_last_error());
  for (i = 0; i < n; ++i) {
    mulligan_outbox_entry_info e = MULLIGAN_OUTBOX_ENTRY_INFO_INIT;
    mulligan_outbox_lease_info(leases[i], &e);
    if (send_email(e.payload, e.payload_len, e.idempotency_key) == 0) {
      mulligan_outbox_complete(box, leases[i], 0);
    } else { /* the policy retries it later, or dead-letters it */
      mulligan_outcome failed = MULLIGAN_OUTCOME_INIT;
      failed.error_kind = MULLIGAN_ERROR_RETRYABLE;
      mulligan_outbox_fail(box, leases[i], &failed, "send_email failed", 0, NULL);
    }
    mulligan_outbox_lease_destroy(leases[i]);
  }

  mulligan_outbox_stats_get(box, &stats);
  printf("delivered %zu; depth %lld, deliveries %lld, dead letters %lld\n", n,
         (long long)stats.depth, (long long)stats.deliveries, (long long)stats.dead_letters);
  mulligan_outbox_close(box);
  return 0;
}
