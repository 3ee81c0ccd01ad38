package mulligan

/*
#include <stdint.h>
#include <mulligan.h>
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

//export goBreakerTransition
func goBreakerTransition(t *C.mulligan_breaker_transition, u unsafe.Pointer) C.int {
	defer func() { _ = recover() }() // no Go panic may unwind through C
	fn := cgo.Handle(uintptr(u)).Value().(func(Transition))
	fn(Transition{Name: C.GoString(t.name), From: BreakerState(t.from), To: BreakerState(t.to),
		Reason: C.GoString(t.reason), At: durOf(t.at_ms)})
	return 0
}

//export goBreakerCall
func goBreakerCall(e *C.mulligan_breaker_call_event, u unsafe.Pointer) C.int {
	defer func() { _ = recover() }()
	fn := cgo.Handle(uintptr(u)).Value().(func(BreakerCallEvent))
	fn(BreakerCallEvent{Name: C.GoString(e.name), Kind: int(e.kind), State: BreakerState(e.state),
		Duration: durOf(e.duration_ms), Stale: e.stale != 0, At: durOf(e.at_ms)})
	return 0
}

//export goFreeHandle
func goFreeHandle(u unsafe.Pointer) { cgo.Handle(uintptr(u)).Delete() }
