/* node/balance.c: the end game (TESSERA_BALANCE). Owns each device's published rate and
 * backlog (struct tess__bal), the slots' work left (struct tess__slot_bal) and the rule
 * that uses them; worker.c calls in when a task starts, a step is issued or completes, a
 * slot empties and the device goes idle. Devices of one compute engine (TESS__CAP_SHARED)
 * take part; a device that runs tasks starts station task t (w flops) only if no live
 * peer e that t's job allows finishes it sooner by more than MARGIN:
 *   here (left_d + w) / R_d      at e (left_e + (station_e + queued + 1) w) / R_e
 * left: flops of running tasks not completed; R: completed flops over busy time, kept
 * across calls; nothing is held until both rates are known. A device running nothing holds
 * t back only for a peer twice as fast (MARGIN_IDLE), and at most as long as running t
 * would take it (held_s: counted while idle and holding, renewed when it starts a task).
 * The device of least backlog time never defers, so holding cannot circle.
 * Invariants: only a device's worker writes its tess__bal and its slots' bal; peers read
 * the atomics (kflop, kflop/s). No lock; a station lock is taken to count a peer's tasks.
 */
#include <math.h>

#include "node.h"

#define MARGIN 0.05     /* a peer must finish the task this much sooner ... */
#define MARGIN_IDLE 1.0 /* ... or, when this device runs nothing, in half the time */
#define HOLD_GAP \
    0.02 /* s: held back again within this (an idle worker looks every 1 ms):
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
    atomic_store_explicit(&d->bal.rate, (uint64_t)fmax(1, (double)r * factor),
                          memory_order_relaxed);
    tess__rt_put(rt);
    return TESS_OK;
}

double tess__step_flops(const struct tess__step *st, tess_dtype_t dt) {
    double m = (double)st->m, n = (double)st->n, k = (double)st->k, pairs;
    switch (st->kind) {
    case TESS__K_SYMM:
    case TESS__K_HEMM: pairs = st->side == 'L' ? m * m * n : m * n * n; break;
    case TESS__K_SYRK:
    case TESS__K_HERK: pairs = 0.5 * n * (n + 1) * k; break;
    case TESS__K_SYR2K:
    case TESS__K_HER2K: pairs = n * (n + 1) * k; break;
    case TESS__K_TRMM:
    case TESS__K_TRSM:
        pairs = st->side == 'L' ? 0.5 * m * (m + 1) * n : 0.5 * n * (n + 1) * m;
        break;
    case TESS__K_POTRF: pairs = n * n * n / 6.0; break;
    case TESS__K_GETRF: pairs = 0.5 * (m * n * n - n * n * n / 3.0); break; /* m >= n */
    case TESS__K_LASWP: pairs = 0; break;                                   /* a copy */
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
    for (int i = 0; i < d->nstreams; i++) left += fmax(0, d->slot[i].bal.work_k);
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
    sl->bal.work_k = active(d) ? task_k(sl->t) : 0; /* no backlog to publish otherwise */
    publish_left(d);
}

void tess__bal_step_issued(struct tess__slot *sl, int s, double kflop) {
    sl->bal.step_k[s % TESS__DEPTH] = kflop;
}

void tess__bal_step_done(struct tess__dev *d, struct tess__slot *sl, int s) {
    double k = sl->bal.step_k[s % TESS__DEPTH];
    sl->bal.work_k -= k;
    d->bal.done_k += k;
    publish_left(d);
    /* the step completed while the device was busy: busy_since is the current period */
    double busy = d->bal.busy_s + (tess__now() - d->busy_since);
    if (busy > 0)
        atomic_store_explicit(&d->bal.rate, (uint64_t)fmin(d->bal.done_k / busy, 1e18),
                              memory_order_relaxed);
}

void tess__bal_end(struct tess__dev *d, struct tess__slot *sl) {
    sl->bal.work_k = 0; /* also steps that will not run (cancelled, device failed) */
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
