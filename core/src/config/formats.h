// core/src/config/formats.h — the two document formats ParseConfig reads
// (private to mulligan_config): the mulligan format (mulligan_format.cc, the
// format of docs/configuration.md and schema/mulligan-config.schema.json) and
// the gRPC service config (grpc_format.cc, gRFC A6).
//
// ParseConfig (config.cc) parses the JSON, rejects repeated keys, and hands
// the top-level object to one of these: ParseGrpc when it holds
// "methodConfig", ParseMulligan otherwise. Each records every problem in the
// Context and fills `out` with the entries that are valid; the caller
// discards `out` when the Context holds any error.
//
// Thread-safety: reentrant.

#ifndef MULLIGAN_CONFIG_FORMATS_H_
#define MULLIGAN_CONFIG_FORMATS_H_

#include "mulligan/config/config.h"
#include "reader.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// Reads a mulligan document ("version", "defaults", "policies", "breakers",
// "clients"), with the environment overrides, into `out`.
void ParseMulligan(Context& ctx, const json::object& root, ConfigSnapshot& out);

// Reads a gRPC service config: each methodConfig's retryPolicy (and timeout)
// becomes a policy named "service", "service/method" or "default", with the
// MULLIGAN_POLICY_ overrides. Other top-level gRPC fields are warnings.
// REQUIRES: root contains "methodConfig".
void ParseGrpc(Context& ctx, const json::object& root, ConfigSnapshot& out);

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_CONFIG_FORMATS_H_
