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
  // The 0.2 initialisers work in C++ too.
  mulligan_call_options call_options = MULLIGAN_CALL_OPTIONS_INIT;
  mulligan_admission admission = MULLIGAN_ADMISSION_INIT;
  mulligan_retry_call_options retry_call_options = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  if (call_options.struct_size != sizeof call_options || call_options.replay_safe != 1 ||
      admission.action != MULLIGAN_ADMISSION_REFUSE || retry_call_options.breaker_per_attempt != 0) {
    return 6;
  }
  // The 0.6 hedging initialisers too.
  mulligan_hedging_options hedging_options = MULLIGAN_HEDGING_OPTIONS_INIT;
  mulligan_hedge_admission hedge_admission = MULLIGAN_HEDGE_ADMISSION_INIT;
  mulligan_hedge_decision hedge_decision = MULLIGAN_HEDGE_DECISION_INIT;
  if (hedging_options.max_attempts != 2 || hedging_options.quantile_min_samples != 20 ||
      hedge_admission.action != MULLIGAN_HEDGE_NO_MORE || hedge_decision.cancel_count != 0 ||
      hedge_decision.struct_size != sizeof hedge_decision) {
    return 7;
  }
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
