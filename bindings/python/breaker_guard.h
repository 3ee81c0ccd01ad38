// bindings/python/breaker_guard.h — the raw CPython hot path of a breaker,
// shared by bind_breaker.cc (_core.BreakerGuard, _core.Permit) and
// bind_breaker_block.cc (_core.BreakerBase, the `with breaker:` block).
// Private to the _core module. (Added in 0.6.)
//
// Everything here REQUIRES the GIL: the objects are only touched by Python
// threads holding it, which is also what makes them thread-safe.
#ifndef MULLIGAN_BINDINGS_BREAKER_GUARD_H_
#define MULLIGAN_BINDINGS_BREAKER_GUARD_H_

#include <Python.h>

#include <memory>

#include "mulligan/base/clock.h"
#include "mulligan/breaker/circuit_breaker.h"

namespace mulligan {
namespace python {

// _core.BreakerGuard: acquire/success/failure/ignored of one core breaker.
struct GuardObject {
  PyObject_HEAD
  CircuitBreaker* breaker;                 // kept alive by `owner`
  std::shared_ptr<CircuitBreaker>* owner;  // owned
  PyObject* name;                          // the breaker's name (str), owned
};

extern PyTypeObject GuardType;

// _core.Permit: a copy of a core Permit. Immutable, opaque to Python.
struct PermitObject {
  PyObject_HEAD
  Permit permit;
};

extern PyTypeObject PermitType;

// Reads `seconds` (float monotonic seconds, or None for the steady clock)
// into `now`. Returns false with a Python exception set (TypeError for a
// non-number, ValueError for NaN, an infinity or a value beyond the clock).
bool NowFromObject(PyObject* seconds, TimePoint* now);

// Sets the pending Python exception for a refused admission of `guard`'s
// breaker: a mulligan.CircuitOpenError whose name, key, retry_in (seconds,
// math.inf when forced open) and attempts (0) are set, and whose message is
// formatted only when first read (str(), args, repr()), by
// BreakerGuard.open_message. Makes no further call into the engine. Returns
// nullptr, for `return SetCircuitOpen(...)`.
PyObject* SetCircuitOpen(GuardObject* guard, const Admission& admission);

// Adds _core.BreakerBase (bind_breaker_block.cc). Called by BindBreaker
// once GuardType is ready. Throws pybind11::error_already_set on failure.
void BindBreakerBlock(PyObject* module);

}  // namespace python
}  // namespace mulligan

#endif  // MULLIGAN_BINDINGS_BREAKER_GUARD_H_
