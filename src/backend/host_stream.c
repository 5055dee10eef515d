/* src/backend/host_stream.c: the host devices' streams and events. A stream is one thread
 * draining a FIFO of ops (copy, gemm, kernel, event record, event wait); ops of different
 * streams run concurrently in no set order. Emulation: a copy other than D2D lasts at least
 * bytes / link_gbs, a kernel flops / gflops (on its stream's time, or with shared_engine
 * on one engine the device's streams take turns on), jitter_us sleeps a random time before
 * each op (seeded per stream: runs repeat). A POTRF writes its INFO to the caller's int, a
 * GETRF its pivots and INFO to the caller's ints, on the stream thread, before any later op
 * of the stream (an event record) runs; a LASWP reads the copy of its pivots that its op
 * owns (taken at the call: host_ops.c), freed with the op.
 * Events: a record sets recorded = ++gen and queues "stream s reached gen"; a wait captures
 * (s, gen) at call time, so a later re-record does not move it; never recorded = complete.
 * Recorded only on the owner's streams, waited on by any device; they outlive their device.
 * Failure: the fault_at-th copy/gemm/kernel of a device (counted at execution) does nothing;
 * every op queued after it is dropped; once none of its ops runs any more the failure is
 * published: hooks answer TESS_EDEVICE, its events never complete. A wait on a failed
 * device's event is skipped (logged), so another device never hangs on it.
 * Lock order: host_dev.h (ev_mu guards every event and the devices' failure state).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host_dev.h"

static void sleep_s(double sec) {
    if (!(sec > 0)) return;
    struct timespec ts;
    ts.tv_sec = (time_t)sec;
    ts.tv_nsec = (long)((sec - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec > 999999999L) ts.tv_nsec = 999999999L;
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

/* Sleep what is left of `need` seconds since t0. */
static void throttle(double t0, double need) { sleep_s(need - (tess__now() - t0)); }

/* A kernel that began at t0 and needs `need` seconds: on its own stream's time, or, with
 * one engine per device (p.shared_engine), on the engine's, after the kernels that took
 * it before (the device's streams take turns, as kernels that each fill a GPU do). */
static void kernel_throttle(struct dev *d, double t0, double need) {
    if (!d->p.shared_engine) {
        throttle(t0, need);
        return;
    }
    pthread_mutex_lock(&d->engine_mu);
    double end = TESS__MAX(t0, d->engine_free) + need;
    d->engine_free = end;
    pthread_mutex_unlock(&d->engine_mu);
    sleep_s(end - tess__now());
}

/* Drop one reference of ev; free it at zero. Caller holds ev_mu. */
static void event_unref_locked(tess__event *ev) {
    if (--ev->refs > 0) return;
    if (ev->owner) {
        if (ev->prev)
            ev->prev->next = ev->next;
        else
            ev->owner->events = ev->next;
        if (ev->next) ev->next->prev = ev->prev;
    }
    free(ev);
}

/* Release what a finished or discarded op holds. */
static void op_free(struct op *op) {
    if (op->kind == OP_RECORD || op->kind == OP_WAIT) {
        pthread_mutex_lock(&tess__hostdev.ev_mu);
        event_unref_locked(op->ev.ev);
        pthread_mutex_unlock(&tess__hostdev.ev_mu);
    } else if (op->kind == OP_COPY) {
        tess__hostdev_arena_unref(op->copy.pin);
    } else if (op->kind == OP_KERNEL && op->kern.k.kind == TESS__K_LASWP) {
        free(op->kern.k.ipiv); /* the op's copy (GETRF's ipiv is the caller's) */
    }
    free(op);
}

struct op *tess__hostdev_op_new(enum op_kind kind) {
    struct op *op = calloc(1, sizeof *op);
    if (op) op->kind = kind;
    return op;
}

/* Append op to stream s. Caller holds s->mu. */
static void append_locked(struct stream *s, struct op *op) {
    op->next = NULL;
    if (s->tail)
        s->tail->next = op;
    else
        s->head = op;
    s->tail = op;
    pthread_cond_signal(&s->cv);
}

void tess__hostdev_append(struct stream *s, struct op *op) {
    pthread_mutex_lock(&s->mu);
    append_locked(s, op);
    pthread_mutex_unlock(&s->mu);
}

/* ---- failure ----------------------------------------------------------------------- */

/* Failure goes in two steps. dev_fail marks d failing: from then on its stream threads
 * drop every op. Once no copy/gemm of d is executing any more (busy == 0), the failure is
 * published: its events fail, every sleeper re-checks, and hooks answer TESS_EDEVICE. So a
 * caller that sees TESS_EDEVICE knows that no op of d touches memory any more: host buffers
 * that d's queued copies targeted may be reused at once. */
static void publish_locked(struct dev *d) {
    if (atomic_load(&d->failed) || !atomic_load(&d->failing) || d->busy) return;
    for (tess__event *ev = d->events; ev; ev = ev->next) ev->failed = 1;
    atomic_store(&d->failed, 1);
    if (tess__hostdev.ev_waiters) pthread_cond_broadcast(&tess__hostdev.ev_cv);
}

/* Called by the stream thread whose op is the fault_at-th, counted in busy. */
static void dev_fail(struct dev *d, const char *what) {
    int first = 0;
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    if (!atomic_load(&d->failing)) {
        first = 1;
        snprintf(d->fail_msg, sizeof d->fail_msg, "%s", what);
        atomic_store(&d->failing, 1);
    }
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
    if (first) tess__fail(TESS_EDEVICE, "%s: %s", d->name, what);
}

/* ---- the stream threads ------------------------------------------------------------ */

static void run_copy(struct dev *d, const struct op *op) {
    double t0 = tess__now();
    unsigned char *dst = op->copy.dst;
    const unsigned char *src = op->copy.src;
    size_t w = op->copy.width, h = op->copy.height;
    if (op->copy.dpitch == w && op->copy.spitch == w) {
        memcpy(dst, src, w * h);
    } else {
        for (size_t r = 0; r < h; r++)
            memcpy(dst + r * op->copy.dpitch, src + r * op->copy.spitch, w);
    }
    if (d->p.link_gbs > 0 && op->copy.kind != TESS__D2D)
        throttle(t0, (double)(w * h) / (d->p.link_gbs * 1e9));
}

/* A host kernel that cannot run (no memory for an operand copy: tess__host_kernel) fails the
 * device like any kernel error: its tasks go back to the queue and the call still finishes. */
static void kernel_status(struct dev *d, int rc, const char *what) {
    if (rc == TESS_OK) return;
    char msg[160];
    snprintf(msg, sizeof msg, "%s kernel failed: %s", what, tess_strerror(rc));
    dev_fail(d, msg);
}

static void run_gemm(struct dev *d, const struct op *op) {
    double t0 = tess__now();
    const struct gemm_args *g = &op->gemm;
    if (g->m > 0 && g->n > 0) {
        struct tess__kernel kn = {
            .kind = TESS__K_GEMM,
            .dt = g->dt,
            .ta = g->ta,
            .tb = g->tb,
            .m = g->m,
            .n = g->n,
            .k = g->k,
            .alpha = &g->alpha,
            .beta = &g->beta,
            .A = g->A,
            .lda = g->lda,
            .B = g->B,
            .ldb = g->ldb,
            .C = g->C,
            .ldc = g->ldc,
        };
        kernel_status(d, tess__host_kernel(&kn), "gemm");
    }
    if (d->p.gflops > 0) {
        double flops = tess__dtypes[g->dt].flop_mul * (double)g->m * (double)g->n * (double)g->k;
        kernel_throttle(d, t0, flops / (d->p.gflops * 1e9));
    }
}

static void run_kernel(struct dev *d, const struct op *op) {
    double t0 = tess__now();
    struct tess__kernel k = op->kern.k;
    k.alpha = &op->kern.alpha;
    k.beta = &op->kern.beta;
    /* POTRF: *k.info written here; GETRF: k.ipiv[] and *k.info */
    kernel_status(d, tess__host_kernel(&k), "tile");
    if (d->p.gflops > 0) {
        double flops;
        if (k.kind == TESS__K_POTRF) { /* n^3 / 3 multiply-adds */
            double n = (double)k.n;
            flops = tess__dtypes[k.dt].flop_mul * n * n * n / 3.0;
        } else if (k.kind == TESS__K_GETRF) {
            /* LAPACK's count, q p^2 - p^3 / 3 real flops (p = min(m, n), q = max), 4 times
             * that for complex: (q p^2 - p^3 / 3) / 2 multiply-adds */
            double p = (double)TESS__MIN(k.m, k.n), q = (double)TESS__MAX(k.m, k.n);
            flops = 0.5 * tess__dtypes[k.dt].flop_mul * (q * p * p - p * p * p / 3.0);
        } else if (k.kind == TESS__K_LASWP) {
            /* no arithmetic: k row interchanges of n elements, on the device like a D2D copy
             * (which the link does not throttle); counted as one flop per element moved,
             * 2 k n, so it is cheap but still takes its turn on a shared engine */
            flops = 2.0 * (double)k.k * (double)k.n;
        } else {
            double mx = (double)TESS__MAX(k.m, k.n);
            flops = 0.5 * tess__dtypes[k.dt].flop_mul * mx * mx *
                    (double)TESS__MAX(TESS__MAX(k.m, k.n), k.k);
        }
        kernel_throttle(d, t0, flops / (d->p.gflops * 1e9));
    }
}

static void run_record(const struct op *op) {
    tess__event *ev = op->ev.ev;
    double now = tess__now();
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    if (ev->done[op->ev.stream] < op->ev.gen) ev->done[op->ev.stream] = op->ev.gen;
    if (op->ev.gen == ev->recorded) ev->t_done = now;
    if (tess__hostdev.ev_waiters) pthread_cond_broadcast(&tess__hostdev.ev_cv);
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
}

static void run_wait(struct stream *s, const struct op *op) {
    struct dev *d = s->dev;
    tess__event *ev = op->ev.ev;
    int rs = op->ev.stream;
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    while (ev->done[rs] < op->ev.gen && !ev->failed && !atomic_load(&d->failed)) {
        tess__hostdev.ev_waiters++;
        pthread_cond_wait(&tess__hostdev.ev_cv, &tess__hostdev.ev_mu);
        tess__hostdev.ev_waiters--;
    }
    int skipped = ev->done[rs] < op->ev.gen && ev->failed && !atomic_load(&d->failed);
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
    if (skipped)
        tess__log(TESS__LOG_INFO, "%s stream %d: wait on an event of a failed device skipped",
                  d->name, s->idx);
}

static void run_op(struct stream *s, struct op *op) {
    struct dev *d = s->dev;
    if (atomic_load(&d->failing)) return; /* discarded */
    if (d->p.jitter_us > 0) {
        sleep_s((double)(rand_r(&s->seed) % (unsigned)d->p.jitter_us) * 1e-6);
        if (atomic_load(&d->failing)) return;
    }
    switch (op->kind) {
    case OP_COPY:
    case OP_GEMM:
    case OP_KERNEL: {
        pthread_mutex_lock(&tess__hostdev.ev_mu);
        int drop = atomic_load(&d->failing);
        if (!drop) d->busy++;
        pthread_mutex_unlock(&tess__hostdev.ev_mu);
        if (drop) return;
        int64_t nth = atomic_fetch_add(&d->nops, 1) + 1;
        if (d->p.fault_at > 0 && nth >= d->p.fault_at) {
            /* Ops numbered past fault_at race with the failing one: drop them too, and make
             * sure the device is failing before this stream runs its next op (an event
             * recorded behind a dropped copy must never complete). */
            if (nth > d->p.fault_at) {
                char what[128];
                snprintf(what, sizeof what, "injected fault at op %lld (a later op saw it first)",
                         (long long)d->p.fault_at);
                dev_fail(d, what);
            }
            if (nth == d->p.fault_at) {
                char what[128];
                if (op->kind == OP_COPY)
                    snprintf(what, sizeof what, "injected fault at op %lld (%s copy, stream %d)",
                             (long long)nth, kind_name(op->copy.kind), s->idx);
                else
                    snprintf(what, sizeof what, "injected fault at op %lld (%s, stream %d)",
                             (long long)nth, op->kind == OP_GEMM ? "gemm" : "kernel", s->idx);
                dev_fail(d, what);
            }
        } else if (op->kind == OP_COPY) {
            run_copy(d, op);
        } else if (op->kind == OP_GEMM) {
            run_gemm(d, op);
        } else {
            run_kernel(d, op);
        }
        pthread_mutex_lock(&tess__hostdev.ev_mu);
        d->busy--;
        publish_locked(d);
        pthread_mutex_unlock(&tess__hostdev.ev_mu);
        break;
    }
    case OP_RECORD: run_record(op); break;
    case OP_WAIT: run_wait(s, op); break;
    }
}

void *tess__hostdev_stream_main(void *arg) {
    struct stream *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->head && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
        struct op *op = s->head;
        if (op) {
            s->head = op->next;
            if (!s->head) s->tail = NULL;
        }
        pthread_mutex_unlock(&s->mu);
        if (!op) return NULL; /* stopped and drained */
        run_op(s, op);
        op_free(op);
    }
}

/* ---- events ------------------------------------------------------------------------ */

int tess__hostdev_event_create(void *bd, tess__event **out) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "event_create");
    if (!out) return tess__fail(TESS_EINVAL, "%s: event_create: NULL argument", d->name);
    tess__event *ev = calloc(1, sizeof *ev);
    if (!ev) return tess__fail(TESS_ENOMEM, "%s: event_create: out of memory", d->name);
    ev->refs = 1;
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    ev->owner = d;
    ev->failed = atomic_load(&d->failed);
    ev->next = d->events;
    if (d->events) d->events->prev = ev;
    d->events = ev;
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
    *out = ev;
    return TESS_OK;
}

/* May come after the owner closed; the memory goes when queued ops are done with it. */
void tess__hostdev_event_destroy(void *bd, tess__event *ev) {
    (void)bd;
    if (!ev) return;
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    event_unref_locked(ev);
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
}

/* event_record and stream_wait: one op on ev queued on `stream`, its (stream, gen) taken
 * under the stream's lock and ev_mu, so that a record's generation and its place in the
 * FIFO agree. A record: this device's events only, gen = ++recorded. A wait: the latest
 * record as of now (a later re-record does not move it); nothing is queued when that is
 * reached, was never recorded or failed (skipped: the wait never hangs on a dead device). */
static int queue_event_op(struct dev *d, int stream, tess__event *ev, enum op_kind kind,
                          const char *hook) {
    if (!live(d)) return dead(d, hook);
    int rc = check_stream(d, stream, hook);
    if (rc) return rc;
    if (!ev) return tess__fail(TESS_EINVAL, "%s: %s: NULL event", d->name, hook);
    struct op *op = tess__hostdev_op_new(kind);
    if (!op) return tess__fail(TESS_ENOMEM, "%s: %s: out of memory", d->name, hook);
    struct stream *s = &d->s[stream];
    pthread_mutex_lock(&s->mu);
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    int queue;
    if (kind == OP_RECORD) {
        queue = ev->owner == d;
        if (queue) op->ev.stream = ev->rec_stream = stream, op->ev.gen = ++ev->recorded;
    } else {
        op->ev.stream = ev->rec_stream;
        op->ev.gen = ev->recorded;
        queue = op->ev.gen > 0 && ev->done[op->ev.stream] < op->ev.gen && !ev->failed;
    }
    if (queue) op->ev.ev = ev, ev->refs++;
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
    if (queue) append_locked(s, op);
    pthread_mutex_unlock(&s->mu);
    if (queue) return TESS_OK;
    free(op);
    if (kind == OP_WAIT) return TESS_OK;
    return tess__fail(TESS_EINVAL, "%s: event_record: the event belongs to another device",
                      d->name);
}

int tess__hostdev_event_record(void *bd, int stream, tess__event *ev) {
    return queue_event_op(bd, stream, ev, OP_RECORD, "event_record");
}

int tess__hostdev_stream_wait(void *bd, int stream, tess__event *ev) {
    return queue_event_op(bd, stream, ev, OP_WAIT, "stream_wait");
}

int tess__hostdev_event_query(void *bd, tess__event *ev) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "event_query");
    if (!ev) return tess__fail(TESS_EINVAL, "%s: event_query: NULL event", d->name);
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    int failed = ev->failed;
    int reached = ev->recorded == 0 || ev->done[ev->rec_stream] >= ev->recorded;
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
    if (failed)
        return tess__fail(TESS_EDEVICE, "%s: event_query: the event's device failed", d->name);
    return reached ? TESS_OK : TESS_EAGAIN;
}

int tess__hostdev_event_time(void *bd, tess__event *ev, double *t) {
    struct dev *d = bd;
    if (!ev || !t) return tess__fail(TESS_EINVAL, "%s: event_time: NULL argument", d->name);
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    int reached = ev->recorded != 0 && ev->done[ev->rec_stream] >= ev->recorded && !ev->failed;
    *t = ev->t_done;
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
    return reached ? TESS_OK : TESS_EAGAIN;
}

int tess__hostdev_event_sync(void *bd, tess__event *ev) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "event_sync");
    if (!ev) return tess__fail(TESS_EINVAL, "%s: event_sync: NULL event", d->name);
    pthread_mutex_lock(&tess__hostdev.ev_mu);
    uint64_t gen = ev->recorded;
    int rs = ev->rec_stream;
    while (ev->done[rs] < gen && !ev->failed && !atomic_load(&d->failed)) {
        tess__hostdev.ev_waiters++;
        pthread_cond_wait(&tess__hostdev.ev_cv, &tess__hostdev.ev_mu);
        tess__hostdev.ev_waiters--;
    }
    int failed = ev->failed;
    pthread_mutex_unlock(&tess__hostdev.ev_mu);
    if (!live(d)) return dead(d, "event_sync");
    if (failed)
        return tess__fail(TESS_EDEVICE, "%s: event_sync: the event's device failed", d->name);
    return TESS_OK;
}
