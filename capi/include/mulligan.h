/* mulligan.h — the stable C ABI of mulligan: retries with backoff and jitter,
 * Retry-After, deadlines, circuit breakers, a step-by-step pipeline, idempotency
 * keys, configuration, metrics and a resilient HTTP client.
 *
 * This umbrella header includes one header per part and declares nothing
 * itself. The public C interface is exactly what these headers declare:
 *
 *   mulligan_status.h       status codes, last error, version, clocks
 *   mulligan_retry.h        retry options, policies, sessions, Retry-After,
 *                           mulligan_retry_call()
 *   mulligan_pipeline.h     the pipeline and its step-by-step calls
 *   mulligan_breaker.h      circuit breakers and the breaker registry
 *   mulligan_idempotency.h  idempotency keys and the server-side store
 *   mulligan_config.h       named policies from a configuration file
 *   mulligan_metrics.h      metrics and events
 *   mulligan_http.h         the HTTP client
 *   mulligan_limits.h       bulkheads and rate limiters
 *   mulligan_budget.h       retry budgets and adaptive throttling
 *   mulligan_outbox.h       the durable outbox (SQLite): enqueue, claim,
 *                           complete, fail, dead letters, metrics (0.6)
 *   mulligan_hedging.h      hedged calls: extra copies after a delay, the
 *                           first success wins, losers cancelled (0.6)
 *   mulligan_state.h        shared state on Redis: a state handle for shared
 *                           breakers, rate limiters and idempotency stores (0.6)
 *
 * (plus mulligan_export.h and mulligan_version.h, which they include). As in
 * sqlite, anything not declared in these headers is private and may change
 * at any time; the C++ headers of the core are NOT part of the promised ABI.
 * A program may include this header or just the parts it uses; every part
 * header compiles on its own.
 *
 * Conventions (shared/STYLE.md section 3), followed by every part:
 *   - Objects are opaque handles with a mulligan_<object>_create() /
 *     mulligan_<object>_destroy() pair; destroy(NULL) is a no-op.
 *   - Every fallible function returns an int holding a mulligan_status:
 *     MULLIGAN_OK (0) or a positive MULLIGAN_E_* code. On failure,
 *     mulligan_last_error() describes what went wrong (thread-local). A lone
 *     out-parameter is named `out` and is set to NULL/0 on failure.
 *   - Getters that cannot fail return their value directly; given a NULL
 *     handle they return 0 / NULL and set the last error.
 *   - Durations are `double` milliseconds (names end in `_ms`). NaN, infinite
 *     and negative durations are rejected with MULLIGAN_E_INVALID_ARGUMENT
 *     unless a function says otherwise; finite values too large for the
 *     engine's clock (about 292 years) saturate at MULLIGAN_DURATION_MAX_MS.
 *   - Booleans are int: 0 is false, any other value true.
 *   - Strings are UTF-8, NUL-terminated. Strings the library returns are
 *     borrowed; each function says how long they stay valid. Nothing returned
 *     by this API must be passed to free().
 *   - Public structs start with uint32_t struct_size and only grow at the end.
 *   - No C++ exception ever crosses this interface.
 *   - No global initialisation is required (libcurl is set up once inside).
 *   - Each declaration says since which version it exists (@since 0.x);
 *     capi/abi/mulligan.symbols lists every exported function with it.
 *
 * The retry engine decides, the caller acts: a mulligan_retry_session or a
 * mulligan_call never sleeps; it answers each attempt's outcome with "retry
 * after delay_ms" or "stop". See mulligan_retry_session_on_outcome() and
 * mulligan_call_record() for the loop.
 *
 * Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_H_
#define MULLIGAN_H_

#include "mulligan_status.h"
#include "mulligan_retry.h"
#include "mulligan_wait.h"
#include "mulligan_pipeline.h"
#include "mulligan_breaker.h"
#include "mulligan_idempotency.h"
#include "mulligan_config.h"
#include "mulligan_metrics.h"
#include "mulligan_http.h"
#include "mulligan_limits.h"
#include "mulligan_budget.h"
#include "mulligan_adaptive_rate.h"
#include "mulligan_outbox.h"
#include "mulligan_hedging.h"
#include "mulligan_state.h"

#endif /* MULLIGAN_H_ */
