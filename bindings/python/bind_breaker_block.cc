// bindings/python/bind_breaker_block.cc — _core.BreakerBase: the native
// `__enter__` / `__exit__` of mulligan.CircuitBreaker (its base class), so
// that `with breaker:` costs about what the decorator does (issue 19).
// (Added in 0.6.)
//
// Where the permits of open blocks live. A block's permit must be recorded
// by the same block, even with nested blocks of one breaker and blocks of
// many threads and asyncio tasks interleaved. Each thread and each task runs
// in its own contextvars.Context (a task starts in a copy of its creator's,
// Python's documented asyncio behaviour), so the permits are kept per
// Context: ONE module-level ContextVar (never one per breaker: a context
// keeps every variable ever set in it, which is the memory leak of issue 19's
// companion) holds a BlockStack, a mutable native stack of (breaker, permit)
// entries, innermost last. A copied Context (a new task) shares its creator's
// stack object at first; the stack records the Context it belongs to
// (`owner`), and a block entered in any other Context gives that Context a
// stack of its own (one ContextVar.set per task or thread that ever opens a
// block). So `__enter__` and `__exit__` are each one ContextVar read (cached
// by CPython), a compare and a push or a pop: no allocation on the path.
//
// Thread-safety: everything runs with the GIL held, and a Context is current
// in at most one thread at a time (Context.run refuses otherwise), so no
// other thread touches a stack while it is used. Two tasks created with the
// SAME Context (asyncio.create_task(..., context=ctx)) share one stack, as
// they shared the previous ContextVar tuple: blocks must not interleave
// across them.
#include <Python.h>
#include <pybind11/pybind11.h>

#include <exception>
#include <new>
#include <string>
#include <vector>

#include "bindings.h"
#include "breaker_guard.h"

namespace mulligan {
namespace python {
namespace {

// ---------------------------------------------------------------------------
// The stack of open blocks of one Context.

struct BlockEntry {
  PyObject* breaker;  // strong: a block never outlives its breaker
  Permit permit;
};

struct BlockStack {
  PyObject_HEAD
  // The Context this stack belongs to, compared by identity only (never
  // dereferenced; a strong reference would be a cycle through the Context).
  PyObject* owner;
  std::vector<BlockEntry>* entries;
};

int StackTraverse(PyObject* self, visitproc visit, void* arg) {
  for (const BlockEntry& e : *reinterpret_cast<BlockStack*>(self)->entries) {
    Py_VISIT(e.breaker);
  }
  return 0;
}

int StackClear(PyObject* self) {
  std::vector<BlockEntry>* entries = reinterpret_cast<BlockStack*>(self)->entries;
  std::vector<BlockEntry> taken;
  taken.swap(*entries);
  for (BlockEntry& e : taken) Py_DECREF(e.breaker);
  return 0;
}

void StackDealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  StackClear(self);
  delete reinterpret_cast<BlockStack*>(self)->entries;
  PyObject_GC_Del(self);
}

PyTypeObject StackType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "mulligan._core._BlockStack";
  t.tp_basicsize = sizeof(BlockStack);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC;
  t.tp_doc = "The permits of the `with breaker:` blocks open in one context (private).";
  t.tp_dealloc = StackDealloc;
  t.tp_traverse = StackTraverse;
  t.tp_clear = StackClear;
  return t;
}();

PyObject* g_blocks_var = nullptr;  // the ContextVar, created once

// The current Context's stack (borrowed: the Context holds it), or nullptr:
// with `*error` false when it has none and `create` is false, with `*error`
// true and a Python exception set on failure.
BlockStack* CurrentStack(bool create, bool* error) {
  *error = false;
  PyObject* value = nullptr;
  if (PyContextVar_Get(g_blocks_var, nullptr, &value) < 0) {
    *error = true;
    return nullptr;
  }
  // PyContextVar_Get made the thread's Context if it had none.
  PyObject* context = PyThreadState_Get()->context;
  if (value != nullptr) {
    auto* stack = reinterpret_cast<BlockStack*>(value);
    Py_DECREF(value);  // the Context keeps it alive
    if (stack->owner == context) return stack;
  }
  if (!create) return nullptr;
  auto* stack = PyObject_GC_New(BlockStack, &StackType);
  if (stack == nullptr) {
    *error = true;
    return nullptr;
  }
  stack->owner = nullptr;
  stack->entries = new (std::nothrow) std::vector<BlockEntry>();
  if (stack->entries == nullptr) {
    PyObject_GC_Del(stack);
    PyErr_NoMemory();
    *error = true;
    return nullptr;
  }
  PyObject_GC_Track(stack);
  PyObject* token = PyContextVar_Set(g_blocks_var, reinterpret_cast<PyObject*>(stack));
  Py_DECREF(stack);  // the Context holds it now (or nothing does, on error)
  if (token == nullptr) {
    *error = true;
    return nullptr;
  }
  Py_DECREF(token);
  stack->owner = PyThreadState_Get()->context;
  return stack;
}

// ---------------------------------------------------------------------------
// _core.BreakerBase

struct BaseObject {
  PyObject_HEAD
  GuardObject* guard;  // strong; nullptr until _bind
  PyObject* clock;     // strong; nullptr for the steady clock
};

int BaseTraverse(PyObject* self, visitproc visit, void* arg) {
  auto* base = reinterpret_cast<BaseObject*>(self);
  Py_VISIT(base->clock);
  Py_VISIT(reinterpret_cast<PyObject*>(base->guard));
  return 0;
}

int BaseClear(PyObject* self) {
  auto* base = reinterpret_cast<BaseObject*>(self);
  Py_CLEAR(base->clock);
  Py_CLEAR(base->guard);
  return 0;
}

void BaseDealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  BaseClear(self);
  Py_TYPE(self)->tp_free(self);
}

// The breaker's clock reading (its `clock` callable, or the steady clock).
bool BaseNow(BaseObject* base, TimePoint* now) {
  if (base->clock == nullptr) return NowFromObject(Py_None, now);
  PyObject* seconds = PyObject_CallNoArgs(base->clock);
  if (seconds == nullptr) return false;
  const bool ok = NowFromObject(seconds, now);
  Py_DECREF(seconds);
  return ok;
}

GuardObject* BoundGuard(PyObject* self) {
  GuardObject* guard = reinterpret_cast<BaseObject*>(self)->guard;
  if (guard == nullptr) {
    PyErr_SetString(PyExc_RuntimeError,
                    "mulligan.CircuitBreaker: the breaker was not initialized (_bind)");
  }
  return guard;
}

// _bind(guard, clock): attaches the BreakerGuard and the clock (a callable
// returning monotonic seconds, or None).
PyObject* BaseBind(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || Py_TYPE(args[0]) != &GuardType ||
      (args[1] != Py_None && !PyCallable_Check(args[1]))) {
    PyErr_SetString(PyExc_TypeError, "_bind(guard: BreakerGuard, clock: callable | None)");
    return nullptr;
  }
  auto* base = reinterpret_cast<BaseObject*>(self);
  Py_INCREF(args[0]);
  Py_XSETREF(base->guard, reinterpret_cast<GuardObject*>(args[0]));
  PyObject* clock = args[1] == Py_None ? nullptr : args[1];
  Py_XINCREF(clock);
  Py_XSETREF(base->clock, clock);
  Py_RETURN_NONE;
}

PyObject* BaseEnter(PyObject* self, PyObject*) {
  GuardObject* guard = BoundGuard(self);
  if (guard == nullptr) return nullptr;
  TimePoint now;
  if (!BaseNow(reinterpret_cast<BaseObject*>(self), &now)) return nullptr;
  bool error = false;
  BlockStack* stack = CurrentStack(true, &error);
  if (stack == nullptr) return nullptr;
  try {
    stack->entries->reserve(stack->entries->size() + 1);  // the push below cannot throw
    const Admission admission = guard->breaker->Acquire(now);
    if (!admission.admitted()) return SetCircuitOpen(guard, admission);
    Py_INCREF(self);
    stack->entries->push_back(BlockEntry{self, admission.permit});
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_INCREF(self);
  return self;
}

// The result of a block that raised `exc`: self._classify(exc), 0 success,
// 1 failure, 2 ignored; -1 with the exception set when the classifier raised.
int Classify(PyObject* self, PyObject* exc) {
  static PyObject* name = PyUnicode_InternFromString("_classify");
  if (name == nullptr) return -1;
  PyObject* result = PyObject_CallMethodOneArg(self, name, exc);
  if (result == nullptr) return -1;
  const long value = PyLong_AsLong(result);
  Py_DECREF(result);
  if (value == -1 && PyErr_Occurred()) return -1;
  return static_cast<int>(value);
}

PyObject* BaseExit(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "__exit__(exc_type, exc, traceback) takes 3 arguments");
    return nullptr;
  }
  GuardObject* guard = BoundGuard(self);
  if (guard == nullptr) return nullptr;
  bool error = false;
  BlockStack* stack = CurrentStack(false, &error);
  if (error) return nullptr;
  // This breaker's innermost open block (blocks of other breakers may be
  // open inside it when __exit__ is called by hand).
  std::vector<BlockEntry>* entries = stack == nullptr ? nullptr : stack->entries;
  size_t i = entries == nullptr ? 0 : entries->size();
  while (i > 0 && (*entries)[i - 1].breaker != self) --i;
  if (i == 0) {
    PyErr_Format(PyExc_RuntimeError,
                 "circuit breaker %R: __exit__ without a matching __enter__ in this thread or task",
                 guard->name);
    return nullptr;
  }
  const Permit permit = (*entries)[i - 1].permit;
  entries->erase(entries->begin() + static_cast<std::ptrdiff_t>(i - 1));
  Py_DECREF(self);  // the entry's reference; the caller holds another
  // From here on the permit is always recorded, whatever Python code raises
  // (a classifier or a clock that raises: ignored, then the error is raised).
  PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
  CallResult result = CallResult::kSuccess;
  if (args[1] != Py_None) {
    const int verdict = Classify(self, args[1]);
    if (verdict < 0) PyErr_Fetch(&type, &value, &tb);
    result = verdict == 0 ? CallResult::kSuccess
             : verdict == 1 ? CallResult::kFailure
                            : CallResult::kIgnored;
  }
  TimePoint now = permit.acquired_at;
  if (type == nullptr && !BaseNow(reinterpret_cast<BaseObject*>(self), &now)) {
    PyErr_Fetch(&type, &value, &tb);
    result = CallResult::kIgnored;
    now = permit.acquired_at;  // no reading: the call took no time
  }
  try {
    guard->breaker->Record(permit, result, now - permit.acquired_at, now);
  } catch (const std::exception& e) {
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  if (type != nullptr) {
    PyErr_Restore(type, value, tb);
    return nullptr;
  }
  if (PyErr_Occurred()) return nullptr;  // never expected: the hooks swallow errors
  Py_RETURN_NONE;
}

PyMethodDef base_methods[] = {
    {"_bind", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(BaseBind)),
     METH_FASTCALL,
     "_bind(guard, clock): attaches the BreakerGuard and the clock (callable or None)."},
    {"__enter__", BaseEnter, METH_NOARGS,
     "Acquires a permit for the block and returns the breaker; raises "
     "mulligan.CircuitOpenError (the block does not run) when refused."},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(BaseExit)),
     METH_FASTCALL,
     "Records the block's result for the permit of this breaker's innermost block open in "
     "this thread or task: a success, or self._classify(exc) for an exception (a classifier "
     "or clock that raises: recorded as ignored, then raised). Returns None (never "
     "suppresses). RuntimeError when no block of this breaker is open here."},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject BaseType = [] {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = "mulligan._core.BreakerBase";
  t.tp_basicsize = sizeof(BaseObject);
  t.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
  t.tp_doc =
      "The native base of mulligan.CircuitBreaker: __enter__/__exit__ of `with breaker:`, "
      "with the permits kept per thread and asyncio task (bind_breaker_block.cc).";
  t.tp_dealloc = BaseDealloc;
  t.tp_traverse = BaseTraverse;
  t.tp_clear = BaseClear;
  t.tp_methods = base_methods;
  t.tp_new = PyType_GenericNew;
  return t;
}();

}  // namespace

void BindBreakerBlock(PyObject* module) {
  if (PyType_Ready(&StackType) < 0 || PyType_Ready(&BaseType) < 0) {
    throw py::error_already_set();
  }
  if (g_blocks_var == nullptr) {
    g_blocks_var = PyContextVar_New("mulligan_breaker_blocks", nullptr);
    if (g_blocks_var == nullptr) throw py::error_already_set();
  }
  Py_INCREF(&BaseType);
  if (PyModule_AddObject(module, "BreakerBase", reinterpret_cast<PyObject*>(&BaseType)) < 0) {
    Py_DECREF(&BaseType);
    throw py::error_already_set();
  }
}

}  // namespace python
}  // namespace mulligan
