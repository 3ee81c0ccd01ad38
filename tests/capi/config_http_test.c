/* tests/capi/config_http_test.c — a named client of a configuration file
 * reaches the C ABI's HTTP client (issue 15, "Config files"):
 * mulligan_config_http_options() gives options with every field of the
 * client, of its policy and of its breaker, checked against a real nginx
 * (nginx_fixture.h) with values worked out by hand, and against the same
 * file without the fields. Compiled as C99; exits 77 (skipped) when nginx
 * cannot start.
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

/* The access-log lines holding `needle`, once there are `want` of them or
 * 2 s have passed (nginx logs a request just after answering it). */
static int logged(const char *needle, int want) {
  int i, n = count_log_lines(needle);
  for (i = 0; i < 100 && n < want; ++i) {
    sleep_ms(20);
    n = count_log_lines(needle);
  }
  return n;
}

/* A client made from client "c" of `json`. */
static mulligan_http_client *client_from(const char *json) {
  mulligan_config *cfg = NULL;
  mulligan_http_options *opts = NULL;
  mulligan_http_client *client = NULL;
  CHECK_OK(mulligan_config_create(&cfg));
  CHECK_OK(mulligan_config_load_string(cfg, json, strlen(json), "client.json"));
  CHECK_OK(mulligan_config_http_options(cfg, "c", &opts));
  CHECK_OK(mulligan_http_client_create_v2(&client, NULL, opts));
  mulligan_http_options_destroy(opts);
  mulligan_config_destroy(cfg); /* the client copied everything */
  return client;
}

static int get(mulligan_http_client *client, const char *path, int *status, int *attempts) {
  char url[256];
  mulligan_http_response *resp = NULL;
  int rc;
  snprintf(url, sizeof url, "%s%s", g_base_url, path);
  rc = mulligan_http_request(client, "GET", url, NULL, 0, NULL, 0, NULL, &resp);
  *status = resp != NULL ? mulligan_http_response_status(resp) : 0;
  *attempts = resp != NULL ? mulligan_http_response_attempts(resp) : 0;
  mulligan_http_response_destroy(resp);
  return rc;
}

/* GET /down, GET /ok, GET /down: the attempts of the first, the status of
 * the second ("refused" = -1 when its breaker is open) and whether the
 * third was refused. */
static void run(const char *json, int want_attempts, int want_ok, int want_refused) {
  mulligan_http_client *client = client_from(json);
  int status = 0, attempts = 0, rc;
  if (client == NULL) return;
  CHECK_OK(get(client, "/down", &status, &attempts));
  CHECK_INT(status, 503);
  CHECK_INT(attempts, want_attempts);
  rc = get(client, "/ok", &status, &attempts);
  CHECK_INT(rc == MULLIGAN_E_CIRCUIT_OPEN ? -1 : status, want_ok);
  rc = get(client, "/down", &status, &attempts);
  CHECK_INT(rc == MULLIGAN_E_CIRCUIT_OPEN, want_refused);
  mulligan_http_client_destroy(client);
}

static void test_named_client(void) {
  /* Policy: 1 attempt (default 3). Breaker: a count window of 1 call
   * (failure_threshold 0: only an option the threshold pair cannot say
   * opens it). breaker_key "path": /ok has its own breaker. */
  run("{\"policies\": {\"p\": {\"max_attempts\": 1}},"
      " \"breakers\": {\"b\": {\"failure_threshold\": 0, \"window\": \"count\","
      "  \"window_size\": 1, \"minimum_calls\": 1}},"
      " \"clients\": {\"c\": {\"policy\": \"p\", \"breaker\": \"b\", \"breaker_key\": \"path\","
      "  \"user_agent\": \"c-shop/1.0\"}}}",
      1, 200, 1);
  /* /down and /ok were sent; the second /down was refused before sending. */
  CHECK_INT(logged("\"user_agent\":\"c-shop/1.0\"", 2), 2);
  /* Keyed by origin (the default), the open breaker of /down refuses /ok. */
  run("{\"policies\": {\"p\": {\"max_attempts\": 1}},"
      " \"breakers\": {\"b\": {\"failure_threshold\": 0, \"window\": \"count\","
      "  \"window_size\": 1, \"minimum_calls\": 1}},"
      " \"clients\": {\"c\": {\"policy\": \"p\", \"breaker\": \"b\"}}}",
      1, -1, 1);
  /* Without the policy and the breaker: 3 attempts (no waits: base_delay 0
   * in defaults), nothing refused, the default user agent. */
  run("{\"defaults\": {\"policy\": {\"base_delay\": 0}}, \"clients\": {\"c\": {}}}", 3, 200, 0);
  /* 1 request of the second run, 3 + 1 + 3 of this one. */
  CHECK_INT(logged("\"user_agent\":\"mulligan\"", 1 + 7), 1 + 7);
}

static void test_unknown_name(void) {
  static const char *json = "{\"clients\": {\"c\": {}}}";
  mulligan_config *cfg = NULL;
  mulligan_http_options *opts = NULL;
  CHECK_OK(mulligan_config_create(&cfg));
  CHECK_OK(mulligan_config_load_string(cfg, json, strlen(json), "client.json"));
  opts = (mulligan_http_options *)cfg; /* any non-NULL value: reset on failure */
  CHECK_FAILS(mulligan_config_http_options(cfg, "nope", &opts), MULLIGAN_E_INVALID_ARGUMENT,
              "no client named \"nope\" in client.json (known: c)");
  CHECK(opts == NULL);
  mulligan_config_destroy(cfg);
}

int main(void) {
  char tmpdir[] = "/tmp/mulligan-capi-config-http-XXXXXX";
  FILE *server;
  int result;
  if (mkdtemp(tmpdir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  server = start_server(tmpdir);
  if (server == NULL) return SKIP;
  test_named_client();
  test_unknown_name();
  result = CHECK_REPORT();
  stop_server(server, tmpdir);
  return result;
}
