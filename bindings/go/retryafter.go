package mulligan

/*
#include <stdlib.h>
#include <mulligan.h>

static double go_retry_after(const char *v, int64_t now, int *rc) {
  double d = -1;
  *rc = mulligan_retry_after_parse(v, now, &d);
  return d;
}
*/
import "C"

import (
	"time"
	"unsafe"
)

// ParseRetryAfter parses a Retry-After field value (RFC 9110 section
// 10.2.3; the engine's parser, mulligan_retry_after_parse): delay-seconds
// ("120") or an HTTP-date (IMF-fixdate, RFC 850, asctime, and the lenient
// forms docs/retry-after.md lists), measured from now. A date in the past
// or "0" gives 0; huge values saturate at the largest Duration. An invalid
// value returns an *Error with CodeInvalidArgument (keep your backoff).
// Safe for concurrent use.
func ParseRetryAfter(value string, now time.Time) (time.Duration, error) {
	cs := C.CString(value)
	defer C.free(unsafe.Pointer(cs))
	defer lockThread()()
	var rc C.int
	d := C.go_retry_after(cs, C.int64_t(now.UnixMilli()), &rc)
	if rc != C.MULLIGAN_OK {
		return 0, cerr("ParseRetryAfter", rc)
	}
	return durOf(d), nil
}
