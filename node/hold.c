/* node/hold.c: held data (tess_hold, docs/held.md). A held matrix is a cache space of its
 * own whose tiles, a T x T grid anchored at its first element, stay on the devices across
 * calls; GEMM jobs name them through views (struct tess__hview) and write them in place,
 * leaving them dirty; syncs are served by the device workers, which own their streams
 * (tess__hold_serve). Owns the registry (rt->holds under rt->hold_mu, a leaf: nothing is
 * called while it is held but the condition variables) and the contract checker.
 * Invariants: held matrices never overlap; a call that touches one without lying inside it
 * finds it written back (and, if it writes, without device copies) before it runs.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "node.h"

/* The calls that last wrote a held tile and read it since (hold.c's dependency tables). */
struct tdep {
    struct tess__task *writer;
    struct tess__task **rd;
    int nrd, cap;
};

/* An asynchronous call not yet reaped. */
struct tess__async {
    struct tess__async *next;
    struct tess__job *job;
    void (*release)(void *);
    void *arg;
    uint64_t space[3];
    char desc[224];
};

struct tess__hold {
    struct tess__hold *next;
    uint64_t space;
    char *base;
    int64_t ld, rows, cols, T, mt, nt;
    int64_t TR; /* tile rows: T, or rows for a hold of column strips (tess__hold_strips) */
    tess_dtype_t dt;
    size_t es;
    uint64_t *sum;      /* TESSERA_HOLD_CHECK: per tile, 0 = to be recorded */
    bool rebase;        /* after tess_invalidate: record every tile at the next use */
    unsigned long uses; /* calls that used it since tess_hold (the checker's report) */
    struct tdep *dep;   /* per tile (rt->dep_mu) */
    int err;            /* first error of an asynchronous call on it, not yet reported */
    char msg[512];
    int nlater; /* later calls on it that failed because an earlier one did */
};

#define HOLD_EDGE_N 32768 /* tile 0: the edge the runtime gives a square GEMM of this order */

static _Atomic int g_holds; /* held matrices over every runtime */
static void async_reap(struct tess__rt *rt, uint64_t space, bool block);
static _Atomic uint64_t n_overlapped;
static _Atomic int g_unreported; /* runtimes with an asynchronous error tess_wait has not said */

uint64_t tess__hold_overlapped(void) { return atomic_load(&n_overlapped); }

bool tess__holds_any(void) { return atomic_load_explicit(&g_holds, memory_order_relaxed) > 0; }

void tess__hview_tile(const struct tess__hview *v, int64_t r, int64_t c, struct tess__tile *out,
                      int64_t *ro, int64_t *co) {
    int64_t R = v->r0 + r, C = v->c0 + c, ti = R / v->TR, tj = C / v->T;
    memset(out, 0, sizeof *out);
    out->key.space = v->space;
    out->key.addr = (uintptr_t)(v->base + (size_t)(ti * v->TR + tj * v->T * v->ld) * v->es);
    out->key.ld = v->ld;
    out->key.rows = (int32_t)TESS__MIN(v->TR, v->rows - ti * v->TR);
    out->key.cols = (int32_t)TESS__MIN(v->T, v->cols - tj * v->T);
    out->key.esize = v->es;
    out->home = TESS__HOME_HOST;
    *ro = R - ti * v->TR;
    *co = C - tj * v->T;
}

/* ---- the registry -------------------------------------------------------------------- */

void tess__holds_init(struct tess__rt *rt) {
    pthread_mutex_init(&rt->hold_mu, NULL);
    pthread_cond_init(&rt->hold_cv, NULL);
    pthread_mutex_init(&rt->dep_mu, NULL);
    pthread_mutex_init(&rt->async_mu, NULL);
}

static void written_back(void *arg, const struct tess__tile_key *key);
static bool rewrite_pending(void *arg, const struct tess__tile_key *key);

void tess__holds_wire(struct tess__rt *rt) {
    if (rt->cfg.hold_check) {
        rt->cache.written_back = written_back;
        rt->cache.written_back_arg = rt;
    }
    rt->cache.rewrite_pending = rewrite_pending;
    rt->cache.rewrite_pending_arg = rt;
}

static void hold_free(struct tess__hold *h) {
    if (h->dep)
        for (int64_t t = 0; t < h->mt * h->nt; t++) free(h->dep[t].rd);
    free(h->dep);
    free(h->sum);
    free(h);
}

/* Byte range [lo, hi) a column-major rows x cols array spans. */
static void span(const void *X, int64_t rows, int64_t cols, int64_t ld, size_t es, uintptr_t *lo,
                 uintptr_t *hi) {
    *lo = (uintptr_t)X;
    *hi = *lo + ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * es;
}

bool tess__hview_overlaps(const struct tess__hview *v, const void *X, int64_t rows, int64_t cols,
                          int64_t ld, size_t es) {
    uintptr_t lo, hi, hlo, hhi;
    span(X, rows, cols, ld, es, &lo, &hi);
    span(v->base, v->rows, v->cols, v->ld, v->es, &hlo, &hhi);
    return lo < hhi && hlo < hi;
}

static struct tess__hold *find_base(struct tess__rt *rt, const void *A) {
    for (struct tess__hold *h = rt->holds; h; h = h->next)
        if (h->base == A) return h;
    return NULL;
}

/* Whether any device with its own memory is live: without one nothing is kept. */
static bool has_memory(const struct tess__rt *rt) {
    for (int i = 0; i < rt->ndev; i++)
        if (!(rt->dev[i]->desc.caps & TESS__CAP_UNIFIED) && !atomic_load(&rt->dev[i]->failed))
            return true;
    return false;
}

/* ---- the contract checker (TESSERA_HOLD_CHECK) ----------------------------------------- */

static uint64_t tile_sum(const struct tess__hold *h, int64_t ti, int64_t tj) {
    int64_t r = TESS__MIN(h->TR, h->rows - ti * h->TR), c = TESS__MIN(h->T, h->cols - tj * h->T);
    const unsigned char *p = (const unsigned char *)h->base +
                             (size_t)(ti * h->TR + tj * h->T * h->ld) * h->es;
    uint64_t x = 1469598103934665603ULL;
    size_t w = (size_t)r * h->es;
    for (int64_t j = 0; j < c; j++, p += (size_t)h->ld * h->es) {
        uint64_t y = 0;
        for (size_t b = 0; b < w; b += 8) {
            uint64_t v = 0;
            memcpy(&v, p + b, TESS__MIN(8, w - b));
            y = (y ^ v) * 0x100000001b3ULL;
        }
        x = (x ^ y) * 0x9e3779b97f4a7c15ULL;
    }
    return x ? x : 1;
}

static void record_all(struct tess__hold *h) {
    for (int64_t t = 0; t < h->mt * h->nt; t++) h->sum[t] = tile_sum(h, t % h->mt, t / h->mt);
    h->rebase = false;
}

/* TESS_OK, or TESS_EINVAL naming the range, the first tile the host changed and the call. */
static int check(struct tess__rt *rt, struct tess__hold *h, const char *fn) {
    if (!h->sum) return TESS_OK;
    h->uses++;
    if (h->rebase) {
        record_all(h);
        return TESS_OK;
    }
    for (int64_t t = 0; t < h->mt * h->nt; t++) {
        uint64_t now = tile_sum(h, t % h->mt, t / h->mt);
        if (h->sum[t] == 0) h->sum[t] = now;
        if (h->sum[t] != now)
            return tess__fail(TESS_EINVAL,
                              "%s: held range %p (%lld x %lld, ld %lld): the host wrote tile "
                              "(%lld, %lld) (rows %lld.., cols %lld..) while it was held, without "
                              "tess_invalidate (seen at use %lu since tess_hold)",
                              fn, (void *)h->base, (long long)h->rows, (long long)h->cols,
                              (long long)h->ld, (long long)(t % h->mt), (long long)(t / h->mt),
                              (long long)(t % h->mt * h->TR), (long long)(t / h->mt * h->T),
                              h->uses);
    }
    (void)rt;
    return TESS_OK;
}

/* Cache hook (under the cache lock): tessera wrote a held tile back; record it anew. */
static void written_back(void *arg, const struct tess__tile_key *key) {
    struct tess__rt *rt = arg;
    pthread_mutex_lock(&rt->hold_mu);
    for (struct tess__hold *h = rt->holds; h; h = h->next)
        if (h->space == key->space && h->sum) {
            size_t off = (size_t)((const char *)key->addr - h->base) / h->es;
            int64_t ti = (int64_t)(off % (size_t)h->ld) / h->TR,
                    tj = (int64_t)(off / (size_t)h->ld) / h->T;
            h->sum[ti + tj * h->mt] = 0;
        }
    pthread_mutex_unlock(&rt->hold_mu);
}

/* ---- syncs, served by the workers ------------------------------------------------------- */

bool tess__hold_serve(struct tess__dev *d) {
    struct tess__rt *rt = d->rt;
    if (atomic_load(&d->sync_posted) == atomic_load(&d->sync_served)) return false;
    pthread_mutex_lock(&rt->hold_mu);
    bool posted = d->sync_posted != d->sync_served;
    uint64_t space = d->sync_space;
    int mode = d->sync_drop;
    struct tess__wb_range rg = d->sync_range;
    bool ranged = d->sync_ranged;
    pthread_mutex_unlock(&rt->hold_mu);
    if (!posted) return false;
    int rc = TESS_OK;
    if (d->nwbh) {
        /* this device's write-behind lands first: no two write-backs of a tile in flight */
        int wr = d->ops->event_sync(d->bd, d->wbh_ev);
        tess__worker_behind_end(d, wr == TESS_OK);
    }
    if (!d->sync_ev && d->ops->event_create(d->bd, &d->sync_ev)) d->sync_ev = NULL;
    if (!d->sync_ev)
        rc = tess__fail(TESS_EDEVICE, "device %d: cannot create an event", d->id);
    else
        rc = tess__cache_writeback(&rt->cache, d->id, 0, space, mode, ranged ? &rg : NULL,
                                   d->sync_ev);
    if (rc == TESS_EDEVICE || (rc && rc != TESS_ENOMEM))
        tess__worker_fail(d, TESS_EDEVICE, "writing back held tiles");
    pthread_mutex_lock(&rt->hold_mu);
    d->sync_rc = rc;
    d->sync_served = d->sync_posted;
    pthread_cond_broadcast(&rt->hold_cv);
    pthread_mutex_unlock(&rt->hold_mu);
    return true;
}

void tess__hold_dev_failed(struct tess__dev *d) {
    pthread_mutex_lock(&d->rt->hold_mu);
    atomic_store(&d->dropped, 1);
    pthread_cond_broadcast(&d->rt->hold_cv);
    pthread_mutex_unlock(&d->rt->hold_mu);
}

/* Write back h's dirty tiles on every live device (drop: and drop their copies); rg (not
 * NULL): only the tiles that meet it. Then TESS_EDEVICE naming the range if tiles of h were
 * lost with a failed device. fn names the caller. One sync of a runtime at a time. */
static int sync_round(struct tess__rt *rt, struct tess__hold *h, int mode,
                      const struct tess__wb_range *rg);

/* Devices failed whose copies have left the directory: a sync that went on once a device
 * was merely failing would find its tiles still held there (neither lost nor written). */
static int failed_devices(const struct tess__rt *rt) {
    int n = 0;
    for (int i = 0; i < rt->ndev; i++) n += atomic_load(&rt->dev[i]->dropped) != 0;
    return n;
}

static int sync_hold(struct tess__rt *rt, struct tess__hold *h, int mode, const char *fn,
                     const struct tess__wb_range *rg) {
    async_reap(rt, h->space, true); /* its asynchronous calls first */
    pthread_mutex_lock(&rt->hold_mu);
    while (rt->sync_busy) pthread_cond_wait(&rt->hold_cv, &rt->hold_mu);
    rt->sync_busy = true;
    int rc;
    /* A device that fails during a round leaves the dirty tiles it was the lowest holder of
     * to the next holder, which has already served the round: another round, until one
     * passes with no device failing. */
    for (int before = failed_devices(rt);;) {
        pthread_mutex_unlock(&rt->hold_mu);
        rc = sync_round(rt, h, mode, rg);
        pthread_mutex_lock(&rt->hold_mu);
        int after = failed_devices(rt);
        if (after == before) break;
        before = after;
    }
    rt->sync_busy = false;
    pthread_cond_broadcast(&rt->hold_cv);
    pthread_mutex_unlock(&rt->hold_mu);
    if (mode == TESS__WB_WAIT) return TESS_OK;
    struct tess__tile_key first;
    size_t lost = tess__cache_lost(&rt->cache, h->space, &first);
    if (lost) {
        size_t off = (size_t)((const char *)first.addr - h->base) / h->es;
        return tess__fail(TESS_EDEVICE,
                          "%s: held range %p (%lld x %lld, ld %lld): %zu tile(s) were lost with a "
                          "failed device that held their only current copy, the first at rows "
                          "%lld.., cols %lld..; the host range holds, for those tiles, the "
                          "contents last written back",
                          fn, (void *)h->base, (long long)h->rows, (long long)h->cols,
                          (long long)h->ld, lost, (long long)(off % (size_t)h->ld),
                          (long long)(off / (size_t)h->ld));
    }
    if (rc == TESS_EDEVICE) rc = TESS_OK; /* a device left, but nothing of h was lost */
    if (rc)
        return tess__fail(rc == TESS_ENOMEM ? rc : TESS_EDEVICE,
                          "%s: held range %p: a device failed writing it back", fn,
                          (void *)h->base);
    if (h->sum && mode == TESS__WB_SYNC) record_all(h);
    return TESS_OK;
}

/* One round of a sync (sync_hold holds rt->sync_busy): posted to every live device, waited
 * for; the first device's error. */
static int sync_round(struct tess__rt *rt, struct tess__hold *h, int mode,
                      const struct tess__wb_range *rg) {
    pthread_mutex_lock(&rt->hold_mu);
    for (int i = 0; i < rt->ndev; i++) {
        struct tess__dev *d = rt->dev[i];
        if (d->desc.caps & TESS__CAP_UNIFIED) continue;
        d->sync_space = h->space;
        d->sync_drop = mode;
        d->sync_ranged = rg != NULL;
        if (rg) d->sync_range = *rg;
        d->sync_rc = TESS_OK;
        d->sync_posted++;
    }
    pthread_mutex_unlock(&rt->hold_mu);
    pthread_mutex_lock(&rt->mu);
    pthread_cond_broadcast(&rt->work);
    pthread_mutex_unlock(&rt->mu);
    int rc = TESS_OK;
    pthread_mutex_lock(&rt->hold_mu);
    for (int i = 0; i < rt->ndev; i++) {
        struct tess__dev *d = rt->dev[i];
        if (d->desc.caps & TESS__CAP_UNIFIED) continue;
        while (d->sync_served != d->sync_posted && !atomic_load(&d->dropped)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 10000000;
            if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
            pthread_cond_timedwait(&rt->hold_cv, &rt->hold_mu, &ts);
        }
        if (d->sync_served == d->sync_posted && d->sync_rc && !rc) rc = d->sync_rc;
        d->sync_served = d->sync_posted; /* a failed device's request is void */
    }
    pthread_mutex_unlock(&rt->hold_mu);
    return rc;
}

/* ---- dependencies across calls, by held tile --------------------------------------------- */

static struct tess__hold *hold_of(struct tess__rt *rt, uint64_t space) {
    for (struct tess__hold *h = rt->holds; h; h = h->next)
        if (h->space == space) return h;
    return NULL;
}

/* The record of held tile key (a tile of h's grid). */
static struct tdep *rec_of(struct tess__hold *h, const struct tess__tile_key *key) {
    size_t off = (size_t)((const char *)key->addr - h->base) / h->es;
    int64_t ti = (int64_t)(off % (size_t)h->ld) / h->TR, tj = (int64_t)(off / (size_t)h->ld) / h->T;
    return &h->dep[ti + tj * h->mt];
}

/* Cache hook (under the cache lock; write-behind's scan): whether a task that has not
 * finished will write held tile key again. The hold cannot go meanwhile: its release
 * forgets its tiles under the cache lock before freeing it. */
static bool rewrite_pending(void *arg, const struct tess__tile_key *key) {
    struct tess__rt *rt = arg;
    if (atomic_load(&rt->batching) > 0) return true; /* its next writer may be on its way */
    pthread_mutex_lock(&rt->hold_mu);
    struct tess__hold *h = hold_of(rt, key->space);
    pthread_mutex_unlock(&rt->hold_mu);
    if (!h) return false;
    pthread_mutex_lock(&rt->dep_mu);
    const struct tess__task *w = rec_of(h, key)->writer;
    bool pending = w && !w->dep_done;
    pthread_mutex_unlock(&rt->dep_mu);
    return pending;
}

static bool grow(void **p, int *cap, int n, size_t es) {
    if (n < *cap) return true;
    int nc = *cap ? 2 * *cap : 4;
    void *q = realloc(*p, (size_t)nc * es);
    if (!q) return false;
    *p = q, *cap = nc;
    return true;
}

/* t's job fails because p's job did (its inputs will never be right), naming the first
 * failed call. */
static void inherit_failure(const struct tess__task *p, struct tess__task *t, int st) {
    uint64_t cause = atomic_load(&p->job->cause), none = 0;
    if (!cause) cause = p->job->seq;
    int ok = TESS_OK;
    atomic_compare_exchange_strong(&t->job->cause, &none, cause);
    atomic_compare_exchange_strong(&t->job->status, &ok, st);
}

/* t waits for p (unless p is done, or of t's own job; a done p of a failed job fails t's
 * job at once). false: out of memory. */
static bool dep_on(struct tess__task *p, struct tess__task *t) {
    if (!p || p->job == t->job) return true;
    if (p->dep_done) {
        int st = atomic_load(&p->job->status);
        if (st != TESS_OK) inherit_failure(p, t, st);
        return true;
    }
    if (!grow((void **)&p->dsucc, &p->dsucc_cap, p->ndsucc, sizeof *p->dsucc)) return false;
    p->dsucc[p->ndsucc++] = t;
    atomic_fetch_add(&t->ndeps, 1);
    return true;
}

/* The held tiles task t uses: its output tile (if C is held) and each step's held operand
 * tiles, with their holds; fn(rec, writes, t, arg) for each. false if fn said so. A step's
 * operand counts where its tile is the hold's (a TRSM reads its held A as a or b). */
static bool each_tile(struct tess__hold *const hs[3], struct tess__task *t,
                      bool (*fn)(struct tdep *r, bool writes, struct tess__task *t)) {
    const struct tess__job *job = t->job;
    bool ok = true;
    if (job->hv_c && hs[2]) {
        struct tess__tile ct;
        int64_t ro, co;
        tess__hview_tile(job->hv_c, t->row, t->col, &ct, &ro, &co);
        ok = fn(rec_of(hs[2], &ct.key), true, t);
    }
    for (int s = 0; s < t->nsteps && (job->hv_a || job->hv_b); s++) {
        struct tess__step st;
        job->ops->step(job, t, s, &st);
        if (job->hv_a && hs[0] && st.nops > 0 && st.a.key.space == hs[0]->space)
            ok = fn(rec_of(hs[0], &st.a.key), false, t) && ok;
        if (job->hv_b && hs[1] && st.nops > 1 && st.b.key.space == hs[1]->space)
            ok = fn(rec_of(hs[1], &st.b.key), false, t) && ok;
    }
    return ok;
}

static bool enter(struct tdep *r, bool writes, struct tess__task *t) {
    bool ok = dep_on(r->writer, t); /* read or write after write */
    if (writes) {
        for (int i = 0; i < r->nrd; i++) ok = dep_on(r->rd[i], t) && ok; /* write after read */
        r->writer = t;
        r->nrd = 0;
    } else if (!(r->nrd > 0 && r->rd[r->nrd - 1] == t)) {
        if (grow((void **)&r->rd, &r->cap, r->nrd, sizeof *r->rd))
            r->rd[r->nrd++] = t;
        else
            ok = false;
    }
    return ok;
}

static bool leave(struct tdep *r, bool writes, struct tess__task *t) {
    if (writes && r->writer == t) r->writer = NULL;
    for (int i = 0; i < r->nrd; i++)
        if (r->rd[i] == t) r->rd[i--] = r->rd[--r->nrd];
    return true;
}

static void holds_of(struct tess__rt *rt, const struct tess__job *job, struct tess__hold *hs[3]) {
    pthread_mutex_lock(&rt->hold_mu);
    hs[0] = job->hv_a ? hold_of(rt, job->hv_a->space) : NULL;
    hs[1] = job->hv_b ? hold_of(rt, job->hv_b->space) : NULL;
    hs[2] = job->hv_c ? hold_of(rt, job->hv_c->space) : NULL;
    pthread_mutex_unlock(&rt->hold_mu);
}

void tess__hold_deps(struct tess__rt *rt, struct tess__job *job) {
    struct tess__hold *hs[3];
    holds_of(rt, job, hs);
    job->seq = atomic_fetch_add(&rt->next_seq, 1) + 1;
    bool ok = true;
    pthread_mutex_lock(&rt->dep_mu);
    for (int i = 0; i < job->ntasks; i++) {
        struct tess__task *t = &job->tasks[i];
        atomic_fetch_add(&t->ndeps, 1); /* the guard, released by tess__rt_submit */
        ok = each_tile(hs, t, enter) && ok;
    }
    pthread_mutex_unlock(&rt->dep_mu);
    if (!ok) {
        /* a dependency could not be recorded: the call fails, its tasks are cancelled */
        int st = TESS_OK;
        atomic_compare_exchange_strong(&job->status, &st, TESS_ENOMEM);
    }
}

void tess__hold_deps_clear(struct tess__rt *rt, struct tess__job *job) {
    struct tess__hold *hs[3];
    holds_of(rt, job, hs);
    pthread_mutex_lock(&rt->dep_mu);
    for (int i = 0; i < job->ntasks; i++) {
        struct tess__task *t = &job->tasks[i];
        each_tile(hs, t, leave);
        free(t->dsucc);
        t->dsucc = NULL;
    }
    pthread_mutex_unlock(&rt->dep_mu);
}

void tess__hold_task_done(struct tess__rt *rt, struct tess__task *t) {
    pthread_mutex_lock(&rt->dep_mu);
    t->dep_done = true;
    struct tess__task **succ = t->dsucc;
    int n = t->ndsucc;
    t->dsucc = NULL;
    t->ndsucc = t->dsucc_cap = 0;
    pthread_mutex_unlock(&rt->dep_mu);
    int st = atomic_load(&t->job->status);
    for (int i = 0; i < n; i++) {
        struct tess__task *s = succ[i];
        if (st != TESS_OK) inherit_failure(t, s, st); /* the later call fails, naming this one */
        if (atomic_fetch_sub(&s->ndeps, 1) == 1) tess__rt_queue_released(rt, s);
    }
    free(succ);
}

/* ---- asynchronous calls --------------------------------------------------------------------- */

#define ASYNC_MAX 4096 /* calls in flight before a new one waits for the oldest */

static bool touches(const struct tess__async *a, uint64_t space) {
    return a->space[0] == space || a->space[1] == space || a->space[2] == space;
}

/* Record a failed asynchronous call's error for the waits that report it (the runtime's,
 * tess_wait, and each held matrix it used, tess_sync ...). */
static void async_failed(struct tess__rt *rt, const struct tess__async *a, int rc, uint64_t seq,
                         uint64_t cause) {
    char msg[512];
    if (cause)
        snprintf(
            msg, sizeof msg,
            "%.224s (asynchronous call %llu) failed: it uses tiles that asynchronous call %llu "
            "was to produce, and that call failed; C is unspecified",
            a->desc, (unsigned long long)seq, (unsigned long long)cause);
    else
        snprintf(msg, sizeof msg, "%.224s (asynchronous call %llu) failed: %.200s", a->desc,
                 (unsigned long long)seq, tess_last_error());
    pthread_mutex_lock(&rt->async_mu);
    if (!rt->async_err) {
        atomic_fetch_add(&g_unreported, 1);
        rt->async_err = rc;
        memcpy(rt->async_msg, msg, sizeof msg);
    } else if (cause) {
        rt->async_nlater++;
    }
    pthread_mutex_unlock(&rt->async_mu);
    pthread_mutex_lock(&rt->hold_mu);
    for (int i = 0; i < 3; i++) {
        struct tess__hold *h = a->space[i] ? hold_of(rt, a->space[i]) : NULL;
        if (h && !h->err) {
            h->err = rc;
            memcpy(h->msg, msg, sizeof msg);
        } else if (h && cause) {
            h->nlater++;
        }
    }
    pthread_mutex_unlock(&rt->hold_mu);
}

/* Reap the asynchronous calls done by now and, when block, wait for and reap those that use
 * space (0: every one). Their errors are recorded, not returned. */
static void async_reap(struct tess__rt *rt, uint64_t space, bool block) {
    for (;;) {
        struct tess__async *a = NULL;
        pthread_mutex_lock(&rt->async_mu);
        for (struct tess__async **pp = &rt->async; *pp; pp = &(*pp)->next)
            if (atomic_load(&(*pp)->job->remaining) == 0 ||
                (block && (!space || touches(*pp, space)))) {
                a = *pp;
                *pp = a->next;
                rt->nasync--;
                break;
            }
        pthread_mutex_unlock(&rt->async_mu);
        if (!a) return;
        struct tess__job *job = a->job;
        int rc = tess__rt_wait(rt, job);
        uint64_t seq = job->seq, cause = atomic_load(&job->cause);
        double t0 = (double)atomic_load(&job->t_first_ns) * 1e-9;
        double t1 = (double)atomic_load(&job->t_end_ns) * 1e-9;
        pthread_mutex_lock(&rt->async_mu);
        if (t0 > 0 && t0 < rt->last_end) atomic_fetch_add(&n_overlapped, 1);
        if (t1 > rt->last_end) rt->last_end = t1;
        pthread_mutex_unlock(&rt->async_mu);
        if (rc) async_failed(rt, a, rc, seq, cause);
        a->release(a->arg);
        free(a);
    }
}

int tess__hold_async(struct tess__rt *rt, struct tess__job *job, void (*release)(void *), void *arg,
                     const char *desc) {
    struct tess__async *a = calloc(1, sizeof *a);
    if (!a) {
        /* cannot be reaped later: wait for it now */
        int rc = tess__rt_wait(rt, job);
        release(arg);
        return rc;
    }
    a->job = job, a->release = release, a->arg = arg;
    a->space[0] = job->hv_a ? job->hv_a->space : 0;
    a->space[1] = job->hv_b ? job->hv_b->space : 0;
    a->space[2] = job->hv_c ? job->hv_c->space : 0;
    snprintf(a->desc, sizeof a->desc, "%s", desc);
    pthread_mutex_lock(&rt->async_mu);
    struct tess__async **pp = &rt->async;
    while (*pp) pp = &(*pp)->next;
    *pp = a;
    int n = ++rt->nasync;
    pthread_mutex_unlock(&rt->async_mu);
    async_reap(rt, 0, false);
    while (n > ASYNC_MAX) { /* the oldest in flight first */
        pthread_mutex_lock(&rt->async_mu);
        uint64_t sp = rt->async ? rt->async->space[2] : 0;
        n = rt->nasync;
        pthread_mutex_unlock(&rt->async_mu);
        if (n <= ASYNC_MAX || !sp) break;
        async_reap(rt, sp, true);
    }
    return TESS_OK;
}

/* ---- what calls see ---------------------------------------------------------------------- */

/* TESSERA_HOLD_CHECK: before h's host tiles are compared nothing of tessera may be writing
 * them: its asynchronous calls are done and the devices' write-backs in flight landed. */
static void quiesce(struct tess__rt *rt, struct tess__hold *h) {
    if (h->sum) (void)sync_hold(rt, h, TESS__WB_WAIT, "check", NULL);
}

static void view_of(const struct tess__hold *h, int64_t r0, int64_t c0, struct tess__hview *v) {
    *v = (struct tess__hview){.space = h->space,
                              .base = h->base,
                              .ld = h->ld,
                              .rows = h->rows,
                              .cols = h->cols,
                              .T = h->T,
                              .TR = h->TR,
                              .es = (uint32_t)h->es,
                              .r0 = r0,
                              .c0 = c0};
}

/* Where an operand starting at address lo with leading dimension ld and element size es
 * starts in h's layout: (*r0, *c0), or false when it is not laid out as h is. */
static bool coords_in(const struct tess__hold *h, uintptr_t lo, int64_t ld, size_t es, int64_t *r0,
                      int64_t *c0) {
    size_t off = (size_t)(lo - (uintptr_t)h->base);
    *r0 = *c0 = 0;
    if (lo < (uintptr_t)h->base || ld != h->ld || es != h->es || off % es) return false;
    off /= es;
    *r0 = (int64_t)(off % (size_t)ld), *c0 = (int64_t)(off / (size_t)ld);
    return true;
}

static int view(struct tess__rt *rt, const char *fn, const void *X, int64_t rows, int64_t cols,
                int64_t ld, size_t es, struct tess__hview *v, bool strips) {
    if (!tess__holds_any() || rows <= 0 || cols <= 0) return 0;
    uintptr_t lo, hi;
    span(X, rows, cols, ld, es, &lo, &hi);
    pthread_mutex_lock(&rt->hold_mu);
    struct tess__hold *h = rt->holds;
    for (; h; h = h->next) {
        uintptr_t hlo, hhi;
        span(h->base, h->rows, h->cols, h->ld, h->es, &hlo, &hhi);
        if (lo < hhi && hlo < hi) break;
    }
    if (h && h->sum) { /* h stays while a call uses it (the contract) */
        pthread_mutex_unlock(&rt->hold_mu);
        quiesce(rt, h);
        pthread_mutex_lock(&rt->hold_mu);
    }
    int r = 0;
    if (h) {
        int64_t r0, c0;
        r = -1;
        if (coords_in(h, lo, ld, es, &r0, &c0) && has_memory(rt)) {
            /* a hold of column strips serves only the call that made it (its reads) */
            if (r0 + rows <= h->rows && c0 + cols <= h->cols && (strips || h->TR == h->T)) {
                view_of(h, r0, c0, v);
                r = 1;
            }
        }
        int rc = check(rt, h, fn);
        if (rc) r = rc < -1 ? rc : -2;
    }
    pthread_mutex_unlock(&rt->hold_mu);
    return r;
}

int tess__hold_view(struct tess__rt *rt, const char *fn, const void *X, int64_t rows, int64_t cols,
                    int64_t ld, size_t es, struct tess__hview *v) {
    return view(rt, fn, X, rows, cols, ld, es, v, false);
}

int tess__hold_view_read(struct tess__rt *rt, const char *fn, const void *X, int64_t rows,
                         int64_t cols, int64_t ld, size_t es, struct tess__hview *v) {
    return view(rt, fn, X, rows, cols, ld, es, v, true);
}

int tess__hold_unheld(struct tess__rt *rt, const char *fn, const void *X, int64_t rows,
                      int64_t cols, int64_t ld, size_t es, bool written) {
    if (!tess__holds_any() || rows <= 0 || cols <= 0) return TESS_OK;
    uintptr_t lo, hi;
    span(X, rows, cols, ld, es, &lo, &hi);
    int rc = TESS_OK;
    /* holds do not change while a call uses them (the contract): walk without the lock
     * held across the syncs */
    pthread_mutex_lock(&rt->hold_mu);
    struct tess__hold *h = rt->holds;
    pthread_mutex_unlock(&rt->hold_mu);
    for (; h && !rc; h = h->next) {
        uintptr_t hlo, hhi;
        span(h->base, h->rows, h->cols, h->ld, h->es, &hlo, &hhi);
        if (!(lo < hhi && hlo < hi)) continue;
        quiesce(rt, h);
        pthread_mutex_lock(&rt->hold_mu);
        rc = check(rt, h, fn);
        pthread_mutex_unlock(&rt->hold_mu);
        /* only the tiles the range meets, where it lies in h's layout */
        struct tess__wb_range rg = {.base = (uintptr_t)h->base, .ld = h->ld, .es = h->es};
        bool in = coords_in(h, lo, ld, es, &rg.r0, &rg.c0);
        rg.r1 = rg.r0 + rows, rg.c1 = rg.c0 + cols;
        if (!rc)
            rc = sync_hold(rt, h, written ? TESS__WB_DROP : TESS__WB_SYNC, fn, in ? &rg : NULL);
        if (!rc && written && h->sum) h->rebase = true;
    }
    return rc;
}

void tess__holds_stop(struct tess__rt *rt) {
    async_reap(rt, 0, true);
    while (rt->holds) {
        struct tess__hold *h = rt->holds;
        (void)sync_hold(rt, h, TESS__WB_DROP, "tess_finalize", NULL);
        tess__cache_forget(&rt->cache, h->space);
        rt->holds = h->next;
        hold_free(h);
        atomic_fetch_sub(&g_holds, 1);
    }
    if (rt->async_err) atomic_fetch_sub(&g_unreported, 1);
    rt->async_err = 0;
}

void tess__holds_destroy(struct tess__rt *rt) {
    pthread_cond_destroy(&rt->hold_cv);
    pthread_mutex_destroy(&rt->hold_mu);
    pthread_mutex_destroy(&rt->dep_mu);
    pthread_mutex_destroy(&rt->async_mu);
}

/* ---- the public API --------------------------------------------------------------------- */

/* A new hold of rows x cols at A (arguments checked), tiles tile x tile, or column strips
 * rows x tile (strips); *out: the hold, NULL on error. */
static int hold_new(struct tess__rt *rt, tess_dtype_t dtype, void *A, int64_t ld, int64_t rows,
                    int64_t cols, int64_t tile, bool strips, struct tess__hold **out) {
    size_t es = tess__dtypes[dtype].size;
    *out = NULL;
    struct tess__hold *h = calloc(1, sizeof *h);
    if (!h) return tess__fail(TESS_ENOMEM, "tess_hold: out of host memory");
    h->base = A, h->ld = ld, h->rows = rows, h->cols = cols, h->dt = dtype, h->es = es;
    /* tile 0: one edge per precision for every hold of the runtime, so that the grids of
     * the matrices one call uses line up (the edge of a large square GEMM; a matrix
     * smaller than it is one clipped tile) */
    h->T = tile ? tile : tess__rt_tile(rt, dtype, HOLD_EDGE_N, HOLD_EDGE_N, HOLD_EDGE_N, 1.0);
    h->TR = strips ? rows : h->T;
    h->mt = TESS__CEILDIV(rows, h->TR), h->nt = TESS__CEILDIV(cols, h->T);
    h->space = atomic_fetch_add(&rt->next_space, 1);
    h->dep = calloc((size_t)(h->mt * h->nt), sizeof *h->dep);
    if (!h->dep) {
        free(h);
        return tess__fail(TESS_ENOMEM, "tess_hold: out of host memory");
    }
    if (rt->cfg.hold_check) {
        h->sum = calloc((size_t)(h->mt * h->nt), sizeof *h->sum);
        if (!h->sum) {
            hold_free(h);
            return tess__fail(TESS_ENOMEM, "tess_hold: out of host memory");
        }
        record_all(h);
    }
    uintptr_t lo, hi;
    span(A, rows, cols, ld, es, &lo, &hi);
    pthread_mutex_lock(&rt->hold_mu);
    /* a hold of strips may lie over a held matrix its call wrote back and dropped first
     * (tess__hold_unheld): it comes first in the list, so views find it, and no view is
     * ever served from it */
    for (struct tess__hold *o = rt->holds; o && !strips; o = o->next) {
        uintptr_t olo, ohi;
        span(o->base, o->rows, o->cols, o->ld, o->es, &olo, &ohi);
        if (lo < ohi && olo < hi) {
            pthread_mutex_unlock(&rt->hold_mu);
            hold_free(h);
            return tess__fail(TESS_EINVAL,
                              "tess_hold: argument 2 (A = %p, %lld x %lld, ld %lld) overlaps the "
                              "held range %p (%lld x %lld, ld %lld)",
                              A, (long long)rows, (long long)cols, (long long)ld, (void *)o->base,
                              (long long)o->rows, (long long)o->cols, (long long)o->ld);
        }
    }
    h->next = rt->holds;
    rt->holds = h;
    atomic_fetch_add(&g_holds, 1);
    pthread_mutex_unlock(&rt->hold_mu);
    *out = h;
    return TESS_OK;
}

int tess_hold(tess_dtype_t dtype, void *A, int64_t ld, int64_t rows, int64_t cols, int64_t tile) {
    tess__clear_error();
#define BAD(...) tess__fail(TESS_EINVAL, "tess_hold: argument " __VA_ARGS__)
    if ((unsigned)dtype > TESS_Z) return BAD("1 (dtype = %d) must be a tess_dtype_t", (int)dtype);
    if (!A) return BAD("2 (A) must not be NULL");
    if (rows < 1) return BAD("4 (rows = %lld) must be >= 1", (long long)rows);
    if (ld < rows)
        return BAD("3 (ld = %lld) must be >= rows = %lld", (long long)ld, (long long)rows);
    if (cols < 1) return BAD("5 (cols = %lld) must be >= 1", (long long)cols);
    if (tile < 0 || tile > 65536)
        return BAD("6 (tile = %lld) must be in 0..65536", (long long)tile);
    size_t es = tess__dtypes[dtype].size;
    if (!tess__span_ok(A, rows, cols, ld, es, NULL))
        return BAD("2 (A: %lld x %lld, ld %lld) spans more than the address space", (long long)rows,
                   (long long)cols, (long long)ld);
#undef BAD
    struct tess__rt *rt;
    int rc = tess__rt_get(&rt);
    if (rc) return rc;
    struct tess__hold *h;
    rc = hold_new(rt, dtype, A, ld, rows, cols, tile, false, &h);
    tess__rt_put(rt);
    return rc;
}

int tess__hold_strips(struct tess__rt *rt, tess_dtype_t dtype, void *A, int64_t ld, int64_t rows,
                      int64_t cols, int64_t tile, struct tess__hview *v) {
    struct tess__hold *h;
    int rc = hold_new(rt, dtype, A, ld, rows, cols, tile, true, &h);
    if (!rc) view_of(h, 0, 0, v);
    return rc;
}

/* tess_sync (0), tess_invalidate (1), tess_release (2). */
static int sync_api(const char *fn, const void *A, int how) {
    tess__clear_error();
    if (!A) return tess__fail(TESS_EINVAL, "%s: argument 1 (A) must not be NULL", fn);
    struct tess__rt *rt;
    int rc = tess__rt_get(&rt);
    if (rc) return rc;
    pthread_mutex_lock(&rt->hold_mu);
    struct tess__hold *h = find_base(rt, A);
    pthread_mutex_unlock(&rt->hold_mu);
    if (h) quiesce(rt, h);
    pthread_mutex_lock(&rt->hold_mu);
    if (h) rc = check(rt, h, fn);
    pthread_mutex_unlock(&rt->hold_mu);
    if (!h) {
        tess__rt_put(rt);
        return tess__fail(TESS_EINVAL, "%s: argument 1 (A = %p) is not the start of a held range",
                          fn, A);
    }
    if (!rc) rc = sync_hold(rt, h, how > 0 ? TESS__WB_DROP : TESS__WB_SYNC, fn, NULL);
    /* an asynchronous call on it failed: that is the first thing to say */
    pthread_mutex_lock(&rt->hold_mu);
    int aerr = h->err, nlater = h->nlater;
    char amsg[512];
    memcpy(amsg, h->msg, sizeof amsg);
    h->err = h->nlater = 0;
    pthread_mutex_unlock(&rt->hold_mu);
    if (aerr)
        rc = tess__fail(aerr, "%s: %.440s; %d later call(s) on it failed for that", fn, amsg,
                        nlater);
    if (how > 0) {
        /* the host's contents count from now on, whatever was lost */
        tess__cache_forget(&rt->cache, h->space);
        if (h->sum) h->rebase = true;
    }
    if (how == 2) {
        pthread_mutex_lock(&rt->hold_mu);
        struct tess__hold **pp = &rt->holds;
        while (*pp != h) pp = &(*pp)->next;
        *pp = h->next;
        pthread_mutex_unlock(&rt->hold_mu);
        hold_free(h);
        atomic_fetch_sub(&g_holds, 1);
    }
    tess__rt_put(rt);
    return rc;
}

int tess_sync(const void *A) { return sync_api("tess_sync", A, 0); }
int tess_invalidate(const void *A) { return sync_api("tess_invalidate", A, 1); }
int tess_release(const void *A) { return sync_api("tess_release", A, 2); }

int tess_wait(void) {
    tess__clear_error();
    if (!tess__holds_any() && !atomic_load(&g_unreported)) return TESS_OK;
    struct tess__rt *rt;
    int rc = tess__rt_get(&rt);
    if (rc) return rc;
    async_reap(rt, 0, true);
    pthread_mutex_lock(&rt->async_mu);
    rc = rt->async_err;
    int nlater = rt->async_nlater;
    char msg[512];
    memcpy(msg, rt->async_msg, sizeof msg);
    if (rc) atomic_fetch_sub(&g_unreported, 1);
    rt->async_err = rt->async_nlater = 0;
    pthread_mutex_unlock(&rt->async_mu);
    tess__rt_put(rt);
    return rc ? tess__fail(rc, "tess_wait: %.440s; %d later call(s) failed for that", msg, nlater)
              : TESS_OK;
}
