/* cache/cache.c: the cache facade the device workers call. It owns the cache lock and
 * through it every ALRU list and the MESI-X directory; it decides, for one operand tile on
 * one device, between an L1 hit, an L2 hit (copy from a peer device) and a copy from the
 * tile's home, and queues that copy on the caller's stream. Device heaps are called under
 * the cache lock (lock order: cache lock, then heap lock). Bytes move only through the
 * backend's copy2d; this file never touches device memory itself.
 *
 * Reader counts (BLASX Alg. 2) change at sync points only: acquire takes one, release
 * drops it after the worker saw the kernel that used the copy complete. A copy filled from
 * a peer keeps one reader on the peer's copy until its own fill is known complete, so the
 * peer cannot evict the source while the copy is in flight.
 */
#include <stdlib.h>
#include <string.h>

#include "cache.h"

void tess__cache_lock(struct tess__cache *c) { pthread_mutex_lock(&c->lock); }
void tess__cache_unlock(struct tess__cache *c) { pthread_mutex_unlock(&c->lock); }

int tess__cache_init(struct tess__cache *c, int ndev) {
    memset(c, 0, sizeof *c);
    c->ndev = ndev;
    c->p2p = 1;
    c->dir = tess__dir_create(ndev);
    if (!c->dir) return tess__fail(TESS_ENOMEM, "tile directory: out of host memory");
    pthread_mutex_init(&c->lock, NULL);
    for (int i = 0; i < ndev; i++) tess__alru_init(&c->dev[i].alru);
    return TESS_OK;
}

void tess__cache_set_dev(struct tess__cache *c, int i, const struct tess__dev_ops *ops, void *bd,
                         unsigned caps, struct tess__heap *heap, struct tess__counters *ctr) {
    struct tess__cdev *cd = &c->dev[i];
    cd->ops = ops;
    cd->bd = bd;
    cd->caps = caps;
    cd->heap = heap;
    cd->ctr = ctr;
}

void tess__cache_set_peers(struct tess__cache *c, int i, uint32_t peer_mask) {
    c->dev[i].peer_mask = peer_mask;
}

/* ---- block records (recycled with their events) ------------------------------------ */

/* A block record for dev, from the recycled ones or new with its event. */
static int blk_new(struct tess__cache *c, int dev, struct tess__blk **out) {
    struct tess__cdev *cd = &c->dev[dev];
    struct tess__blk *b = cd->free_blks;
    if (b) {
        cd->free_blks = b->next;
    } else {
        b = calloc(1, sizeof *b);
        if (!b) return tess__fail(TESS_ENOMEM, "tile record: out of host memory");
        if (!(cd->caps & TESS__CAP_UNIFIED)) {
            int rc = cd->ops->event_create(cd->bd, &b->ready);
            if (rc) {
                free(b);
                return rc;
            }
        }
    }
    tess__event *ev = b->ready;
    memset(b, 0, sizeof *b);
    b->ready = ev;
    b->dev = dev;
    *out = b;
    return TESS_OK;
}

static void blk_recycle(struct tess__cache *c, struct tess__blk *b) {
    struct tess__cdev *cd = &c->dev[b->dev];
    b->next = cd->free_blks;
    cd->free_blks = b;
}

static void note_peak(struct tess__cdev *cd) {
    size_t used = tess__heap_used(cd->heap);
    size_t peak = atomic_load_explicit(&cd->ctr->mem_peak, memory_order_relaxed);
    while (used > peak && !atomic_compare_exchange_weak(&cd->ctr->mem_peak, &peak, used)) {}
}

/* The fill of b is complete (queries its event once; remembers the answer). */
static bool fill_done(struct tess__blk *b, void *arg) {
    struct tess__cache *c = arg;
    if (b->ready_done) return true;
    struct tess__cdev *cd = &c->dev[b->dev];
    if (cd->failed || cd->ops->event_query(cd->bd, b->ready) == TESS_OK) b->ready_done = 1;
    return b->ready_done;
}

static void blk_free(struct tess__cache *c, struct tess__blk *b);

static uint32_t bit(int dev) { return (uint32_t)1 << dev; }

/* Write-behind takes a dirty tile only once no task has put it back for this long: a tile
 * a sequence of calls keeps writing would otherwise be written behind between two of them,
 * and the next one wait for that write-back to land (1000 dependent DGEMMs of n = 1024 on
 * an H100: 0.67 of cuBLAS without the wait, 0.39 with it). */
#define BEHIND_AGE_S 0.05
/* The most tiles one scan of write-behind asks rewrite_pending about. */
#define BEHIND_ASKS 32

/* b is the last device copy of a dirty held tile: it is written back before it leaves. */
static bool sole_dirty(const struct tess__blk *b) {
    const struct tess__dentry *e = b->entry;
    return e && e->dirty && e->holders == bit(b->dev);
}

/* An idle copy that may leave now (alru victim test): its fill is complete and it is not
 * the last current copy of a held tile. */
static bool evictable(struct tess__blk *b, void *arg) {
    return fill_done(b, arg) && !sole_dirty(b);
}

/* Queue on `stream` the copy of b's rows r0.. (the dirty ones: e->dirty_r0) to the home of
 * tile k, counted. nowait: TESS_EAGAIN rather than wait for host resources (the backend's
 * TESS__COPY_NOWAIT). */
static int copy_home(struct tess__cache *c, struct tess__blk *b, const struct tess__tile_key *k,
                     int64_t r0, int stream, bool nowait) {
    struct tess__cdev *cd = &c->dev[b->dev];
    r0 = TESS__MIN(TESS__MAX(r0, 0), (int64_t)k->rows);
    size_t es = k->esize, off = (size_t)r0 * es, w = (size_t)(k->rows - r0) * es;
    if (w == 0) return TESS_OK;
    int rc = cd->ops->copy2d(cd->bd, stream, nowait ? TESS__D2H | TESS__COPY_NOWAIT : TESS__D2H,
                             (char *)k->addr + off, (size_t)k->ld * es, (char *)b->ptr + off,
                             (size_t)b->ld * es, w, (size_t)k->cols, NULL);
    if (rc) return rc;
    TESS__COUNT(cd->ctr, bytes_d2h, w * (size_t)k->cols);
    TESS__COUNT(cd->ctr, writebacks, 1);
    return TESS_OK;
}

/* Queue on `stream` the write-back of b, the last copy of a dirty held tile (idle, fill
 * complete), to the tile's home: the entry is clean from now on and its home current once
 * b's ready event (re-recorded here) completed; until then b is not evictable and host
 * fills of the tile wait for that event (e->wb). */
static int writeback_queue(struct tess__cache *c, struct tess__blk *b, int stream) {
    struct tess__cdev *cd = &c->dev[b->dev];
    struct tess__dentry *e = b->entry;
    const struct tess__tile_key *k = &e->key;
    int rc = copy_home(c, b, k, e->dirty_r0, stream, false);
    if (!rc) rc = cd->ops->event_record(cd->bd, stream, b->ready);
    if (rc) return rc;
    b->ready_done = 0;
    b->wb_recorded = 1;
    e->dirty = 0;
    e->wb = b;
    if (c->written_back) c->written_back(c->written_back_arg, k);
    return TESS_OK;
}

/* Out of room on dev with no idle copy to evict: queue the write-backs of idle last copies
 * of dirty held tiles, least recently used first, until they free `bytes`. */
static void writeback_some(struct tess__cache *c, int dev, size_t bytes, int stream) {
    size_t freed = 0;
    for (struct tess__blk *b = c->dev[dev].alru.tail; b && freed < bytes; b = b->prev)
        if (b->readers == 0 && sole_dirty(b) && fill_done(b, c) &&
            writeback_queue(c, b, stream) == TESS_OK)
            freed += b->bytes;
}

/* Drop one reader of b; a stale block with no readers left is freed. */
static void unread(struct tess__cache *c, struct tess__blk *b) {
    if (--b->readers == 0 && b->stale) blk_free(c, b);
}

/* Return b's memory and record (b is out of the ALRU and the directory). */
static void blk_free(struct tess__cache *c, struct tess__blk *b) {
    struct tess__blk *src = b->pinned_src;
    b->pinned_src = NULL;
    if (b->ptr && c->dev[b->dev].heap) tess__heap_free(c->dev[b->dev].heap, b->ptr);
    b->ptr = NULL;
    blk_recycle(c, b);
    if (src) unread(c, src);
}

/* Take b out of the directory and its device's ALRU; free it now if nobody reads it. */
static void blk_drop(struct tess__cache *c, struct tess__blk *b) {
    struct tess__cdev *cd = &c->dev[b->dev];
    if (b->in_alru) tess__alru_remove(&cd->alru, b);
    if (b->entry) {
        struct tess__dentry *e = b->entry;
        /* the last current copy of a held tile leaves unwritten (its device failed), or
         * while its write-back may be unfinished: the tile is lost, never read stale */
        if ((sole_dirty(b) && e->writer < 0) || (e->wb == b && !b->ready_done)) e->lost = 1;
        if (e->wb == b) e->wb = NULL;
        e->copy[b->dev] = NULL;
        b->entry = NULL;
        tess__dir_evict(c->dir, e, b->dev);
    }
    if (b->readers == 0)
        blk_free(c, b);
    else
        b->stale = 1;
}

/* Heap memory on dev, evicting idle cached copies (least recently used first). */
/* With no victim, write-backs of dirty held copies are queued on `stream` (>= 0) so that a
 * later try finds room. */
static void *alloc_evicting(struct tess__cache *c, int dev, size_t bytes, bool fixed, int stream) {
    struct tess__cdev *cd = &c->dev[dev];
    for (;;) {
        void *p = tess__heap_alloc_fixed(cd->heap, bytes, fixed);
        if (p) return p;
        struct tess__blk *v = tess__alru_victim(&cd->alru, evictable, c);
        if (!v) {
            if (stream >= 0) writeback_some(c, dev, bytes, stream);
            return NULL;
        }
        TESS__COUNT(cd->ctr, evictions, 1);
        blk_drop(c, v);
    }
}

/* A block on a UNIFIED device: the home itself, used in place. */
static int acquire_in_place(struct tess__cache *c, int dev, const struct tess__tile *t,
                            struct tess__blk **out) {
    if (t->home != TESS__HOME_HOST)
        return tess__fail(TESS_ENOSYS, "the CPU worker cannot use a device-resident tile");
    struct tess__blk *b;
    int rc = blk_new(c, dev, &b);
    if (rc) return rc;
    b->ptr = (void *)t->key.addr;
    b->ld = t->key.ld;
    b->readers = 1;
    b->ready_done = 1;
    *out = b;
    return TESS_OK;
}

int tess__cache_acquire(struct tess__cache *c, int dev, int stream, const struct tess__tile *t,
                        size_t alloc_bytes, struct tess__blk **out, enum tess__fill *how) {
    struct tess__cdev *cd = &c->dev[dev];
    enum tess__fill filled = TESS__FILL_NONE;
    if (how) *how = TESS__FILL_NONE;
    const struct tess__dev_ops *ops = cd->ops;
    const struct tess__tile_key *key = &t->key;
    int rc;

    tess__cache_lock(c);
    if (cd->caps & TESS__CAP_UNIFIED) {
        rc = acquire_in_place(c, dev, t, out);
        tess__cache_unlock(c);
        return rc;
    }

    /* L1: this device holds a copy. */
    struct tess__dentry *e = tess__dir_find(c->dir, key);
    if (e && (e->lost || e->writer >= 0)) {
        /* a held tile lost with a failed device, or one a running task writes (a call
         * reading it then is outside the contract of held data) */
        tess__cache_unlock(c);
        return e->lost ? TESS__ELOST : TESS__ECONFLICT;
    }
    if (e && e->copy[dev]) {
        struct tess__blk *b = e->copy[dev];
        b->readers++;
        tess__alru_touch(&cd->alru, b);
        rc = TESS_OK;
        if (!fill_done(b, c)) rc = ops->stream_wait(cd->bd, stream, b->ready);
        if (rc) {
            b->readers--;
        } else {
            TESS__COUNT(cd->ctr, l1_hits, 1);
            *out = b;
        }
        tess__cache_unlock(c);
        return rc;
    }

    /* A stable home in this device's memory: read where it is. */
    if (t->home == TESS__HOME_DEV && t->home_stable && t->home_dev == dev) {
        struct tess__blk *b;
        if ((rc = blk_new(c, dev, &b))) {
            tess__cache_unlock(c);
            return rc;
        }
        b->ptr = t->home_ptr;
        b->ld = t->home_ld;
        b->readers = 1;
        b->ready_done = 1;
        b->in_place = 1;
        rc = t->home_ready ? ops->stream_wait(cd->bd, stream, t->home_ready) : TESS_OK;
        if (rc)
            blk_recycle(c, b);
        else
            *out = b;
        tess__cache_unlock(c);
        return rc;
    }

    /* A new copy: room first. */
    void *ptr = alloc_evicting(c, dev, alloc_bytes, false, stream);
    if (!ptr) {
        tess__cache_unlock(c);
        return TESS_EAGAIN;
    }
    e = tess__dir_find(c->dir, key); /* eviction may have freed the entry */
    struct tess__blk *b;
    if ((rc = blk_new(c, dev, &b))) {
        tess__heap_free(cd->heap, ptr);
        tess__cache_unlock(c);
        return rc;
    }
    size_t es = key->esize;
    b->ptr = ptr;
    b->bytes = alloc_bytes;
    b->ld = key->rows;
    b->readers = 1;
    b->space = key->space;
    size_t width = (size_t)key->rows * es, height = (size_t)key->cols;

    int peer = (e && c->p2p) ? tess__dir_peer(e, dev, cd->peer_mask) : -1;
    if (peer >= 0 && c->peer_done_only) {
        /* TESSERA_RECOVER: a copy still being filled is no source (should its device fail,
         * this copy could be left unfinished with nobody to know); another peer's finished
         * copy, or else the home. */
        peer = -1;
        uint32_t cand = e->holders & cd->peer_mask & ~(1u << dev);
        for (int p = 0; cand && p < c->ndev; p++)
            if ((cand & (1u << p)) && !c->dev[p].failed && fill_done(e->copy[p], c)) {
                peer = p;
                break;
            }
    }
    /* a dirty held tile: its only current contents are the holders' (staged through the
     * host where no direct path exists) */
    if (peer < 0 && e && e->dirty && (e->holders & ~bit(dev)))
        peer = __builtin_ctz(e->holders & ~bit(dev));
    if (peer >= 0) {
        /* L2: copy from the peer's copy, which stays pinned until this fill completes. */
        struct tess__blk *src = e->copy[peer];
        rc = TESS_OK;
        if (!fill_done(src, c)) {
            rc = ops->stream_wait(cd->bd, stream, src->ready);
            b->peer_waited = 1;
        }
        if (!rc)
            rc = ops->copy2d(cd->bd, stream, TESS__P2P, ptr, width, src->ptr, (size_t)src->ld * es,
                             width, height, c->dev[peer].bd);
        if (!rc) {
            src->readers++;
            b->pinned_src = src;
            TESS__COUNT(cd->ctr, l2_hits, 1);
            TESS__COUNT(cd->ctr, bytes_p2p, width * height);
            filled = TESS__FILL_PEER;
        }
    } else if (t->home == TESS__HOME_DEV) {
        /* Miss on a tile whose home is device memory (arrived, or produced earlier). */
        rc = TESS_OK;
        if (t->home_ready) rc = ops->stream_wait(cd->bd, stream, t->home_ready);
        if (!rc)
            rc = ops->copy2d(cd->bd, stream, t->home_dev == dev ? TESS__D2D : TESS__P2P, ptr, width,
                             t->home_ptr, (size_t)t->home_ld * es, width, height,
                             c->dev[t->home_dev].bd);
        if (!rc) {
            TESS__COUNT(cd->ctr, misses, 1);
            if (t->home_dev != dev) TESS__COUNT(cd->ctr, bytes_p2p, width * height);
            filled = TESS__FILL_HOME;
        }
    } else {
        /* Miss: a 2D copy straight from the host matrix, no packing (after a write-back of
         * a held tile still landing there). */
        rc = TESS_OK;
        if (e && e->wb && !fill_done(e->wb, c)) rc = ops->stream_wait(cd->bd, stream, e->wb->ready);
        if (!rc)
            rc = ops->copy2d(cd->bd, stream, TESS__H2D, ptr, width, (const void *)key->addr,
                             (size_t)key->ld * es, width, height, NULL);
        if (!rc) {
            TESS__COUNT(cd->ctr, misses, 1);
            TESS__COUNT(cd->ctr, bytes_h2d, width * height);
            filled = TESS__FILL_HOST;
        }
    }
    if (!rc) rc = ops->event_record(cd->bd, stream, b->ready);
    if (!rc && !(e = tess__dir_get(c->dir, key)))
        rc = tess__fail(TESS_ENOMEM, "tile directory: out of host memory");
    if (rc) {
        b->readers = 0;
        blk_free(c, b);
        tess__cache_unlock(c);
        return rc;
    }
    tess__dir_fill(c->dir, e, dev, b);
    e->copy[dev] = b;
    b->entry = e;
    tess__alru_push_front(&cd->alru, b);
    b->in_alru = 1;
    note_peak(cd);
    *out = b;
    if (how) *how = filled;
    tess__cache_unlock(c);
    return TESS_OK;
}

/* Whether b's fill may hold garbage: it waited for its peer source's own fill and that
 * device failed first (the wait may have been skipped), or the source is suspect itself,
 * found so already or by the same test down its own unreleased chain of sources (a copy
 * filled without waiting from a peer copy that had waited). */
static bool fill_suspect(struct tess__cache *c, struct tess__blk *b) {
    for (; b; b = b->pinned_src) {
        struct tess__blk *src = b->pinned_src;
        if (b->suspect) return true;
        if (!src) return false;
        struct tess__cdev *sd = &c->dev[src->dev];
        if (b->peer_waited &&
            (src->torn || (!src->ready_done &&
                           (sd->failed || sd->ops->event_query(sd->bd, src->ready) != TESS_OK))))
            return true;
    }
    return false;
}

/* The fill of b is known complete: the peer copy it came from is free again. Whether the
 * copy is suspect (fill_suspect), remembered for copies filled from b. */
static bool drop_pin(struct tess__cache *c, struct tess__blk *b) {
    if (!b->pinned_src) return false;
    bool suspect = fill_suspect(c, b);
    if (suspect) {
        b->suspect = 1;
        if (c->poison) c->poison(c->poison_arg, b->space);
    }
    struct tess__blk *src = b->pinned_src;
    b->pinned_src = NULL;
    unread(c, src);
    return suspect;
}

/* A cached copy found suspect (drop_pin) leaves the directory, so nothing reads it again;
 * a held tile whose home is stale and that no other device holds is lost. */
static void drop_suspect(struct tess__cache *c, struct tess__blk *b) {
    struct tess__dentry *e = b->entry;
    if (!e) return;
    if (e->dirty && e->holders == bit(b->dev)) e->lost = 1;
    if (b->in_alru) tess__alru_remove(&c->dev[b->dev].alru, b);
    b->in_alru = 0;
    e->copy[b->dev] = NULL;
    b->entry = NULL;
    b->stale = 1; /* freed once its readers are gone */
    tess__dir_evict(c->dir, e, b->dev);
}

/* Copies on other devices that nobody reads (their step was never queued: unacquire) still
 * pin the copies of dev they were filled from, until they are evicted; once their fill is
 * complete, drop those pins, so dev can evict its copies. */
static void unpin_idle(struct tess__cache *c, int dev) {
    for (int o = 0; o < c->ndev; o++) {
        if (o == dev) continue;
        struct tess__blk *b = c->dev[o].alru.head;
        while (b) {
            struct tess__blk *nx = b->next;
            if (b->readers == 0 && b->pinned_src && b->pinned_src->dev == dev && fill_done(b, c) &&
                drop_pin(c, b)) {
                drop_suspect(c, b); /* filled from a torn copy */
                blk_free(c, b);
            }
            b = nx;
        }
    }
}

void tess__cache_release(struct tess__cache *c, struct tess__blk *b) {
    tess__cache_lock(c);
    if (c->dev[b->dev].caps & TESS__CAP_UNIFIED) {
        blk_recycle(c, b);
    } else {
        /* The kernel that read b completed, so its fill did: the peer source is free. If
         * the fill had to wait for the source's own fill and the source device failed,
         * the wait may have been skipped: the copy is suspect. A write-back of b queued
         * meanwhile re-recorded its event: that one says when the write-back lands, and
         * takes of the tile wait for it (two write-backs of a tile never overlap). */
        if (!b->wb_recorded) b->ready_done = 1;
        if (drop_pin(c, b)) drop_suspect(c, b);
        unread(c, b);
    }
    tess__cache_unlock(c);
}

void tess__cache_unacquire(struct tess__cache *c, struct tess__blk *b) {
    tess__cache_lock(c);
    if ((c->dev[b->dev].caps & TESS__CAP_UNIFIED) || b->in_place)
        blk_recycle(c, b);
    else
        unread(c, b);
    tess__cache_unlock(c);
}

/* A working block record for heap memory p (or EAGAIN when p is NULL); unlocks. */
static int work_blk(struct tess__cache *c, int dev, void *p, size_t bytes, struct tess__blk **out) {
    struct tess__blk *b = NULL;
    int rc = p ? blk_new(c, dev, &b) : TESS_EAGAIN;
    if (rc) {
        if (p) tess__heap_free(c->dev[dev].heap, p);
        tess__cache_unlock(c);
        return rc;
    }
    b->ptr = p;
    b->bytes = bytes;
    b->readers = 1;
    b->ready_done = 1;
    note_peak(&c->dev[dev]);
    *out = b;
    tess__cache_unlock(c);
    return TESS_OK;
}

int tess__cache_alloc_work(struct tess__cache *c, int dev, size_t bytes, struct tess__blk **out) {
    tess__cache_lock(c);
    return work_blk(c, dev, alloc_evicting(c, dev, bytes, true, -1), bytes, out);
}

/* The planned place of a new fixed block (tess__cache_alloc_planned), allocated; NULL when
 * none now. Under the cache lock. */
static void *planned_locked(struct tess__cache *c, int dev, int stream, size_t bytes,
                            const size_t *room, int nroom, int copies, bool *evicted) {
    struct tess__cdev *cd = &c->dev[dev];
    bool now = false;
    char *at = tess__heap_plan_fixed(cd->heap, bytes, room, nroom, copies, &now);
    if (at && !now) {
        /* The place holds cached copies: evict them, unless one is in use (then later). */
        size_t len = tess__heap_round(cd->heap, bytes);
        unpin_idle(c, dev);
        struct tess__blk *b = cd->alru.tail;
        while (b) {
            struct tess__blk *prev = b->prev;
            char *p = b->ptr;
            if (p < at + len && at < p + tess__heap_round(cd->heap, b->bytes)) {
                if (b->readers > 0 || !fill_done(b, c) || sole_dirty(b)) {
                    /* in use, or to be written back first (then the place is free) */
                    if (b->readers == 0 && sole_dirty(b) && fill_done(b, c) && stream >= 0)
                        (void)writeback_queue(c, b, stream);
                    at = NULL;
                    break;
                }
                TESS__COUNT(cd->ctr, evictions, 1);
                blk_drop(c, b);
                if (evicted) *evicted = true;
            }
            b = prev;
        }
    }
    /* NULL also when a block out of the ALRU (a stale copy still read) lies there */
    return at ? tess__heap_alloc_at(cd->heap, at, bytes, true) : NULL;
}

int tess__cache_alloc_planned(struct tess__cache *c, int dev, int stream, size_t bytes,
                              const size_t *room, int nroom, int copies, struct tess__blk **out,
                              bool *evicted) {
    if (evicted) *evicted = false;
    tess__cache_lock(c);
    void *p = planned_locked(c, dev, stream, bytes, room, nroom, copies, evicted);
    return work_blk(c, dev, p, bytes, out);
}

int tess__cache_flush_dev(struct tess__cache *c, int dev, int stream, int *queued) {
    struct tess__cdev *cd = &c->dev[dev];
    int n = 0;
    *queued = 0;
    tess__cache_lock(c);
    unpin_idle(c, dev);
    struct tess__blk *b = cd->alru.tail;
    while (b) {
        struct tess__blk *prev = b->prev;
        if (b->readers == 0 && fill_done(b, c) && sole_dirty(b)) {
            *queued += writeback_queue(c, b, stream) == TESS_OK;
        } else if (b->readers == 0 && fill_done(b, c)) {
            TESS__COUNT(cd->ctr, evictions, 1);
            blk_drop(c, b);
            n++;
        }
        b = prev;
    }
    tess__cache_unlock(c);
    return n;
}

void tess__cache_free_work(struct tess__cache *c, struct tess__blk *b) {
    tess__cache_lock(c);
    b->readers = 0;
    blk_free(c, b);
    tess__cache_unlock(c);
}

void tess__cache_written(struct tess__cache *c, int dev, const struct tess__tile_key *key,
                         struct tess__blk *keep) {
    tess__cache_lock(c);
    struct tess__dentry *e = tess__dir_find(c->dir, key);
    if (e) {
        /* dev -> M: every other holder -> I; dev's own older copy is stale as well */
        uint32_t others = tess__dir_write(c->dir, e, dev);
        for (int d = 0; others; d++, others >>= 1)
            if ((others & 1) && e->copy[d]) blk_drop(c, e->copy[d]);
        if (e->copy[dev]) {
            struct tess__blk *old = e->copy[dev];
            if (old->in_alru) tess__alru_remove(&c->dev[dev].alru, old);
            e->copy[dev] = NULL;
            old->entry = NULL;
            if (old->readers == 0)
                blk_free(c, old);
            else
                old->stale = 1;
        }
        tess__dir_writeback(c->dir, e, dev); /* M -> I (written back); may free e */
    }
    if (keep && (e = tess__dir_get(c->dir, key))) {
        struct tess__cdev *cd = &c->dev[dev];
        tess__heap_set_fixed(cd->heap, keep->ptr, false); /* working block -> cached copy */
        keep->readers = 0;
        keep->ready_done = 1;
        keep->ld = key->rows;
        keep->space = key->space;
        tess__dir_fill(c->dir, e, dev, keep); /* I -> E */
        e->copy[dev] = keep;
        keep->entry = e;
        tess__alru_push_front(&cd->alru, keep);
        keep->in_alru = 1;
    } else if (keep) {
        keep->readers = 0;
        blk_free(c, keep);
    }
    tess__cache_unlock(c);
}

struct purge_arg {
    struct tess__cache *c;
};

static void purge_entry(struct tess__dentry *e, void *arg) {
    struct tess__cache *c = ((struct purge_arg *)arg)->c;
    uint32_t holders = e->holders;
    for (int d = 0; holders; d++, holders >>= 1) {
        if (!(holders & 1)) continue;
        struct tess__blk *b = e->copy[d];
        bool last = (holders >> 1) == 0;
        if (b && !fill_done(b, c)) {
            /* only after a cancelled step: its copy may still be landing */
            struct tess__cdev *cd = &c->dev[d];
            if (cd->ops->event_sync(cd->bd, b->ready) == TESS_OK) b->ready_done = 1;
        }
        if (b) blk_drop(c, b); /* may free e when it was the last holder */
        if (last) break;
    }
}

void tess__cache_purge(struct tess__cache *c, uint64_t space) {
    struct purge_arg a = {c};
    tess__cache_lock(c);
    tess__dir_foreach_space(c->dir, space, purge_entry, &a);
    tess__cache_unlock(c);
}

void tess__cache_drop_dev(struct tess__cache *c, int dev) {
    struct tess__cdev *cd = &c->dev[dev];
    tess__cache_lock(c);
    /* a write-back of a held tile not known complete may have left its home torn */
    for (struct tess__blk *b = cd->alru.head; b; b = b->next)
        if (!b->ready_done && cd->ops->event_query(cd->bd, b->ready) != TESS_OK)
            b->torn = 1; /* a peer filled from it may hold garbage (drop_pin) */
    for (struct tess__blk *b = cd->alru.head; b; b = b->next)
        if (b->entry && b->entry->wb == b && !b->ready_done) {
            if (cd->ops->event_query(cd->bd, b->ready) == TESS_OK)
                b->ready_done = 1;
            else
                b->entry->lost = 1;
        }
    cd->failed = 1;
    /* The worker released its own readers first; what remains are peers' pins, and those
     * copies are freed when the peers release them. A pinned copy whose fill was not known
     * complete may have been copied unfinished: its job cannot be trusted. */
    for (struct tess__blk *b = cd->alru.head; b; b = b->next)
        if (b->readers > 0 && !b->ready_done && c->poison) c->poison(c->poison_arg, b->space);
    while (cd->alru.head) blk_drop(c, cd->alru.head);
    tess__cache_unlock(c);
}

int tess__cache_locality(struct tess__cache *c, int dev, const struct tess__tile_key *key) {
    struct tess__dentry *e = tess__dir_find(c->dir, key);
    if (!e) return 0;
    if (e->copy[dev]) return 2;
    if (c->p2p && (e->holders & c->dev[dev].peer_mask)) return 1;
    return 0;
}

void tess__cache_destroy(struct tess__cache *c) {
    if (!c->dir) return;
    for (int i = 0; i < c->ndev; i++) {
        struct tess__cdev *cd = &c->dev[i];
        while (cd->alru.head) {
            struct tess__blk *b = cd->alru.head;
            b->readers = 0;
            b->pinned_src = NULL;
            blk_drop(c, b);
        }
    }
    for (int i = 0; i < c->ndev; i++) {
        struct tess__cdev *cd = &c->dev[i];
        while (cd->free_blks) {
            struct tess__blk *b = cd->free_blks;
            cd->free_blks = b->next;
            if (b->ready && cd->ops) cd->ops->event_destroy(cd->bd, b->ready);
            free(b);
        }
    }
    tess__dir_destroy(c->dir);
    c->dir = NULL;
    pthread_mutex_destroy(&c->lock);
}

/* ---- held tiles (node/hold.c): a task's output tile taken as its working block ---------- */

int tess__cache_take(struct tess__cache *c, int dev, int stream, const struct tess__tile *t,
                     size_t bytes, const size_t *room, int nroom, int copies,
                     struct tess__blk **out, bool *was_dirty) {
    struct tess__cdev *cd = &c->dev[dev];
    const struct tess__tile_key *key = &t->key;
    int rc = TESS_OK;
    tess__cache_lock(c);
    struct tess__dentry *e = tess__dir_find(c->dir, key);
    if (e && (e->lost || e->writer >= 0)) {
        tess__cache_unlock(c);
        return e->lost ? TESS__ELOST : TESS__ECONFLICT;
    }
    if (e && e->wb && !fill_done(e->wb, c)) {
        /* a write-back of the tile is landing (an eviction's, a write-behind's): writing the
         * tile now could let a later write-back land before it, and the copy it reads must
         * stay; try again at the next round */
        tess__cache_unlock(c);
        return TESS_EAGAIN;
    }
    *was_dirty = e && e->dirty;
    struct tess__blk *own = e ? e->copy[dev] : NULL, *b = NULL;
    if (own && own->readers == 0) {
        /* this device's copy becomes the block, in place, where fixing it keeps the room
         * the admission promises (two operand tiles of each running task) */
        tess__heap_set_fixed(cd->heap, own->ptr, true);
        bool keeps = true;
        for (int i = 0; i < nroom && keeps; i++)
            keeps = tess__heap_fixed_room(cd->heap, room[i]) >= (size_t)copies;
        if (keeps) {
            if (!fill_done(own, c)) rc = cd->ops->stream_wait(cd->bd, stream, own->ready);
            if (rc) {
                tess__heap_set_fixed(cd->heap, own->ptr, false);
                tess__cache_unlock(c);
                return rc;
            }
            tess__alru_remove(&cd->alru, own);
            own->in_alru = 0;
            if (e->wb == own) e->wb = NULL;
            e->copy[dev] = NULL;
            e->holders &= ~bit(dev);
            own->entry = NULL;
            own->readers = 1;
            b = own;
            TESS__COUNT(cd->ctr, l1_hits, 1);
        } else {
            tess__heap_set_fixed(cd->heap, own->ptr, false);
        }
    }
    if (!b) {
        void *p = planned_locked(c, dev, stream, bytes, room, nroom, copies, NULL);
        if (!p) {
            tess__cache_unlock(c);
            return TESS_EAGAIN;
        }
        if ((rc = blk_new(c, dev, &b))) {
            tess__heap_free(cd->heap, p);
            tess__cache_unlock(c);
            return rc;
        }
        e = tess__dir_find(c->dir, key); /* the placement may have evicted copies */
        size_t es = key->esize, width = (size_t)key->rows * es, height = (size_t)key->cols;
        b->ptr = p;
        b->bytes = bytes;
        b->ld = key->rows;
        b->readers = 1;
        b->ready_done = 1;
        b->space = key->space;
        struct tess__blk *src = NULL;
        if (e && e->copy[dev])
            src = e->copy[dev];
        else if (e && e->holders)
            src = e->copy[__builtin_ctz(e->holders)];
        if (src) {
            /* from a current copy: this device's own (in use), or a peer's */
            if (!fill_done(src, c)) {
                rc = cd->ops->stream_wait(cd->bd, stream, src->ready);
                b->peer_waited = 1;
            }
            if (!rc)
                rc = cd->ops->copy2d(cd->bd, stream, src->dev == dev ? TESS__D2D : TESS__P2P, p,
                                     width, src->ptr, (size_t)src->ld * es, width, height,
                                     c->dev[src->dev].bd);
            if (!rc) {
                src->readers++;
                b->pinned_src = src;
                if (src->dev != dev) {
                    TESS__COUNT(cd->ctr, l2_hits, 1);
                    TESS__COUNT(cd->ctr, bytes_p2p, width * height);
                }
            }
        } else {
            if (e && e->wb && !fill_done(e->wb, c))
                rc = cd->ops->stream_wait(cd->bd, stream, e->wb->ready);
            if (!rc)
                rc = cd->ops->copy2d(cd->bd, stream, TESS__H2D, p, width, (const void *)key->addr,
                                     (size_t)key->ld * es, width, height, NULL);
            if (!rc) {
                TESS__COUNT(cd->ctr, misses, 1);
                TESS__COUNT(cd->ctr, bytes_h2d, width * height);
            }
        }
        if (rc) {
            b->readers = 0;
            blk_free(c, b);
            tess__cache_unlock(c);
            return rc;
        }
        note_peak(cd);
    }
    if (e) {
        /* dev writes the tile (M): the other copies go (a source stays pinned until this
         * fill completed); a dirty tile's entry stays, its contents now in b alone */
        e->writer = dev;
        e->wb = NULL; /* one that landed: the tile is being written */
        for (int o = 0; o < c->ndev; o++)
            if (o != dev && e->copy[o]) blk_drop(c, e->copy[o]);
        if (e->copy[dev]) {
            /* dev's own copy, still read (a write-behind, an operand): it leaves the entry
             * by hand, as blk_drop would, but dev stays the writer (the entry lives on) */
            struct tess__blk *o = e->copy[dev];
            if (o->in_alru) tess__alru_remove(&cd->alru, o);
            o->in_alru = 0;
            o->entry = NULL;
            e->copy[dev] = NULL;
            e->holders &= ~bit(dev);
            if (o->readers == 0)
                blk_free(c, o);
            else
                o->stale = 1;
        }
        e->writer = *was_dirty ? dev : -1;
        if (!*was_dirty) tess__dir_release(c->dir, e);
    }
    *out = b;
    tess__cache_unlock(c);
    return TESS_OK;
}

/* Under the cache lock: b (a taken block whose work completed) becomes dev's cached copy
 * of key, dirty or clean. */
static void put_locked(struct tess__cache *c, int dev, const struct tess__tile_key *key,
                       struct tess__blk *b, bool dirty, int64_t r0) {
    struct tess__cdev *cd = &c->dev[dev];
    b->ready_done = 1;
    if (drop_pin(c, b)) {
        /* filled from a peer that failed before its copy was complete: garbage */
        struct tess__dentry *e = tess__dir_find(c->dir, key);
        if (e) {
            if (e->writer == dev) e->lost = 1; /* the home was stale */
            e->writer = -1;
            tess__dir_release(c->dir, e);
        }
        b->readers = 0;
        blk_free(c, b);
        return;
    }
    struct tess__dentry *e = tess__dir_get(c->dir, key);
    if (!e) {
        /* no record can be had: the contents are gone, the tile must not be read */
        b->readers = 0;
        blk_free(c, b);
        return;
    }
    tess__heap_set_fixed(cd->heap, b->ptr, false);
    b->readers = 0;
    b->space = key->space;
    b->t_put = tess__now();
    e->writer = -1;
    if (dirty) {
        r0 = TESS__MIN(TESS__MAX(r0, 0), (int64_t)key->rows);
        e->dirty_r0 = (int32_t)(e->dirty ? TESS__MIN(e->dirty_r0, r0) : r0);
    }
    e->dirty = dirty;
    tess__dir_fill(c->dir, e, dev, b);
    b->entry = e;
    tess__alru_push_front(&cd->alru, b);
    b->in_alru = 1;
}

void tess__cache_put(struct tess__cache *c, int dev, const struct tess__tile_key *key,
                     struct tess__blk *b, bool dirty, int64_t r0) {
    tess__cache_lock(c);
    put_locked(c, dev, key, b, dirty, r0);
    tess__cache_unlock(c);
}

void tess__cache_abandon(struct tess__cache *c, int dev, const struct tess__tile_key *key,
                         struct tess__blk *b, bool was_dirty, bool intact) {
    tess__cache_lock(c);
    if (intact && !c->dev[dev].failed) {
        put_locked(c, dev, key, b, was_dirty, key->rows); /* the dirty rows as they were */
    } else {
        b->readers = 0;
        blk_free(c, b);
        struct tess__dentry *e = tess__dir_find(c->dir, key);
        if (e) {
            e->writer = -1;
            if (was_dirty) e->lost = 1, e->dirty = 0;
            tess__dir_release(c->dir, e);
        }
    }
    tess__cache_unlock(c);
}

/* Whether tile k meets rectangle rg (NULL: everything). */
static bool meets(const struct tess__wb_range *rg, const struct tess__tile_key *k) {
    if (!rg) return true;
    size_t off = (size_t)(k->addr - rg->base) / rg->es;
    int64_t r = (int64_t)(off % (size_t)rg->ld), col = (int64_t)(off / (size_t)rg->ld);
    return r < rg->r1 && rg->r0 < r + k->rows && col < rg->c1 && rg->c0 < col + k->cols;
}

int tess__cache_writeback(struct tess__cache *c, int dev, int stream, uint64_t space, int mode,
                          const struct tess__wb_range *rg, tess__event *ev) {
    bool drop = mode == TESS__WB_DROP;
    struct tess__cdev *cd = &c->dev[dev];
    struct tess__blk **v = NULL;
    int32_t *r0 = NULL; /* pass 0: the dirty rows' start of each copy written back */
    size_t n = 0, cap = 0, nmine = 0;
    int rc = TESS_OK;
    tess__cache_lock(c);
    /* pass 0: copies this device writes back (it is the lowest holder of a dirty tile);
     * pass 1: its write-backs of evictions still in flight */
    for (int pass = mode == TESS__WB_WAIT; pass < 2 && !rc; pass++)
        for (struct tess__blk *b = cd->alru.head; b; b = b->next) {
            struct tess__dentry *e = b->entry;
            if (b->space != space || !e || !meets(rg, &e->key)) continue;
            bool take = pass == 0 ? e->dirty && __builtin_ctz(e->holders) == dev
                                  : e->wb == b && !fill_done(b, c);
            if (!take) continue;
            if (n == cap) {
                size_t nc = cap ? 2 * cap : 64;
                struct tess__blk **nv = realloc(v, nc * sizeof *nv);
                if (nv) v = nv;
                int32_t *nr = nv ? realloc(r0, nc * sizeof *nr) : NULL;
                if (nr) r0 = nr;
                if (!nv || !nr) {
                    rc = tess__fail(TESS_ENOMEM, "held data: out of host memory");
                    break;
                }
                cap = nc;
            }
            b->readers++;
            r0[n] = e->dirty_r0;
            v[n++] = b;
            if (pass == 0) nmine++;
        }
    tess__cache_unlock(c);
    for (size_t i = 0; i < nmine && !rc; i++) {
        const struct tess__tile_key *k = &v[i]->entry->key;
        /* a copy put back before its task's last kernel completed, or still being filled */
        if (!v[i]->ready_done && cd->ops->event_query(cd->bd, v[i]->ready) != TESS_OK)
            rc = cd->ops->stream_wait(cd->bd, stream, v[i]->ready);
        if (rc) break;
        rc = copy_home(c, v[i], k, r0[i], stream, false);
    }
    if (!rc && nmine) rc = cd->ops->event_record(cd->bd, stream, ev);
    if (!rc && nmine) rc = cd->ops->event_sync(cd->bd, ev);
    for (size_t i = nmine; i < n && !rc; i++) rc = cd->ops->event_sync(cd->bd, v[i]->ready);
    tess__cache_lock(c);
    for (size_t i = 0; i < n; i++) {
        if (!rc) {
            if (i < nmine && v[i]->entry) v[i]->entry->dirty = 0;
            if (i >= nmine) v[i]->ready_done = 1;
        }
        unread(c, v[i]);
    }
    if (drop && !rc) {
        struct tess__blk *b = cd->alru.head;
        while (b) {
            struct tess__blk *nx = b->next;
            if (b->space == space && (!b->entry || meets(rg, &b->entry->key)) && !sole_dirty(b))
                blk_drop(c, b);
            b = nx;
        }
    }
    tess__cache_unlock(c);
    free(v);
    free(r0);
    return rc;
}

struct lost_arg {
    size_t n;
    struct tess__tile_key first;
};

static void lost_entry(struct tess__dentry *e, void *arg) {
    struct lost_arg *a = arg;
    if (e->lost && a->n++ == 0) a->first = e->key;
}

size_t tess__cache_lost(struct tess__cache *c, uint64_t space, struct tess__tile_key *first) {
    struct lost_arg a = {0};
    tess__cache_lock(c);
    tess__dir_foreach_space(c->dir, space, lost_entry, &a);
    tess__cache_unlock(c);
    if (first && a.n) *first = a.first;
    return a.n;
}

static void forget_entry(struct tess__dentry *e, void *arg) {
    struct tess__cache *c = arg;
    e->lost = e->dirty = 0;
    e->wb = NULL;
    if (!e->holders) {
        tess__dir_release(c->dir, e);
        return;
    }
    purge_entry(e, &(struct purge_arg){c});
}

void tess__cache_forget(struct tess__cache *c, uint64_t space) {
    tess__cache_lock(c);
    tess__dir_foreach_space(c->dir, space, forget_entry, c);
    tess__cache_unlock(c);
}

/* b, a copy on dev, may be written behind now (readers: only readers may use it). */
static bool behind_ok(struct tess__cache *c, struct tess__blk *b, int dev, bool readers) {
    struct tess__dentry *e = b->entry;
    return (readers || b->readers == 0) && e && e->dirty && e->writer < 0 && !e->wb &&
           __builtin_ctz(e->holders) == dev && fill_done(b, c);
}

struct tess__blk *tess__cache_behind(struct tess__cache *c, int dev, int stream,
                                     const struct tess__tile_key *key) {
    struct tess__cdev *cd = &c->dev[dev];
    double old = tess__now() - BEHIND_AGE_S;
    tess__cache_lock(c);
    struct tess__blk *b = NULL;
    if (key) {
        struct tess__dentry *e = tess__dir_find(c->dir, key);
        b = e ? e->copy[dev] : NULL;
        if (b && !behind_ok(c, b, dev, true)) b = NULL;
    } else {
        /* the least recently used idle dirty tile no unfinished task will write again; a
         * bounded number of asks per scan */
        int asks = BEHIND_ASKS;
        for (b = cd->alru.tail; b; b = b->prev) {
            if (b->t_put >= old || !behind_ok(c, b, dev, false)) continue;
            if (!c->rewrite_pending) break;
            if (asks-- == 0) {
                b = NULL;
                break;
            }
            if (!c->rewrite_pending(c->rewrite_pending_arg, &b->entry->key)) break;
        }
    }
    if (b) {
        const struct tess__tile_key *k = &b->entry->key;
        /* (optional: never a wait for host resources with the cache lock held) */
        if (copy_home(c, b, k, b->entry->dirty_r0, stream, true) == TESS_OK &&
            cd->ops->event_record(cd->bd, stream, b->ready) == TESS_OK) {
            /* in flight like an eviction's write-back (takes wait for it), still dirty */
            b->ready_done = 0;
            b->wb_recorded = 1;
            b->entry->wb = b;
            b->readers++;
        } else {
            b = NULL;
        }
    }
    tess__cache_unlock(c);
    return b;
}

void tess__cache_behind_done(struct tess__cache *c, struct tess__blk *b, bool landed) {
    tess__cache_lock(c);
    if (landed) b->ready_done = 1;
    if (b->entry && b->entry->wb == b) b->entry->wb = NULL;
    /* still this device's copy (no take dropped it), so nothing wrote it meanwhile */
    if (landed && b->entry && !b->stale) {
        b->entry->dirty = 0;
        if (c->written_back) c->written_back(c->written_back_arg, &b->entry->key);
    }
    unread(c, b);
    tess__cache_unlock(c);
}
