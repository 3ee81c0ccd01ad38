// bindings/bind_redact.cc — the masking of URLs and the process-wide rules
// (mulligan/http/redact.h), for python/mulligan/_redact.py.
//
// URLs cross as bytes (the Python side encodes with "surrogatepass"), so
// that any str -- a malformed URL in an error message above all -- can be
// rendered: a str-to-std::string conversion would fail on a lone surrogate
// in the very path that reports a bad URL.
#include <string>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/http/redact.h"

namespace mulligan {
namespace python {

void BindRedact(py::module_& m) {
  m.attr("REDACTED") = std::string(kRedacted);
  m.def(
      "redact_url",
      [](const py::bytes& url) {
        const std::string masked = RedactUrl(std::string(url));
        return py::bytes(masked);
      },
      py::arg("url"), "Returns the UTF-8 `url` with userinfo and sensitive parameters masked.");
  m.def("default_sensitive_query_params", &DefaultSensitiveQueryParams,
        "The query parameters masked by default (lower case).");
  m.def("always_sensitive_headers", &AlwaysSensitiveHeaders,
        "The header fields always masked (lower case).");
  m.def(
      "set_redaction_rules",
      [](std::vector<std::string> query_params, std::vector<std::string> extra_headers) {
        RedactionRules rules;
        rules.query_params = std::move(query_params);
        rules.extra_headers = std::move(extra_headers);
        Status status = SetRedactionRules(rules);
        if (!status.ok()) ThrowStatus(status);
      },
      py::arg("query_params"), py::arg("extra_headers"),
      "Replaces the process-wide rules; ValueError for a bad name.");
  m.def(
      "redaction_rules",
      [] {
        RedactionRules rules = CurrentRedactionRules();
        return py::make_tuple(rules.query_params, rules.extra_headers);
      },
      "Returns (query_params, extra_headers) of the rules in force.");
}

}  // namespace python
}  // namespace mulligan
