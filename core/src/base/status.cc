// Status names and formatting.
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kNoMemory: return "out of memory";
    case StatusCode::kInternal: return "internal error";
    case StatusCode::kCallback: return "callback aborted the operation";
    case StatusCode::kRetriesExhausted: return "retries exhausted";
    case StatusCode::kDeadlineExceeded: return "deadline exceeded";
    case StatusCode::kCircuitOpen: return "circuit open";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kTransport: return "transport error";
    case StatusCode::kTimeout: return "timeout";
    case StatusCode::kBudgetExhausted: return "budget exhausted";
    case StatusCode::kThrottled: return "throttled";
    case StatusCode::kBulkheadFull: return "bulkhead full";
    case StatusCode::kRateLimited: return "rate limited";
    case StatusCode::kOutbox: return "outbox error";
    case StatusCode::kStateUnavailable: return "state backend unavailable";
  }
  return "unknown status";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string text = StatusCodeName(code_);
  if (!message_.empty()) {
    text += ": ";
    text += message_;
  }
  return text;
}

}  // namespace v0
}  // namespace mulligan
