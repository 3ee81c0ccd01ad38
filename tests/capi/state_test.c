/* tests/capi/state_test.c — shared state on Redis through the C ABI
 * (mulligan_state.h, 0.6), against a real redis-server started here on a
 * free loopback port (redis_server.h). Two state handles stand for two
 * processes (two connections, two subscribers):
 *   - a breaker tripped through one handle opens the other's, which applied
 *     exactly one remote transition (the only wait here: pub/sub delivery,
 *     polled every 2 ms for at most 5 s);
 *   - two rate limiters of one name share one GCRA bucket: rate 1/s, burst
 *     3 admits 3 calls across both at one instant and refuses the 4th with
 *     retry_in exactly 1000 ms (T = 1 s, tau = (burst - 1) T = 2 s, TAT 3 s:
 *     the next slot is at TAT - tau), on a fake clock;
 *   - two idempotency stores share records: a key reserved through one is
 *     in flight for the other (Retry-After 1000 ms, the default), and once
 *     completed replays its status and body there; a store on a server that
 *     cannot be reached fails closed (MULLIGAN_E_STATE_UNAVAILABLE);
 *   - bad input is a clear error: NULLs, struct sizes, URLs, rediss://, a
 *     prefix, timeouts, names, clocks that differ, sharing twice; and no
 *     error or health text holds the URL's password.
 * Exits 77 (skipped) when no redis-server can start, unless
 * $MULLIGAN_REDIS_SERVER names one (scripts/test.sh sets it): then it fails. */
#define _POSIX_C_SOURCE 200809L

#include "capi_check.h"
#include "mulligan.h"
#include "redis_server.h"

/* A port nothing listens on: bound, read and closed (as free_port). */
static char g_dead_url[64];

static mulligan_state *open_state(const char *url, const mulligan_clock *clock) {
  mulligan_state *state = NULL;
  mulligan_state_options so = MULLIGAN_STATE_OPTIONS_INIT;
  so.prefix = "ctest";
  so.clock = clock;
  CHECK_OK(mulligan_state_open(&state, url, &so));
  return state;
}

static mulligan_breaker *make_breaker(const char *name) {
  mulligan_breaker_options *opts = NULL;
  mulligan_breaker *breaker = NULL;
  CHECK_OK(mulligan_breaker_options_create(&opts));
  CHECK_OK(mulligan_breaker_options_set_name(opts, name));
  CHECK_OK(mulligan_breaker_options_set_failure_threshold(opts, 1));
  CHECK_OK(mulligan_breaker_options_set_reset_timeout_ms(opts, 60000));
  CHECK_OK(mulligan_breaker_create(&breaker, opts));
  mulligan_breaker_options_destroy(opts);
  return breaker;
}

static void test_open_and_health(const char *url) {
  mulligan_state *state = open_state(url, NULL);
  mulligan_state_health h = MULLIGAN_STATE_HEALTH_INIT;
  char buf[96], tiny[8];
  size_t len = 0;
  if (state == NULL) return;
  CHECK_OK(mulligan_state_health_get(state, &h));
  CHECK_INT(h.reachable, 1);
  CHECK_INT(h.failures, 0);
  CHECK_OK(mulligan_state_endpoint(state, buf, sizeof buf, &len));
  CHECK_STR(buf, url);
  CHECK_INT(len, strlen(url));
  CHECK_OK(mulligan_state_endpoint(state, tiny, sizeof tiny, &len)); /* truncated, told */
  CHECK_STR(tiny, "redis:/");
  CHECK_INT(len, strlen(url));
  CHECK_OK(mulligan_state_last_error(state, buf, sizeof buf, &len));
  CHECK_STR(buf, "");
  CHECK_INT(len, 0);
  mulligan_state_destroy(state);
}

static void test_breaker_trip_is_shared(const char *url) {
  mulligan_state *one = open_state(url, NULL), *two = open_state(url, NULL);
  mulligan_breaker *a = make_breaker("payments"), *b = make_breaker("payments");
  mulligan_breaker_permit permit = MULLIGAN_BREAKER_PERMIT_INIT;
  mulligan_breaker_sharing sa = MULLIGAN_BREAKER_SHARING_INIT, sb = MULLIGAN_BREAKER_SHARING_INIT;
  int waited, subscribed = 0;
  if (one == NULL || two == NULL || a == NULL || b == NULL) return;
  CHECK_OK(mulligan_breaker_share(a, one));
  CHECK_OK(mulligan_breaker_share(b, two));
  CHECK_INT(mulligan_breaker_share(b, two), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "already shared") != NULL);
  /* Both subscribed before the trip, so the message is what carries it. */
  for (waited = 0; waited < 5000 && !subscribed; waited += 2) {
    CHECK_OK(mulligan_breaker_sharing_get(a, &sa));
    CHECK_OK(mulligan_breaker_sharing_get(b, &sb));
    subscribed = sa.subscribed && sb.subscribed;
    if (!subscribed) sleep_ms(2);
  }
  CHECK_INT(subscribed, 1);
  CHECK_INT(sa.shared, 1);

  CHECK_OK(mulligan_breaker_acquire(a, &permit));
  CHECK_OK(mulligan_breaker_record(a, &permit, MULLIGAN_CALL_FAILURE, 1.0));
  CHECK_INT(mulligan_breaker_state_now(a), MULLIGAN_BREAKER_OPEN);
  for (waited = 0; waited < 5000 && mulligan_breaker_state_now(b) != MULLIGAN_BREAKER_OPEN;
       waited += 2) {
    sleep_ms(2);
  }
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
  CHECK_OK(mulligan_breaker_sharing_get(b, &sb));
  CHECK_INT(sb.applied, 1);
  CHECK_INT(sb.published, 0);
  for (waited = 0; waited < 5000 && sa.published == 0; waited += 2) {
    CHECK_OK(mulligan_breaker_sharing_get(a, &sa));
    if (sa.published == 0) sleep_ms(2);
  }
  CHECK_INT(sa.published, 1);
  CHECK_INT(sa.applied, 0);
  CHECK_INT(sa.epoch, 1);

  mulligan_breaker_destroy(a);
  mulligan_breaker_destroy(b);
  mulligan_state_destroy(one);
  mulligan_state_destroy(two);
}

static void test_rate_limiter_shares_one_bucket(const char *url, mulligan_clock *clock) {
  mulligan_state *one = open_state(url, clock), *two = open_state(url, clock);
  mulligan_rate_limiter *a = NULL, *b = NULL;
  double wait = -1, retry_in = -1, now = mulligan_clock_now_ms(clock);
  if (one == NULL || two == NULL) return;
  CHECK_OK(mulligan_rate_limiter_create_shared(&a, one, "search", 1.0, 3.0, 0.0, 0));
  CHECK_OK(mulligan_rate_limiter_create_shared(&b, two, "search", 1.0, 3.0, 0.0, 0));
  mulligan_state_destroy(one); /* the limiters keep their states alive */
  mulligan_state_destroy(two);
  if (a == NULL || b == NULL) return;
  CHECK_OK(mulligan_rate_limiter_acquire(a, NULL, now, 0.0, &wait, &retry_in));
  CHECK_OK(mulligan_rate_limiter_acquire(b, NULL, now, 0.0, &wait, &retry_in));
  CHECK_OK(mulligan_rate_limiter_acquire(a, NULL, now, 0.0, &wait, &retry_in));
  CHECK_NEAR(wait, 0.0, 0.0);
  CHECK_INT(mulligan_rate_limiter_acquire(b, NULL, now, 0.0, &wait, &retry_in),
            MULLIGAN_E_RATE_LIMITED);
  CHECK_NEAR(retry_in, 1000.0, 1e-9);
  /* One second later, exactly one slot is back, for either of them. */
  CHECK_OK(mulligan_clock_advance_ms(clock, 1000.0));
  now = mulligan_clock_now_ms(clock);
  CHECK_OK(mulligan_rate_limiter_acquire(b, NULL, now, 0.0, &wait, &retry_in));
  CHECK_INT(mulligan_rate_limiter_acquire(a, NULL, now, 0.0, &wait, &retry_in),
            MULLIGAN_E_RATE_LIMITED);
  CHECK_NEAR(retry_in, 1000.0, 1e-9);
  mulligan_rate_limiter_destroy(a);
  mulligan_rate_limiter_destroy(b);
}

static void test_idempotency_store_is_shared(const char *url, mulligan_clock *clock) {
  mulligan_state *one = open_state(url, clock), *two = open_state(url, clock);
  mulligan_idempotency_store *a = NULL, *b = NULL;
  mulligan_idempotency_reservation *r1 = NULL, *r2 = NULL, *r3 = NULL;
  const char *names[] = {"Content-Type"}, *values[] = {"application/json"};
  const char *body;
  size_t len = 0;
  if (one == NULL || two == NULL) return;
  CHECK_OK(mulligan_idempotency_store_create_shared(NULL, one, &a));
  CHECK_OK(mulligan_idempotency_store_create_shared(NULL, two, &b));
  if (a == NULL || b == NULL) return;
  CHECK_OK(mulligan_idempotency_store_reserve(a, "alice", "order-1", "POST /orders", 12, &r1));
  CHECK_INT(mulligan_idempotency_reservation_state(r1), MULLIGAN_IDEMPOTENCY_RESERVED);
  CHECK_OK(mulligan_idempotency_store_reserve(b, "alice", "order-1", "POST /orders", 12, &r2));
  CHECK_INT(mulligan_idempotency_reservation_state(r2), MULLIGAN_IDEMPOTENCY_IN_FLIGHT);
  CHECK_NEAR(mulligan_idempotency_reservation_retry_after_ms(r2), 1000.0, 1e-9);
  CHECK_OK(mulligan_idempotency_store_complete(a, r1, 201, names, values, 1, "{\"id\":7}", 8));
  CHECK_OK(mulligan_idempotency_store_reserve(b, "alice", "order-1", "POST /orders", 12, &r3));
  CHECK_INT(mulligan_idempotency_reservation_state(r3), MULLIGAN_IDEMPOTENCY_REPLAY);
  CHECK_INT(mulligan_idempotency_reservation_status(r3), 201);
  body = mulligan_idempotency_reservation_body(r3, &len);
  CHECK_INT(len, 8);
  CHECK(body != NULL && memcmp(body, "{\"id\":7}", 8) == 0);
  mulligan_idempotency_reservation_destroy(r1);
  mulligan_idempotency_reservation_destroy(r2);
  mulligan_idempotency_reservation_destroy(r3);
  mulligan_idempotency_store_destroy(a);
  mulligan_idempotency_store_destroy(b);
  mulligan_state_destroy(one);
  mulligan_state_destroy(two);
}

static void test_unreachable_server_fails_closed(mulligan_clock *clock) {
  mulligan_state *state = NULL;
  mulligan_state_options so = MULLIGAN_STATE_OPTIONS_INIT;
  mulligan_state_health h = MULLIGAN_STATE_HEALTH_INIT;
  mulligan_idempotency_store *store = NULL;
  mulligan_idempotency_reservation *r = NULL;
  mulligan_breaker *breaker = make_breaker("payments");
  mulligan_breaker_sharing sharing = MULLIGAN_BREAKER_SHARING_INIT;
  char buf[256];
  so.clock = clock;
  so.connect_timeout_ms = 50;
  so.command_timeout_ms = 50;
  CHECK_OK(mulligan_state_open(&state, g_dead_url, &so)); /* not an error at open */
  if (state == NULL) return;
  CHECK_OK(mulligan_state_health_get(state, &h));
  CHECK_INT(h.reachable, 0);
  CHECK_OK(mulligan_state_last_error(state, buf, sizeof buf, NULL));
  CHECK(strstr(buf, "connect failed") != NULL);
  CHECK(strstr(buf, "hunter2") == NULL);
  CHECK_OK(mulligan_idempotency_store_create_shared(NULL, state, &store));
  CHECK_INT(mulligan_idempotency_store_reserve(store, NULL, "k-1", NULL, 0, &r),
            MULLIGAN_E_STATE_UNAVAILABLE);
  CHECK(r == NULL);
  CHECK(strstr(mulligan_last_error(), "redis://127.0.0.1:") != NULL);
  CHECK(strstr(mulligan_last_error(), "hunter2") == NULL);
  CHECK(strstr(mulligan_last_error(), "admin") == NULL);
  /* A breaker on it serves locally; sharing waits for the server. Its
   * clock (the system's) is not the state's (the fake one): refused. */
  CHECK_INT(mulligan_breaker_share(breaker, state), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "same clock") != NULL);
  CHECK_OK(mulligan_breaker_sharing_get(breaker, &sharing));
  CHECK_INT(sharing.shared, 0);
  mulligan_breaker_destroy(breaker);
  mulligan_idempotency_store_destroy(store);
  mulligan_state_destroy(state);
}

static void test_bad_input(const char *url) {
  mulligan_state *state = NULL;
  mulligan_state_options so = MULLIGAN_STATE_OPTIONS_INIT;
  mulligan_state_health h = MULLIGAN_STATE_HEALTH_INIT;
  mulligan_rate_limiter *limiter = NULL;
  mulligan_breaker *braced = make_breaker("pay{ments}");

  CHECK_INT(mulligan_state_open(NULL, url, NULL), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK_INT(mulligan_state_open(&state, NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "url") != NULL);
  CHECK_INT(mulligan_state_open(&state, "http://u:hunter2@127.0.0.1:6379", NULL),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "hunter2") == NULL);
  CHECK_INT(mulligan_state_open(&state, "rediss://127.0.0.1:6379", NULL),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "TLS") != NULL);
  CHECK(state == NULL);

  so.prefix = "a:b";
  CHECK_INT(mulligan_state_open(&state, url, &so), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "prefix") != NULL);
  so.prefix = NULL;
  so.command_timeout_ms = 0;
  CHECK_INT(mulligan_state_open(&state, url, &so), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "command_timeout_ms") != NULL);
  so.command_timeout_ms = 250;
  so.connect_timeout_ms = 7200000.0; /* 2 h: over the 1 h bound */
  CHECK_INT(mulligan_state_open(&state, url, &so), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "connect_timeout_ms") != NULL);
  so.connect_timeout_ms = 250;
  so.struct_size = 4;
  CHECK_INT(mulligan_state_open(&state, url, &so), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "MULLIGAN_STATE_OPTIONS_INIT") != NULL);
  CHECK(state == NULL);

  CHECK_OK(mulligan_state_open(&state, url, NULL));
  if (state == NULL) return;
  h.struct_size = 2;
  CHECK_INT(mulligan_state_health_get(state, &h), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK_INT(mulligan_state_health_get(NULL, &h), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK_INT(mulligan_state_endpoint(state, NULL, 8, NULL), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK_INT(mulligan_rate_limiter_create_shared(&limiter, state, "", 1.0, 1.0, 0.0, 0),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "name") != NULL);
  CHECK_INT(mulligan_rate_limiter_create_shared(&limiter, state, "search", -1.0, 1.0, 0.0, 0),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "rate") != NULL);
  CHECK_INT(mulligan_rate_limiter_create_shared(&limiter, NULL, "search", 1.0, 1.0, 0.0, 0),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(limiter == NULL);
  CHECK_INT(mulligan_breaker_share(braced, state), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "'{'") != NULL);
  CHECK_INT(mulligan_breaker_share(NULL, state), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK_INT(mulligan_idempotency_store_create_shared(NULL, NULL, NULL),
            MULLIGAN_E_INVALID_ARGUMENT);
  mulligan_breaker_destroy(braced);
  mulligan_state_destroy(state);
  mulligan_state_destroy(NULL); /* a no-op */
}

int main(void) {
  mulligan_clock *clock = NULL;
  char url[64];

  if (!start_redis(redis_binary())) return redis_unavailable_exit();
  snprintf(url, sizeof url, "redis://127.0.0.1:%d/0", g_port);
  snprintf(g_dead_url, sizeof g_dead_url, "redis://admin:hunter2@127.0.0.1:%d/0", free_port());
  CHECK_OK(mulligan_clock_create_fake(&clock));
  test_open_and_health(url);
  test_breaker_trip_is_shared(url);
  test_rate_limiter_shares_one_bucket(url, clock);
  test_idempotency_store_is_shared(url, clock);
  test_unreachable_server_fails_closed(clock);
  test_bad_input(url);
  mulligan_clock_destroy(clock);
  stop_redis();
  return CHECK_REPORT();
}
