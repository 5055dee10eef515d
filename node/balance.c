/* node/balance.c: the end game (TESSERA_BALANCE). Owns each device's published rate and
 * backlog and the rule that uses them; the worker (worker.c) calls in at activation, when a
 * step completes, when a slot empties and when the device goes idle.
 *
 * Pulling by demand balances a call while the queue has tasks. Near its end every task
 * left sits in some reservation station, and a device that starts one is committed to it:
 * on 2 x H200 (DGEMM n = 49152, 36 tiles of 8192) the split came out 19 / 17 and one GPU
 * idled the last 9% of the call (docs/benchmarks.md). So a device that already runs tasks
 * starts another station task t only if no peer would finish t sooner:
 *
 *   finish here   (left_d + w) / R_d
 *   finish at e   (left_e + (station_e + queued + 1) w) / R_e   for each live peer e the
 *                                                               job allows
 *
 * w is t's work (the flops of its steps), left_x the flops of x's running tasks not yet
 * completed, station_e the tasks in e's station and queued those in the global queue (a
 * peer takes all of them before it steals t; each taken as t's size), R_x the rate x has
 * reached so far (completed flops over the time it had steps in flight, kept across
 * calls). This is earliest-finish placement for devices whose running tasks share one
 * engine (TESS__CAP_SHARED: GPUs, where one large tile kernel fills the device, the CPU
 * worker, emulated devices with TESSERA_EMULATE_SHARED=1); R_x then does not depend on how
 * many tasks x runs. Devices without that capability (emulated streams throttled one by
 * one) neither hold back nor count as peers. While the queue is long no peer of equal
 * speed can win; at the end a device leaves t in its station when a peer finishes it
 * sooner by more than MARGIN, and that peer takes it once its own station and the queue
 * are empty and a slot frees (worker.c's steal).
 *
 * A device running nothing holds a task back only for a peer that finishes it in half the
 * time (MARGIN_IDLE): a much slower device (the CPU worker beside GPUs) then leaves the
 * last tiles to the fast ones, while among devices of one kind an idle one always starts
 * its best task, so none is starved by a rate measured on other work, and its rate stays
 * measured. Its patience: it holds back for at most as long as running the task itself
 * would take, counted over the time it spends idle and holding back (bal.held_s: checks
 * HOLD_GAP apart or less; across calls, not the time between them; renewed when it starts
 * a task). A rate measured low (early, small or contended work) would otherwise keep an
 * idle device idle for good, its rate never measured again (test_fuzz_l3:
 * emu3_shared_fault found it: the fastest device, misjudged, ran nothing more; test_balance
 * misjudged_device_runs_again), and a wrong hold costs at most what a wrong start would.
 * Patience only until the peer was due to finish the task was too short: a peer slowed a
 * little (a loaded host) made a 20 times slower device start a tile after all; counted in
 * wall time from the first hold, the time between calls spent it, and a slow device beside
 * fast ones started a tile at the end of every call after a pause. Until both rates are
 * known nothing is held back. Holding back cannot
 * circle: d defers to e only when d's backlog time (running, station and queue) exceeds
 * e's, so the device of least backlog time never defers, pulls or steals what it lacks,
 * and the tasks drain.
 *
 * Rates and backlogs are published as atomics (kflop, kflop/s); only the owner writes them.
 */
#include <math.h>

#include "node.h"

#define MARGIN 0.05 /* a peer must finish the task this much sooner ... */
#define MARGIN_IDLE 1.0 /* ... or, when this device runs nothing, in half the time */
#define HOLD_GAP 0.02   /* s: held back again within this (an idle worker looks every 1 ms):
                         * still holding, the time between counts against its patience */

static _Atomic uint64_t n_deferred; /* process-wide, for tests */

uint64_t tess__bal_deferred(void) { return atomic_load(&n_deferred); }

/* Tests: a rate misjudged, as if measured on early or contended work. Scales device dev's
 * published rate; its next completed step measures it again. Call between calls. */
int tess__bal_scale_rate(int dev, double factor) {
    struct tess__rt *rt;
    int rc = tess__rt_get(&rt);
    if (rc) return rc;
    if (dev < 0 || dev >= rt->ndev || !(factor > 0)) {
        tess__rt_put(rt);
        return TESS_EINVAL;
    }
    struct tess__dev *d = rt->dev[dev];
    uint64_t r = atomic_load_explicit(&d->bal.rate, memory_order_relaxed);
    atomic_store_explicit(&d->bal.rate, (uint64_t)fmax(1, (double)r * factor), memory_order_relaxed);
    tess__rt_put(rt);
    return TESS_OK;
}

double tess__step_flops(const struct tess__step *st, tess_dtype_t dt) {
    double m = (double)st->m, n = (double)st->n, k = (double)st->k, pairs;
    switch (st->kind) {
    case TESS__K_SYMM: case TESS__K_HEMM: pairs = st->side == 'L' ? m * m * n : m * n * n; break;
    case TESS__K_SYRK: case TESS__K_HERK: pairs = 0.5 * n * (n + 1) * k; break;
    case TESS__K_SYR2K: case TESS__K_HER2K: pairs = n * (n + 1) * k; break;
    case TESS__K_TRMM: case TESS__K_TRSM:
        pairs = st->side == 'L' ? 0.5 * m * (m + 1) * n : 0.5 * n * (n + 1) * m; break;
    default: pairs = m * n * k; break;
    }
    return tess__dtypes[dt].flop_mul * pairs;
}

/* kflop of all of t's steps, summed once per task (its steps never change) */
static double task_k(struct tess__task *t) {
    if (t->work_k > 0) return t->work_k;
    const struct tess__job *job = t->job;
    double w = 0;
    for (int s = 0; s < t->nsteps; s++) {
        struct tess__step st;
        job->ops->step(job, t, s, &st);
        w += tess__step_flops(&st, job->dt);
    }
    return t->work_k = w / 1000.0;
}

/* kflop of d's running tasks not yet completed: its slots', published for peers */
static double own_left(const struct tess__dev *d) {
    double left = 0;
    for (int i = 0; i < d->nstreams; i++) left += fmax(0, d->slot[i].work_k);
    return left;
}

static void publish_left(struct tess__dev *d) {
    atomic_store_explicit(&d->bal.left, (uint64_t)own_left(d), memory_order_relaxed);
}

/* The end game applies to d: on, several devices, d of one compute engine. */
static bool active(const struct tess__dev *d) {
    return d->rt->cfg.balance && d->rt->ndev >= 2 && (d->desc.caps & TESS__CAP_SHARED);
}

void tess__bal_start(struct tess__dev *d, struct tess__slot *sl) {
    d->bal.held_s = d->bal.hold_last = 0;
    sl->work_k = active(d) ? task_k(sl->t) : 0; /* no backlog to publish otherwise */
    publish_left(d);
}

void tess__bal_step_done(struct tess__dev *d, struct tess__slot *sl, int s) {
    double k = sl->step_k[s % 2];
    sl->work_k -= k;
    d->bal.done_k += k;
    publish_left(d);
    /* the step completed while the device was busy: busy_since is the current period */
    double busy = d->bal.busy_s + (tess__now() - d->busy_since);
    if (busy > 0)
        atomic_store_explicit(&d->bal.rate, (uint64_t)fmin(d->bal.done_k / busy, 1e18),
                              memory_order_relaxed);
}

void tess__bal_end(struct tess__dev *d, struct tess__slot *sl) {
    sl->work_k = 0; /* also steps that will not run (cancelled, device failed) */
    publish_left(d);
}

void tess__bal_idle(struct tess__dev *d, double busy_s) { d->bal.busy_s += busy_s; }

bool tess__bal_defer(struct tess__dev *d, struct tess__task *t, bool running) {
    struct tess__rt *rt = d->rt;
    if (!active(d)) return false;
    double rd = (double)atomic_load_explicit(&d->bal.rate, memory_order_relaxed);
    if (!(rd > 0)) return false;
    double w = task_k(t), here = (own_left(d) + w) / rd;
    double queued = (double)tess__rt_pending(rt); /* a peer takes these before stealing t */
    for (int i = 0; i < rt->ndev; i++) {
        struct tess__dev *e = rt->dev[i];
        if (e == d || atomic_load(&e->failed) || !(e->desc.caps & TESS__CAP_SHARED) ||
            !(t->job->dev_mask & (1u << e->id)))
            continue;
        double re = (double)atomic_load_explicit(&e->bal.rate, memory_order_relaxed);
        if (!(re > 0)) continue;
        double left = (double)atomic_load_explicit(&e->bal.left, memory_order_relaxed);
        double there = (left + (tess__rs_count(&e->rs) + queued + 1) * w) / re;
        if (here > there * (1 + (running ? MARGIN : MARGIN_IDLE))) {
            if (!running) { /* patience: idle, hold at most as long as t would take here */
                double now = tess__now(), gap = now - d->bal.hold_last;
                if (d->bal.hold_last > 0 && gap <= HOLD_GAP) d->bal.held_s += gap;
                d->bal.hold_last = now;
                if (d->bal.held_s > here) return false;
            }
            atomic_fetch_add_explicit(&n_deferred, 1, memory_order_relaxed);
            return true;
        }
    }
    return false;
}
