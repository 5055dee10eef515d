/* tests/slowdown.h: making the devices an assertion needs take part in a call.
 * Which device gets a task depends on which workers run while the queue holds tasks: a
 * worker descheduled for the whole of a short call (a loaded host; with TESSERA_PIN each
 * worker is bound to one core, which may be busy) gets none, and an unthrottled call of
 * ~70 tasks lasts a few ms (under `ctest -j2` beside busy processes one device took every
 * task of 5 calls in a row). So a test whose assertion needs given devices to work (every
 * device took tasks, a fault device reached its k-th op, a peer fetch happened) checks it
 * on a runtime started after slow_down(): every other emulated device's kernels throttled
 * (a sleep), so that a call lasts hundreds of ms without the devices needed, and no
 * worker bound to one core. The knobs are read at tess_init: slow_down, tess_init, then
 * slow_restore puts them back for later runtimes.
 */
#ifndef TESS_TESTS_SLOWDOWN_H
#define TESS_TESTS_SLOWDOWN_H

#include <stdint.h>

#define SLOW_KERNEL_S 0.004 /* a throttled device's tile kernel (tile^3 multiply-adds) */

struct knobs_saved {
    char *gflops, *pin;
};

/* Knobs for the next tess_init: of the nemu emulated devices (they come first without
 * GPUs), those not in fast (a bit mask of device indices) compute a tile kernel of edge
 * tile in no less than SLOW_KERNEL_S, those in fast unthrottled; TESSERA_PIN=0. A
 * TESSERA_EMULATE_GFLOPS already set is kept (a setup whose devices' relative speeds are
 * what it tests; its rates make calls long already). */
void slow_down(int nemu, int64_t tile, unsigned fast, struct knobs_saved *sv);

/* The knobs as they were before slow_down. */
void slow_restore(struct knobs_saved *sv);

#endif
