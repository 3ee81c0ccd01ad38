// Outcome and classification names.
#include "mulligan/base/outcome.h"

namespace mulligan {
inline namespace v0 {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kNone: return "none";
    case ErrorKind::kConnectionRefused: return "connection_refused";
    case ErrorKind::kConnectionReset: return "connection_reset";
    case ErrorKind::kDnsFailure: return "dns_failure";
    case ErrorKind::kConnectTimeout: return "connect_timeout";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kTlsError: return "tls_error";
    case ErrorKind::kInvalidUrl: return "invalid_url";
    case ErrorKind::kTransport: return "transport";
    case ErrorKind::kRetryable: return "retryable";
    case ErrorKind::kTerminal: return "terminal";
    case ErrorKind::kTruncated: return "truncated";
  }
  return "unknown";
}

const char* ClassificationName(Classification classification) {
  switch (classification) {
    case Classification::kSuccess: return "success";
    case Classification::kRetryable: return "retryable";
    case Classification::kTerminal: return "terminal";
  }
  return "unknown";
}

Outcome Outcome::Transport(ErrorKind kind) {
  Outcome o;
  o.error = kind;
  // Failures before the connection exists leave nothing sent (DESIGN.md "Methods").
  o.request_sent = !(kind == ErrorKind::kConnectionRefused || kind == ErrorKind::kDnsFailure ||
                     kind == ErrorKind::kConnectTimeout || kind == ErrorKind::kInvalidUrl);
  return o;
}

}  // namespace v0
}  // namespace mulligan
