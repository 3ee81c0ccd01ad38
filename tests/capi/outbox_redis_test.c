/* tests/capi/outbox_redis_test.c — the Redis Streams outbox through the C ABI
 * (0.6): mulligan_outbox_open() with a redis:// path opens the outbox named
 * by the options on that server. Against a real redis-server started here
 * on a free loopback port ($MULLIGAN_REDIS_SERVER, else redis-server from
 * PATH; without persistence, so sync "full" is refused by name). Two
 * handles (two connections, two "workers") share one outbox: the entry
 * enqueued by one is leased once, by either, and completed; a missing name,
 * a server that does not fsync, and an unreachable server are clear errors
 * that never show the URL's password.
 * Exits 77 (skipped) when no redis-server can start, unless
 * $MULLIGAN_REDIS_SERVER names one (scripts/test.sh sets it): then it fails.
 * POSIX (fork/exec, sockets). Times come from a fake clock. */
#define _POSIX_C_SOURCE 200809L

#include "capi_check.h"
#include "mulligan.h"
#include "redis_server.h"

static mulligan_outbox_options *options(mulligan_clock *clock, const char *name, int sync) {
  mulligan_outbox_options *opts = NULL;
  CHECK_OK(mulligan_outbox_options_create(&opts));
  CHECK_OK(mulligan_outbox_options_set_clock(opts, clock));
  if (name != NULL) CHECK_OK(mulligan_outbox_options_set_name(opts, name));
  CHECK_OK(mulligan_outbox_options_set_sync(opts, sync));
  return opts;
}

static void test_two_handles_share_one_outbox(mulligan_clock *clock, const char *url) {
  mulligan_outbox_options *opts = options(clock, "c-webhooks", MULLIGAN_OUTBOX_SYNC_NORMAL);
  mulligan_outbox *a = NULL, *b = NULL;
  mulligan_outbox_spec spec = MULLIGAN_OUTBOX_SPEC_INIT;
  mulligan_outbox_lease *leases[4];
  mulligan_outbox_entry_info info = MULLIGAN_OUTBOX_ENTRY_INFO_INIT;
  mulligan_outbox_stats stats = MULLIGAN_OUTBOX_STATS_INIT;
  char key[MULLIGAN_OUTBOX_KEY_SIZE];
  int64_t id = 0;
  size_t n = 9, i;

  CHECK_OK(mulligan_outbox_open(url, opts, &a));
  CHECK_OK(mulligan_outbox_open(url, opts, &b));
  mulligan_outbox_options_destroy(opts);
  if (a == NULL || b == NULL) return;

  spec.kind = MULLIGAN_OUTBOX_JOB;
  spec.job = "send_email";
  spec.payload = "to\0bob"; /* bytes, with a NUL inside */
  spec.payload_len = 6;
  spec.idempotency_key = "order-7";
  CHECK_OK(mulligan_outbox_enqueue(a, &spec, &id, key, sizeof key));
  CHECK_INT(id, 1);
  CHECK_STR(key, "order-7");

  /* Worker b leases it; worker a then finds nothing due. */
  CHECK_OK(mulligan_outbox_claim(b, "worker-b", 4, -1.0, leases, &n));
  CHECK_INT(n, 1);
  if (n == 1) {
    CHECK_OK(mulligan_outbox_lease_info(leases[0], &info));
    CHECK_INT(info.id, 1);
    CHECK_STR(info.idempotency_key, "order-7");
    CHECK_STR(info.job, "send_email");
    CHECK_INT(info.payload_len, 6);
    CHECK_STR(info.lease_owner, "worker-b");
  }
  {
    mulligan_outbox_lease *none[4];
    size_t zero = 9;
    CHECK_OK(mulligan_outbox_claim(a, "worker-a", 4, -1.0, none, &zero));
    CHECK_INT(zero, 0);
  }
  if (n == 1) CHECK_OK(mulligan_outbox_complete(b, leases[0], 202));
  for (i = 0; i < n; ++i) mulligan_outbox_lease_destroy(leases[i]);

  /* Worker a sees it done, through its own connection. */
  CHECK_OK(mulligan_outbox_stats_get(a, &stats));
  CHECK_INT(stats.done, 1);
  CHECK_INT(stats.pending, 0);
  CHECK_INT(stats.leased, 0);
  CHECK_INT(stats.deliveries, 1);
  mulligan_outbox_close(a);
  mulligan_outbox_close(b);
}

static void test_errors_are_clear_and_keep_the_password(mulligan_clock *clock, const char *url) {
  mulligan_outbox_options *opts;
  mulligan_outbox *box = (mulligan_outbox *)&box; /* not NULL: open must reset it */
  char unreachable[128];
  int dead_port = free_port();

  /* No name: which outbox on the server? */
  opts = options(clock, NULL, MULLIGAN_OUTBOX_SYNC_NORMAL);
  CHECK_FAILS(mulligan_outbox_open(url, opts, &box), MULLIGAN_E_INVALID_ARGUMENT, "name");
  CHECK(box == NULL);
  mulligan_outbox_options_destroy(opts);

  /* sync "full" (the default) on a server that does not fsync every write. */
  opts = options(clock, "c-full", MULLIGAN_OUTBOX_SYNC_FULL);
  CHECK_FAILS(mulligan_outbox_open(url, opts, &box), MULLIGAN_E_OUTBOX, "appendfsync");
  CHECK(box == NULL);
  mulligan_outbox_options_destroy(opts);

  /* Nobody listens: an error within the bounds, without the password. */
  snprintf(unreachable, sizeof unreachable, "redis://app:s3cret-pw@127.0.0.1:%d/0", dead_port);
  opts = options(clock, "c-down", MULLIGAN_OUTBOX_SYNC_NORMAL);
  CHECK(mulligan_outbox_open(unreachable, opts, &box) != MULLIGAN_OK);
  CHECK(box == NULL);
  CHECK(strstr(mulligan_last_error(), "s3cret-pw") == NULL);
  CHECK(strstr(mulligan_last_error(), "127.0.0.1") != NULL);
  mulligan_outbox_options_destroy(opts);
}

int main(void) {
  mulligan_clock *clock = NULL;
  char url[64];

  if (!start_redis(redis_binary())) return redis_unavailable_exit();
  snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", g_port);
  CHECK_OK(mulligan_clock_create_fake(&clock));
  test_two_handles_share_one_outbox(clock, url);
  test_errors_are_clear_and_keep_the_password(clock, url);
  mulligan_clock_destroy(clock);
  stop_redis();
  return CHECK_REPORT();
}
