/* tests/capi/config_test.c — the configuration registry through the C ABI:
 * the shared example file gives the same delays and breaker settings as the
 * C++ and Python suites (tests/vectors/config/expected.json), malformed
 * input gives the exact messages, gRPC maxAttempts 7 is capped with a
 * warning, reload swaps or keeps, MULLIGAN_CONFIG names the file. */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan.h"

#define EXAMPLE MULLIGAN_SOURCE_DIR "/examples/config/mulligan.json"
#define EXPECTED MULLIGAN_SOURCE_DIR "/tests/vectors/config/expected.json"

/* Reads the integers of "payments_delays_ns": [...] from expected.json. */
static size_t read_expected_delays(long long *out, size_t cap) {
  static char text[8192];
  FILE *f = fopen(EXPECTED, "rb");
  size_t n, count = 0;
  char *p;
  if (f == NULL) return 0;
  n = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[n] = '\0';
  p = strstr(text, "\"payments_delays_ns\"");
  if (p == NULL || (p = strchr(p, '[')) == NULL) return 0;
  ++p;
  while (count < cap) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p) break;
    out[count++] = v;
    p = end;
    while (*p == ',' || *p == ' ' || *p == '\n') ++p;
  }
  return count;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) return;
  fputs(text, f);
  fclose(f);
}

static void test_example_file(void) {
  mulligan_config *cfg = NULL;
  mulligan_retry_policy *policy = NULL, *missing = NULL;
  mulligan_clock *clock = NULL;
  mulligan_retry_session *session = NULL;
  mulligan_config_breaker b = MULLIGAN_CONFIG_BREAKER_INIT;
  long long expected[16];
  size_t n_expected = read_expected_delays(expected, 16), n = 0, count = 99, len = 0;
  char name[64];

  CHECK(n_expected > 0);
  CHECK_OK(mulligan_config_create(&cfg));
  CHECK_OK(mulligan_config_load_file(cfg, EXAMPLE));
  CHECK_OK(mulligan_config_count(cfg, MULLIGAN_CONFIG_POLICIES, &count));
  CHECK_INT(count, 2);
  CHECK_OK(mulligan_config_name(cfg, MULLIGAN_CONFIG_POLICIES, 0, name, sizeof(name), &len));
  CHECK_STR(name, "payments");
  CHECK_INT(len, 8);
  CHECK_OK(mulligan_config_name(cfg, MULLIGAN_CONFIG_POLICIES, 1, name, 4, &len));
  CHECK_STR(name, "sea"); /* truncated, snprintf-style */
  CHECK_INT(len, 6);
  CHECK_FAILS(mulligan_config_name(cfg, MULLIGAN_CONFIG_POLICIES, 2, name, sizeof(name), &len),
              MULLIGAN_E_INVALID_ARGUMENT, "index 2 out of range (2 names)");
  CHECK_OK(mulligan_config_count(cfg, MULLIGAN_CONFIG_BREAKERS, &count));
  CHECK_INT(count, 1);
  CHECK_OK(mulligan_config_count(cfg, MULLIGAN_CONFIG_CLIENTS, &count));
  CHECK_INT(count, 1);
  CHECK_OK(mulligan_config_warning_count(cfg, &count));
  CHECK_INT(count, 0);

  /* Same delays as C++ and Python for the seeded policy. */
  CHECK_OK(mulligan_config_retry_policy(cfg, "payments", &policy));
  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK_OK(mulligan_retry_session_begin(&session, policy, clock, 1));
  for (;;) {
    mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
    mulligan_decision d = MULLIGAN_DECISION_INIT;
    o.http_status = 503;
    CHECK_OK(mulligan_retry_session_on_outcome(session, &o, &d));
    if (d.action == MULLIGAN_ACTION_STOP) break;
    if (n < n_expected) CHECK_INT(llround(d.delay_ms * 1e6), expected[n]);
    ++n;
    if (n > 20) break;
  }
  CHECK_INT(n, n_expected);
  mulligan_retry_session_destroy(session);

  CHECK_OK(mulligan_config_breaker_get(cfg, "payments", &b));
  CHECK_INT(b.failure_threshold, 3);
  CHECK_INT(b.half_open_max_calls, 2);
  CHECK_NEAR(b.reset_timeout_ms, 15000.0, 0.0);
  CHECK_INT(b.window, 1);
  CHECK_INT(b.window_size, 50);
  CHECK_INT(b.minimum_calls, 10);
  CHECK_NEAR(b.failure_rate_threshold, 40.0, 0.0);
  CHECK(b.slow_call_duration_ms < 0);
  CHECK_NEAR(b.permit_timeout_ms, 60000.0, 0.0);

  /* A failed lookup sets its out-param to NULL (it starts as a live policy). */
  missing = policy;
  CHECK_FAILS(mulligan_config_retry_policy(cfg, "nope", &missing), MULLIGAN_E_INVALID_ARGUMENT,
              "no retry policy named \"nope\" in " EXAMPLE " (known: payments, search)");
  CHECK(missing == NULL);
  mulligan_retry_policy_destroy(policy);
  b.struct_size = 0;
  CHECK_FAILS(mulligan_config_breaker_get(cfg, "payments", &b), MULLIGAN_E_INVALID_ARGUMENT,
              "struct_size");
  mulligan_config_destroy(cfg);
  mulligan_clock_destroy(clock);
  mulligan_config_destroy(NULL);
}

static void check_load_error(const char *json, const char *message) {
  mulligan_config *cfg = NULL;
  CHECK_OK(mulligan_config_create(&cfg));
  CHECK_INT(mulligan_config_load_string(cfg, json, strlen(json), "payments.json"),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK_STR(mulligan_last_error(), message);
  mulligan_config_destroy(cfg);
}

static void test_errors(void) {
  mulligan_config *cfg = NULL;
  check_load_error("{\"policies\": {\"payments\": {\"max_attempts\": \"three\"}}}",
                   "payments.json: policies.payments.max_attempts: expected an integer >= 1, "
                   "got \"three\"");
  check_load_error("{\"policies\": {\"payments\": {\"max_delay\": -3}}}",
                   "payments.json: policies.payments.max_delay: expected a duration such as "
                   "\"10s\", got -3");
  check_load_error("{\"policies\": {\"payments\": {\"base_delay\": \"250mss\"}}}",
                   "payments.json: policies.payments.base_delay: expected a duration such as "
                   "\"10s\", got \"250mss\" (unknown unit \"mss\"; use ns, us, ms, s, m or h)");
  check_load_error("{\"policies\": {\"payments\": {\"max_attempt\": 3}}}",
                   "payments.json: policies.payments.max_attempt: unknown field, did you mean "
                   "\"max_attempts\"?");
  check_load_error("{\n  \"policies\": {\n    \"payments\": {\"max_attempts\": 3,}\n  }\n}",
                   "payments.json: line 3, column 36: invalid JSON: syntax error");
  CHECK_OK(mulligan_config_create(&cfg));
  CHECK_FAILS(mulligan_config_load_file(cfg, "/nonexistent/payments.json"),
              MULLIGAN_E_INVALID_ARGUMENT,
              "/nonexistent/payments.json: cannot read the configuration file: No such file or "
              "directory");
  CHECK_FAILS(mulligan_config_reload(cfg), MULLIGAN_E_INVALID_ARGUMENT,
              "nothing to reload: no configuration has been loaded");
  CHECK_FAILS(mulligan_config_load_file(NULL, "x"), MULLIGAN_E_INVALID_ARGUMENT,
              "config must not be NULL");
  mulligan_config_destroy(cfg);
}

static void test_grpc_cap(void) {
  static const char *service =
      "{\"methodConfig\": [{\"name\": [{\"service\": \"shop.Payments\", \"method\": \"Charge\"}],"
      " \"retryPolicy\": {\"maxAttempts\": 7, \"initialBackoff\": \"0.1s\","
      " \"maxBackoff\": \"1s\", \"backoffMultiplier\": 2,"
      " \"retryableStatusCodes\": [\"UNAVAILABLE\"]}}]}";
  mulligan_config *cfg = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_retry_session *session = NULL;
  mulligan_clock *clock = NULL;
  size_t count = 0, attempts = 0;
  char warning[256];
  CHECK_OK(mulligan_config_create(&cfg));
  CHECK_OK(mulligan_config_load_string(cfg, service, strlen(service), "service.json"));
  CHECK_OK(mulligan_config_warning_count(cfg, &count));
  CHECK_INT(count, 1);
  CHECK_OK(mulligan_config_warning(cfg, 0, warning, sizeof(warning), NULL));
  CHECK_STR(warning,
            "service.json: methodConfig[0].retryPolicy.maxAttempts: 7 is capped at 5, as gRPC "
            "does (gRFC A6)");
  CHECK_OK(mulligan_config_retry_policy(cfg, "shop.Payments/Charge", &policy));
  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK_OK(mulligan_retry_session_begin(&session, policy, clock, 1));
  for (;;) {
    mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
    mulligan_decision d = MULLIGAN_DECISION_INIT;
    o.error_kind = MULLIGAN_ERROR_RETRYABLE;
    CHECK_OK(mulligan_retry_session_on_outcome(session, &o, &d));
    ++attempts;
    if (d.action == MULLIGAN_ACTION_STOP || attempts > 10) break;
    {
      /* gRFC A6 (August 2024): min(100 ms * 2^(n-1), 1000 ms) * random(0.8, 1.2). */
      const double centre = attempts >= 5 ? 1000.0 : 100.0 * (double)(1u << (attempts - 1));
      CHECK(d.delay_ms >= 0.8 * centre - 1e-6 && d.delay_ms <= 1.2 * centre + 1e-6);
    }
  }
  CHECK_INT(attempts, 5);
  mulligan_retry_session_destroy(session);
  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
  mulligan_config_destroy(cfg);
}

static int max_attempts_of(mulligan_config *cfg) {
  /* Counts the attempts a retryable-forever call makes under policy "a". */
  mulligan_retry_policy *policy = NULL;
  mulligan_retry_session *session = NULL;
  mulligan_clock *clock = NULL;
  int attempts = 0;
  if (mulligan_config_retry_policy(cfg, "a", &policy) != MULLIGAN_OK) return -1;
  mulligan_clock_create_fake(&clock);
  mulligan_retry_session_begin(&session, policy, clock, 1);
  for (;;) {
    mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
    mulligan_decision d = MULLIGAN_DECISION_INIT;
    o.error_kind = MULLIGAN_ERROR_RETRYABLE;
    mulligan_retry_session_on_outcome(session, &o, &d);
    ++attempts;
    if (d.action == MULLIGAN_ACTION_STOP || attempts > 100) break;
  }
  mulligan_retry_session_destroy(session);
  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
  return attempts;
}

static void test_reload_and_env(void) {
  const char *path = "capi_config_test_reload.json";
  mulligan_config *cfg = NULL;
  mulligan_retry_policy *held = NULL;
  write_file(path, "{\"policies\": {\"a\": {\"max_attempts\": 4, \"base_delay\": 0}}}");
  CHECK_OK(mulligan_config_create(&cfg));
  CHECK_OK(mulligan_config_load_file(cfg, path));
  CHECK_INT(max_attempts_of(cfg), 4);
  CHECK_OK(mulligan_config_retry_policy(cfg, "a", &held));

  write_file(path, "{\"policies\": {\"a\": {\"max_attempts\": 0}}}");
  CHECK_FAILS(mulligan_config_reload(cfg), MULLIGAN_E_INVALID_ARGUMENT,
              "policies.a.max_attempts: expected an integer >= 1, got 0");
  CHECK_INT(max_attempts_of(cfg), 4); /* the old configuration stays */

  write_file(path, "{\"policies\": {\"a\": {\"max_attempts\": 6, \"base_delay\": 0}}}");
  CHECK_OK(mulligan_config_reload(cfg));
  CHECK_INT(max_attempts_of(cfg), 6);

  /* Environment: MULLIGAN_CONFIG names the file, overrides apply. */
  setenv("MULLIGAN_CONFIG", path, 1);
  setenv("MULLIGAN_POLICY_A_MAX_ATTEMPTS", "2", 1);
  CHECK_OK(mulligan_config_load_env(cfg));
  CHECK_INT(max_attempts_of(cfg), 2);
  unsetenv("MULLIGAN_POLICY_A_MAX_ATTEMPTS");
  CHECK_OK(mulligan_config_reload(cfg));
  CHECK_INT(max_attempts_of(cfg), 6);
  unsetenv("MULLIGAN_CONFIG");
  CHECK_FAILS(mulligan_config_load_env(cfg), MULLIGAN_E_INVALID_ARGUMENT,
              "MULLIGAN_CONFIG is not set");

  /* A policy handle outlives reloads and the registry. */
  mulligan_config_destroy(cfg);
  {
    mulligan_retry_session *s = NULL;
    mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
    mulligan_decision d = MULLIGAN_DECISION_INIT;
    CHECK_OK(mulligan_retry_session_begin(&s, held, NULL, 1));
    o.error_kind = MULLIGAN_ERROR_RETRYABLE;
    CHECK_OK(mulligan_retry_session_on_outcome(s, &o, &d));
    CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
    mulligan_retry_session_destroy(s);
  }
  mulligan_retry_policy_destroy(held);
  remove(path);
}

int main(void) {
  test_example_file();
  test_errors();
  test_grpc_cap();
  test_reload_and_env();
  return CHECK_REPORT();
}
