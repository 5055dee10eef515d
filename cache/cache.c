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
static void *alloc_evicting(struct tess__cache *c, int dev, size_t bytes, bool fixed) {
    struct tess__cdev *cd = &c->dev[dev];
    for (;;) {
        void *p = tess__heap_alloc_fixed(cd->heap, bytes, fixed);
        if (p) return p;
        struct tess__blk *v = tess__alru_victim(&cd->alru, fill_done, c);
        if (!v) return NULL;
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

    /* A new copy: room first. */
    void *ptr = alloc_evicting(c, dev, alloc_bytes, false);
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
        /* Miss: a 2D copy straight from the host matrix, no packing. */
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

/* The fill of b is known complete: the peer copy it came from is free again. If the fill
 * had to wait for the source's own fill and the source device failed, the wait may have
 * been skipped: the copy is suspect. */
static void drop_pin(struct tess__cache *c, struct tess__blk *b) {
    if (!b->pinned_src) return;
    struct tess__blk *src = b->pinned_src;
    struct tess__cdev *sd = &c->dev[src->dev];
    if (b->peer_waited && !src->ready_done && c->poison &&
        (sd->failed || sd->ops->event_query(sd->bd, src->ready) != TESS_OK))
        c->poison(c->poison_arg, b->space);
    b->pinned_src = NULL;
    unread(c, src);
}

/* Copies on other devices that nobody reads (their step was never queued: unacquire) still
 * pin the copies of dev they were filled from, until they are evicted; once their fill is
 * complete, drop those pins, so dev can evict its copies. */
static void unpin_idle(struct tess__cache *c, int dev) {
    for (int o = 0; o < c->ndev; o++) {
        if (o == dev) continue;
        for (struct tess__blk *b = c->dev[o].alru.head; b; b = b->next)
            if (b->readers == 0 && b->pinned_src && b->pinned_src->dev == dev && fill_done(b, c))
                drop_pin(c, b);
    }
}

void tess__cache_release(struct tess__cache *c, struct tess__blk *b) {
    tess__cache_lock(c);
    if (c->dev[b->dev].caps & TESS__CAP_UNIFIED) {
        blk_recycle(c, b);
    } else {
        /* The kernel that read b completed, so its fill did: the peer source is free. If
         * the fill had to wait for the source's own fill and the source device failed,
         * the wait may have been skipped: the copy is suspect. */
        b->ready_done = 1;
        drop_pin(c, b);
        unread(c, b);
    }
    tess__cache_unlock(c);
}

void tess__cache_unacquire(struct tess__cache *c, struct tess__blk *b) {
    tess__cache_lock(c);
    if (c->dev[b->dev].caps & TESS__CAP_UNIFIED)
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
    return work_blk(c, dev, alloc_evicting(c, dev, bytes, true), bytes, out);
}

int tess__cache_alloc_planned(struct tess__cache *c, int dev, size_t bytes, const size_t *room,
                              int nroom, int copies, struct tess__blk **out, bool *evicted) {
    struct tess__cdev *cd = &c->dev[dev];
    bool now = false;
    if (evicted) *evicted = false;
    tess__cache_lock(c);
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
                if (b->readers > 0 || !fill_done(b, c)) {
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
    void *p = at ? tess__heap_alloc_at(cd->heap, at, bytes, true) : NULL;
    return work_blk(c, dev, p, bytes, out);
}

int tess__cache_flush_dev(struct tess__cache *c, int dev) {
    struct tess__cdev *cd = &c->dev[dev];
    int n = 0;
    tess__cache_lock(c);
    unpin_idle(c, dev);
    struct tess__blk *b = cd->alru.tail;
    while (b) {
        struct tess__blk *prev = b->prev;
        if (b->readers == 0 && fill_done(b, c)) {
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
