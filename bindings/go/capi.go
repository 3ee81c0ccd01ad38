package mulligan

/*
#cgo pkg-config: mulligan
#include <stdlib.h>
#include <mulligan.h>
*/
import "C"

import (
	"math"
	"runtime"
	"time"
)

// msOf converts a Go duration to the C ABI's milliseconds (float64).
func msOf(d time.Duration) C.double { return C.double(float64(d) / 1e6) }

// durOf converts C milliseconds to a Go duration, rounding to the nearest
// nanosecond (as the C vector tests do, llround(ms * 1e6)) and saturating at
// the largest Duration (MULLIGAN_DURATION_MAX_MS is INT64_MAX nanoseconds).
func durOf(ms C.double) time.Duration {
	ns := math.Round(float64(ms) * 1e6)
	if ns >= math.MaxInt64 || math.IsInf(ns, 1) {
		return time.Duration(math.MaxInt64)
	}
	if ns <= 0 || math.IsNaN(ns) {
		return 0
	}
	return time.Duration(ns)
}

// cerr turns a C status into an *Error carrying the thread's last error
// text. Call it with the OS thread locked since the failing C call
// (lockThread), as mulligan_last_error() is thread-local.
func cerr(op string, rc C.int) error {
	if rc == C.MULLIGAN_OK {
		return nil
	}
	return &Error{Code: Code(rc), Op: op, Msg: C.GoString(C.mulligan_last_error())}
}

// lockThread pins the goroutine to its OS thread so that mulligan_last_error()
// is read on the thread that failed; returns the unlock function.
func lockThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// Version returns the loaded libmulligan's version, "major.minor.patch".
func Version() string { return C.GoString(C.mulligan_version_string()) }
