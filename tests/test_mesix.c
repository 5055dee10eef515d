/* tests/test_mesix.c: the MESI-X directory (cache/mesix.c): every state transition, peer
 * choice, key identity, growth, and iteration that frees entries.
 */
#include "harness.h"
#include "../cache/cache.h"

static const enum tess__mesix I = TESS__MESIX_I, S = TESS__MESIX_S, E = TESS__MESIX_E,
                              M = TESS__MESIX_M;

static struct tess__tile_key key_of(uint64_t space, uintptr_t addr) {
    struct tess__tile_key k;
    memset(&k, 0, sizeof k);
    k.space = space;
    k.addr = addr;
    k.ld = 1024;
    k.rows = 256;
    k.cols = 256;
    k.esize = 8;
    return k;
}

/* The first fill of a tile makes it E on that device and I elsewhere. */
TEST(mesix_fill_i_to_e) {
    struct tess__dir *d = tess__dir_create(4);
    struct tess__tile_key k = key_of(1, 0x1000);
    struct tess__blk b0 = {0};
    ASSERT(tess__dir_find(d, &k) == NULL);
    ASSERT_EQ(tess__dir_state(NULL, 0), I);
    struct tess__dentry *e = tess__dir_get(d, &k);
    ASSERT(e);
    ASSERT_EQ(tess__dir_count(d), 1);
    ASSERT(tess__dir_get(d, &k) == e); /* no duplicate */
    ASSERT(tess__dir_find(d, &k) == e);
    for (int dev = 0; dev < 4; dev++) ASSERT_EQ(tess__dir_state(e, dev), I);
    ASSERT_EQ(e->writer, -1);
    tess__dir_fill(d, e, 0, &b0);
    ASSERT_EQ(tess__dir_state(e, 0), E);
    for (int dev = 1; dev < 4; dev++) ASSERT_EQ(tess__dir_state(e, dev), I);
    ASSERT(e->copy[0] == &b0);
    ASSERT_EQ(e->holders, 1);
    tess__dir_destroy(d);
}

/* A second device filling makes both copies S; one evicting makes the other E again;
 * the last eviction frees the entry (E -> I). */
TEST(mesix_e_s_e_i) {
    struct tess__dir *d = tess__dir_create(4);
    struct tess__tile_key k = key_of(1, 0x2000);
    struct tess__blk b0 = {0}, b1 = {0}, b2 = {0};
    struct tess__dentry *e = tess__dir_get(d, &k);
    tess__dir_fill(d, e, 0, &b0);
    tess__dir_fill(d, e, 1, &b1);
    ASSERT_EQ(tess__dir_state(e, 0), S);
    ASSERT_EQ(tess__dir_state(e, 1), S);
    ASSERT_EQ(tess__dir_state(e, 2), I);
    tess__dir_fill(d, e, 2, &b2);
    ASSERT_EQ(tess__dir_state(e, 2), S);
    ASSERT(!tess__dir_evict(d, e, 2)); /* S -> I, others stay S */
    ASSERT_EQ(tess__dir_state(e, 0), S);
    ASSERT_EQ(tess__dir_state(e, 2), I);
    ASSERT(e->copy[2] == NULL);
    ASSERT(!tess__dir_evict(d, e, 1)); /* S -> I, last holder S -> E */
    ASSERT_EQ(tess__dir_state(e, 1), I);
    ASSERT_EQ(tess__dir_state(e, 0), E);
    ASSERT(e->copy[1] == NULL && e->copy[0] == &b0);
    ASSERT_EQ(tess__dir_count(d), 1);
    ASSERT(tess__dir_evict(d, e, 0)); /* E -> I: entry freed */
    ASSERT(tess__dir_find(d, &k) == NULL);
    ASSERT_EQ(tess__dir_count(d), 0);
    /* an entry created but never filled is freed by an eviction from any device */
    e = tess__dir_get(d, &k);
    ASSERT_EQ(tess__dir_count(d), 1);
    ASSERT(tess__dir_evict(d, e, 3));
    ASSERT_EQ(tess__dir_count(d), 0);
    tess__dir_destroy(d);
}

/* A write from S puts the writer in M, returns the other holders, which read I; they are
 * dropped without freeing the entry, and the write-back (M -> I) frees it. */
TEST(mesix_write_from_s_then_writeback) {
    struct tess__dir *d = tess__dir_create(4);
    struct tess__tile_key k = key_of(2, 0x3000);
    struct tess__blk b[4] = {{0}};
    struct tess__dentry *e = tess__dir_get(d, &k);
    tess__dir_fill(d, e, 0, &b[0]);
    tess__dir_fill(d, e, 1, &b[1]);
    tess__dir_fill(d, e, 3, &b[3]);
    uint32_t inval = tess__dir_write(d, e, 1);
    ASSERT_EQ(inval, (1u << 0) | (1u << 3));
    ASSERT_EQ(tess__dir_state(e, 1), M);
    ASSERT_EQ(e->writer, 1);
    ASSERT_EQ(tess__dir_state(e, 0), I);
    ASSERT_EQ(tess__dir_state(e, 3), I);
    ASSERT_EQ(tess__dir_state(e, 2), I);
    /* the invalidated copies are still named so the caller can drop them */
    ASSERT(e->copy[0] == &b[0] && e->copy[3] == &b[3]);
    ASSERT_EQ(tess__dir_peer(e, 0, 0xffffffffu), 1); /* only the writer holds data */
    ASSERT(!tess__dir_evict(d, e, 0));               /* the writer keeps the entry alive */
    ASSERT(!tess__dir_evict(d, e, 3));
    ASSERT(e->copy[0] == NULL && e->copy[3] == NULL);
    ASSERT_EQ(tess__dir_state(e, 1), M);
    ASSERT(tess__dir_writeback(d, e, 1)); /* M -> I: nothing left */
    ASSERT(tess__dir_find(d, &k) == NULL);
    ASSERT_EQ(tess__dir_count(d), 0);
    tess__dir_destroy(d);
}

/* A write on the sole holder (E -> M) invalidates nobody; a tile written without a copy
 * is M too; a write-back with another holder left keeps the entry, that holder E. */
TEST(mesix_write_from_e_and_writeback_keeps) {
    struct tess__dir *d = tess__dir_create(4);
    struct tess__blk b0 = {0}, b2 = {0};
    struct tess__tile_key k = key_of(3, 0x4000);
    struct tess__dentry *e = tess__dir_get(d, &k);
    tess__dir_fill(d, e, 0, &b0);
    ASSERT_EQ(tess__dir_write(d, e, 0), 0);
    ASSERT_EQ(tess__dir_state(e, 0), M);
    tess__dir_fill(d, e, 2, &b2); /* a peer copies the written tile */
    ASSERT_EQ(tess__dir_state(e, 0), M);
    ASSERT_EQ(tess__dir_state(e, 2), S);
    ASSERT(!tess__dir_writeback(d, e, 0)); /* device 2 still holds it */
    ASSERT_EQ(tess__dir_state(e, 0), I);
    ASSERT_EQ(tess__dir_state(e, 2), E);
    ASSERT_EQ(e->writer, -1);
    ASSERT(e->copy[0] == NULL);
    ASSERT(tess__dir_evict(d, e, 2));
    /* M without a prior copy, then the writer's device fails: evicting it frees the entry */
    struct tess__tile_key k2 = key_of(3, 0x5000);
    e = tess__dir_get(d, &k2);
    ASSERT_EQ(tess__dir_write(d, e, 3), 0);
    ASSERT_EQ(tess__dir_state(e, 3), M);
    ASSERT(tess__dir_evict(d, e, 3));
    ASSERT_EQ(tess__dir_count(d), 0);
    tess__dir_destroy(d);
}

/* dir_peer returns a holder other than dev that is in peer_mask (the lowest), else -1. */
TEST(mesix_peer_preference) {
    struct tess__dir *d = tess__dir_create(8);
    struct tess__blk b[8] = {{0}};
    struct tess__tile_key k = key_of(4, 0x6000);
    struct tess__dentry *e = tess__dir_get(d, &k);
    ASSERT_EQ(tess__dir_peer(e, 0, 0xff), -1); /* nobody holds it */
    ASSERT_EQ(tess__dir_peer(NULL, 0, 0xff), -1);
    tess__dir_fill(d, e, 2, &b[2]);
    tess__dir_fill(d, e, 5, &b[5]);
    tess__dir_fill(d, e, 7, &b[7]);
    ASSERT_EQ(tess__dir_peer(e, 0, 0xff), 2);    /* several: the lowest */
    ASSERT_EQ(tess__dir_peer(e, 0, 1u << 5), 5); /* the one dev can reach */
    ASSERT_EQ(tess__dir_peer(e, 0, (1u << 7) | (1u << 5)), 5);
    ASSERT_EQ(tess__dir_peer(e, 0, (1u << 1) | (1u << 3)), -1); /* no holder reachable */
    ASSERT_EQ(tess__dir_peer(e, 2, 0xff), 5);                   /* never dev itself */
    ASSERT_EQ(tess__dir_peer(e, 2, 1u << 2), -1);
    tess__dir_evict(d, e, 2);
    ASSERT_EQ(tess__dir_peer(e, 0, 0xff), 5); /* an evicted device is not a peer */
    tess__dir_destroy(d);
}

/* Keys differing in any one field are distinct entries; equal fields hash and compare
 * equal whatever the padding bytes hold. */
TEST(mesix_keys_distinct) {
    struct tess__dir *d = tess__dir_create(2);
    struct tess__tile_key k[7];
    for (int i = 0; i < 7; i++) k[i] = key_of(9, 0x7000);
    k[1].space = 10;
    k[2].addr = 0x7008;
    k[3].ld = 1025;
    k[4].rows = 255;
    k[5].cols = 255;
    k[6].esize = 4;
    struct tess__blk b = {0};
    struct tess__dentry *e[7];
    for (int i = 0; i < 7; i++) {
        e[i] = tess__dir_get(d, &k[i]);
        ASSERT(e[i]);
        tess__dir_fill(d, e[i], 0, &b);
        for (int j = 0; j < i; j++) {
            ASSERT(e[i] != e[j]);
            ASSERT(!tess__key_eq(&k[i], &k[j]));
        }
    }
    ASSERT_EQ(tess__dir_count(d), 7);
    for (int i = 0; i < 7; i++) ASSERT(tess__dir_find(d, &k[i]) == e[i]);
    /* rows and cols swapped is another tile too */
    struct tess__tile_key sw = key_of(9, 0x7000);
    sw.rows = 256;
    sw.cols = 128;
    struct tess__tile_key sw2 = sw;
    sw2.rows = 128;
    sw2.cols = 256;
    ASSERT(!tess__key_eq(&sw, &sw2));
    /* padding: same fields over different garbage */
    struct tess__tile_key x, y;
    memset(&x, 0xAA, sizeof x);
    memset(&y, 0x55, sizeof y);
    x.space = y.space = 9;
    x.addr = y.addr = 0x7000;
    x.ld = y.ld = 1024;
    x.rows = y.rows = 256;
    x.cols = y.cols = 256;
    x.esize = y.esize = 8;
    ASSERT(tess__key_eq(&x, &y));
    ASSERT(tess__key_hash(&x) == tess__key_hash(&y));
    ASSERT(tess__dir_find(d, &x) == e[0]);
    ASSERT(tess__dir_get(d, &y) == e[0]);
    ASSERT_EQ(tess__dir_count(d), 7);
    tess__dir_destroy(d);
}

/* 100,000 entries: the table grows and every entry stays findable, then all are freed. */
TEST(mesix_growth_100k) {
    enum { N = 100000 };
    struct tess__dir *d = tess__dir_create(2);
    struct tess__blk b = {0};
    for (int i = 0; i < N; i++) {
        struct tess__tile_key k = key_of((uint64_t)(i % 7), 0x100000 + (uintptr_t)i * 64);
        struct tess__dentry *e = tess__dir_get(d, &k);
        ASSERT(e);
        tess__dir_fill(d, e, i & 1, &b);
    }
    ASSERT_EQ(tess__dir_count(d), N);
    for (int i = 0; i < N; i++) {
        struct tess__tile_key k = key_of((uint64_t)(i % 7), 0x100000 + (uintptr_t)i * 64);
        struct tess__dentry *e = tess__dir_find(d, &k);
        ASSERT_MSG(e != NULL, "entry %d lost", i);
        ASSERT(tess__key_eq(&e->key, &k));
        ASSERT_EQ(tess__dir_state(e, i & 1), E);
    }
    struct tess__tile_key miss = key_of(0, 0x100000 + (uintptr_t)N * 64);
    ASSERT(tess__dir_find(d, &miss) == NULL);
    for (int i = 0; i < N; i += 2) {
        struct tess__tile_key k = key_of((uint64_t)(i % 7), 0x100000 + (uintptr_t)i * 64);
        ASSERT(tess__dir_evict(d, tess__dir_find(d, &k), 0));
    }
    ASSERT_EQ(tess__dir_count(d), N / 2);
    tess__dir_destroy(d); /* frees the rest (ASan checks) */
}

struct purge {
    struct tess__dir *d;
    int calls;
    uint64_t space;
    int wrong;
};

static void purge_fn(struct tess__dentry *e, void *arg) {
    struct purge *p = arg;
    p->calls++;
    if (e->key.space != p->space) p->wrong++;
    uint32_t h = e->holders;
    for (int dev = 0; h; dev++, h >>= 1)
        if ((h & 1) && tess__dir_evict(p->d, e, dev)) return; /* e is gone */
}

/* foreach_space visits exactly the entries of one space and survives fn freeing each. */
TEST(mesix_foreach_space_evicting) {
    enum { N = 3000 };
    struct tess__dir *d = tess__dir_create(4);
    struct tess__blk b = {0};
    for (int i = 0; i < N; i++) {
        struct tess__tile_key k = key_of(1 + (uint64_t)(i % 3), 0x9000 + (uintptr_t)i * 8);
        struct tess__dentry *e = tess__dir_get(d, &k);
        tess__dir_fill(d, e, 0, &b);
        if (i % 2) tess__dir_fill(d, e, 2, &b);
        if (i % 5 == 0) tess__dir_fill(d, e, 3, &b);
    }
    struct purge p = {d, 0, 2, 0};
    tess__dir_foreach_space(d, 2, purge_fn, &p);
    ASSERT_EQ(p.calls, N / 3);
    ASSERT_EQ(p.wrong, 0);
    ASSERT_EQ(tess__dir_count(d), N - N / 3);
    for (int i = 0; i < N; i++) {
        struct tess__tile_key k = key_of(1 + (uint64_t)(i % 3), 0x9000 + (uintptr_t)i * 8);
        struct tess__dentry *e = tess__dir_find(d, &k);
        if (i % 3 == 1)
            ASSERT(e == NULL);
        else
            ASSERT(e != NULL && tess__dir_state(e, 0) != I);
    }
    p = (struct purge){d, 0, 77, 0};
    tess__dir_foreach_space(d, 77, purge_fn, &p); /* an empty space */
    ASSERT_EQ(p.calls, 0);
    p = (struct purge){d, 0, 1, 0};
    tess__dir_foreach_space(d, 1, purge_fn, &p);
    p = (struct purge){d, 0, 3, 0};
    tess__dir_foreach_space(d, 3, purge_fn, &p);
    ASSERT_EQ(tess__dir_count(d), 0);
    tess__dir_destroy(d);
}

TEST_MAIN()
