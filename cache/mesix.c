/* cache/mesix.c: the MESI-X directory (BLASX Fig. 3): per tile, which devices hold a valid
 * copy and which one writes it. Owns the directory entries (struct tess__dentry) and their
 * hash table (chained on every key field, doubled when entries outnumber buckets); not the
 * copies (cache.c), their memory (heap.c) or their LRU order (alru.c).
 * The state of a tile on a device, from its entry (cache.h): M writer == dev; I bit dev of
 * holders clear (or no entry); E dev the only holder; S dev and another.
 * Entry life: tess__dir_get creates one in state I everywhere; evict and writeback free it
 * once no device holds the tile and none writes it.
 * Not locked: every call is made with the cache lock held.
 */
#include <stdlib.h>

#include "cache.h"

#define DIR_MIN_BUCKETS 64 /* power of two */

struct tess__dir {
    struct tess__dentry **b; /* buckets */
    size_t nb;               /* buckets, a power of two */
    size_t count;            /* entries */
    int ndev;
    int iterating; /* > 0 inside foreach_space: the table does not grow */
};

static uint32_t bit(int dev) { return (uint32_t)1 << dev; }

static int lowest(uint32_t mask) { return mask ? __builtin_ctz(mask) : -1; }

struct tess__dir *tess__dir_create(int ndev) {
    if (ndev < 1 || ndev > TESS_MAX_DEVICES) return NULL;
    struct tess__dir *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->nb = DIR_MIN_BUCKETS;
    d->b = calloc(d->nb, sizeof *d->b);
    if (!d->b) {
        free(d);
        return NULL;
    }
    d->ndev = ndev;
    return d;
}

void tess__dir_destroy(struct tess__dir *d) {
    if (!d) return;
    for (size_t i = 0; i < d->nb; i++) {
        struct tess__dentry *e = d->b[i];
        while (e) {
            struct tess__dentry *nx = e->hnext;
            free(e);
            e = nx;
        }
    }
    free(d->b);
    free(d);
}

static uint64_t mix(uint64_t h, uint64_t v) {
    /* splitmix64 finalizer over the running hash combined with one field */
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

/* Field by field: the struct's padding bytes never enter the hash. */
uint64_t tess__key_hash(const struct tess__tile_key *k) {
    uint64_t h = 0x243f6a8885a308d3ULL;
    h = mix(h, k->space);
    h = mix(h, (uint64_t)k->addr);
    h = mix(h, (uint64_t)k->ld);
    h = mix(h, ((uint64_t)(uint32_t)k->rows << 32) | (uint32_t)k->cols);
    h = mix(h, k->esize);
    return h;
}

bool tess__key_eq(const struct tess__tile_key *a, const struct tess__tile_key *b) {
    return a->space == b->space && a->addr == b->addr && a->ld == b->ld && a->rows == b->rows &&
           a->cols == b->cols && a->esize == b->esize;
}

struct tess__dentry *tess__dir_find(struct tess__dir *d, const struct tess__tile_key *key) {
    struct tess__dentry *e = d->b[tess__key_hash(key) & (d->nb - 1)];
    while (e && !tess__key_eq(&e->key, key)) e = e->hnext;
    return e;
}

/* Double the bucket array; on allocation failure keep the old one (longer chains). */
static void grow(struct tess__dir *d) {
    size_t nb = d->nb * 2;
    struct tess__dentry **b = calloc(nb, sizeof *b);
    if (!b) return;
    for (size_t i = 0; i < d->nb; i++) {
        struct tess__dentry *e = d->b[i];
        while (e) {
            struct tess__dentry *nx = e->hnext;
            size_t j = tess__key_hash(&e->key) & (nb - 1);
            e->hnext = b[j];
            b[j] = e;
            e = nx;
        }
    }
    free(d->b);
    d->b = b;
    d->nb = nb;
}

struct tess__dentry *tess__dir_get(struct tess__dir *d, const struct tess__tile_key *key) {
    struct tess__dentry *e = tess__dir_find(d, key);
    if (e) return e;
    e = calloc(1, sizeof *e); /* holders 0, copy[] NULL */
    if (!e) return NULL;
    e->key = *key;
    e->writer = -1;
    size_t i = tess__key_hash(key) & (d->nb - 1);
    e->hnext = d->b[i];
    d->b[i] = e;
    d->count++;
    if (d->count > d->nb && !d->iterating) grow(d);
    return e;
}

/* Unlink e from its chain and free it. */
static void drop(struct tess__dir *d, struct tess__dentry *e) {
    struct tess__dentry **pp = &d->b[tess__key_hash(&e->key) & (d->nb - 1)];
    while (*pp && *pp != e) pp = &(*pp)->hnext;
    if (*pp) {
        *pp = e->hnext;
        d->count--;
    }
    free(e);
}

static bool drop_if_unused(struct tess__dir *d, struct tess__dentry *e) {
    if (e->holders != 0 || e->writer >= 0 || e->dirty || e->lost) return false;
    drop(d, e);
    return true;
}

bool tess__dir_release(struct tess__dir *d, struct tess__dentry *e) { return drop_if_unused(d, e); }

enum tess__mesix tess__dir_state(const struct tess__dentry *e, int dev) {
    if (!e || dev < 0 || dev >= TESS_MAX_DEVICES) return TESS__MESIX_I;
    if (e->writer == dev) return TESS__MESIX_M;
    if (!(e->holders & bit(dev))) return TESS__MESIX_I;
    return (e->holders & ~bit(dev)) ? TESS__MESIX_S : TESS__MESIX_E;
}

/* dev becomes a holder; the other holders move from E to S by derivation. */
void tess__dir_fill(struct tess__dir *d, struct tess__dentry *e, int dev, struct tess__blk *blk) {
    (void)d;
    e->holders |= bit(dev);
    e->copy[dev] = blk;
}

/* dev stops holding: -> I; a sole remaining holder is E by derivation. Evicting the writer
 * abandons its M copy (a failed device): the entry no longer has a writer. */
bool tess__dir_evict(struct tess__dir *d, struct tess__dentry *e, int dev) {
    e->holders &= ~bit(dev);
    e->copy[dev] = NULL;
    if (e->writer == dev) e->writer = -1;
    return drop_if_unused(d, e);
}

/* dev -> M, every other holder -> I. Their copy[] pointers are left in place so that the
 * caller can find the blocks it must drop (tess__dir_evict on each clears the pointer and
 * never frees the entry while dev writes it). dev stays a holder of its copy until the
 * write-back. */
uint32_t tess__dir_write(struct tess__dir *d, struct tess__dentry *e, int dev) {
    (void)d;
    uint32_t others = e->holders & ~bit(dev);
    e->holders &= bit(dev);
    e->writer = dev;
    return others;
}

/* M -> I on dev (its copy, like every other, is no longer valid once the home has the
 * data). A dev that is not the writer is simply dropped to I. */
bool tess__dir_writeback(struct tess__dir *d, struct tess__dentry *e, int dev) {
    if (e->writer == dev) e->writer = -1;
    e->holders &= ~bit(dev);
    e->copy[dev] = NULL;
    return drop_if_unused(d, e);
}

/* Only holders in peer_mask qualify (dev cannot copy from the others); the lowest. */
int tess__dir_peer(const struct tess__dentry *e, int dev, uint32_t peer_mask) {
    if (!e) return -1;
    uint32_t cand = e->holders & peer_mask;
    if (dev >= 0 && dev < TESS_MAX_DEVICES) cand &= ~bit(dev);
    return lowest(cand);
}

/* The next entry is read before fn runs, so fn may free the entry it is given (and only
 * that one); entries fn creates may or may not be visited; the table does not grow while
 * iterating. */
void tess__dir_foreach_space(struct tess__dir *d, uint64_t space,
                             void (*fn)(struct tess__dentry *e, void *arg), void *arg) {
    d->iterating++;
    for (size_t i = 0; i < d->nb; i++) {
        struct tess__dentry *e = d->b[i];
        while (e) {
            struct tess__dentry *nx = e->hnext;
            if (e->key.space == space) fn(e, arg);
            e = nx;
        }
    }
    d->iterating--;
}

size_t tess__dir_count(const struct tess__dir *d) { return d ? d->count : 0; }
