// tests/capi/header_cxx_test.cc — mulligan.h compiles as C++ and its macros
// and structs work there (the header promises C99 and C++).
#include "mulligan.h"

#include <cstdio>
#include <cstring>

int main() {
  mulligan_outcome outcome = MULLIGAN_OUTCOME_INIT;
  mulligan_decision decision = MULLIGAN_DECISION_INIT;
  mulligan_retry_policy* policy = nullptr;
  mulligan_retry_session* session = nullptr;
  if (mulligan_version_number() != MULLIGAN_VERSION_NUMBER) return 1;
  if (mulligan_retry_policy_create(&policy, nullptr) != MULLIGAN_OK) return 2;
  if (mulligan_retry_session_begin(&session, policy, nullptr, 1) != MULLIGAN_OK) return 3;
  outcome.http_status = 200;
  if (mulligan_retry_session_on_outcome(session, &outcome, &decision) != MULLIGAN_OK) return 4;
  if (decision.action != MULLIGAN_ACTION_STOP || decision.reason != MULLIGAN_STOP_SUCCEEDED) {
    return 5;
  }
  mulligan_retry_session_destroy(session);
  mulligan_retry_policy_destroy(policy);
  std::printf("mulligan %s from C++: ok\n", mulligan_version_string());
  return 0;
}
