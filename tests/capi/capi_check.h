/* tests/capi/capi_check.h — a tiny assertion framework for the C ABI tests.
 *
 * CHECK(cond) and the CHECK_* helpers print the failing expression with its
 * location and count the failure; the test keeps going so one run shows every
 * broken case. main() ends with `return CHECK_REPORT();`.
 */
#ifndef MULLIGAN_TESTS_CAPI_CAPI_CHECK_H_
#define MULLIGAN_TESTS_CAPI_CAPI_CHECK_H_

#include <math.h>
#include <stdio.h>
#include <string.h>

static int check_failures = 0;
static int check_count = 0;

#define CHECK(cond)                                                             \
  do {                                                                          \
    ++check_count;                                                              \
    if (!(cond)) {                                                              \
      ++check_failures;                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
    }                                                                           \
  } while (0)

#define CHECK_INT(actual, expected)                                             \
  do {                                                                          \
    long long check_a_ = (long long)(actual), check_e_ = (long long)(expected);  \
    ++check_count;                                                              \
    if (check_a_ != check_e_) {                                                 \
      ++check_failures;                                                         \
      fprintf(stderr, "%s:%d: CHECK_INT failed: %s == %lld, expected %s == %lld\n", \
              __FILE__, __LINE__, #actual, check_a_, #expected, check_e_);       \
    }                                                                           \
  } while (0)

#define CHECK_NEAR(actual, expected, tolerance)                                 \
  do {                                                                          \
    double check_a_ = (actual), check_e_ = (expected);                          \
    ++check_count;                                                              \
    if (!(fabs(check_a_ - check_e_) <= (tolerance))) {                          \
      ++check_failures;                                                         \
      fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s == %.17g, expected %.17g\n", \
              __FILE__, __LINE__, #actual, check_a_, check_e_);                 \
    }                                                                           \
  } while (0)

#define CHECK_STR(actual, expected)                                             \
  do {                                                                          \
    const char *check_a_ = (actual), *check_e_ = (expected);                    \
    ++check_count;                                                              \
    if (check_a_ == NULL || strcmp(check_a_, check_e_) != 0) {                  \
      ++check_failures;                                                         \
      fprintf(stderr, "%s:%d: CHECK_STR failed: %s == \"%s\", expected \"%s\"\n", \
              __FILE__, __LINE__, #actual, check_a_ ? check_a_ : "(null)", check_e_); \
    }                                                                           \
  } while (0)

/* Checks that `call` returns `code` and that mulligan_last_error() then
 * contains `fragment`. */
#define CHECK_FAILS(call, code, fragment)                                       \
  do {                                                                          \
    int check_rc_ = (call);                                                     \
    ++check_count;                                                              \
    if (check_rc_ != (code) || strstr(mulligan_last_error(), (fragment)) == NULL) { \
      ++check_failures;                                                         \
      fprintf(stderr,                                                           \
              "%s:%d: CHECK_FAILS failed: %s returned %d (%s), last error \"%s\";" \
              " expected %d and \"%s\"\n",                                       \
              __FILE__, __LINE__, #call, check_rc_, mulligan_status_str(check_rc_), \
              mulligan_last_error(), (int)(code), (fragment));                  \
    }                                                                           \
  } while (0)

#define CHECK_OK(call)                                                          \
  do {                                                                          \
    int check_rc_ = (call);                                                     \
    ++check_count;                                                              \
    if (check_rc_ != MULLIGAN_OK) {                                             \
      ++check_failures;                                                         \
      fprintf(stderr, "%s:%d: CHECK_OK failed: %s returned %d (%s): %s\n",      \
              __FILE__, __LINE__, #call, check_rc_, mulligan_status_str(check_rc_), \
              mulligan_last_error());                                           \
    }                                                                           \
  } while (0)

#define CHECK_REPORT()                                                          \
  (fprintf(check_failures ? stderr : stdout, "%d of %d checks failed\n",        \
           check_failures, check_count),                                        \
   check_failures == 0 ? 0 : 1)

#endif /* MULLIGAN_TESTS_CAPI_CAPI_CHECK_H_ */
