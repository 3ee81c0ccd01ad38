// bindings/python/bind_version.cc — the version of the compiled module.
#include "bindings.h"

#ifndef MULLIGAN_PYTHON_VERSION_STRING
#error "MULLIGAN_PYTHON_VERSION_STRING must be defined by bindings/CMakeLists.txt"
#endif

namespace mulligan {
namespace python {

void BindVersion(py::module_& m) {
  m.def(
      "version_string", [] { return std::string(MULLIGAN_PYTHON_VERSION_STRING); },
      "Returns the version the module was built as (CMake project VERSION).");
}

}  // namespace python
}  // namespace mulligan
