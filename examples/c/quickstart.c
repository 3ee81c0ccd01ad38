/* examples/c/quickstart.c — GET a URL with retries through the mulligan C ABI.
 *
 * Build against an installed mulligan:
 *   cc quickstart.c $(pkg-config --cflags --libs mulligan) -o quickstart
 *   ./quickstart http://127.0.0.1:8080/
 * or, with CMake: find_package(mulligan) and link mulligan::mulligan.
 *
 * Retries 503s, 429s (honouring Retry-After) and connection failures with
 * exponential backoff and full jitter, at most 4 attempts within 10 seconds.
 */
#include <stdio.h>

#include <mulligan.h>

int main(int argc, char **argv) {
  const char *url = argc > 1 ? argv[1] : "http://127.0.0.1:8080/";
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_http_client *client = NULL;
  mulligan_http_response *resp = NULL;
  int rc, exit_code = 1;

  /* Every call returns MULLIGAN_OK or an error code; mulligan_last_error()
   * says what went wrong. */
  if (mulligan_retry_options_create(&opts) != MULLIGAN_OK ||
      mulligan_retry_options_set_max_attempts(opts, 4) != MULLIGAN_OK ||
      mulligan_retry_options_set_base_delay_ms(opts, 100) != MULLIGAN_OK ||
      mulligan_retry_options_set_deadline_ms(opts, 10000) != MULLIGAN_OK ||
      mulligan_retry_policy_create(&policy, opts) != MULLIGAN_OK ||
      mulligan_http_client_create(&client, policy) != MULLIGAN_OK) {
    fprintf(stderr, "setup failed: %s\n", mulligan_last_error());
    goto done;
  }

  rc = mulligan_http_request(client, "GET", url, NULL, 0, NULL, 0, NULL, &resp);
  if (rc == MULLIGAN_OK) {
    size_t len = 0;
    mulligan_http_response_body(resp, &len);
    printf("GET %s -> %d (%zu bytes) after %d attempt(s) in %.1f ms\n", url,
           mulligan_http_response_status(resp), len, mulligan_http_response_attempts(resp),
           mulligan_http_response_elapsed_ms(resp));
    exit_code = mulligan_http_response_status(resp) < 400 ? 0 : 1;
  } else {
    /* The call failed, but when it ran, resp still tells what happened. */
    printf("GET %s failed: %s: %s", url, mulligan_status_str(rc), mulligan_last_error());
    if (resp != NULL) {
      printf(" (%s after %d attempt(s), stop reason %s)",
             mulligan_error_kind_str(mulligan_http_response_error_kind(resp)),
             mulligan_http_response_attempts(resp),
             mulligan_stop_reason_str(mulligan_http_response_stop_reason(resp)));
    }
    printf("\n");
  }

done:
  mulligan_http_response_destroy(resp); /* every destroy accepts NULL */
  mulligan_http_client_destroy(client);
  mulligan_retry_policy_destroy(policy);
  mulligan_retry_options_destroy(opts);
  return exit_code;
}
