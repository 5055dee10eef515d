/* tests/test_cache_fault.c: cache/cache.c's handling of copies filled, directly or down a
 * chain, from a copy whose device failed before that copy's fill completed: the poison hook,
 * the directory, tess__cache_lost and the write-back of a taken tile; and a write-behind
 * that a reader's release must not report landed. The cache runs on a scripted fake
 * backend: each device a FIFO of queued copies, event records and waits, run at once
 * (memcpy at enqueue) or held back until the test completes or fails the device by hand; a
 * wait on a failed device's event is skipped, as the emulated devices do, so a copy behind
 * it copies garbage. Heaps are carved from malloc'd arenas.
 */
#include <stdbool.h>
#include <stdint.h>

#include "harness.h"
#include "../cache/cache.h"

/* Device roles. The take copies from the lowest holder, so the middle device sits below the
 * failing one: the control (nothing fails) then takes the same path as the fault tests. */
enum { TAKER = 0, MIDDLE = 1, FAILING = 2, WRITER = 3, NDEV = 4 };

#define ARENA_BYTES (64 * 1024)
#define HEAP_ALIGN 256
#define TILE 8     /* X is TILE x TILE doubles */
#define HOST_LD 16 /* inside a HOST_LD x TILE host matrix */
#define TILE_BYTES (TILE * TILE * 8)
#define SPACE 42
#define GARBAGE 0xff /* every byte of a fresh arena: doubles that are NaN */
#define QMAX 64
#define EVMAX 256

/* ---- the fake backend -------------------------------------------------------------------- */

enum ev_state { EV_FRESH, EV_PENDING, EV_DONE, EV_FAILED };
struct fake_event {
    int dev;
    enum ev_state state;
    int gen; /* records so far; a queued record completes only the latest */
};

enum op_kind { OP_COPY, OP_RECORD, OP_WAIT };
struct fake_op {
    enum op_kind kind;
    void *dst;
    const void *src;
    size_t dpitch, spitch, width, height;
    struct fake_event *ev;
    int gen;
};

struct fake_dev {
    int id;
    int hold;   /* queued ops wait until fake_complete */
    int failed; /* fake_fail: queued ops dropped, pending events failed */
    unsigned char *arena;
    struct fake_op q[QMAX];
    int nq;
    int copies, waits; /* calls seen */
};

static struct fake_dev fdev[NDEV];
static struct fake_event *evs[EVMAX]; /* every live event */

static void unexpected(const char *what) {
    fprintf(stderr, "fake backend: unexpected %s\n", what);
    abort();
}

static struct fake_dev *fd_of(void *bd) {
    struct fake_dev *d = bd;
    if (d < fdev || d >= fdev + NDEV) unexpected("device handle");
    return d;
}

static bool in_arena(const struct fake_dev *d, const void *p, size_t pitch, size_t w, size_t h) {
    const unsigned char *a = p;
    return a >= d->arena && a + pitch * (h - 1) + w <= d->arena + ARENA_BYTES;
}

/* Run every device's queue as far as it goes: a held or failed device runs nothing; a wait
 * blocks on a pending event of a live device and is skipped on a failed one. */
static void pump(void) {
    for (bool moved = true; moved;) {
        moved = false;
        for (int i = 0; i < NDEV; i++) {
            struct fake_dev *d = &fdev[i];
            while (!d->hold && !d->failed && d->nq > 0) {
                struct fake_op *op = &d->q[0];
                if (op->kind == OP_WAIT && op->ev->state == EV_PENDING) break;
                if (op->kind == OP_COPY)
                    for (size_t r = 0; r < op->height; r++)
                        memcpy((char *)op->dst + r * op->dpitch,
                               (const char *)op->src + r * op->spitch, op->width);
                if (op->kind == OP_RECORD && op->gen == op->ev->gen) op->ev->state = EV_DONE;
                memmove(d->q, d->q + 1, (size_t)--d->nq * sizeof *d->q);
                moved = true;
            }
        }
    }
}

static void enqueue(struct fake_dev *d, struct fake_op op) {
    if (d->failed) unexpected("work queued on a failed device");
    if (d->nq == QMAX) unexpected("queue overflow");
    d->q[d->nq++] = op;
    pump();
}

/* The device's held work runs (its events complete). */
static void fake_complete(int dev) {
    fdev[dev].hold = 0;
    pump();
}

/* The device fails: what it had queued never runs, its pending events fail. */
static void fake_fail(int dev) {
    fdev[dev].failed = 1;
    fdev[dev].nq = 0;
    for (int i = 0; i < EVMAX; i++)
        if (evs[i] && evs[i]->dev == dev && evs[i]->state == EV_PENDING) evs[i]->state = EV_FAILED;
    pump();
}

static int f_copy2d(void *bd, int stream, enum tess__copy_kind kind, void *dst, size_t dpitch,
                    const void *src, size_t spitch, size_t width, size_t height, void *peer) {
    struct fake_dev *d = fd_of(bd);
    bool ok = stream == 0 && width <= dpitch && width <= spitch && height > 0;
    switch (kind) {
    case TESS__H2D: ok = ok && in_arena(d, dst, dpitch, width, height) && !peer; break;
    case TESS__D2H: ok = ok && in_arena(d, src, spitch, width, height) && !peer; break;
    case TESS__D2D:
        ok = ok && in_arena(d, dst, dpitch, width, height) &&
             in_arena(d, src, spitch, width, height);
        break;
    case TESS__P2P:
        ok = ok && peer && fd_of(peer) != d && in_arena(d, dst, dpitch, width, height) &&
             in_arena(fd_of(peer), src, spitch, width, height);
        break;
    }
    if (!ok) unexpected("copy2d arguments");
    d->copies++;
    enqueue(d, (struct fake_op){.kind = OP_COPY,
                                .dst = dst,
                                .src = src,
                                .dpitch = dpitch,
                                .spitch = spitch,
                                .width = width,
                                .height = height});
    return TESS_OK;
}

static int f_event_create(void *bd, tess__event **out) {
    struct fake_event *ev = calloc(1, sizeof *ev);
    if (!ev) abort();
    ev->dev = fd_of(bd)->id;
    for (int i = 0; i < EVMAX; i++)
        if (!evs[i]) {
            evs[i] = ev;
            *out = (tess__event *)ev;
            return TESS_OK;
        }
    unexpected("number of events");
    return TESS_EINTERNAL;
}

static struct fake_event *fev(tess__event *e) {
    for (int i = 0; i < EVMAX; i++)
        if (evs[i] == (struct fake_event *)e) return evs[i];
    unexpected("event handle");
    return NULL;
}

static void f_event_destroy(void *bd, tess__event *e) {
    struct fake_event *ev = fev(e);
    if (ev->dev != fd_of(bd)->id) unexpected("event destroyed by another device");
    for (int i = 0; i < EVMAX; i++)
        if (evs[i] == ev) evs[i] = NULL;
    free(ev);
}

static int f_event_record(void *bd, int stream, tess__event *e) {
    struct fake_dev *d = fd_of(bd);
    struct fake_event *ev = fev(e);
    if (stream != 0 || ev->dev != d->id) unexpected("event_record arguments");
    ev->state = EV_PENDING;
    enqueue(d, (struct fake_op){.kind = OP_RECORD, .ev = ev, .gen = ++ev->gen});
    return TESS_OK;
}

/* errors are sticky: a failed device's events never answer OK */
static int f_event_query(void *bd, tess__event *e) {
    struct fake_event *ev = fev(e);
    if (ev->dev != fd_of(bd)->id) unexpected("event_query through another device");
    if (fdev[ev->dev].failed || ev->state == EV_FAILED) return TESS_EDEVICE;
    return ev->state == EV_PENDING ? TESS_EAGAIN : TESS_OK;
}

static int f_event_sync(void *bd, tess__event *e) {
    int rc = f_event_query(bd, e);
    if (rc == TESS_EAGAIN) unexpected("event_sync on an event that would never complete");
    return rc;
}

static int f_stream_wait(void *bd, int stream, tess__event *e) {
    struct fake_dev *d = fd_of(bd);
    if (stream != 0) unexpected("stream_wait stream");
    d->waits++;
    enqueue(d, (struct fake_op){.kind = OP_WAIT, .ev = fev(e)});
    return TESS_OK;
}

static int f_can_peer(void *bd, void *peer) { return fd_of(bd) != fd_of(peer); }

static int f_count(const struct tess__config *cfg) {
    unexpected("count");
    return 0;
}
static int f_open(const struct tess__dev_params *p, void **bd, struct tess__dev_desc *desc) {
    unexpected("open");
    return TESS_ENOSYS;
}
static void f_close(void *bd) { unexpected("close"); }
static int f_arena(void *bd, size_t want, void **base, size_t *got) {
    unexpected("arena");
    return TESS_ENOSYS;
}
static int f_gemm(void *bd, int stream, tess_dtype_t dt, char ta, char tb, int64_t m, int64_t n,
                  int64_t k, const void *alpha, const void *A, int64_t lda, const void *B,
                  int64_t ldb, const void *beta, void *C, int64_t ldc) {
    unexpected("gemm");
    return TESS_ENOSYS;
}
static int f_kernel(void *bd, int stream, const struct tess__kernel *k) {
    unexpected("kernel");
    return TESS_ENOSYS;
}
static int f_event_time(void *bd, tess__event *ev, double *t) {
    unexpected("event_time");
    return TESS_ENOSYS;
}

static const struct tess__dev_ops fake_ops = {
    .name = "fake",
    .count = f_count,
    .open = f_open,
    .close = f_close,
    .arena = f_arena,
    .copy2d = f_copy2d,
    .gemm = f_gemm,
    .kernel = f_kernel,
    .event_create = f_event_create,
    .event_destroy = f_event_destroy,
    .event_record = f_event_record,
    .event_query = f_event_query,
    .event_sync = f_event_sync,
    .event_time = f_event_time,
    .stream_wait = f_stream_wait,
    .can_peer = f_can_peer,
};

/* ---- the cache on the fake devices, and tile X ------------------------------------------- */

static struct tess__cache cache;
static struct tess__counters ctr[NDEV];
static struct tess__heap *heap[NDEV];
static int npoison;
static uint64_t poisoned;
static double host[HOST_LD * TILE]; /* X is rows 0..TILE-1 */
static double orig[HOST_LD * TILE];
static struct tess__tile X;

static void on_poison(void *arg, uint64_t space) {
    npoison++;
    poisoned = space;
}

/* As node/runtime.c wires the cache: init, hooks, one heap per device from its arena, the
 * peers each device can copy from. */
static void setup(void) {
    memset(fdev, 0, sizeof fdev);
    memset(evs, 0, sizeof evs);
    memset(ctr, 0, sizeof ctr);
    npoison = 0;
    poisoned = 0;
    ASSERT_OK(tess__cache_init(&cache, NDEV));
    cache.p2p = 1;
    cache.peer_done_only = 0;
    cache.poison = on_poison;
    cache.poison_arg = NULL;
    for (int i = 0; i < NDEV; i++) {
        fdev[i].id = i;
        fdev[i].arena = aligned_alloc(4096, ARENA_BYTES);
        ASSERT(fdev[i].arena);
        memset(fdev[i].arena, GARBAGE, ARENA_BYTES);
        heap[i] = tess__heap_create(fdev[i].arena, ARENA_BYTES, HEAP_ALIGN);
        ASSERT(heap[i]);
        tess__cache_set_dev(&cache, i, &fake_ops, &fdev[i], TESS__CAP_P2P, heap[i], &ctr[i]);
    }
    for (int i = 0; i < NDEV; i++) {
        uint32_t mask = 0;
        for (int j = 0; j < NDEV; j++)
            if (j != i && f_can_peer(&fdev[i], &fdev[j])) mask |= 1u << j;
        tess__cache_set_peers(&cache, i, mask);
    }
    for (int i = 0; i < HOST_LD * TILE; i++) host[i] = orig[i] = 1 + i;
    memset(&X, 0, sizeof X);
    X.key.space = SPACE;
    X.key.addr = (uintptr_t)host;
    X.key.ld = HOST_LD;
    X.key.rows = X.key.cols = TILE;
    X.key.esize = sizeof(double);
    X.home = TESS__HOME_HOST;
}

/* Every block was freed back to its heap; every event of the cache destroyed. */
static void teardown(void) {
    tess__cache_destroy(&cache);
    for (int i = 0; i < EVMAX; i++) ASSERT(!evs[i]);
    for (int i = 0; i < NDEV; i++) {
        tess__heap_destroy(heap[i]);
        free(fdev[i].arena);
    }
}

static enum ev_state ev_state(tess__event *e) { return fev(e)->state; }

/* b's TILE x TILE contents (ld b->ld) equal the column-major tile t (ld ldt) times f. */
static bool tile_is(const struct tess__blk *b, const double *t, int64_t ldt, double f) {
    const double *p = b->ptr;
    for (int j = 0; j < TILE; j++)
        for (int i = 0; i < TILE; i++)
            if (p[i + j * b->ld] != f * t[i + j * ldt]) return false;
    return true;
}

static bool all_garbage(const struct tess__blk *b) {
    const unsigned char *p = b->ptr;
    for (size_t i = 0; i < TILE_BYTES; i++)
        if (p[i] != GARBAGE) return false;
    return true;
}

/* What a task's kernel does to the taken tile: doubles it (device memory is host memory). */
static void kernel_double(struct tess__blk *b) {
    double *p = b->ptr;
    for (int j = 0; j < TILE; j++)
        for (int i = 0; i < TILE; i++) p[i + j * b->ld] *= 2;
}

static struct tess__blk *acquire(int dev, enum tess__fill want) {
    struct tess__blk *b = NULL;
    enum tess__fill how;
    ASSERT_OK(tess__cache_acquire(&cache, dev, 0, &X, TILE_BYTES, &b, &how));
    ASSERT_EQ(how, want);
    return b;
}

static struct tess__blk *take(int dev, bool *was_dirty) {
    size_t room[1] = {TILE_BYTES};
    struct tess__blk *b = NULL;
    ASSERT_OK(tess__cache_take(&cache, dev, 0, &X, TILE_BYTES, room, 1, 2, &b, was_dirty));
    ASSERT_EQ(fdev[dev].nq, 0); /* its fill ran */
    return b;
}

/* A device fails as its worker meets it (tess__worker_fail): the fake device fails first
 * (its events fail), the worker drops its own reader, then the cache drops its copies. */
static void fail_device(int dev, struct tess__blk *own) {
    fake_fail(dev);
    tess__cache_unacquire(&cache, own);
    tess__cache_drop_dev(&cache, dev);
}

/* ---- the tests --------------------------------------------------------------------------- */

/* Direct: FAILING fills X from the host but its copy never completes; MIDDLE fills X from
 * that copy, waiting for its event (peer_waited); FAILING fails, the wait is skipped and
 * MIDDLE's fill completes with garbage. At MIDDLE's release the poison hook fires for X's
 * space and the copy leaves the directory: the next read is a host miss with X's bytes. */
TEST(cache_fault_direct) {
    setup();
    fdev[FAILING].hold = 1;
    struct tess__blk *bf = acquire(FAILING, TESS__FILL_HOST);
    ASSERT_EQ(ev_state(bf->ready), EV_PENDING);
    struct tess__blk *bm = acquire(MIDDLE, TESS__FILL_PEER);
    ASSERT(bm->pinned_src == bf);
    ASSERT_EQ(bm->peer_waited, 1);
    ASSERT_EQ(fdev[MIDDLE].waits, 1);
    ASSERT_EQ(ev_state(bm->ready), EV_PENDING); /* blocked behind the wait */
    ASSERT_EQ(ctr[MIDDLE].l2_hits, 1);

    fail_device(FAILING, bf);
    ASSERT_EQ(ev_state(bm->ready), EV_DONE);
    ASSERT(all_garbage(bm));
    /* drop_dev: a pinned copy whose fill was not known complete poisons its space */
    ASSERT_EQ(npoison, 1);
    struct tess__dentry *e = tess__dir_find(cache.dir, &X.key);
    ASSERT(e && e->holders == 1u << MIDDLE && e->copy[MIDDLE] == bm);

    tess__cache_release(&cache, bm);
    ASSERT_EQ(npoison, 2);
    ASSERT_EQ(poisoned, SPACE);
    ASSERT(tess__dir_find(cache.dir, &X.key) == NULL);
    ASSERT_EQ(tess__cache_locality(&cache, MIDDLE, &X.key), 0);
    for (int i = 0; i < NDEV; i++) ASSERT_EQ(tess__heap_used(heap[i]), 0);

    bm = acquire(MIDDLE, TESS__FILL_HOST);
    ASSERT_EQ(ev_state(bm->ready), EV_DONE);
    ASSERT(tile_is(bm, host, HOST_LD, 1));
    tess__cache_release(&cache, bm);
    ASSERT_EQ(npoison, 2);
    ASSERT(memcmp(host, orig, sizeof host) == 0);
    teardown();
}

/* The chain of commit 6422700. dirty: WRITER first took X and put it back written (the home
 * stale, X's contents 2 * orig on WRITER only). FAILING fills X (from the host, or WRITER)
 * held back; MIDDLE fills from FAILING's copy, waiting. fail: FAILING fails (MIDDLE's copy
 * is garbage); else it completes. Before MIDDLE releases, TAKER takes X for writing: MIDDLE's
 * fill is complete, so TAKER copies it without waiting (peer_waited 0), doubles it and puts
 * it back dirty. Then the write-back of a sync on TAKER, and MIDDLE's release. */
static void chain(bool dirty, bool fail) {
    setup();
    double f = 1; /* X's current contents: f * orig */
    bool was_dirty = false;
    if (dirty) {
        struct tess__blk *bw = take(WRITER, &was_dirty);
        ASSERT(!was_dirty);
        ASSERT(tile_is(bw, orig, HOST_LD, 1));
        kernel_double(bw);
        tess__cache_put(&cache, WRITER, &X.key, bw, true, 0);
        f = 2;
        struct tess__dentry *e = tess__dir_find(cache.dir, &X.key);
        ASSERT(e && e->dirty && e->holders == 1u << WRITER);
    }

    fdev[FAILING].hold = 1;
    struct tess__blk *bf = acquire(FAILING, dirty ? TESS__FILL_PEER : TESS__FILL_HOST);
    ASSERT_EQ(bf->peer_waited, 0);
    ASSERT_EQ(ev_state(bf->ready), EV_PENDING);
    struct tess__blk *bm = acquire(MIDDLE, TESS__FILL_PEER);
    ASSERT(bm->pinned_src == bf);
    ASSERT_EQ(bm->peer_waited, 1);
    ASSERT_EQ(ev_state(bm->ready), EV_PENDING);

    if (fail) {
        fail_device(FAILING, bf);
        ASSERT(all_garbage(bm));
        ASSERT_EQ(npoison, 1); /* drop_dev, as in cache_fault_direct */
    } else {
        fake_complete(FAILING);
        ASSERT(tile_is(bf, orig, HOST_LD, f));
        ASSERT(tile_is(bm, orig, HOST_LD, f));
    }
    ASSERT_EQ(ev_state(bm->ready), EV_DONE);
    int before = npoison;

    int waits = fdev[TAKER].waits;
    struct tess__blk *bt = take(TAKER, &was_dirty);
    ASSERT_EQ(was_dirty, dirty);
    ASSERT(bt->pinned_src == bm);
    ASSERT_EQ(bt->peer_waited, 0);
    ASSERT_EQ(fdev[TAKER].waits, waits);
    ASSERT_EQ(ctr[TAKER].l2_hits, 1);
    ASSERT(fail ? all_garbage(bt) : tile_is(bt, orig, HOST_LD, f));
    kernel_double(bt);
    tess__cache_put(&cache, TAKER, &X.key, bt, true, 0);

    struct tess__dentry *e = tess__dir_find(cache.dir, &X.key);
    if (!fail) ASSERT(e && e->dirty && !e->lost && e->holders == 1u << TAKER && e->copy[TAKER]);

    /* a sync's write-back on TAKER: the right bytes, or the home left as it was */
    tess__event *ev = NULL;
    ASSERT_OK(f_event_create(&fdev[TAKER], &ev));
    ASSERT_OK(tess__cache_writeback(&cache, TAKER, 0, SPACE, TESS__WB_SYNC, NULL, ev));
    f_event_destroy(&fdev[TAKER], ev);
    if (fail) {
        ASSERT_MSG(memcmp(host, orig, sizeof host) == 0,
                   "the write-back wrote a copy filled from garbage to the host");
    } else {
        for (int j = 0; j < TILE; j++)
            for (int i = 0; i < HOST_LD; i++)
                ASSERT(host[i + j * HOST_LD] == (i < TILE ? 2 * f : 1) * orig[i + j * HOST_LD]);
    }

    struct tess__tile_key first;
    memset(&first, 0, sizeof first);
    size_t lost = tess__cache_lost(&cache, SPACE, &first);
    e = tess__dir_find(cache.dir, &X.key);
    if (fail) {
        /* found suspect down the chain at the put: poisoned, not kept as a copy */
        ASSERT_EQ(npoison, before + 1);
        ASSERT_EQ(poisoned, SPACE);
        ASSERT(!e || (!e->copy[TAKER] && !e->holders && e->writer < 0));
        if (dirty) {
            /* the only current contents were in the taken block: X is lost */
            ASSERT(e && e->lost);
            ASSERT_EQ(lost, 1);
            ASSERT(tess__key_eq(&first, &X.key));
            struct tess__blk *b = NULL;
            ASSERT_EQ(tess__cache_acquire(&cache, MIDDLE, 0, &X, TILE_BYTES, &b, NULL),
                      TESS__ELOST);
        } else {
            ASSERT(!e); /* the home is current: the tile just leaves */
            ASSERT_EQ(lost, 0);
        }
    } else {
        ASSERT_EQ(npoison, 0);
        ASSERT_EQ(lost, 0);
        ASSERT(e && !e->dirty && !e->lost && e->copy[TAKER]); /* written back, kept clean */
    }

    /* MIDDLE's task ends (its copy was dropped by the take), then FAILING's if alive */
    tess__cache_release(&cache, bm);
    ASSERT_EQ(npoison, fail ? before + 2 : 0);
    if (!fail) tess__cache_release(&cache, bf);
    ASSERT_EQ(npoison, fail ? before + 2 : 0);
    for (int i = 1; i < NDEV; i++) ASSERT_EQ(tess__heap_used(heap[i]), 0);
    ASSERT_EQ(tess__heap_used(heap[TAKER]), fail ? 0 : tess__heap_round(heap[TAKER], TILE_BYTES));
    teardown();
}

/* X clean: TAKER's put finds its copy suspect (poison), the entry goes, the write-back
 * leaves the host as it was. */
TEST(cache_fault_chain_clean) { chain(false, true); }

/* X dirty: the same, and the tile is lost (tess__cache_lost counts it, reads get ELOST). */
TEST(cache_fault_chain_dirty) { chain(true, true); }

/* Control, X clean: FAILING completes; no poison, TAKER keeps a dirty copy and the
 * write-back writes 2 * X. */
TEST(cache_fault_chain_clean_control) { chain(false, false); }

/* Control, X dirty: the same with 4 * X (WRITER's and TAKER's doublings). */
TEST(cache_fault_chain_dirty_control) { chain(true, false); }

/* A reader's release never speaks for a write-back. TAKER holds X written (dirty) and
 * reads it as an operand too; its write-behind is queued, held back, and then the read
 * completes (release). The write-back is still in flight: MIDDLE's take must wait
 * (TESS_EAGAIN) and no second write-behind may start, or a later write-back of X could land
 * first. Once it lands the home holds 2 * orig, and MIDDLE takes X clean. */
TEST(cache_behind_reader) {
    setup();
    bool was_dirty = true;
    struct tess__blk *b = take(TAKER, &was_dirty);
    ASSERT(!was_dirty);
    kernel_double(b);
    tess__cache_put(&cache, TAKER, &X.key, b, true, 0);
    struct tess__blk *r = acquire(TAKER, TESS__FILL_NONE);
    ASSERT(r == b);

    fdev[TAKER].hold = 1;
    struct tess__blk *w = tess__cache_behind(&cache, TAKER, 0, &X.key);
    ASSERT(w == b);
    ASSERT_EQ(ev_state(w->ready), EV_PENDING);
    tess__cache_release(&cache, r);
    size_t room[1] = {TILE_BYTES};
    struct tess__blk *m = NULL;
    ASSERT_EQ(tess__cache_take(&cache, MIDDLE, 0, &X, TILE_BYTES, room, 1, 2, &m, &was_dirty),
              TESS_EAGAIN);
    ASSERT(m == NULL);
    ASSERT(tess__cache_behind(&cache, TAKER, 0, &X.key) == NULL);
    ASSERT(memcmp(host, orig, sizeof host) == 0); /* nothing landed yet */

    fake_complete(TAKER);
    tess__cache_behind_done(&cache, w, true);
    for (int j = 0; j < TILE; j++)
        for (int i = 0; i < HOST_LD; i++)
            ASSERT_EQ(host[i + j * HOST_LD], (i < TILE ? 2 : 1) * orig[i + j * HOST_LD]);
    m = take(MIDDLE, &was_dirty);
    ASSERT(!was_dirty);
    ASSERT(tile_is(m, host, HOST_LD, 1));
    tess__cache_put(&cache, MIDDLE, &X.key, m, false, TILE);
    teardown();
}

TEST_MAIN()
