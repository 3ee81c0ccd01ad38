/* tests/capi/http_hedge_test.c — hedged requests of the C ABI's HTTP client
 * (mulligan_http_options_set_hedging, 0.6) against a real nginx
 * (nginx_fixture.h), compiled as C99. nginx's /hedge location answers the
 * listed requests of an id slowly (tests/nginx/script.js, hedge): the first
 * copy is slow and the hedge wins. Exits 77 (skipped) when nginx cannot
 * start.
 *
 * Compile-time definitions: MULLIGAN_TESTS_DIR, MULLIGAN_PYTHON.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan.h"
#include "nginx_fixture.h"

/* The access log's lines containing `needle`, once `want` are in (or 3 s
 * passed) and 100 ms more showed no more (a loser logs when its slow answer
 * comes due). */
static int logged(const char *needle, int want) {
  int i;
  for (i = 0; i < 150 && count_log_lines(needle) < want; ++i) sleep_ms(20);
  sleep_ms(100);
  return count_log_lines(needle);
}

/* A hedging client: 2 copies, 50 ms apart, and a breaker that one failure
 * opens. */
static mulligan_http_client *hedging_client(void) {
  mulligan_http_options *opts = NULL;
  mulligan_http_client *client = NULL;
  CHECK_OK(mulligan_http_options_create(&opts));
  CHECK_OK(mulligan_http_options_set_hedging(opts, 2, 50));
  CHECK_OK(mulligan_http_options_set_breaker(opts, 1, 60000, 0));
  CHECK_OK(mulligan_http_client_create_v2(&client, NULL, opts));
  mulligan_http_options_destroy(opts);
  return client;
}

static int send_request(mulligan_http_client *client, const char *method, const char *path,
                const char *key, mulligan_http_response **out) {
  char url[256];
  snprintf(url, sizeof url, "%s%s", g_base_url, path);
  return mulligan_http_request(client, method, url, NULL, 0, "x", 1, key, out);
}

static void test_bad_options(void) {
  mulligan_http_options *opts = NULL;
  CHECK_OK(mulligan_http_options_create(&opts));
  CHECK_FAILS(mulligan_http_options_set_hedging(opts, 1, 10), MULLIGAN_E_INVALID_ARGUMENT,
              "hedging: max_attempts must be >= 2");
  CHECK_FAILS(mulligan_http_options_set_hedging(opts, 2, -1), MULLIGAN_E_INVALID_ARGUMENT,
              "hedging: delay_ms must be >= 0, got -1");
  CHECK_FAILS(mulligan_http_options_set_hedging_quantile(opts, 1.5, 100, 20),
              MULLIGAN_E_INVALID_ARGUMENT, "hedging: delay_quantile must be in (0, 1]");
  CHECK_FAILS(mulligan_http_options_set_hedging_quantile(opts, 0.95, 10, 11),
              MULLIGAN_E_INVALID_ARGUMENT, "hedging: quantile_min_samples must be in [1, ");
  CHECK_FAILS(mulligan_http_options_set_hedging(NULL, 2, 10), MULLIGAN_E_INVALID_ARGUMENT, "");
  CHECK_OK(mulligan_http_options_set_hedging_quantile(opts, 0.95, 100, 20));
  CHECK_OK(mulligan_http_options_set_hedging(opts, 5, 0));
  CHECK_OK(mulligan_http_options_disable_hedging(opts));
  mulligan_http_options_destroy(opts);
}

/* The second copy wins; the loser is counted cancelled, not failed, and the
 * breaker (threshold 1) is not charged: the next request is admitted. */
static void test_hedged_get(mulligan_http_client *client, const char *origin) {
  mulligan_http_response *resp = NULL;
  mulligan_metrics_snapshot before = MULLIGAN_METRICS_SNAPSHOT_INIT;
  mulligan_metrics_snapshot after = MULLIGAN_METRICS_SNAPSHOT_INIT;
  size_t len = 0;
  /* No metrics of the origin yet (the first request to it): zeros. */
  if (mulligan_metrics_get(origin, &before) != MULLIGAN_OK) CHECK_INT(before.calls, 0);
  CHECK_OK(send_request(client, "GET", "/hedge?id=capi-get&ms=1000", NULL, &resp));
  if (resp == NULL) return;
  CHECK_INT(mulligan_http_response_status(resp), 200);
  CHECK_STR(mulligan_http_response_body(resp, &len), "hedge 1 of capi-get\n");
  CHECK_INT(mulligan_http_response_attempts(resp), 2);
  CHECK_INT(mulligan_http_response_stop_reason(resp), MULLIGAN_STOP_SUCCEEDED);
  mulligan_http_response_destroy(resp);
  CHECK_INT(logged("id=capi-get&", 2), 2);
  CHECK_OK(mulligan_metrics_get(origin, &after));
  CHECK_INT(after.calls - before.calls, 2);
  CHECK_INT(after.successes - before.successes, 1);
  CHECK_INT(after.failures - before.failures, 0);
  CHECK_INT(after.cancelled - before.cancelled, 1);
  resp = NULL;
  CHECK_OK(send_request(client, "GET", "/ok", NULL, &resp));
  if (resp != NULL) CHECK_INT(mulligan_http_response_status(resp), 200);
  mulligan_http_response_destroy(resp);
}

/* Both copies of a keyed POST carry its one key. */
static void test_keyed_post(mulligan_http_client *client) {
  mulligan_http_response *resp = NULL;
  size_t len = 0;
  CHECK_OK(send_request(client, "POST", "/hedge?id=capi-post&ms=1000", "capi-hedge-key-1", &resp));
  if (resp == NULL) return;
  CHECK_STR(mulligan_http_response_body(resp, &len), "hedge 1 of capi-post\n");
  CHECK_STR(mulligan_http_response_header(resp, "Echo-Idempotency-Key"), "capi-hedge-key-1");
  mulligan_http_response_destroy(resp);
  CHECK_INT(logged("id=capi-post&", 2), 2);
  CHECK_INT(logged("capi-hedge-key-1", 2), 2);
}

/* A POST without a key is sent once, however slow. */
static void test_unkeyed_post(mulligan_http_client *client) {
  mulligan_http_response *resp = NULL;
  size_t len = 0;
  CHECK_OK(send_request(client, "POST", "/hedge?id=capi-once&ms=200", NULL, &resp));
  if (resp == NULL) return;
  CHECK_STR(mulligan_http_response_body(resp, &len), "hedge 0 of capi-once\n");
  CHECK_INT(mulligan_http_response_attempts(resp), 1);
  mulligan_http_response_destroy(resp);
  CHECK_INT(logged("id=capi-once&", 2), 1);
}

int main(void) {
  char tmpdir[] = "/tmp/mulligan-capi-hedge-XXXXXX";
  char origin[96];
  mulligan_http_client *client;
  FILE *server;
  int result;

  test_bad_options();
  if (mkdtemp(tmpdir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  server = start_server(tmpdir);
  if (server == NULL) return SKIP;
  snprintf(origin, sizeof origin, "%s", g_base_url); /* the metrics' name: the origin */
  client = hedging_client();
  if (client != NULL) {
    test_hedged_get(client, origin);
    test_keyed_post(client);
    test_unkeyed_post(client);
  }
  mulligan_http_client_destroy(client);
  result = CHECK_REPORT();
  stop_server(server, tmpdir);
  return result;
}
