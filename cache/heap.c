/* cache/heap.c: the device heap of BLASX Fig. 6, one per device arena. Owns the bookkeeping
 * of [base, base + size): which byte ranges are used and which are free; never the arena
 * memory nor its bytes. Segment records (from a chunked pool: no malloc after warm-up but a
 * table doubling) sit in three structures: every segment in address order (free() merges
 * free neighbours: two free segments are never adjacent), the free ones in address order
 * (first fit, split), and a hash of the used ones by address.
 * Fixed segments: a working block kept until its task ends; every other used segment is an
 * evictable cached copy. Once the copies are evicted the runs between fixed segments are
 * the free segments, and first fit places n blocks of x bytes iff the runs hold n of them;
 * tess__heap_plan_fixed places a new fixed block so that this still holds for the running
 * tasks' needs (docs/design.md, "Device heap"), which keeps mixed block sizes from
 * fragmenting the heap into a deadlock.
 * Conventions: range and sizes rounded to `align`; alloc(0) returns a distinct minimal
 * segment, so NULL always means "no room". Lock: the heap lock is a leaf.
 */
#include <assert.h>
#include <stdbool.h>
#include <stdlib.h>

#include "cache.h"

#define SEG_CHUNK 256 /* records per pool chunk */
#define TAB_MIN 64    /* initial buckets of the occupied table (power of two) */

struct seg {
    uintptr_t addr;
    size_t size;
    int used;
    int fixed;                 /* used and kept until a task ends (not evictable) */
    struct seg *prev, *next;   /* metadata list: all segments, address order */
    struct seg *fprev, *fnext; /* free list: free segments, address order */
    struct seg *hnext;         /* occupied chain (used) or pool link (spare record) */
};

struct run {
    uintptr_t lo, hi;
}; /* [lo, hi): a range between fixed segments */

struct chunk {
    struct chunk *next;
    struct seg recs[SEG_CHUNK];
};

struct tess__heap {
    pthread_mutex_t lock;
    uintptr_t base; /* aligned start of the managed range */
    size_t cap;     /* bytes managed */
    size_t align;
    struct seg *first;     /* metadata list head (lowest address) */
    struct seg *free_head; /* free list head (lowest free address) */
    struct seg **tab;      /* occupied table */
    size_t tab_size;       /* buckets, a power of two */
    size_t nused;          /* used segments */
    size_t used_bytes;
    size_t nsegs;     /* free + used segments */
    size_t nfixed;    /* fixed segments */
    struct run *runs; /* scratch of tess__heap_plan_fixed (nfixed + 1 entries) */
    size_t runs_cap;
    struct seg *spare;    /* unused records */
    struct chunk *chunks; /* every record allocation, freed at destroy */
};

/* ---- record pool ---------------------------------------------------------------------- */

static struct seg *rec_get(struct tess__heap *h) {
    if (!h->spare) {
        struct chunk *c = malloc(sizeof *c);
        if (!c) return NULL;
        c->next = h->chunks;
        h->chunks = c;
        for (int i = 0; i < SEG_CHUNK; i++) {
            c->recs[i].hnext = h->spare;
            h->spare = &c->recs[i];
        }
    }
    struct seg *s = h->spare;
    h->spare = s->hnext;
    s->hnext = NULL;
    return s;
}

static void rec_put(struct tess__heap *h, struct seg *s) {
    s->hnext = h->spare;
    h->spare = s;
}

/* ---- occupied table --------------------------------------------------------------------- */

static size_t slot_of(const struct tess__heap *h, uintptr_t addr, size_t tab_size) {
    uint64_t x = (uint64_t)((addr - h->base) / h->align);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (tab_size - 1);
}

/* Double the table when it holds more used segments than buckets; on allocation failure
 * keep the old one (longer chains, still correct). */
static void tab_grow(struct tess__heap *h) {
    size_t n = h->tab_size * 2;
    struct seg **t = calloc(n, sizeof *t);
    if (!t) return;
    for (size_t i = 0; i < h->tab_size; i++) {
        struct seg *s = h->tab[i];
        while (s) {
            struct seg *nx = s->hnext;
            size_t j = slot_of(h, s->addr, n);
            s->hnext = t[j];
            t[j] = s;
            s = nx;
        }
    }
    free(h->tab);
    h->tab = t;
    h->tab_size = n;
}

static void tab_insert(struct tess__heap *h, struct seg *s) {
    if (h->nused + 1 > h->tab_size) tab_grow(h);
    size_t i = slot_of(h, s->addr, h->tab_size);
    s->hnext = h->tab[i];
    h->tab[i] = s;
    h->nused++;
}

static struct seg *tab_remove(struct tess__heap *h, uintptr_t addr) {
    if (addr < h->base || addr >= h->base + h->cap) return NULL;
    struct seg **pp = &h->tab[slot_of(h, addr, h->tab_size)];
    for (; *pp; pp = &(*pp)->hnext) {
        struct seg *s = *pp;
        if (s->addr == addr) {
            *pp = s->hnext;
            s->hnext = NULL;
            h->nused--;
            return s;
        }
    }
    return NULL;
}

/* ---- list helpers ----------------------------------------------------------------------- */

static void free_unlink(struct tess__heap *h, struct seg *s) {
    if (s->fprev)
        s->fprev->fnext = s->fnext;
    else
        h->free_head = s->fnext;
    if (s->fnext) s->fnext->fprev = s->fprev;
    s->fprev = s->fnext = NULL;
}

/* r takes old's place in the free list (same address order: nothing free lies between). */
static void free_replace(struct tess__heap *h, struct seg *old, struct seg *r) {
    r->fprev = old->fprev;
    r->fnext = old->fnext;
    if (r->fprev)
        r->fprev->fnext = r;
    else
        h->free_head = r;
    if (r->fnext) r->fnext->fprev = r;
    old->fprev = old->fnext = NULL;
}

/* Link s into the free list after the nearest free segment below it in address order. */
static void free_insert(struct tess__heap *h, struct seg *s) {
    struct seg *q = s->prev;
    while (q && q->used) q = q->prev;
    s->fprev = q;
    s->fnext = q ? q->fnext : h->free_head;
    if (s->fnext) s->fnext->fprev = s;
    if (q)
        q->fnext = s;
    else
        h->free_head = s;
}

static void meta_unlink(struct tess__heap *h, struct seg *s) {
    if (s->prev)
        s->prev->next = s->next;
    else
        h->first = s->next;
    if (s->next) s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

/* ---- API -------------------------------------------------------------------------------- */

struct tess__heap *tess__heap_create(void *base, size_t size, size_t align) {
    if (align == 0 || (align & (align - 1)) != 0) return NULL;
    uintptr_t b = (uintptr_t)base;
    if (b == 0 || size > UINTPTR_MAX - b || align - 1 > UINTPTR_MAX - b) return NULL;
    uintptr_t start = (b + align - 1) & ~(uintptr_t)(align - 1);
    size_t lost = (size_t)(start - b);
    if (lost >= size) return NULL;
    size_t cap = (size - lost) & ~(align - 1);
    if (cap == 0) return NULL;

    struct tess__heap *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    h->base = start;
    h->cap = cap;
    h->align = align;
    h->tab_size = TAB_MIN;
    h->tab = calloc(h->tab_size, sizeof *h->tab);
    struct seg *s = h->tab ? rec_get(h) : NULL;
    if (!s || pthread_mutex_init(&h->lock, NULL) != 0) {
        while (h->chunks) {
            struct chunk *c = h->chunks;
            h->chunks = c->next;
            free(c);
        }
        free(h->tab);
        free(h);
        return NULL;
    }
    *s = (struct seg){.addr = start, .size = cap};
    h->first = h->free_head = s;
    h->nsegs = 1;
    return h;
}

void tess__heap_destroy(struct tess__heap *h) {
    if (!h) return;
    while (h->chunks) {
        struct chunk *c = h->chunks;
        h->chunks = c->next;
        free(c);
    }
    free(h->tab);
    free(h->runs);
    pthread_mutex_destroy(&h->lock);
    free(h);
}

/* Round a request as alloc does; 0 when it can never fit. */
static size_t need_of(const struct tess__heap *h, size_t bytes) {
    size_t need = bytes ? bytes : 1;
    if (need > h->cap) return 0; /* also keeps the rounding from overflowing */
    return (need + h->align - 1) & ~(h->align - 1);
}

/* Carve [p, p + need) out of the free segment s (s->addr <= p, p + need <= its end) and
 * mark it used. What lies below p stays free in s's place, what lies above it becomes a
 * free segment of its own. NULL when a record cannot be had (nothing changed then). */
static struct seg *take(struct tess__heap *h, struct seg *s, uintptr_t p, size_t need, int fixed) {
    uintptr_t end = s->addr + s->size;
    struct seg *u = s, *lo = NULL, *r = NULL;
    if (p > s->addr && !(lo = rec_get(h))) return NULL;
    if (p + need < end && !(r = rec_get(h))) {
        if (lo) rec_put(h, lo);
        return NULL;
    }
    if (lo) {
        /* s keeps [s->addr, p) and its free-list place; u is the rest */
        u = lo;
        *u = (struct seg){.addr = p, .size = end - p};
        u->prev = s;
        u->next = s->next;
        if (s->next) s->next->prev = u;
        s->next = u;
        s->size = p - s->addr;
        h->nsegs++;
    }
    if (r) {
        /* the remainder above the block: free, in address order right after u's range */
        *r = (struct seg){.addr = p + need, .size = end - p - need};
        r->prev = u;
        r->next = u->next;
        if (u->next) u->next->prev = r;
        u->next = r;
        u->size = need;
        h->nsegs++;
        if (u == s) {
            free_replace(h, s, r);
        } else {
            r->fprev = s;
            r->fnext = s->fnext;
            if (s->fnext) s->fnext->fprev = r;
            s->fnext = r;
        }
    } else if (u == s) {
        free_unlink(h, s);
    }
    u->used = 1;
    u->fixed = fixed;
    h->nfixed += fixed != 0;
    tab_insert(h, u);
    h->used_bytes += u->size;
    return u;
}

void *tess__heap_alloc(struct tess__heap *h, size_t bytes) {
    return tess__heap_alloc_fixed(h, bytes, false);
}

void *tess__heap_alloc_fixed(struct tess__heap *h, size_t bytes, bool fixed) {
    if (!h) return NULL;
    size_t need = need_of(h, bytes);
    if (!need) return NULL;

    pthread_mutex_lock(&h->lock);
    struct seg *s = h->free_head;
    while (s && s->size < need) s = s->fnext; /* first fit, lowest address */
    struct seg *u = s ? take(h, s, s->addr, need, fixed) : NULL;
    pthread_mutex_unlock(&h->lock);
    return u ? (void *)u->addr : NULL;
}

void *tess__heap_alloc_at(struct tess__heap *h, void *at, size_t bytes, bool fixed) {
    if (!h) return NULL;
    size_t need = need_of(h, bytes);
    uintptr_t p = (uintptr_t)at;
    if (!need || p < h->base || (p - h->base) % h->align || p - h->base > h->cap - need)
        return NULL;
    pthread_mutex_lock(&h->lock);
    struct seg *s = h->free_head;
    while (s && s->addr + s->size <= p) s = s->fnext;
    struct seg *u = NULL;
    if (s && s->addr <= p && p + need <= s->addr + s->size) u = take(h, s, p, need, fixed);
    pthread_mutex_unlock(&h->lock);
    return u ? at : NULL;
}

void tess__heap_set_fixed(struct tess__heap *h, void *p, bool fixed) {
    if (!h || !p) return;
    pthread_mutex_lock(&h->lock);
    struct seg *s = h->tab[slot_of(h, (uintptr_t)p, h->tab_size)];
    while (s && s->addr != (uintptr_t)p) s = s->hnext;
    if (s && s->fixed != (int)fixed) {
        s->fixed = fixed;
        if (fixed)
            h->nfixed++;
        else
            h->nfixed--;
    }
    pthread_mutex_unlock(&h->lock);
    assert(s && "tess__heap_set_fixed: pointer not allocated from this heap");
}

size_t tess__heap_round(const struct tess__heap *h, size_t bytes) {
    return h ? need_of(h, bytes) : 0;
}

/* ---- room planning over the fixed segments (B7) ------------------------------------------ */

/* The runs (ranges between fixed segments), in address order, into h->runs; their count,
 * or -1 when the scratch array cannot grow. */
static long runs_of(struct tess__heap *h) {
    if (h->runs_cap < h->nfixed + 1) {
        size_t n = (h->nfixed + 1) * 2;
        struct run *r = realloc(h->runs, n * sizeof *r);
        if (!r) return -1;
        h->runs = r;
        h->runs_cap = n;
    }
    long n = 0;
    uintptr_t lo = h->base;
    for (struct seg *s = h->first; s; s = s->next)
        if (s->used && s->fixed) {
            if (s->addr > lo) h->runs[n++] = (struct run){lo, s->addr};
            lo = s->addr + s->size;
        }
    if (h->base + h->cap > lo) h->runs[n++] = (struct run){lo, h->base + h->cap};
    return n;
}

static size_t fits(uintptr_t lo, uintptr_t hi, size_t x) { return hi > lo ? (hi - lo) / x : 0; }

size_t tess__heap_fixed_room(struct tess__heap *h, size_t bytes) {
    if (!h) return 0;
    size_t x = need_of(h, bytes), n = 0;
    if (!x) return 0;
    pthread_mutex_lock(&h->lock);
    long nr = runs_of(h);
    for (long i = 0; i < nr; i++) n += fits(h->runs[i].lo, h->runs[i].hi, x);
    pthread_mutex_unlock(&h->lock);
    return n;
}

/* Whether a fixed block at [p, p + need) inside run R keeps `copies` blocks of every size
 * x[i] (total[i]: how many fit in all the runs before). */
static bool keeps(const struct run *R, uintptr_t p, size_t need, const size_t *x,
                  const size_t *total, int nroom, int copies) {
    for (int i = 0; i < nroom; i++)
        if (total[i] - fits(R->lo, R->hi, x[i]) + fits(R->lo, p, x[i]) +
                fits(p + need, R->hi, x[i]) <
            (size_t)copies)
            return false;
    return true;
}

#define PLAN_MAX_ROOM 64 /* room sizes one plan checks at most (callers pass a few) */

void *tess__heap_plan_fixed(struct tess__heap *h, size_t bytes, const size_t *room, int nroom,
                            int copies, bool *now) {
    if (now) *now = false;
    if (!h || nroom < 0 || nroom > PLAN_MAX_ROOM) return NULL;
    size_t need = need_of(h, bytes), x[PLAN_MAX_ROOM], total[PLAN_MAX_ROOM];
    if (!need) return NULL;
    for (int i = 0; i < nroom; i++)
        if (!(x[i] = need_of(h, room[i]))) return NULL;
    pthread_mutex_lock(&h->lock);
    long nr = runs_of(h);
    for (int i = 0; i < nroom; i++) {
        total[i] = 0;
        for (long r = 0; r < nr; r++) total[i] += fits(h->runs[r].lo, h->runs[r].hi, x[i]);
    }
    uintptr_t at = 0;
    /* First where no eviction is needed: each free segment (lowest first), at its start or
     * its end, within the run that holds it. */
    long r = 0;
    for (struct seg *s = h->free_head; s && !at && nr > 0; s = s->fnext) {
        if (s->size < need) continue;
        while (r < nr && h->runs[r].hi <= s->addr) r++;
        if (r == nr) break;
        uintptr_t cand[2] = {s->addr, s->addr + s->size - need};
        for (int k = 0; k < 2 && !at; k++)
            if (keeps(&h->runs[r], cand[k], need, x, total, nroom, copies)) at = cand[k];
    }
    if (at && now) *now = true;
    /* Then anywhere in the runs (the copies there are evicted first): each run's start or
     * end, lowest run first. */
    for (r = 0; r < nr && !at; r++) {
        if (h->runs[r].hi - h->runs[r].lo < need) continue;
        uintptr_t cand[2] = {h->runs[r].lo, h->runs[r].hi - need};
        for (int k = 0; k < 2 && !at; k++)
            if (keeps(&h->runs[r], cand[k], need, x, total, nroom, copies)) at = cand[k];
    }
    pthread_mutex_unlock(&h->lock);
    return (void *)at;
}

void tess__heap_free(struct tess__heap *h, void *p) {
    if (!h || !p) return;
    pthread_mutex_lock(&h->lock);
    struct seg *s = tab_remove(h, (uintptr_t)p);
    if (!s) {
        pthread_mutex_unlock(&h->lock);
        assert(s && "tess__heap_free: pointer not allocated from this heap");
        return;
    }
    s->used = 0;
    h->used_bytes -= s->size;
    if (s->fixed) h->nfixed--;
    s->fixed = 0;

    /* Merge with the lower neighbour: it absorbs s and keeps its free-list place. */
    struct seg *cur = s;
    int listed = 0;
    if (s->prev && !s->prev->used) {
        cur = s->prev;
        cur->size += s->size;
        meta_unlink(h, s);
        rec_put(h, s);
        h->nsegs--;
        listed = 1;
    }
    /* Merge with the upper neighbour: cur absorbs it (and takes its free-list place if cur
     * was not listed yet). */
    struct seg *n = cur->next;
    if (n && !n->used) {
        cur->size += n->size;
        if (listed) {
            free_unlink(h, n);
        } else {
            free_replace(h, n, cur);
            listed = 1;
        }
        meta_unlink(h, n);
        rec_put(h, n);
        h->nsegs--;
    }
    if (!listed) free_insert(h, cur);
    pthread_mutex_unlock(&h->lock);
}

size_t tess__heap_capacity(const struct tess__heap *h) { return h ? h->cap : 0; }

size_t tess__heap_used(struct tess__heap *h) {
    if (!h) return 0;
    pthread_mutex_lock(&h->lock);
    size_t v = h->used_bytes;
    pthread_mutex_unlock(&h->lock);
    return v;
}

size_t tess__heap_largest_free(struct tess__heap *h) {
    if (!h) return 0;
    pthread_mutex_lock(&h->lock);
    size_t best = 0;
    for (struct seg *s = h->free_head; s; s = s->fnext)
        if (s->size > best) best = s->size;
    pthread_mutex_unlock(&h->lock);
    return best;
}

size_t tess__heap_segments(struct tess__heap *h) {
    if (!h) return 0;
    pthread_mutex_lock(&h->lock);
    size_t v = h->nsegs;
    pthread_mutex_unlock(&h->lock);
    return v;
}
