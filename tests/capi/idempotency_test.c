/* tests/capi/idempotency_test.c — the idempotency store through the C ABI
 * (compiled as C99): key parsing, reserve/complete/replay, 409 hints, 422,
 * release, ttl on a fake clock, bounds, and argument errors. Never sleeps. */
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan.h"

static mulligan_idempotency_store *make_store(mulligan_clock *clock, size_t max_entries) {
  mulligan_idempotency_options *opts = NULL;
  mulligan_idempotency_store *store = NULL;
  CHECK_OK(mulligan_idempotency_options_create(&opts));
  CHECK_OK(mulligan_idempotency_options_set_ttl_ms(opts, 1000.0 * 60 * 60 * 24));
  CHECK_OK(mulligan_idempotency_options_set_lease_ms(opts, 30000));
  CHECK_OK(mulligan_idempotency_options_set_in_flight_retry_after_ms(opts, 2000));
  CHECK_OK(mulligan_idempotency_options_set_max_entries(opts, max_entries));
  CHECK_OK(mulligan_idempotency_options_set_max_bytes(opts, 1 << 20));
  CHECK_OK(mulligan_idempotency_options_set_max_key_length(opts, 255));
  CHECK_OK(mulligan_idempotency_options_set_shards(opts, 1));
  CHECK_OK(mulligan_idempotency_store_create(opts, clock, &store));
  mulligan_idempotency_options_destroy(opts);
  return store;
}

static int reserve_state(mulligan_idempotency_store *store, const char *scope, const char *key,
                         const char *fp) {
  mulligan_idempotency_reservation *r = NULL;
  int state;
  CHECK_OK(mulligan_idempotency_store_reserve(store, scope, key, fp, strlen(fp), &r));
  state = mulligan_idempotency_reservation_state(r);
  mulligan_idempotency_reservation_destroy(r);
  return state;
}

static void test_key_parse(void) {
  char buf[300];
  char uuid[MULLIGAN_IDEMPOTENCY_KEY_SIZE];
  CHECK_OK(mulligan_idempotency_key_parse("\"8e03978e-40d5-43e8-bc93-6894a57f9324\"", 0, buf,
                                          sizeof buf));
  CHECK_STR(buf, "8e03978e-40d5-43e8-bc93-6894a57f9324");
  CHECK_OK(mulligan_idempotency_key_parse(" \"a \\\"q\\\" \\\\\" ", 0, buf, sizeof buf));
  CHECK_STR(buf, "a \"q\" \\");
  CHECK_OK(mulligan_idempotency_key_parse("KG5LxwFBepaKHyUD", 0, buf, sizeof buf));
  CHECK_STR(buf, "KG5LxwFBepaKHyUD");
  /* What mulligan's own client sends parses to itself. */
  CHECK_OK(mulligan_idempotency_key_new(uuid, sizeof uuid));
  CHECK_OK(mulligan_idempotency_key_parse(uuid, 0, buf, sizeof buf));
  CHECK_STR(buf, uuid);

  CHECK_FAILS(mulligan_idempotency_key_parse("", 0, buf, sizeof buf),
              MULLIGAN_E_INVALID_ARGUMENT, "empty");
  CHECK_FAILS(mulligan_idempotency_key_parse("\"open", 0, buf, sizeof buf),
              MULLIGAN_E_INVALID_ARGUMENT, "closing quote");
  CHECK_FAILS(mulligan_idempotency_key_parse("\"a\\n\"", 0, buf, sizeof buf),
              MULLIGAN_E_INVALID_ARGUMENT, "escape");
  CHECK_FAILS(mulligan_idempotency_key_parse("abcdef", 5, buf, sizeof buf),
              MULLIGAN_E_INVALID_ARGUMENT, "longer than 5");
  CHECK_FAILS(mulligan_idempotency_key_parse("abcdef", 0, buf, 3), MULLIGAN_E_INVALID_ARGUMENT,
              "too small");
  CHECK_FAILS(mulligan_idempotency_key_parse(NULL, 0, buf, sizeof buf),
              MULLIGAN_E_INVALID_ARGUMENT, "NULL");
  CHECK_STR(mulligan_idempotency_state_str(MULLIGAN_IDEMPOTENCY_IN_FLIGHT), "in_flight");
  CHECK_STR(mulligan_idempotency_state_str(42), "unknown");
}

static void test_reserve_complete_replay(void) {
  mulligan_clock *clock = NULL;
  mulligan_idempotency_store *store;
  mulligan_idempotency_reservation *first = NULL, *again = NULL, *busy = NULL;
  const char *names[] = {"Content-Type", "Location"};
  const char *values[] = {"application/json", "/orders/7"};
  const char *name = NULL, *value = NULL, *body;
  size_t len = 0;

  CHECK_OK(mulligan_clock_create_fake(&clock));
  store = make_store(clock, 100);

  CHECK_OK(mulligan_idempotency_store_reserve(store, "alice", "k1", "POST /orders", 12, &first));
  CHECK_INT(mulligan_idempotency_reservation_state(first), MULLIGAN_IDEMPOTENCY_RESERVED);
  CHECK_INT(mulligan_idempotency_store_in_flight(store), 1);

  /* A repeat while in flight: 409 with the hint capped at 2000 ms. */
  CHECK_OK(mulligan_idempotency_store_reserve(store, "alice", "k1", "POST /orders", 12, &busy));
  CHECK_INT(mulligan_idempotency_reservation_state(busy), MULLIGAN_IDEMPOTENCY_IN_FLIGHT);
  CHECK_NEAR(mulligan_idempotency_reservation_retry_after_ms(busy), 2000, 1e-6);
  CHECK_INT(mulligan_idempotency_reservation_status(busy), 0);
  CHECK(mulligan_idempotency_reservation_body(busy, &len) == NULL);
  CHECK_INT(len, 0);
  CHECK_FAILS(mulligan_idempotency_store_complete(store, busy, 200, NULL, NULL, 0, NULL, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "holds no lease");
  mulligan_idempotency_reservation_destroy(busy);

  /* A different body under the same key: 422. */
  CHECK_INT(reserve_state(store, "alice", "k1", "POST /orders other"),
            MULLIGAN_IDEMPOTENCY_FINGERPRINT_MISMATCH);

  CHECK_FAILS(mulligan_idempotency_store_complete(store, first, 99, NULL, NULL, 0, NULL, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "status");
  CHECK_FAILS(mulligan_idempotency_store_complete(store, first, 600, NULL, NULL, 0, NULL, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "status must be in [100, 599], got 600");
  CHECK_FAILS(mulligan_idempotency_store_complete(store, first, -1, NULL, NULL, 0, NULL, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "status");
  {
    /* Header injection through a stored response is refused; the lease stays
     * held, so the valid completion below still succeeds. */
    const char *bad_names[] = {"X-A\r\nSet-Cookie: evil=1", "X A", "", "X:A"};
    const char *ok_value[] = {"v"};
    const char *ok_name[] = {"X-A"};
    const char *bad_values[] = {"v\r\nX-B: 1", "v\r", "v\n"};
    size_t i;
    for (i = 0; i < sizeof bad_names / sizeof bad_names[0]; ++i) {
      CHECK_FAILS(mulligan_idempotency_store_complete(store, first, 200, &bad_names[i], ok_value,
                                                      1, NULL, 0),
                  MULLIGAN_E_INVALID_ARGUMENT, "invalid name");
    }
    for (i = 0; i < sizeof bad_values / sizeof bad_values[0]; ++i) {
      CHECK_FAILS(mulligan_idempotency_store_complete(store, first, 200, ok_name,
                                                      &bad_values[i], 1, NULL, 0),
                  MULLIGAN_E_INVALID_ARGUMENT, "CR, LF or NUL");
    }
    CHECK_INT(mulligan_idempotency_store_in_flight(store), 1);
  }
  CHECK_OK(mulligan_idempotency_store_complete(store, first, 201, names, values, 2,
                                               "{\"id\":7}", 8));
  /* Completing twice is refused: the lease is spent. */
  CHECK_FAILS(mulligan_idempotency_store_complete(store, first, 201, NULL, NULL, 0, NULL, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "not held");
  mulligan_idempotency_reservation_destroy(first);

  CHECK_OK(mulligan_idempotency_store_reserve(store, "alice", "k1", "POST /orders", 12, &again));
  CHECK_INT(mulligan_idempotency_reservation_state(again), MULLIGAN_IDEMPOTENCY_REPLAY);
  CHECK_INT(mulligan_idempotency_reservation_status(again), 201);
  body = mulligan_idempotency_reservation_body(again, &len);
  CHECK_INT(len, 8);
  CHECK_STR(body, "{\"id\":7}");
  CHECK_INT(mulligan_idempotency_reservation_header_count(again), 2);
  CHECK_OK(mulligan_idempotency_reservation_header_at(again, 1, &name, &value));
  CHECK_STR(name, "Location");
  CHECK_STR(value, "/orders/7");
  CHECK_FAILS(mulligan_idempotency_reservation_header_at(again, 2, &name, &value),
              MULLIGAN_E_INVALID_ARGUMENT, "out of range");
  CHECK(name == NULL && value == NULL);

  /* Another user's identical key is a different entry. */
  CHECK_INT(reserve_state(store, "bob", "k1", "POST /orders"), MULLIGAN_IDEMPOTENCY_RESERVED);

  /* ttl: a replay 1 ms before expiry, a fresh reservation at expiry. */
  CHECK_OK(mulligan_clock_advance_ms(clock, 1000.0 * 60 * 60 * 24 - 1));
  CHECK_INT(reserve_state(store, "alice", "k1", "POST /orders"), MULLIGAN_IDEMPOTENCY_REPLAY);
  CHECK_OK(mulligan_clock_advance_ms(clock, 1));
  CHECK_INT(reserve_state(store, "alice", "k1", "POST /orders"), MULLIGAN_IDEMPOTENCY_RESERVED);

  /* The replayed response outlives its entry. */
  CHECK_OK(mulligan_idempotency_store_sweep(store));
  CHECK_STR(mulligan_idempotency_reservation_body(again, NULL), "{\"id\":7}");
  mulligan_idempotency_reservation_destroy(again);

  mulligan_idempotency_store_destroy(store);
  mulligan_clock_destroy(clock);
}

static void test_release_and_bounds(void) {
  mulligan_clock *clock = NULL;
  mulligan_idempotency_store *store;
  mulligan_idempotency_reservation *held[3] = {NULL, NULL, NULL}, *r = NULL;
  char key[32];
  int i;

  CHECK_OK(mulligan_clock_create_fake(&clock));
  store = make_store(clock, 3);

  /* A failed handler releases the key; the retry runs. */
  CHECK_OK(mulligan_idempotency_store_reserve(store, NULL, "k", "", 0, &r));
  CHECK_OK(mulligan_idempotency_store_release(store, r));
  CHECK_FAILS(mulligan_idempotency_store_release(store, r), MULLIGAN_E_INVALID_ARGUMENT,
              "not held");
  mulligan_idempotency_reservation_destroy(r);
  CHECK_INT(mulligan_idempotency_store_entries(store), 0);

  /* Three in flight fill the store; a fourth key gets MULLIGAN_E_UNAVAILABLE. */
  for (i = 0; i < 3; ++i) {
    sprintf(key, "held-%d", i);
    CHECK_OK(mulligan_idempotency_store_reserve(store, NULL, key, NULL, 0, &held[i]));
  }
  r = NULL;
  CHECK_FAILS(mulligan_idempotency_store_reserve(store, NULL, "new", NULL, 0, &r),
              MULLIGAN_E_UNAVAILABLE, "in-flight");
  CHECK(r == NULL);
  for (i = 0; i < 3; ++i) {
    CHECK_OK(mulligan_idempotency_store_complete(store, held[i], 200, NULL, NULL, 0, "x", 1));
    mulligan_idempotency_reservation_destroy(held[i]);
  }
  /* Completed entries are evicted oldest first to make room. */
  for (i = 0; i < 10; ++i) {
    sprintf(key, "more-%d", i);
    CHECK_OK(mulligan_idempotency_store_reserve(store, NULL, key, NULL, 0, &r));
    CHECK_OK(mulligan_idempotency_store_complete(store, r, 200, NULL, NULL, 0, NULL, 0));
    mulligan_idempotency_reservation_destroy(r);
    CHECK(mulligan_idempotency_store_entries(store) <= 3);
  }
  CHECK_INT(reserve_state(store, NULL, "more-9", ""), MULLIGAN_IDEMPOTENCY_REPLAY);
  CHECK(mulligan_idempotency_store_bytes(store) > 0);

  /* Argument errors. */
  CHECK_FAILS(mulligan_idempotency_store_reserve(store, NULL, "", NULL, 0, &r),
              MULLIGAN_E_INVALID_ARGUMENT, "empty");
  CHECK_FAILS(mulligan_idempotency_store_reserve(store, NULL, "k", NULL, 3, &r),
              MULLIGAN_E_INVALID_ARGUMENT, "fingerprint");
  CHECK_FAILS(mulligan_idempotency_store_reserve(NULL, NULL, "k", NULL, 0, &r),
              MULLIGAN_E_INVALID_ARGUMENT, "NULL");
  CHECK_INT(mulligan_idempotency_reservation_state(NULL), -1);
  CHECK_INT(mulligan_idempotency_store_entries(NULL), 0);
  mulligan_idempotency_store_destroy(store);
  mulligan_idempotency_store_destroy(NULL);
  mulligan_idempotency_reservation_destroy(NULL);
  mulligan_clock_destroy(clock);
}

static void test_options_errors(void) {
  mulligan_idempotency_options *opts = NULL;
  mulligan_idempotency_store *store = NULL;
  CHECK_OK(mulligan_idempotency_options_create(&opts));
  CHECK_FAILS(mulligan_idempotency_options_set_ttl_ms(opts, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "ttl_ms");
  CHECK_FAILS(mulligan_idempotency_options_set_lease_ms(opts, -1), MULLIGAN_E_INVALID_ARGUMENT,
              "lease_ms");
  CHECK_FAILS(mulligan_idempotency_options_set_max_entries(opts, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "max_entries");
  CHECK_FAILS(mulligan_idempotency_options_set_shards(opts, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "shards");
  CHECK_FAILS(mulligan_idempotency_options_set_ttl_ms(NULL, 1), MULLIGAN_E_INVALID_ARGUMENT,
              "NULL");
  mulligan_idempotency_options_destroy(opts);
  mulligan_idempotency_options_destroy(NULL);
  /* NULL options mean every default; NULL clock the system clock. */
  CHECK_OK(mulligan_idempotency_store_create(NULL, NULL, &store));
  CHECK_INT(reserve_state(store, NULL, "k", "fp"), MULLIGAN_IDEMPOTENCY_RESERVED);
  CHECK_INT(reserve_state(store, NULL, "k", "fp"), MULLIGAN_IDEMPOTENCY_IN_FLIGHT);
  mulligan_idempotency_store_destroy(store);
}

int main(void) {
  test_key_parse();
  test_reserve_complete_replay();
  test_release_and_bounds();
  test_options_errors();
  return CHECK_REPORT();
}
