/* tests/test_heap.c: the device heap (cache/heap.c) on a host arena: split and merge,
 * first fit, alignment, exhaustion, a randomized run against a shadow model, threads;
 * fixed segments, allocation at an address and the room planning of B7.
 */
#include <pthread.h>
#include <stdint.h>

#include "harness.h"
#include "../cache/cache.h"

#define ARENA_ALIGN 4096

static void *arena_new(size_t bytes) {
    void *p = aligned_alloc(ARENA_ALIGN, (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN);
    if (!p) abort();
    return p;
}

static uintptr_t off(void *arena, void *p) { return (uintptr_t)p - (uintptr_t)arena; }

/* Freeing B then A merges them into one free segment that a later fit reuses. */
TEST(heap_split_merge) {
    char *arena = arena_new(1024);
    struct tess__heap *h = tess__heap_create(arena, 1024, 16);
    ASSERT(h);
    ASSERT_EQ(tess__heap_segments(h), 1);
    void *a = tess__heap_alloc(h, 100); /* 112 */
    void *b = tess__heap_alloc(h, 200); /* 208 */
    void *c = tess__heap_alloc(h, 300); /* 304 */
    ASSERT(a && b && c);
    ASSERT_EQ(off(arena, a), 0);
    ASSERT_EQ(off(arena, b), 112);
    ASSERT_EQ(off(arena, c), 320);
    ASSERT_EQ(tess__heap_segments(h), 4); /* A B C + free tail */
    ASSERT_EQ(tess__heap_used(h), 112 + 208 + 304);
    tess__heap_free(h, b);
    ASSERT_EQ(tess__heap_segments(h), 4); /* B free between used A and C */
    ASSERT_EQ(tess__heap_largest_free(h), 1024 - 624);
    tess__heap_free(h, a);
    ASSERT_EQ(tess__heap_segments(h), 3); /* A+B merged */
    ASSERT_EQ(tess__heap_used(h), 304);
    /* 320 bytes fit exactly in the merged A+B hole, which lies below the 400-byte tail */
    void *ab = tess__heap_alloc(h, 320);
    ASSERT_EQ(off(arena, ab), 0);
    ASSERT_EQ(tess__heap_segments(h), 3); /* exact fit: no split */
    tess__heap_free(h, ab);
    /* freeing C merges it with both neighbours: one segment again */
    tess__heap_free(h, c);
    ASSERT_EQ(tess__heap_segments(h), 1);
    ASSERT_EQ(tess__heap_largest_free(h), 1024);
    tess__heap_destroy(h);
    free(arena);
}

/* Freeing the upper neighbour first merges with the free segment above too (s + next). */
TEST(heap_merge_with_upper) {
    char *arena = arena_new(4096);
    struct tess__heap *h = tess__heap_create(arena, 4096, 64);
    void *p[4];
    for (int i = 0; i < 4; i++) p[i] = tess__heap_alloc(h, 64);
    ASSERT_EQ(tess__heap_segments(h), 5);
    tess__heap_free(h, p[2]);
    tess__heap_free(h, p[1]); /* merges with p[2]'s hole above */
    ASSERT_EQ(tess__heap_segments(h), 4);
    ASSERT_EQ(tess__heap_largest_free(h), 4096 - 256);
    void *q = tess__heap_alloc(h, 128);
    ASSERT_EQ(off(arena, q), 64);
    tess__heap_free(h, q);
    tess__heap_free(h, p[3]); /* merges below (1,2) and above (tail) */
    ASSERT_EQ(tess__heap_segments(h), 2);
    tess__heap_free(h, p[0]);
    ASSERT_EQ(tess__heap_segments(h), 1);
    tess__heap_destroy(h);
    free(arena);
}

/* Allocation takes the lowest-addressed free segment that is large enough. */
TEST(heap_first_fit_order) {
    char *arena = arena_new(4096);
    struct tess__heap *h = tess__heap_create(arena, 4096, 64);
    void *p[4];
    for (int i = 0; i < 4; i++) {
        p[i] = tess__heap_alloc(h, 64);
        ASSERT_EQ(off(arena, p[i]), 64 * i);
    }
    tess__heap_free(h, p[2]);
    tess__heap_free(h, p[0]); /* holes at 0 and 128, tail at 256 */
    void *x = tess__heap_alloc(h, 64);
    ASSERT_EQ(off(arena, x), 0);
    void *y = tess__heap_alloc(h, 64);
    ASSERT_EQ(off(arena, y), 128);
    void *z = tess__heap_alloc(h, 64);
    ASSERT_EQ(off(arena, z), 256);
    tess__heap_free(h, x);                /* hole of 64 at 0 */
    void *big = tess__heap_alloc(h, 128); /* does not fit the hole: from the tail */
    ASSERT_EQ(off(arena, big), 320);
    void *small = tess__heap_alloc(h, 1); /* fits the hole */
    ASSERT_EQ(off(arena, small), 0);
    tess__heap_destroy(h);
    free(arena);
}

/* Pointers are aligned and sizes rounded up, also over a misaligned base; bad alignments
 * are refused. */
TEST(heap_alignment) {
    char *arena = arena_new(8192);
    ASSERT(tess__heap_create(arena, 8192, 0) == NULL);
    ASSERT(tess__heap_create(arena, 8192, 48) == NULL);
    ASSERT(tess__heap_create(arena + 1, 100, 256) == NULL); /* nothing aligned left */
    struct tess__heap *h = tess__heap_create(arena + 1, 8191, 256);
    ASSERT(h);
    ASSERT_EQ(tess__heap_capacity(h), 8192 - 256);
    ASSERT_EQ(tess__heap_capacity(h) % 256, 0);
    void *a = tess__heap_alloc(h, 1);
    void *b = tess__heap_alloc(h, 1);
    void *c = tess__heap_alloc(h, 257);
    void *d = tess__heap_alloc(h, 0); /* a minimal segment, not NULL */
    ASSERT(a && b && c && d);
    ASSERT_EQ((uintptr_t)a % 256, 0);
    ASSERT_EQ((uintptr_t)b % 256, 0);
    ASSERT_EQ((uintptr_t)c % 256, 0);
    ASSERT_EQ((uintptr_t)d % 256, 0);
    ASSERT_EQ((uintptr_t)a, (uintptr_t)(arena + 256));
    ASSERT_EQ((char *)b - (char *)a, 256);
    ASSERT_EQ((char *)c - (char *)b, 256);
    ASSERT_EQ((char *)d - (char *)c, 512);
    ASSERT_EQ(tess__heap_used(h), 256 + 256 + 512 + 256);
    tess__heap_free(h, d);
    tess__heap_free(h, NULL); /* no-op */
    ASSERT_EQ(tess__heap_used(h), 1024);
    tess__heap_destroy(h);
    free(arena);
}

/* When no free segment is large enough, alloc returns NULL and changes nothing. */
TEST(heap_exhaustion) {
    char *arena = arena_new(1024);
    struct tess__heap *h = tess__heap_create(arena, 1024, 16);
    ASSERT(tess__heap_alloc(h, 1025) == NULL);
    ASSERT(tess__heap_alloc(h, SIZE_MAX) == NULL);
    ASSERT(tess__heap_alloc(h, SIZE_MAX - 8) == NULL);
    void *all = tess__heap_alloc(h, 1024);
    ASSERT(all);
    ASSERT_EQ(tess__heap_segments(h), 1);
    ASSERT(tess__heap_alloc(h, 1) == NULL);
    ASSERT(tess__heap_alloc(h, 0) == NULL); /* even a minimal segment has no room */
    ASSERT_EQ(tess__heap_used(h), 1024);
    ASSERT_EQ(tess__heap_largest_free(h), 0);
    tess__heap_free(h, all);
    /* fragmented: 512 bytes free in total but no 512-byte hole */
    void *p[8];
    for (int i = 0; i < 8; i++) p[i] = tess__heap_alloc(h, 128);
    for (int i = 0; i < 8; i += 2) tess__heap_free(h, p[i]);
    ASSERT_EQ(tess__heap_used(h), 512);
    ASSERT(tess__heap_alloc(h, 256) == NULL);
    ASSERT(tess__heap_alloc(h, 128) != NULL);
    tess__heap_destroy(h);
    free(arena);
}

/* Freeing everything, in any order, leaves one free segment of the whole capacity. */
TEST(heap_free_all_one_segment) {
    enum { N = 200 };
    char *arena = arena_new(1 << 20);
    struct tess__heap *h = tess__heap_create(arena, 1 << 20, 128);
    void *p[N];
    unsigned seed = 12345;
    for (int i = 0; i < N; i++) {
        p[i] = tess__heap_alloc(h, 1 + rand_r(&seed) % 4000);
        ASSERT(p[i]);
    }
    ASSERT_EQ(tess__heap_segments(h), N + 1);
    for (int i = N - 1; i > 0; i--) { /* shuffle the free order */
        int j = rand_r(&seed) % (i + 1);
        void *t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
    for (int i = 0; i < N; i++) tess__heap_free(h, p[i]);
    ASSERT_EQ(tess__heap_segments(h), 1);
    ASSERT_EQ(tess__heap_used(h), 0);
    ASSERT_EQ(tess__heap_largest_free(h), tess__heap_capacity(h));
    ASSERT_EQ(tess__heap_capacity(h), 1 << 20);
    tess__heap_destroy(h);
    free(arena);
}

/* Random alloc/free matches a unit-map shadow model exactly: no overlap, inside the arena,
 * the first-fit address, NULL only when no hole fits, and the segment count. */
TEST(heap_random_vs_shadow) {
    enum { UNIT = 64, UNITS = 512, LIVE = 96, OPS = 30000 };
    char *arena = arena_new(UNIT * UNITS);
    struct tess__heap *h = tess__heap_create(arena, UNIT * UNITS, UNIT);
    static int owner[UNITS]; /* live slot owning each unit, or -1 */
    struct {
        char *p;
        size_t units;
    } live[LIVE] = {{0}};
    for (int u = 0; u < UNITS; u++) owner[u] = -1;
    unsigned seed = 777;
    size_t used_units = 0;
    for (int op = 0; op < OPS; op++) {
        int k = rand_r(&seed) % LIVE;
        if (live[k].p) {
            size_t u0 = (size_t)(live[k].p - arena) / UNIT;
            for (size_t u = u0; u < u0 + live[k].units; u++) {
                ASSERT_EQ(owner[u], k);
                owner[u] = -1;
            }
            /* the bytes were not touched by any overlapping allocation */
            for (size_t i = 0; i < live[k].units * UNIT; i++)
                ASSERT_MSG((unsigned char)live[k].p[i] == (unsigned char)k, "byte %zu clobbered",
                           i);
            tess__heap_free(h, live[k].p);
            used_units -= live[k].units;
            live[k].p = NULL;
        } else {
            size_t bytes = 1 + (size_t)(rand_r(&seed) % (UNIT * 24));
            if (rand_r(&seed) % 50 == 0) bytes = (size_t)(rand_r(&seed) % (UNIT * UNITS / 3));
            size_t need = bytes ? (bytes + UNIT - 1) / UNIT : 1;
            /* expected: the lowest run of free units of length >= need */
            long expect = -1;
            for (size_t u = 0; u < UNITS && expect < 0;) {
                if (owner[u] != -1) {
                    u++;
                    continue;
                }
                size_t r = u;
                while (r < UNITS && owner[r] == -1) r++;
                if (r - u >= need) expect = (long)u;
                u = r;
            }
            char *p = tess__heap_alloc(h, bytes);
            if (expect < 0) {
                ASSERT_MSG(p == NULL, "op %d: alloc(%zu) should fail", op, bytes);
                continue;
            }
            ASSERT_MSG(p != NULL, "op %d: alloc(%zu) failed with a hole at unit %ld", op, bytes,
                       expect);
            ASSERT(p >= arena && p + need * UNIT <= arena + UNIT * UNITS);
            ASSERT_EQ((p - arena) % UNIT, 0);
            ASSERT_EQ((p - arena) / UNIT, expect);
            for (size_t u = (size_t)expect; u < (size_t)expect + need; u++) {
                ASSERT_EQ(owner[u], -1);
                owner[u] = k;
            }
            memset(p, k, need * UNIT);
            live[k].p = p;
            live[k].units = need;
            used_units += need;
        }
        ASSERT_EQ(tess__heap_used(h), used_units * UNIT);
        /* segments = used allocations + maximal free runs (merging is complete) */
        size_t nlive = 0, runs = 0;
        for (int i = 0; i < LIVE; i++) nlive += live[i].p != NULL;
        for (int u = 0; u < UNITS; u++)
            if (owner[u] == -1 && (u == 0 || owner[u - 1] != -1)) runs++;
        ASSERT_EQ(tess__heap_segments(h), nlive + runs);
    }
    for (int i = 0; i < LIVE; i++) tess__heap_free(h, live[i].p);
    ASSERT_EQ(tess__heap_segments(h), 1);
    tess__heap_destroy(h);
    free(arena);
}

struct mt_arg {
    struct tess__heap *h;
    char *arena;
    size_t size;
    int id;
    _Atomic int *bad;
};

static void *mt_worker(void *p) {
    struct mt_arg *a = p;
    enum { KEEP = 16 };
    struct {
        unsigned char *p;
        size_t n;
    } held[KEEP] = {{0}};
    unsigned seed = 1000u + (unsigned)a->id;
    for (int it = 0; it < 20000; it++) {
        int k = rand_r(&seed) % KEEP;
        if (held[k].p) {
            for (size_t i = 0; i < held[k].n; i++)
                if (held[k].p[i] != (unsigned char)(a->id * KEEP + k)) {
                    atomic_store(a->bad, 1);
                    break;
                }
            tess__heap_free(a->h, held[k].p);
            held[k].p = NULL;
        } else {
            size_t n = 1 + (size_t)(rand_r(&seed) % 2000);
            unsigned char *q = tess__heap_alloc(a->h, n);
            if (!q) continue; /* momentarily full: fine */
            if ((char *)q < a->arena || (char *)q + n > a->arena + a->size || (uintptr_t)q % 32)
                atomic_store(a->bad, 1);
            memset(q, a->id * KEEP + k, n);
            held[k].p = q;
            held[k].n = n;
        }
    }
    for (int k = 0; k < KEEP; k++) tess__heap_free(a->h, held[k].p);
    return NULL;
}

/* Four threads allocating and freeing concurrently never get overlapping segments, and
 * the heap is whole again afterwards. */
TEST(heap_threads) {
    enum { T = 4 };
    size_t size = 256 * 1024;
    char *arena = arena_new(size);
    struct tess__heap *h = tess__heap_create(arena, size, 32);
    _Atomic int bad = 0;
    pthread_t th[T];
    struct mt_arg args[T];
    for (int i = 0; i < T; i++) {
        args[i] = (struct mt_arg){h, arena, size, i, &bad};
        ASSERT_EQ(pthread_create(&th[i], NULL, mt_worker, &args[i]), 0);
    }
    for (int i = 0; i < T; i++) pthread_join(th[i], NULL);
    ASSERT_EQ(atomic_load(&bad), 0);
    ASSERT_EQ(tess__heap_used(h), 0);
    ASSERT_EQ(tess__heap_segments(h), 1);
    ASSERT_EQ(tess__heap_largest_free(h), size);
    tess__heap_destroy(h);
    free(arena);
}

/* ---- fixed segments and room planning (B7) --------------------------------------------- */

/* alloc_at takes exactly the range asked for when it is free (splitting the free segment
 * in three), refuses a used, misaligned or out-of-range one; fixed segments are what the
 * room count sees as used, set_fixed toggles them, free merges everything back. */
TEST(heap_alloc_at_and_fixed) {
    char *arena = arena_new(4096);
    struct tess__heap *h = tess__heap_create(arena, 4096, 64);
    ASSERT_EQ(tess__heap_fixed_room(h, 1024), 4);
    char *a = tess__heap_alloc_at(h, arena + 1024, 1000, true); /* 1024 */
    ASSERT(a == arena + 1024);
    ASSERT_EQ(tess__heap_segments(h), 3);
    ASSERT_EQ(tess__heap_used(h), 1024);
    ASSERT(tess__heap_alloc_at(h, arena + 1536, 64, false) == NULL);  /* used */
    ASSERT(tess__heap_alloc_at(h, arena + 32, 64, false) == NULL);    /* misaligned */
    ASSERT(tess__heap_alloc_at(h, arena + 4032, 128, false) == NULL); /* past the end */
    ASSERT(tess__heap_alloc_at(h, arena + 1984, 128, false) == NULL); /* overlaps a */
    /* fixed a splits the runs [0, 1024) and [2048, 4096) */
    ASSERT_EQ(tess__heap_fixed_room(h, 1024), 3);
    ASSERT_EQ(tess__heap_fixed_room(h, 2048), 1);
    /* a cached copy (not fixed) does not count */
    char *b = tess__heap_alloc(h, 64);
    ASSERT(b == arena);
    ASSERT_EQ(tess__heap_fixed_room(h, 1024), 3);
    char *c = tess__heap_alloc_at(h, arena + 4096 - 64, 64, false); /* the last 64 bytes */
    ASSERT(c == arena + 4032);
    ASSERT_EQ(tess__heap_fixed_room(h, 2048), 1);
    tess__heap_set_fixed(h, c, true);
    ASSERT_EQ(tess__heap_fixed_room(h, 2048), 0); /* [2048, 4032) */
    ASSERT_EQ(tess__heap_fixed_room(h, 1024), 2);
    tess__heap_set_fixed(h, a, false);
    ASSERT_EQ(tess__heap_fixed_room(h, 1024), 3); /* [0, 4032) */
    ASSERT_EQ(tess__heap_round(h, 1000), 1024);
    tess__heap_free(h, a);
    tess__heap_free(h, c);
    tess__heap_free(h, b);
    ASSERT_EQ(tess__heap_segments(h), 1);
    ASSERT_EQ(tess__heap_fixed_room(h, 4096), 1);
    tess__heap_destroy(h);
    free(arena);
}

/* The layouts of B7 (16 KiB heap, complex-double blocks of 4 KiB, single of 1 KiB). The
 * stall: the z task's C and the s task's C are fixed, the z task's A copy lies at 6 KiB;
 * 7 KiB are free but no 4 KiB piece, so its B cannot be placed while A stays; once A goes
 * (the worker's flush) both fit. Planning: with a fixed z C at 7-11 KiB and copies at
 * 0-3 KiB, first fit would put an s C at 3 KiB and leave the z task room for one operand
 * only; the plan puts it at the end of that free piece (6 KiB), where both still fit, with
 * no eviction; where every free piece is wrong it picks a run's start (copies there to be
 * evicted); where nothing keeps the room it says so. */
TEST(heap_plan_b7_layouts) {
    enum { K = 1024 };
    char *arena = arena_new(16 * K);
    struct tess__heap *h = tess__heap_create(arena, 16 * K, 256);
    /* the stall, as the worker dumped it */
    char *zc = tess__heap_alloc_at(h, arena, 4 * K, true);
    char *za = tess__heap_alloc_at(h, arena + 6 * K, 4 * K, false);
    char *sc = tess__heap_alloc_at(h, arena + 13 * K, K, true);
    ASSERT(zc && za && sc);
    ASSERT_EQ(tess__heap_used(h), 9 * K);
    ASSERT(tess__heap_alloc(h, 4 * K) == NULL);    /* 7 KiB free, no 4 KiB piece */
    ASSERT_EQ(tess__heap_fixed_room(h, 4 * K), 2); /* but two once A is evicted */
    tess__heap_free(h, za);
    char *a = tess__heap_alloc(h, 4 * K), *b = tess__heap_alloc(h, 4 * K);
    ASSERT(a == arena + 4 * K && b == arena + 8 * K); /* first fit: A and B */
    tess__heap_free(h, a);
    tess__heap_free(h, b);
    tess__heap_free(h, zc);
    tess__heap_free(h, sc);

    /* planning an s C beside a fixed z C */
    zc = tess__heap_alloc_at(h, arena + 7 * K, 4 * K, true);
    char *cp[3];
    for (int i = 0; i < 3; i++) cp[i] = tess__heap_alloc(h, K); /* copies at 0-3 KiB */
    ASSERT(cp[2] == arena + 2 * K);
    size_t room[2] = {4 * K, K};
    bool now = false;
    char *at = tess__heap_plan_fixed(h, K, room, 2, 2, &now);
    ASSERT_MSG(at == arena + 6 * K && now, "planned at %ld (now %d)", (long)(at - arena), now);
    /* a first-fit s C at 3 KiB would leave the z task one operand */
    char *bad = tess__heap_alloc_fixed(h, K, true);
    ASSERT(bad == arena + 3 * K);
    ASSERT_EQ(tess__heap_fixed_room(h, 4 * K), 1);
    tess__heap_free(h, bad);
    /* every free piece wrong: copies fill 3-7, 11-12 and 13-16 KiB; the one free KiB,
     * 12-13, would split the run 11-16 KiB and leave the z task one 4 KiB piece */
    char *more[4];
    for (int i = 0; i < 4; i++) more[i] = tess__heap_alloc(h, K); /* 3-7 KiB */
    char *mid = tess__heap_alloc_at(h, arena + 11 * K, K, false);
    char *top = tess__heap_alloc_at(h, arena + 13 * K, 3 * K, false);
    ASSERT(more[3] == arena + 6 * K && mid && top);
    at = tess__heap_plan_fixed(h, K, room, 2, 2, &now);
    ASSERT_MSG(at == arena && !now, "planned at %ld (now %d)", (long)(at - arena), now);
    /* no place: a z C plus another z task on this heap (12 KiB of fixed z blocks would
     * leave 4 KiB) */
    size_t zroom[2] = {4 * K, 4 * K};
    at = tess__heap_plan_fixed(h, 4 * K, zroom, 2, 2, &now);
    ASSERT(at == NULL);
    /* with nothing fixed, three tiles always fit: the plan never refuses a lone task */
    tess__heap_free(h, zc);
    at = tess__heap_plan_fixed(h, 4 * K, zroom, 1, 2, &now);
    ASSERT(at != NULL);
    for (int i = 0; i < 3; i++) tess__heap_free(h, cp[i]);
    for (int i = 0; i < 4; i++) tess__heap_free(h, more[i]);
    tess__heap_free(h, mid);
    tess__heap_free(h, top);
    ASSERT_EQ(tess__heap_segments(h), 1);
    tess__heap_destroy(h);
    free(arena);
}

/* Random tasks of four block sizes (1, 2, 4, 8 units) come and go on a heap of 64 units,
 * among random cached copies, admitted as the worker admits them: bytes of three blocks per
 * task fit (checked for every other attempt only, so that the plan alone must refuse some),
 * then the plan places the task's fixed block (evicting the copies in the way).
 * After every step, counted independently from the fixed blocks alone: every running task
 * still has room for two of its blocks. A lone task is never refused. */
TEST(heap_plan_random_keeps_room) {
    enum { UNIT = 256, UNITS = 64, MAXT = 16, MAXC = 48, OPS = 20000 };
    char *arena = arena_new(UNIT * UNITS);
    struct tess__heap *h = tess__heap_create(arena, UNIT * UNITS, UNIT);
    struct {
        char *p;
        size_t units;
    } task[MAXT] = {{0}}, copy[MAXC] = {{0}};
    unsigned seed = 4242;
    int admitted = 0, refused = 0, evicting = 0;
    for (int op = 0; op < OPS; op++) {
        int r = rand_r(&seed) % 10;
        if (r < 4) { /* a cached copy comes */
            int k = rand_r(&seed) % MAXC;
            if (copy[k].p) continue;
            size_t u = (size_t)1 << (rand_r(&seed) % 3);
            if ((copy[k].p = tess__heap_alloc(h, u * UNIT))) copy[k].units = u;
        } else if (r < 6) { /* a copy is evicted */
            int k = rand_r(&seed) % MAXC;
            if (copy[k].p) tess__heap_free(h, copy[k].p), copy[k].p = NULL;
        } else if (r < 9) { /* a task tries to start */
            int k = rand_r(&seed) % MAXT;
            if (task[k].p) continue;
            size_t u = (size_t)1 << (rand_r(&seed) % 4), bytes = 3 * u, nrun = 0;
            size_t room[MAXT + 1];
            int n = 0;
            for (int i = 0; i < MAXT; i++)
                if (task[i].p) bytes += 3 * task[i].units, room[n++] = task[i].units * UNIT, nrun++;
            if (bytes > UNITS && op % 2)
                continue; /* the byte admission (every other op:
                                                           without it the plan must refuse) */
            room[n++] = u * UNIT;
            bool now;
            char *at = tess__heap_plan_fixed(h, u * UNIT, room, n, 2, &now);
            if (!at) {
                ASSERT_MSG(nrun > 0, "op %d: a lone task of %zu units refused", op, u);
                refused++;
                continue;
            }
            if (!now) {
                evicting++;
                for (int i = 0; i < MAXC; i++)
                    if (copy[i].p && copy[i].p < at + u * UNIT &&
                        at < copy[i].p + copy[i].units * UNIT)
                        tess__heap_free(h, copy[i].p), copy[i].p = NULL;
            }
            task[k].p = tess__heap_alloc_at(h, at, u * UNIT, true);
            ASSERT_MSG(task[k].p == at, "op %d: planned place %ld not free", op,
                       (long)(at - arena));
            task[k].units = u;
            admitted++;
        } else { /* a task ends */
            int k = rand_r(&seed) % MAXT;
            if (task[k].p) tess__heap_free(h, task[k].p), task[k].p = NULL;
        }
        /* independent count over the fixed blocks */
        static char fixed[UNITS];
        memset(fixed, 0, sizeof fixed);
        for (int i = 0; i < MAXT; i++)
            if (task[i].p)
                for (size_t q = 0; q < task[i].units; q++)
                    fixed[(task[i].p - arena) / UNIT + q] = 1;
        for (int i = 0; i < MAXT; i++) {
            if (!task[i].p) continue;
            size_t fit = 0, run = 0;
            for (int q = 0; q <= UNITS; q++) {
                if (q < UNITS && !fixed[q]) {
                    run++;
                    continue;
                }
                fit += run / task[i].units;
                run = 0;
            }
            ASSERT_MSG(fit >= 2, "op %d: a task of %zu units has room for %zu", op, task[i].units,
                       fit);
            ASSERT_EQ(tess__heap_fixed_room(h, task[i].units * UNIT), fit);
        }
    }
    fprintf(stderr, "  %d tasks admitted (%d evicting copies), %d refused\n", admitted, evicting,
            refused);
    ASSERT_GT(admitted, 1000);
    ASSERT_GT(evicting, 0);
    ASSERT_GT(refused, 0);
    for (int i = 0; i < MAXT; i++) tess__heap_free(h, task[i].p);
    for (int i = 0; i < MAXC; i++) tess__heap_free(h, copy[i].p);
    ASSERT_EQ(tess__heap_segments(h), 1);
    tess__heap_destroy(h);
    free(arena);
}

TEST_MAIN()
