package mulligan

/*
#include <stdlib.h>
#include <mulligan.h>

static mulligan_metrics_snapshot go_metrics_get(const char *name, int *rc) {
  mulligan_metrics_snapshot s = MULLIGAN_METRICS_SNAPSHOT_INIT;
  *rc = mulligan_metrics_get(name, &s);
  return s;
}
*/
import "C"

import (
	"unsafe"
)

// MetricsSnapshot is the values of one name's metrics
// (mulligan_metrics_snapshot). Policies report under WithName's name.
type MetricsSnapshot struct {
	Calls, Attempts, Retries uint64
	// RetriesByReason is indexed by the engine's mulligan_retry_reason.
	RetriesByReason          [5]uint64
	Successes, Failures      uint64
	Fallbacks, ShortCircuits uint64
	CircuitOpens             uint64
	InFlight, WaitingToRetry int64
	// BreakerState is the last state a breaker reported here, or -1.
	BreakerState int
	// Cancelled counts the calls their caller cancelled (a cancelled ctx
	// given to Do, Call.Cancel): neither successes nor failures; their
	// attempts count in Attempts. (Added in 0.6.)
	Cancelled uint64
	// Hedged calls (Hedge): extra copies started (copy 2 or later), calls
	// won by an extra copy, and running copies cancelled (another copy won,
	// a fatal failure, a cancelled ctx). (Added in 0.6.)
	Hedges, HedgesWon, HedgeCancelled uint64
}

// Metrics reads the metrics of name; an unknown name is an *Error with
// CodeInvalidArgument. Safe for concurrent use.
func Metrics(name string) (MetricsSnapshot, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	defer lockThread()()
	var rc C.int
	s := C.go_metrics_get(cs, &rc)
	if rc != C.MULLIGAN_OK {
		return MetricsSnapshot{}, cerr("Metrics", rc)
	}
	out := MetricsSnapshot{Calls: uint64(s.calls), Attempts: uint64(s.attempts), Retries: uint64(s.retries),
		Successes: uint64(s.successes), Failures: uint64(s.failures), Fallbacks: uint64(s.fallbacks),
		ShortCircuits: uint64(s.short_circuits), CircuitOpens: uint64(s.circuit_opens),
		InFlight: int64(s.in_flight), WaitingToRetry: int64(s.waiting_to_retry), BreakerState: int(s.breaker_state),
		Cancelled: uint64(s.cancelled), Hedges: uint64(s.hedges), HedgesWon: uint64(s.hedges_won),
		HedgeCancelled: uint64(s.hedge_cancelled)}
	for i := range out.RetriesByReason {
		out.RetriesByReason[i] = uint64(s.retries_by_reason[i])
	}
	return out, nil
}

func exportText(f func(buf *C.char, size C.size_t, needed *C.size_t) C.int) (string, error) {
	var needed C.size_t
	if rc := f(nil, 0, &needed); rc != C.MULLIGAN_OK {
		return "", &Error{Code: Code(rc), Op: "metrics export"}
	}
	for {
		size := needed + 256
		buf := (*C.char)(C.malloc(size))
		rc := f(buf, size, &needed)
		if rc != C.MULLIGAN_OK {
			C.free(unsafe.Pointer(buf))
			return "", &Error{Code: Code(rc), Op: "metrics export"}
		}
		if needed <= size {
			s := C.GoString(buf)
			C.free(unsafe.Pointer(buf))
			return s, nil
		}
		C.free(unsafe.Pointer(buf))
	}
}

// MetricsJSON returns every name's metrics as one JSON object
// ({"metrics": [...], "totals": {...}}; mulligan_metrics_json).
func MetricsJSON() (string, error) {
	return exportText(func(b *C.char, s C.size_t, n *C.size_t) C.int { return C.mulligan_metrics_json(b, s, n) })
}

// MetricsPrometheus returns every name's metrics in the Prometheus text
// format 0.0.4 (serve as "text/plain; version=0.0.4").
func MetricsPrometheus() (string, error) {
	return exportText(func(b *C.char, s C.size_t, n *C.size_t) C.int { return C.mulligan_metrics_prometheus(b, s, n) })
}

// ResetMetrics forgets every name's metrics (tests; only while no call runs).
func ResetMetrics() error {
	if rc := C.mulligan_metrics_reset(); rc != C.MULLIGAN_OK {
		return &Error{Code: Code(rc), Op: "ResetMetrics"}
	}
	return nil
}
