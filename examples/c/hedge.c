/* examples/c/hedge.c — a hedged call from C (mulligan_hedging.h): the engine
 * decides when each copy may start and which copies to cancel; the caller
 * runs the copies its own way. Here the "copies" are simulated on a fake
 * clock so that the run is instant and its output fixed: copy 1 goes to a
 * slow replica (300 ms), copy 2, started after the 50 ms hedging delay, to a
 * fast one (20 ms). Copy 2 wins at 70 ms and copy 1 is cancelled.
 *
 *   cc hedge.c $(pkg-config --cflags --libs mulligan) -o hedge && ./hedge
 */
#include <stdio.h>

#include <mulligan.h>

#define COPIES 2

int main(void) {
  static const double latency_ms[COPIES] = {300.0, 20.0}; /* per copy */
  double ends_at[COPIES] = {-1.0, -1.0};                 /* -1: not running */
  mulligan_clock *clock = NULL;
  mulligan_pipeline_options *po = NULL;
  mulligan_pipeline *pipeline = NULL;
  mulligan_hedging_options ho = MULLIGAN_HEDGING_OPTIONS_INIT;
  mulligan_hedging_policy *hedging = NULL;
  mulligan_hedged_call *call = NULL;
  double t0;
  int i, rc = 1;

  ho.max_attempts = COPIES;
  ho.hedging_delay_ms = 50.0;
  if (mulligan_clock_create_fake(&clock) != MULLIGAN_OK ||
      mulligan_pipeline_options_create(&po) != MULLIGAN_OK ||
      mulligan_pipeline_options_set_name(po, "replicas") != MULLIGAN_OK ||
      mulligan_pipeline_options_set_clock(po, clock) != MULLIGAN_OK ||
      mulligan_pipeline_create(&pipeline, po) != MULLIGAN_OK ||
      mulligan_hedging_policy_create(&hedging, &ho) != MULLIGAN_OK) {
    fprintf(stderr, "setup: %s\n", mulligan_last_error());
    goto done;
  }
  t0 = mulligan_pipeline_now_ms(pipeline);
  if (mulligan_hedged_call_begin(&call, hedging, pipeline, t0, NULL,
                                 MULLIGAN_HEDGE_ACCOUNTING_FULL) != MULLIGAN_OK) {
    fprintf(stderr, "begin: %s\n", mulligan_last_error());
    goto done;
  }
  while (!mulligan_hedged_call_finished(call)) {
    mulligan_hedge_admission a = MULLIGAN_HEDGE_ADMISSION_INIT;
    double now = mulligan_pipeline_now_ms(pipeline), next = -1.0;
    int first = 0;
    if (mulligan_hedged_call_admit(call, now, &a) != MULLIGAN_OK &&
        a.reason != MULLIGAN_STOP_CIRCUIT_OPEN) {
      fprintf(stderr, "admit: %s\n", mulligan_last_error());
      goto done;
    }
    if (a.action == MULLIGAN_HEDGE_START) { /* start the copy: here, note its end */
      printf("copy %d starts at %.0f ms\n", a.copy, now - t0);
      ends_at[a.copy - 1] = now + latency_ms[a.copy - 1];
      continue;
    }
    /* Wait for the first running copy to end, or until the next may start. */
    for (i = 0; i < COPIES; ++i) {
      if (ends_at[i] >= 0 && (next < 0 || ends_at[i] < next)) {
        next = ends_at[i];
        first = i + 1;
      }
    }
    if (a.action == MULLIGAN_HEDGE_WAIT && (next < 0 || a.next_start_ms < next)) {
      mulligan_clock_advance_ms(clock, a.next_start_ms - now);
      continue;
    }
    if (first == 0) break; /* nothing running and nothing to start */
    mulligan_clock_advance_ms(clock, next - now);
    {
      mulligan_outcome o = MULLIGAN_OUTCOME_INIT; /* a success */
      mulligan_hedge_decision d = MULLIGAN_HEDGE_DECISION_INIT;
      ends_at[first - 1] = -1.0;
      if (mulligan_hedged_call_record(call, first, &o, mulligan_pipeline_now_ms(pipeline),
                                      &d) != MULLIGAN_OK) {
        fprintf(stderr, "record: %s\n", mulligan_last_error());
        goto done;
      }
      if (d.winner != 0) {
        printf("copy %d won at %.0f ms;", d.winner, mulligan_pipeline_now_ms(pipeline) - t0);
      }
      for (i = 0; i < d.cancel_count; ++i) { /* stop the losers: here, forget them */
        ends_at[d.cancel[i] - 1] = -1.0;
        printf(" copy %d cancelled", d.cancel[i]);
      }
      printf("\n");
    }
  }
  rc = mulligan_hedged_call_winner(call) != 0 ? 0 : 1;
done:
  mulligan_hedged_call_destroy(call);
  mulligan_hedging_policy_destroy(hedging);
  mulligan_pipeline_destroy(pipeline);
  mulligan_pipeline_options_destroy(po);
  mulligan_clock_destroy(clock);
  return rc;
}
