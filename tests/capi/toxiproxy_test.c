/* tests/capi/toxiproxy_test.c — the C ABI's HTTP client through a real
 * toxiproxy (toxiproxy_fixture.h) in front of the test nginx, compiled as
 * C99. Exits 77 (skipped) when nginx or toxiproxy cannot start (1 for
 * toxiproxy when $MULLIGAN_TOXIPROXY names it).
 *
 * Toxics on nginx's answers:
 * - limit_data at four cut points (inside the status line, inside the
 *   header fields, one byte before the head's end, inside the 3-byte body
 *   of /ok; the head's size is read from nginx first): the call fails with status 0 and
 *   the kind the cut implies (RFC 9112: no whole status line is an empty
 *   reply, MULLIGAN_ERROR_CONNECTION_RESET; after it, the message is cut
 *   short, MULLIGAN_ERROR_TRUNCATED), never MULLIGAN_OK; a GET is retried
 *   (3 attempts, 3 access-log lines), an unkeyed POST is not (1 attempt,
 *   MULLIGAN_STOP_NOT_REPLAY_SAFE, 1 line), a keyed POST is (3 lines, each
 *   with its key); with an on_retry callback that removes the toxic, the
 *   healthy retry gets the whole answer (200, "ok\n", 2 attempts);
 * - latency far above the attempt timeout: MULLIGAN_E_TIMEOUT after 3
 *   attempts, well before the latency would have let one succeed;
 * - reset_peer: MULLIGAN_E_TRANSPORT, kind connection reset, 3 attempts.
 *
 * Compile-time definitions: MULLIGAN_TESTS_DIR, MULLIGAN_PYTHON.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "capi_check.h"
#include "mulligan.h"
#include "nginx_fixture.h"
#include "toxiproxy_fixture.h"

/* The attempt timeout, and the latency that no attempt can wait out. */
#define ATTEMPT_TIMEOUT_MS 500
#define LATENCY_MS 5000

/* on_retry: removes the toxic named by user_data, so the retry is healthy. */
static int heal(const mulligan_http_retry_event *event, void *user_data) {
  (void)event;
  remove_toxic((const char *)user_data);
  return 0;
}

static mulligan_http_client *make_client(const char *heal_toxic) {
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_http_options *http = NULL;
  mulligan_http_client *client = NULL;
  CHECK_OK(mulligan_retry_options_create(&opts));
  CHECK_OK(mulligan_retry_options_set_max_attempts(opts, 3));
  CHECK_OK(mulligan_retry_options_set_backoff(opts, MULLIGAN_BACKOFF_CONSTANT));
  CHECK_OK(mulligan_retry_options_set_base_delay_ms(opts, 1));
  CHECK_OK(mulligan_retry_options_set_jitter(opts, MULLIGAN_JITTER_NONE));
  CHECK_OK(mulligan_retry_options_set_attempt_timeout_ms(opts, ATTEMPT_TIMEOUT_MS));
  CHECK_OK(mulligan_retry_policy_create(&policy, opts));
  CHECK_OK(mulligan_http_options_create(&http));
  if (heal_toxic != NULL) {
    CHECK_OK(mulligan_http_options_set_on_retry(http, heal, (void *)heal_toxic, NULL));
  }
  CHECK_OK(mulligan_http_client_create_v2(&client, policy, http));
  mulligan_http_options_destroy(http);
  mulligan_retry_policy_destroy(policy);
  mulligan_retry_options_destroy(opts);
  return client;
}

/* Requests `path` through the proxy. */
static int request(mulligan_http_client *client, const char *method, const char *path,
                   const char *key, mulligan_http_response **out) {
  char url[256];
  snprintf(url, sizeof url, "%s%s", g_proxy_url, path);
  return mulligan_http_request(client, method, url, NULL, 0, "x", 1, key, out);
}

/* The access-log lines holding `needle`, once `expected` are there (nginx
 * logs just after answering) or 3 s passed, and 100 ms more to show that no
 * further line comes. */
static int log_lines(const char *needle, int expected) {
  int i;
  for (i = 0; i < 150 && count_log_lines(needle) < expected; ++i) sleep_ms(20);
  sleep_ms(100);
  return count_log_lines(needle);
}

/* One failed call: its return code, status 0, kind, attempts, stop reason. */
static void check_failed(int rc, mulligan_http_response *resp, int code, int kind, int attempts,
                         int stop) {
  CHECK_INT(rc, code);
  CHECK(resp != NULL);
  if (resp == NULL) return;
  CHECK_INT(mulligan_http_response_status(resp), 0);
  CHECK_INT(mulligan_http_response_error_kind(resp), kind);
  CHECK_INT(mulligan_http_response_attempts(resp), attempts);
  CHECK_INT(mulligan_http_response_stop_reason(resp), stop);
}

static void test_cut(mulligan_http_client *client, int cut, int kind) {
  mulligan_http_client *healing;
  mulligan_http_response *resp = NULL;
  char path[128], needle[64], key[MULLIGAN_IDEMPOTENCY_KEY_SIZE], attributes[64];
  const char *body;
  size_t len = 0;
  int rc;

  printf("limit_data %d bytes\n", cut);
  snprintf(attributes, sizeof attributes, "{\"bytes\":%d}", cut);
  CHECK(add_toxic("cut", "limit_data", attributes));

  snprintf(needle, sizeof needle, "cut%d-get", cut);
  snprintf(path, sizeof path, "/ok?id=%s", needle);
  rc = request(client, "GET", path, NULL, &resp);
  check_failed(rc, resp, MULLIGAN_E_TRANSPORT, kind, 3, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  mulligan_http_response_destroy(resp);
  resp = NULL;
  CHECK_INT(log_lines(needle, 3), 3);

  snprintf(needle, sizeof needle, "cut%d-post", cut);
  snprintf(path, sizeof path, "/ok?id=%s", needle);
  rc = request(client, "POST", path, NULL, &resp);
  check_failed(rc, resp, MULLIGAN_E_TRANSPORT, kind, 1, MULLIGAN_STOP_NOT_REPLAY_SAFE);
  mulligan_http_response_destroy(resp);
  resp = NULL;
  CHECK_INT(log_lines(needle, 1), 1);

  CHECK_OK(mulligan_idempotency_key_new(key, sizeof key));
  snprintf(needle, sizeof needle, "cut%d-keyed", cut);
  snprintf(path, sizeof path, "/ok?id=%s", needle);
  rc = request(client, "POST", path, key, &resp);
  check_failed(rc, resp, MULLIGAN_E_TRANSPORT, kind, 3, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  if (resp != NULL) CHECK_STR(mulligan_http_response_idempotency_key(resp), key);
  mulligan_http_response_destroy(resp);
  resp = NULL;
  CHECK_INT(log_lines(needle, 3), 3);
  CHECK_INT(count_log_lines(key), 3); /* the same key on every attempt */

  /* The retry finds the toxic gone and gets the whole answer. */
  healing = make_client("cut");
  snprintf(needle, sizeof needle, "cut%d-healed", cut);
  snprintf(path, sizeof path, "/ok?id=%s", needle);
  CHECK_OK(request(healing, "GET", path, NULL, &resp));
  CHECK(resp != NULL);
  if (resp != NULL) {
    CHECK_INT(mulligan_http_response_status(resp), 200);
    body = mulligan_http_response_body(resp, &len);
    CHECK_INT(len, 3);
    CHECK(len == 3 && memcmp(body, "ok\n", 3) == 0);
    CHECK_INT(mulligan_http_response_attempts(resp), 2);
    CHECK_INT(mulligan_http_response_error_kind(resp), MULLIGAN_ERROR_NONE);
    CHECK_INT(mulligan_http_response_stop_reason(resp), MULLIGAN_STOP_SUCCEEDED);
  }
  mulligan_http_response_destroy(resp);
  mulligan_http_client_destroy(healing);
  CHECK_INT(log_lines(needle, 2), 2);
  CHECK(!remove_toxic("cut")); /* the callback removed it */
}

static void test_latency_over_timeout(mulligan_http_client *client) {
  mulligan_http_response *resp = NULL;
  int rc;
  char attributes[64];
  printf("latency %d ms\n", LATENCY_MS);
  snprintf(attributes, sizeof attributes, "{\"latency\":%d}", LATENCY_MS);
  CHECK(add_toxic("slow", "latency", attributes));
  rc = request(client, "GET", "/ok?id=latency", NULL, &resp);
  check_failed(rc, resp, MULLIGAN_E_TIMEOUT, MULLIGAN_ERROR_TIMEOUT, 3,
               MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  /* Three attempts of 500 ms, not one wait for the 5 s latency. */
  if (resp != NULL) CHECK(mulligan_http_response_elapsed_ms(resp) < LATENCY_MS);
  mulligan_http_response_destroy(resp);
  CHECK(remove_toxic("slow"));
}

static void test_reset_peer(mulligan_http_client *client) {
  mulligan_http_response *resp = NULL;
  int rc;
  printf("reset_peer\n");
  CHECK(add_toxic("reset", "reset_peer", "{\"timeout\":0}"));
  rc = request(client, "GET", "/ok?id=reset", NULL, &resp);
  check_failed(rc, resp, MULLIGAN_E_TRANSPORT, MULLIGAN_ERROR_CONNECTION_RESET, 3,
               MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  mulligan_http_response_destroy(resp);
  CHECK(remove_toxic("reset"));
}

/* The size of nginx's head for GET /ok on a kept-alive connection (as the
 * client's), read from nginx directly; 0 on failure. */
static int ok_head_size(void) {
  static const char get[] = "GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  char answer[1024];
  size_t got = 0;
  const char *end = NULL;
  int nginx_port = 0, fd;
  if (sscanf(g_base_url, "http://127.0.0.1:%d", &nginx_port) != 1) return 0;
  fd = connect_loopback(nginx_port);
  if (fd < 0) return 0;
  if (send_all(fd, get, sizeof get - 1)) {
    /* The answer is the head and "ok\n". */
    while (got < sizeof answer - 1) {
      ssize_t n = recv(fd, answer + got, sizeof answer - 1 - got, 0);
      if (n <= 0) break;
      got += (size_t)n;
      answer[got] = '\0';
      end = strstr(answer, "\r\n\r\n");
      if (end != NULL && got == (size_t)(end - answer) + 4 + 3) break;
    }
  }
  close(fd);
  return end != NULL ? (int)(end - answer) + 4 : 0;
}

int main(void) {
  char tmpdir[] = "/tmp/mulligan-capi-toxiproxy-XXXXXX";
  static const char status_line[] = "HTTP/1.1 200 OK\r\n";
  mulligan_http_client *client;
  FILE *server, *toxiproxy;
  int result, head;

  if (mkdtemp(tmpdir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  server = start_server(tmpdir);
  if (server == NULL) return SKIP;
  toxiproxy = start_toxiproxy(tmpdir);
  if (toxiproxy == NULL) {
    int code = toxiproxy_missing_exit_code();
    stop_server(server, tmpdir);
    return code;
  }

  head = ok_head_size();
  printf("nginx's head for /ok: %d bytes\n", head);
  CHECK(head > (int)sizeof status_line);
  client = make_client(NULL);
  if (client != NULL && head > (int)sizeof status_line) {
    test_cut(client, 5, MULLIGAN_ERROR_CONNECTION_RESET);
    test_cut(client, (int)sizeof status_line - 1 + 10, MULLIGAN_ERROR_TRUNCATED);
    test_cut(client, head - 1, MULLIGAN_ERROR_TRUNCATED);
    test_cut(client, head + 1, MULLIGAN_ERROR_TRUNCATED);
    test_latency_over_timeout(client);
    test_reset_peer(client);
  }
  mulligan_http_client_destroy(client);
  result = CHECK_REPORT();
  stop_toxiproxy(toxiproxy);
  stop_server(server, tmpdir);
  return result;
}
