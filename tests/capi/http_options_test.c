/* tests/capi/http_options_test.c — mulligan_http_client_create_v2 and its
 * options against a real nginx (tests/nginx/nginx_server.py), compiled as
 * C99: redirects, strict mode, the on_retry callback (its events, cancelling
 * with MULLIGAN_E_CALLBACK, free_user_data), per-origin circuit breakers and
 * option validation. Exits 77 (skipped) when nginx cannot start.
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

static mulligan_retry_policy *fast_policy(int attempts) {
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  CHECK_OK(mulligan_retry_options_create(&opts));
  CHECK_OK(mulligan_retry_options_set_max_attempts(opts, attempts));
  CHECK_OK(mulligan_retry_options_set_backoff(opts, MULLIGAN_BACKOFF_CONSTANT));
  CHECK_OK(mulligan_retry_options_set_base_delay_ms(opts, 1));
  CHECK_OK(mulligan_retry_options_set_jitter(opts, MULLIGAN_JITTER_NONE));
  CHECK_OK(mulligan_retry_policy_create(&policy, opts));
  mulligan_retry_options_destroy(opts);
  return policy;
}

struct recorder {
  int calls;
  int attempts[8];
  int statuses[8];
  int error_kinds[8];
  int cancel_at; /* return non-zero at this attempt (0: never) */
  int freed;
};

static int record_retry(const mulligan_http_retry_event *e, void *user_data) {
  struct recorder *r = (struct recorder *)user_data;
  CHECK(e->struct_size >= sizeof *e);
  if (r->calls < 8) {
    r->attempts[r->calls] = e->attempt;
    r->statuses[r->calls] = e->http_status;
    r->error_kinds[r->calls] = e->error_kind;
  }
  ++r->calls;
  return r->cancel_at != 0 && e->attempt >= r->cancel_at;
}

static void free_recorder(void *user_data) { ((struct recorder *)user_data)->freed++; }

static mulligan_http_client *make_client(mulligan_http_options *opts, int attempts) {
  mulligan_retry_policy *policy = fast_policy(attempts);
  mulligan_http_client *client = NULL;
  CHECK_OK(mulligan_http_client_create_v2(&client, policy, opts));
  mulligan_retry_policy_destroy(policy);
  return client;
}

static int get(mulligan_http_client *client, const char *method, const char *path,
               mulligan_http_response **out) {
  char url[256];
  snprintf(url, sizeof url, "%s%s", g_base_url, path);
  return mulligan_http_request(client, method, url, NULL, 0, NULL, 0, NULL, out);
}

static void test_redirects(void) {
  mulligan_http_options *opts = NULL;
  mulligan_http_client *client;
  mulligan_http_response *resp = NULL;
  CHECK_OK(mulligan_http_options_create(&opts));
  client = make_client(opts, 1); /* defaults: not followed */
  CHECK_OK(get(client, "GET", "/redirect", &resp));
  CHECK_INT(mulligan_http_response_status(resp), 302);
  CHECK_STR(mulligan_http_response_header(resp, "location"), "/ok");
  mulligan_http_response_destroy(resp);
  mulligan_http_client_destroy(client);

  CHECK_OK(mulligan_http_options_set_redirects(opts, 1, 5));
  client = make_client(opts, 1);
  CHECK_OK(get(client, "GET", "/redirect", &resp));
  CHECK_INT(mulligan_http_response_status(resp), 200);
  CHECK_STR(mulligan_http_response_body(resp, NULL), "ok\n");
  mulligan_http_response_destroy(resp);
  resp = NULL;
  CHECK_INT(get(client, "GET", "/redirect-loop", &resp), MULLIGAN_E_TRANSPORT);
  CHECK(resp != NULL);
  if (resp != NULL) {
    CHECK_INT(mulligan_http_response_error_kind(resp), MULLIGAN_ERROR_TERMINAL);
    CHECK_INT(mulligan_http_response_attempts(resp), 1);
    mulligan_http_response_destroy(resp);
  }
  mulligan_http_client_destroy(client);
  mulligan_http_options_destroy(opts);
}

static void test_on_retry_and_strict(void) {
  struct recorder rec;
  mulligan_http_options *opts = NULL;
  mulligan_http_client *client;
  mulligan_http_response *resp = NULL;
  memset(&rec, 0, sizeof rec);
  CHECK_OK(mulligan_http_options_create(&opts));
  CHECK_OK(mulligan_http_options_set_on_retry(opts, record_retry, &rec, free_recorder));
  client = make_client(opts, 3);
  mulligan_http_options_destroy(opts); /* the client keeps the callback */
  CHECK_INT(rec.freed, 0);

  CHECK_OK(get(client, "GET", "/down", &resp));
  CHECK_INT(mulligan_http_response_attempts(resp), 3);
  mulligan_http_response_destroy(resp);
  CHECK_INT(rec.calls, 2);
  CHECK_INT(rec.attempts[0], 1);
  CHECK_INT(rec.attempts[1], 2);
  CHECK_INT(rec.statuses[0], 503);
  CHECK_INT(rec.error_kinds[0], MULLIGAN_ERROR_NONE);

  /* A non-zero return stops the retries: MULLIGAN_E_CALLBACK after 1 attempt. */
  rec.calls = 0;
  rec.cancel_at = 1;
  resp = NULL;
  CHECK_INT(get(client, "GET", "/down", &resp), MULLIGAN_E_CALLBACK);
  CHECK(resp != NULL);
  if (resp != NULL) {
    CHECK_INT(mulligan_http_response_attempts(resp), 1);
    mulligan_http_response_destroy(resp);
  }
  CHECK_INT(rec.calls, 1);
  mulligan_http_client_destroy(client);
  CHECK_INT(rec.freed, 1); /* released with the last client */

  CHECK_OK(mulligan_http_options_create(&opts));
  CHECK_OK(mulligan_http_options_set_strict_methods(opts, 1));
  client = make_client(opts, 3);
  CHECK_OK(get(client, "PUT", "/down", &resp));
  CHECK_INT(mulligan_http_response_attempts(resp), 1);
  CHECK_INT(mulligan_http_response_stop_reason(resp), MULLIGAN_STOP_NOT_REPLAY_SAFE);
  mulligan_http_response_destroy(resp);
  mulligan_http_client_destroy(client);
  mulligan_http_options_destroy(opts);
}

static void test_breaker(void) {
  mulligan_http_options *opts = NULL;
  mulligan_http_client *client;
  mulligan_http_response *resp = NULL;
  int i, sent;
  /* Its own query string: late log lines of the other tests' /down requests
   * cannot be counted here. */
  const char *path = "/down?case=breaker";
  CHECK_OK(mulligan_http_options_create(&opts));
  CHECK_OK(mulligan_http_options_set_breaker(opts, 2, 30000, 0));
  client = make_client(opts, 1);
  mulligan_http_options_destroy(opts);
  for (i = 0; i < 2; ++i) {
    CHECK_OK(get(client, "GET", path, &resp));
    mulligan_http_response_destroy(resp);
  }
  resp = NULL;
  CHECK_INT(get(client, "GET", path, &resp), MULLIGAN_E_CIRCUIT_OPEN);
  CHECK(resp == NULL); /* refused before any attempt */
  CHECK(strstr(mulligan_last_error(), "circuit open") != NULL);
  /* nginx may write its log lines a little late: wait for the two sent,
   * then check that no third one arrives. */
  for (i = 0; i < 100 && count_log_lines("\"/down?case=breaker\"") < 2; ++i) sleep_ms(20);
  sleep_ms(100);
  sent = count_log_lines("\"/down?case=breaker\"");
  CHECK_INT(sent, 2);
  mulligan_http_client_destroy(client);
}

/* The method rules against nginx's /down (503): a replayed request makes 3
 * attempts, one that is not makes 1 (its bytes were sent). */
static void test_method_rules(void) {
  static const char *const allowed[] = {"POST"};
  static const char *const bad[] = {"GE T"};
  mulligan_http_options *opts = NULL;
  mulligan_http_client *client;
  mulligan_http_response *resp = NULL;
  CHECK_OK(mulligan_http_options_create(&opts));
  CHECK_OK(mulligan_http_options_set_method_rule(opts, MULLIGAN_HTTP_METHODS_SAFE));
  client = make_client(opts, 3);
  CHECK_OK(get(client, "PUT", "/down", &resp)); /* idempotent, but not safe */
  CHECK_INT(mulligan_http_response_attempts(resp), 1);
  mulligan_http_response_destroy(resp);
  CHECK_OK(get(client, "OPTIONS", "/down", &resp));
  CHECK_INT(mulligan_http_response_attempts(resp), 3);
  mulligan_http_response_destroy(resp);
  mulligan_http_client_destroy(client);

  CHECK_OK(mulligan_http_options_set_allowed_methods(opts, allowed, 1));
  client = make_client(opts, 3);
  CHECK_OK(get(client, "POST", "/down", &resp)); /* unkeyed, yet listed */
  CHECK_INT(mulligan_http_response_attempts(resp), 3);
  mulligan_http_response_destroy(resp);
  CHECK_OK(get(client, "GET", "/down", &resp)); /* not listed */
  CHECK_INT(mulligan_http_response_attempts(resp), 1);
  mulligan_http_response_destroy(resp);
  mulligan_http_client_destroy(client);

  CHECK_FAILS(mulligan_http_options_set_method_rule(opts, 5), MULLIGAN_E_INVALID_ARGUMENT,
              "mulligan_http_methods");
  CHECK_FAILS(mulligan_http_options_set_allowed_methods(opts, bad, 1),
              MULLIGAN_E_INVALID_ARGUMENT, "methods[0]");
  CHECK_FAILS(mulligan_http_options_set_allowed_methods(opts, NULL, 1),
              MULLIGAN_E_INVALID_ARGUMENT, "methods[0]");
  mulligan_http_options_destroy(opts);
}

static void test_bad_options(void) {
  mulligan_http_options *opts = NULL;
  CHECK_OK(mulligan_http_options_create(&opts));
  CHECK_FAILS(mulligan_http_options_set_connect_timeout_ms(opts, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "connect timeout");
  CHECK_FAILS(mulligan_http_options_set_redirects(opts, 1, -1), MULLIGAN_E_INVALID_ARGUMENT,
              "max_redirects");
  CHECK_FAILS(mulligan_http_options_set_user_agent(opts, "a\r\nX-Evil: 1"),
              MULLIGAN_E_INVALID_ARGUMENT, "user_agent");
  CHECK_FAILS(mulligan_http_options_set_breaker(opts, -1, 1000, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "failure_threshold");
  CHECK_FAILS(mulligan_http_options_set_verify_tls(NULL, 1), MULLIGAN_E_INVALID_ARGUMENT, "opts");
  mulligan_http_options_destroy(opts);
  mulligan_http_options_destroy(NULL);
}

/* Per-origin A6 budget of 10 tokens, ratio 0.5, 3 attempts against /down
 * (worked out by hand): call 1 takes 10 -> 7 (3 attempts, exhausted); call 2
 * 7 -> 5, its second retry refused at 5 (5 > 5 is false); call 3 5 -> 4,
 * refused after its first. Turned off: 3 attempts every time. */
static void test_retry_budget(void) {
  static const int want[3] = {3, 2, 1};
  static const int reasons[3] = {MULLIGAN_STOP_ATTEMPTS_EXHAUSTED, MULLIGAN_STOP_BUDGET,
                                 MULLIGAN_STOP_BUDGET};
  mulligan_http_options *opts = NULL;
  mulligan_http_client *client;
  mulligan_http_response *resp = NULL;
  int i;
  CHECK_OK(mulligan_http_options_create(&opts));
  CHECK_OK(mulligan_http_options_set_token_bucket_budget(opts, 10.0, 0.5));
  client = make_client(opts, 3);
  for (i = 0; i < 3; ++i) {
    CHECK_OK(get(client, "GET", "/down", &resp));
    CHECK_INT(mulligan_http_response_status(resp), 503);
    CHECK_INT(mulligan_http_response_attempts(resp), want[i]);
    CHECK_INT(mulligan_http_response_stop_reason(resp), reasons[i]);
    mulligan_http_response_destroy(resp);
  }
  mulligan_http_client_destroy(client);

  CHECK_OK(mulligan_http_options_disable_retry_budget(opts));
  client = make_client(opts, 3);
  for (i = 0; i < 4; ++i) {
    CHECK_OK(get(client, "GET", "/down", &resp));
    CHECK_INT(mulligan_http_response_attempts(resp), 3);
    mulligan_http_response_destroy(resp);
  }
  mulligan_http_client_destroy(client);

  /* Bad parameters are refused by the setter, naming the field. */
  CHECK_INT(mulligan_http_options_set_token_bucket_budget(opts, 10.0, -1.0),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "token_ratio") != NULL);
  CHECK_INT(mulligan_http_options_set_token_bucket_budget(opts, 0.0, 0.5),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "max_tokens") != NULL);
  CHECK_INT(mulligan_http_options_set_quota_budget(opts, 0, 5, 10, 5, 1),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "capacity") != NULL);
  CHECK_INT(mulligan_http_options_set_ratio_budget(opts, 10000, 1.5, 10.0),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "percent") != NULL);
  CHECK_INT(mulligan_http_options_set_ratio_budget(opts, 10, 0.2, 10.0),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "ttl") != NULL);
  CHECK_OK(mulligan_http_options_set_quota_budget(opts, 500, 5, 10, 5, 1));
  CHECK_OK(mulligan_http_options_set_ratio_budget(opts, 10000, 0.2, 10.0));
  CHECK_INT(mulligan_http_options_disable_retry_budget(NULL), MULLIGAN_E_INVALID_ARGUMENT);
  mulligan_http_options_destroy(opts);
}

int main(void) {
  char tmpdir[] = "/tmp/mulligan-capi-http2-XXXXXX";
  FILE *server;
  int result;

  if (mkdtemp(tmpdir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  server = start_server(tmpdir);
  if (server == NULL) return SKIP;
  test_redirects();
  test_on_retry_and_strict();
  test_breaker();
  test_method_rules();
  test_bad_options();
  test_retry_budget();
  result = CHECK_REPORT();
  stop_server(server, tmpdir);
  return result;
}
