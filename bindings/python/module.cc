// bindings/python/module.cc — the private extension module mulligan._core.
//
// Only the private modules of python/mulligan/ (its _-prefixed modules and
// subpackages) import it; users see the pure-Python layer.
#include "bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "Private native core of mulligan; use the mulligan package instead.";
  mulligan::python::BindVersion(m);
  mulligan::python::BindEnums(m);
  mulligan::python::BindWaits(m);
  mulligan::python::BindRetry(m);
  mulligan::python::BindRetryAfter(m);
  mulligan::python::BindConfig(m);
  mulligan::python::BindHttp(m);
  mulligan::python::BindHttpLoop(m);
  mulligan::python::BindBreaker(m);
  mulligan::python::BindMetrics(m);
  mulligan::python::BindState(m);  // (Added in 0.5.) before the stores that take one
  mulligan::python::BindIdempotency(m);
  mulligan::python::BindPipeline(m);
  mulligan::python::BindHedging(m);
  mulligan::python::BindRedact(m);
  mulligan::python::BindBudget(m);
  mulligan::python::BindLimits(m);  // (Added in 0.3.)
  mulligan::python::BindAdaptiveRate(m);  // (Added in 0.4.)
  mulligan::python::BindAdapter(m);
  mulligan::python::BindOutbox(m);  // (Added in 0.5.)
  mulligan::python::BindRedisBreaker(m);  // (Added in 0.6.)
  mulligan::python::BindSimulate(m);  // (Added in 0.6.)
  mulligan::python::BindCounter(m);  // (Added in 0.6.)
}
