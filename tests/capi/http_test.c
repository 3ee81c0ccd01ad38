/* tests/capi/http_test.c — the C ABI's HTTP client against a real nginx
 * (nginx_fixture.h), compiled as C99. Exits 77 (skipped) when nginx cannot
 * start.
 *
 * Compile-time definitions: MULLIGAN_TESTS_DIR, MULLIGAN_PYTHON.
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "capi_check.h"
#include "mulligan.h"
#include "nginx_fixture.h"

static mulligan_http_client *make_client(int attempts) {
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_http_client *client = NULL;
  CHECK_OK(mulligan_retry_options_create(&opts));
  CHECK_OK(mulligan_retry_options_set_max_attempts(opts, attempts));
  CHECK_OK(mulligan_retry_options_set_backoff(opts, MULLIGAN_BACKOFF_CONSTANT));
  CHECK_OK(mulligan_retry_options_set_base_delay_ms(opts, 1));
  CHECK_OK(mulligan_retry_options_set_jitter(opts, MULLIGAN_JITTER_NONE));
  CHECK_OK(mulligan_retry_options_set_attempt_timeout_ms(opts, 5000));
  CHECK_OK(mulligan_retry_policy_create(&policy, opts));
  CHECK_OK(mulligan_http_client_create(&client, policy));
  /* The client copied the policy. */
  mulligan_retry_policy_destroy(policy);
  mulligan_retry_options_destroy(opts);
  return client;
}

static int do_request(mulligan_http_client *client, const char *method, const char *path,
                const char *key, mulligan_http_response **out) {
  char url[256];
  static const char *const headers[] = {"X-Test: capi", "Accept:  text/plain  "};
  static const char body[] = "hello";
  snprintf(url, sizeof url, "%s%s", g_base_url, path);
  return mulligan_http_request(client, method, url, headers, 2, body, sizeof body - 1, key, out);
}

static void test_ok(mulligan_http_client *client) {
  mulligan_http_response *resp = NULL;
  size_t len = 0, i, count;
  const char *body, *name, *value;
  int found_length = 0;
  CHECK_OK(do_request(client, "GET", "/ok", NULL, &resp));
  CHECK(resp != NULL);
  if (resp == NULL) return;
  CHECK_INT(mulligan_http_response_status(resp), 200);
  body = mulligan_http_response_body(resp, &len);
  CHECK_INT(len, 3);
  CHECK_STR(body, "ok\n");
  CHECK_INT(mulligan_http_response_attempts(resp), 1);
  CHECK_INT(mulligan_http_response_error_kind(resp), MULLIGAN_ERROR_NONE);
  CHECK_INT(mulligan_http_response_stop_reason(resp), MULLIGAN_STOP_SUCCEEDED);
  CHECK(mulligan_http_response_elapsed_ms(resp) >= 0);
  CHECK(mulligan_http_response_idempotency_key(resp) == NULL);
  CHECK(mulligan_http_response_header(resp, "content-length") != NULL);
  CHECK_STR(mulligan_http_response_header(resp, "CONTENT-LENGTH"), "3");
  CHECK(mulligan_http_response_header(resp, "X-Not-There") == NULL);
  count = mulligan_http_response_header_count(resp);
  CHECK(count > 0);
  for (i = 0; i < count; ++i) {
    CHECK_OK(mulligan_http_response_header_at(resp, i, &name, &value));
    if (name != NULL && strcmp(name, "Content-Length") == 0) found_length = 1;
  }
  CHECK(found_length);
  CHECK_FAILS(mulligan_http_response_header_at(resp, count, &name, &value),
              MULLIGAN_E_INVALID_ARGUMENT, "out of range");
  mulligan_http_response_destroy(resp);
}

static void test_down(mulligan_http_client *client) {
  mulligan_http_response *resp = NULL;
  int i;
  char key[MULLIGAN_IDEMPOTENCY_KEY_SIZE];

  /* GET is idempotent: all 3 attempts, then the last 503 is returned. */
  CHECK_OK(do_request(client, "GET", "/down", NULL, &resp));
  CHECK_INT(mulligan_http_response_status(resp), 503);
  CHECK_INT(mulligan_http_response_attempts(resp), 3);
  CHECK_INT(mulligan_http_response_stop_reason(resp), MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  mulligan_http_response_destroy(resp);
  resp = NULL;

  /* POST without a key is not replay-safe: one attempt. */
  CHECK_OK(do_request(client, "POST", "/down", NULL, &resp));
  CHECK_INT(mulligan_http_response_status(resp), 503);
  CHECK_INT(mulligan_http_response_attempts(resp), 1);
  CHECK_INT(mulligan_http_response_stop_reason(resp), MULLIGAN_STOP_NOT_REPLAY_SAFE);
  mulligan_http_response_destroy(resp);
  resp = NULL;

  /* POST with a key: 3 attempts, the same key on each. */
  CHECK_OK(mulligan_idempotency_key_new(key, sizeof key));
  CHECK_INT(strlen(key), 36);
  CHECK_OK(do_request(client, "POST", "/down", key, &resp));
  CHECK_INT(mulligan_http_response_status(resp), 503);
  CHECK_INT(mulligan_http_response_attempts(resp), 3);
  CHECK_STR(mulligan_http_response_idempotency_key(resp), key);
  mulligan_http_response_destroy(resp);
  /* nginx may write its log lines a little late: wait for the three, then
   * check that no fourth one arrives. */
  for (i = 0; i < 100 && count_log_lines(key) < 3; ++i) sleep_ms(20);
  sleep_ms(100);
  CHECK_INT(count_log_lines(key), 3);
}

static void test_echo(mulligan_http_client *client) {
  mulligan_http_response *resp = NULL;
  const char *body;
  CHECK_OK(do_request(client, "PUT", "/echo", "key-123", &resp));
  CHECK_INT(mulligan_http_response_status(resp), 200);
  body = mulligan_http_response_body(resp, NULL);
  CHECK(body != NULL && strstr(body, "method=PUT") != NULL);
  CHECK(body != NULL && strstr(body, "idempotency_key=key-123") != NULL);
  CHECK(body != NULL && strstr(body, "body=hello") != NULL);
  mulligan_http_response_destroy(resp);
}

static void test_bad_arguments(mulligan_http_client *client) {
  mulligan_http_response *resp = (mulligan_http_response *)client;
  static const char *const bad_header[] = {"no colon here"};
  char url[128];
  snprintf(url, sizeof url, "%s/ok", g_base_url);
  CHECK_FAILS(mulligan_http_request(client, "GET", url, bad_header, 1, NULL, 0, NULL, &resp),
              MULLIGAN_E_INVALID_ARGUMENT, "headers[0] must be \"Name: value\"");
  CHECK(resp == NULL);
  CHECK_FAILS(mulligan_http_request(client, "GET", url, NULL, 0, NULL, 5, NULL, &resp),
              MULLIGAN_E_INVALID_ARGUMENT, "body is NULL");
  CHECK_FAILS(mulligan_http_request(client, "GET", NULL, NULL, 0, NULL, 0, NULL, &resp),
              MULLIGAN_E_INVALID_ARGUMENT, "url must not be NULL");
  CHECK_FAILS(mulligan_http_request(client, "GET", "not a url", NULL, 0, NULL, 0, NULL, &resp),
              MULLIGAN_E_INVALID_ARGUMENT, "");
  CHECK(resp == NULL);
}

static void test_connection_refused(mulligan_http_client *client) {
  mulligan_http_response *resp = NULL;
  char url[128];
  int rc;
  snprintf(url, sizeof url, "http://127.0.0.1:%d/ok", closed_port());
  rc = mulligan_http_request(client, "POST", url, NULL, 0, NULL, 0, NULL, &resp);
  CHECK_INT(rc, MULLIGAN_E_TRANSPORT);
  CHECK(mulligan_last_error()[0] != '\0');
  printf("connection refused: %s\n", mulligan_last_error());
  /* The call ran, so a response tells what happened; nothing was sent, so
   * even the POST was retried. */
  CHECK(resp != NULL);
  if (resp == NULL) return;
  CHECK_INT(mulligan_http_response_status(resp), 0);
  CHECK_INT(mulligan_http_response_error_kind(resp), MULLIGAN_ERROR_CONNECTION_REFUSED);
  CHECK_INT(mulligan_http_response_attempts(resp), 3);
  CHECK_INT(mulligan_http_response_stop_reason(resp), MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  CHECK_INT(mulligan_http_response_body(resp, NULL)[0], '\0');
  mulligan_http_response_destroy(resp);
}

/* A known secret in the URL (userinfo, api_key) and in headers: the request
 * fails, and mulligan_last_error() -- text that gets logged -- shows the URL
 * masked and quotes no header value (docs/security.md). */
static void test_no_secret_in_last_error(mulligan_http_client *client) {
  static const char secret[] = "s3cr3t-9f2c";
  static const char *const headers[] = {"Authorization: Bearer s3cr3t-9f2c",
                                        "Cookie: sid=s3cr3t-9f2c"};
  static const char *const bad_headers[] = {"Authorization Bearer s3cr3t-9f2c",
                                            "Authorization : Bearer s3cr3t-9f2c"};
  mulligan_http_response *resp = NULL;
  char url[256], expected[256];
  const int port = closed_port();
  snprintf(url, sizeof url, "http://user:%s@127.0.0.1:%d/x?api_key=%s&q=1", secret, port,
           secret);
  CHECK_INT(mulligan_http_request(client, "GET", url, headers, 2, NULL, 0, NULL, &resp),
            MULLIGAN_E_TRANSPORT);
  printf("refused, masked: %s\n", mulligan_last_error());
  CHECK(strstr(mulligan_last_error(), secret) == NULL);
  snprintf(expected, sizeof expected,
           "GET http://[redacted]@127.0.0.1:%d/x?api_key=[redacted]&q=1: connection refused",
           port);
  CHECK(strncmp(mulligan_last_error(), expected, strlen(expected)) == 0);
  mulligan_http_response_destroy(resp);
  resp = NULL;

  CHECK_FAILS(mulligan_http_request(client, "GET", "ftp://user:s3cr3t-9f2c@host/", NULL, 0, NULL,
                                    0, NULL, &resp),
              MULLIGAN_E_INVALID_ARGUMENT, "invalid URL \"ftp://[redacted]@host/\"");
  CHECK(strstr(mulligan_last_error(), secret) == NULL);
  CHECK_FAILS(mulligan_http_request(client, "GET", url, bad_headers, 1, NULL, 0, NULL, &resp),
              MULLIGAN_E_INVALID_ARGUMENT, "headers[0] must be \"Name: value\", got no colon");
  CHECK(strstr(mulligan_last_error(), secret) == NULL);
  CHECK_FAILS(mulligan_http_request(client, "GET", url, bad_headers + 1, 1, NULL, 0, NULL, &resp),
              MULLIGAN_E_INVALID_ARGUMENT,
              "headers[0] has whitespace in its name: \"Authorization \"");
  CHECK(strstr(mulligan_last_error(), secret) == NULL);
  CHECK(resp == NULL);
}

/* Breakers keyed by path: a 503 from /down opens /down's breaker only. */
static void test_breaker_key(void) {
  mulligan_retry_options *ro = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_http_options *opts = NULL;
  mulligan_http_client *client = NULL;
  mulligan_http_response *resp = NULL;
  char expected[300];
  CHECK_OK(mulligan_retry_options_create(&ro));
  CHECK_OK(mulligan_retry_options_set_max_attempts(ro, 1));
  CHECK_OK(mulligan_retry_policy_create(&policy, ro));
  CHECK_OK(mulligan_http_options_create(&opts));
  CHECK_OK(mulligan_http_options_set_breaker(opts, 1, 60000, 0));
  CHECK_FAILS(mulligan_http_options_set_breaker_key(opts, 4), MULLIGAN_E_INVALID_ARGUMENT,
              "mulligan_breaker_key");
  CHECK_FAILS(mulligan_http_options_add_breaker_key_template(opts, "users/{id}"),
              MULLIGAN_E_INVALID_ARGUMENT, "must start with '/'");
  CHECK_OK(mulligan_http_options_set_breaker_key(opts, MULLIGAN_BREAKER_KEY_PATH_TEMPLATE));
  CHECK_FAILS(mulligan_http_client_create_v2(&client, policy, opts), MULLIGAN_E_INVALID_ARGUMENT,
              "needs at least one template");
  CHECK_OK(mulligan_http_options_set_breaker_key(opts, MULLIGAN_BREAKER_KEY_PATH));
  CHECK_OK(mulligan_http_client_create_v2(&client, policy, opts));
  if (client != NULL) {
    CHECK_OK(do_request(client, "GET", "/down", NULL, &resp));
    CHECK_INT(mulligan_http_response_status(resp), 503);
    mulligan_http_response_destroy(resp);
    resp = NULL;
    snprintf(expected, sizeof expected, "circuit breaker '%s/down' is open", g_base_url);
    CHECK_FAILS(do_request(client, "GET", "/down", NULL, &resp), MULLIGAN_E_CIRCUIT_OPEN,
                expected);
    CHECK_OK(do_request(client, "GET", "/ok", NULL, &resp)); /* its own breaker */
    CHECK_INT(mulligan_http_response_status(resp), 200);
    mulligan_http_response_destroy(resp);
  }
  mulligan_http_client_destroy(client);
  mulligan_http_options_destroy(opts);
  mulligan_retry_policy_destroy(policy);
  mulligan_retry_options_destroy(ro);
}

int main(void) {
  char tmpdir[] = "/tmp/mulligan-capi-http-XXXXXX";
  mulligan_http_client *client;
  FILE *server;
  int result;

  if (mkdtemp(tmpdir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  server = start_server(tmpdir);
  if (server == NULL) return SKIP;

  client = make_client(3);
  if (client != NULL) {
    test_ok(client);
    test_down(client);
    test_echo(client);
    test_bad_arguments(client);
    test_connection_refused(client);
    test_no_secret_in_last_error(client);
    test_breaker_key();
  }
  mulligan_http_client_destroy(client);
  result = CHECK_REPORT();
  stop_server(server, tmpdir);
  return result;
}
