/* tests/test_exhaust.c: resource exhaustion: slower, still correct, never a crash.
 *   - a device heap of exactly three tiles of the widest precision, and one below: every
 *     routine and precision computes the right result or returns TESS_ENOMEM at once;
 *   - heap fragmentation: routines, precisions and shapes in sequence and from 8 threads
 *     on one runtime whose tile edge is chosen per call; fixed tiles of 1, 2 and 4 KiB;
 *   - two precisions at once on a heap of four of the largest tiles, and mixed routines
 *     from 8 threads on 20 KiB heaps: every call right, tight-heap paths taken;
 *   - tess_malloc_host of absurd sizes returns NULL and the library keeps working.
 * Each test sets its knobs (setenv before tess_init, the runtime restarted between tests)
 * on emulated devices and prints them; results are verified with test_fuzz_l3.c's
 * machinery. TESS_EXHAUST_CALLS (default 400): calls of the many-thread tests;
 * TESS_EXHAUST_MIXED_MEM: the mixed-precision heap; TESS_EXHAUST_B7_ROUNDS: rounds of the
 * two-precision test.
 */
#define TESS_FUZZ_L3_NO_TESTS
#include "test_fuzz_l3.c"

#include <stdint.h>

#include "../node/node.h" /* struct tess__pressure: the runtime's tight-heap counters */

/* Weak: the test also runs against a library without the counters (an older build through
 * LD_LIBRARY_PATH, to check that it catches B7 there); it then skips their assertions. */
#pragma weak tess__worker_pressure

static double ex_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool ex_pressure(struct tess__pressure *p) {
    memset(p, 0, sizeof *p);
    if (!tess__worker_pressure) return false;
    tess__worker_pressure(p);
    return true;
}

/* Print the tight-heap counters gathered since *p0 into *d. */
static void ex_pressure_since(const struct tess__pressure *p0, struct tess__pressure *d) {
    struct tess__pressure p1;
    if (!ex_pressure(&p1)) {
        memset(d, 0, sizeof *d);
        fprintf(stderr, "  (this library has no tight-heap counters)\n");
        return;
    }
    d->flushes = p1.flushes - p0->flushes;
    d->flush_retries_ok = p1.flush_retries_ok - p0->flush_retries_ok;
    d->planned_evictions = p1.planned_evictions - p0->planned_evictions;
    d->deferred = p1.deferred - p0->deferred;
    d->stall_enomem = p1.stall_enomem - p0->stall_enomem;
    fprintf(stderr,
            "  tight heap: %llu flushes (%llu steps through after one), %llu C blocks "
            "placed by the plan evicting copies, %llu activations put off, %llu stall ENOMEM\n",
            (unsigned long long)d->flushes, (unsigned long long)d->flush_retries_ok,
            (unsigned long long)d->planned_evictions, (unsigned long long)d->deferred,
            (unsigned long long)d->stall_enomem);
}

/* tess_malloc_host of an absurd size must return NULL; AddressSanitizer and
 * ThreadSanitizer stop the program there instead unless allocator_may_return_null is set
 * (the flags ASAN_OPTIONS / TSAN_OPTIONS set in the environment still override the others). */
#if defined(__SANITIZE_ADDRESS__)
const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void) {
    return "allocator_may_return_null=1";
}
#endif
#if defined(__SANITIZE_THREAD__)
const char *__tsan_default_options(void);
__attribute__((visibility("default"))) const char *__tsan_default_options(void) {
    return "allocator_may_return_null=1";
}
#endif

/* Restart-safe knob setting: the runtime must be stopped (every tess_init matched). */
static void ex_knobs(int emulate, long mem, long tile, const char *extra_name,
                     const char *extra_value) {
    char b[64];
    setenv("TESSERA_DEVICES", "none", 1);
    setenv("TESSERA_CPU_WORKER", "0", 1);
    snprintf(b, sizeof b, "%d", emulate);
    setenv("TESSERA_EMULATE", b, 1);
    snprintf(b, sizeof b, "%ld", mem);
    setenv("TESSERA_EMULATE_MEM", b, 1);
    snprintf(b, sizeof b, "%ld", tile);
    setenv("TESSERA_TILE", b, 1);
    unsetenv("TESSERA_EMULATE_JITTER");
    if (extra_name) setenv(extra_name, extra_value, 1);
    fprintf(stderr,
            "  knobs: TESSERA_EMULATE=%d TESSERA_EMULATE_MEM=%ld TESSERA_TILE=%ld%s%s%s%s\n",
            emulate, mem, tile, extra_name ? " " : "", extra_name ? extra_name : "",
            extra_name ? "=" : "", extra_name ? extra_value : "");
}

/* Stop the runtime whatever a failed test before left running (tess_finalize on a
 * stopped runtime does nothing; nothing else in this program holds a reference). */
static void ex_stop(void) {
    for (int i = 0; i < 8; i++) tess_finalize();
}

static uint64_t ex_evictions(void) {
    uint64_t e = 0;
    for (int i = 0; i < tess_device_count(); i++) {
        tess_dev_stats_t s;
        if (tess_device_stats(i, &s) == TESS_OK) e += s.evictions;
    }
    return e;
}

/* A case of routine r in precision dt with varied options (x picks them), shapes of a few
 * tiles (T the tile edge). */
static struct fz_case ex_case(enum l3_routine r, tess_dtype_t dt, int x, int64_t T) {
    static const tess_trans_t tr[3] = {TESS_NO_TRANS, TESS_TRANS, TESS_CONJ_TRANS};
    struct fz_case c;
    memset(&c, 0, sizeof c);
    c.r = r, c.dt = dt;
    c.layout = x % 2 ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
    c.side = (x / 2) % 2 ? TESS_RIGHT : TESS_LEFT;
    c.uplo = (x / 3) % 2 ? TESS_LOWER : TESS_UPPER;
    c.diag = (x / 5) % 2 ? TESS_UNIT : TESS_NON_UNIT;
    c.ta = tr[x % 3];
    if (!l3_trans_ok(r, dt, c.ta)) c.ta = TESS_NO_TRANS;
    c.tb = tr[(x / 3) % 3];
    c.m = 3 * T + 1 + x % 3, c.n = 2 * T + 3, c.k = 3 * T - 1;
    c.pad[0] = x % 3, c.pad[1] = (x + 1) % 3, c.pad[2] = (x + 2) % 3;
    c.alpha[0] = 0.75, c.alpha[1] = -0.5;
    c.beta[0] = x % 4 == 0 ? 0 : -0.5, c.beta[1] = 0.25;
    if (l3_real_alpha(r)) c.alpha[1] = 0;
    if (l3_real_beta(r)) c.beta[1] = 0;
    if (c.beta[0] == 0 && c.beta[1] == 0 && !l3_tr(r)) c.flags |= FZ_NAN_C;
    if (x % 2) c.flags |= FZ_TYPED;
    c.seed = 1000 + (uint64_t)x;
    return c;
}

/* Every routine and precision (two option sets each) in sequence under a heap of `mem`
 * bytes per device with tile edge T: correct where three tiles of the precision fit the
 * heap, else TESS_ENOMEM at once naming TESSERA_TILE; returns the number of ENOMEMs. */
static int ex_every_routine(long mem, int64_t T, int *ncalls) {
    char msg[1024];
    int enomem = 0, x = 0;
    for (int r = 0; r < L3_NR; r++)
        for (int d = 0; d < 4; d++) {
            if (l3_herm((enum l3_routine)r) && d < 2) continue;
            size_t tile_bytes = ((size_t)(T * T) * ref_esize((tess_dtype_t)d) + 255) & ~(size_t)255;
            bool fits = 3 * tile_bytes <= (size_t)mem;
            for (int v = 0; v < 2; v++, x++) {
                struct fz_case c = ex_case((enum l3_routine)r, (tess_dtype_t)d, x, T);
                struct fz_data dd;
                char what[512];
                fz_describe(&c, what, sizeof what);
                fz_setup(&c, &dd);
                int st = fz_run_tessera(&dd);
                (*ncalls)++;
                if (fits) {
                    ASSERT_MSG(st == TESS_OK,
                               "%s: status %d (%s): %s (three %zu-byte tiles fit "
                               "the %ld-byte heap)",
                               what, st, tess_strerror(st), tess_last_error(), tile_bytes, mem);
                    ASSERT_MSG(fz_verify(&dd, msg, sizeof msg) == 0, "%s: %s", what, msg);
                } else {
                    ASSERT_MSG(st == TESS_ENOMEM,
                               "%s: status %d (%s), expected TESS_ENOMEM: "
                               "three %zu-byte tiles do not fit the %ld-byte heap",
                               what, st, tess_strerror(st), tile_bytes, mem);
                    ASSERT_MSG(strstr(tess_last_error(), "TESSERA_TILE"),
                               "%s: message \"%s\" does not point at TESSERA_TILE", what,
                               tess_last_error());
                    enomem++;
                }
                fz_release(&dd);
            }
        }
    return enomem;
}

/* A heap of exactly three complex-double tiles (16 x 16: 3 x 4 KiB) on 2 devices: every
 * routine in every precision is right, copies are evicted; then a heap of 8 KiB, below
 * three complex-double tiles: z calls return TESS_ENOMEM at once with a message, s, d and
 * c calls around them are still right. */
TEST(exhaust_cap_three_tiles_and_below) {
    int n = 0;
    ex_stop();
    ex_knobs(2, 3 * 4096, 16, NULL, NULL);
    ASSERT_OK(tess_init());
    tess_reset_stats();
    ASSERT_EQ(ex_every_routine(3 * 4096, 16, &n), 0);
    uint64_t ev = ex_evictions();
    fprintf(stderr, "  12 KiB heaps: %d calls right, %llu evictions\n", n, (unsigned long long)ev);
    ASSERT_GT(ev, 0);
    ASSERT_OK(tess_finalize());

    n = 0;
    ex_knobs(2, 8192, 16, NULL, NULL);
    ASSERT_OK(tess_init());
    int enomem = ex_every_routine(8192, 16, &n);
    fprintf(stderr, "  8 KiB heaps: %d calls, %d TESS_ENOMEM (z), the others right\n", n, enomem);
    ASSERT_GT(enomem, 0);
    ASSERT_OK(tess_finalize());
}

/* ---- many calls at once ---------------------------------------------------------------- */

struct ex_thread {
    int id, calls, failed;
    uint64_t seed;
    int64_t tile;
    int only_dt; /* -1: any precision */
    int max_dim; /* 0: fz_random_case's shapes */
    char msg[1536];
};

static void *ex_thread_main(void *p) {
    struct ex_thread *t = p;
    uint64_t s0 = t->seed ^ ((uint64_t)(t->id + 1) << 40), s = ref_rng_next(&s0);
    for (int i = 0; i < t->calls && !t->failed; i++) {
        struct fz_case c;
        fz_random_case(&s, t->tile, &c);
        if (t->only_dt >= 0) {
            c.dt = (tess_dtype_t)t->only_dt;
            if (l3_herm(c.r) && !ref_is_complex(c.dt)) c.r = L3_GEMM;
            if (!l3_trans_ok(c.r, c.dt, c.ta)) c.ta = TESS_NO_TRANS;
        }
        if (t->max_dim > 0) {
            /* shapes from 1 to max_dim: with TESSERA_TILE=0 the tile edge follows them */
            c.m = ref_rand_int(&s, 1, t->max_dim);
            c.n = ref_rand_int(&s, 1, t->max_dim);
            c.k = ref_rand_int(&s, 1, t->max_dim);
        }
        char m[1400];
        if (fz_run_case(&c, m, sizeof m)) {
            snprintf(t->msg, sizeof t->msg, "thread %d call %d: %s", t->id, i, m);
            t->failed = 1;
        }
    }
    return NULL;
}

/* nthreads threads, calls in all, at once; dts[i % ndts] is thread i's precision (-1 any). */
static int ex_run_threads(int nthreads, int calls, uint64_t seed, int64_t tile, const int *dts,
                          int ndts, int max_dim, char *msg, size_t len) {
    struct ex_thread t[16];
    pthread_t th[16];
    for (int i = 0; i < nthreads; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].id = i, t[i].seed = seed, t[i].tile = tile, t[i].max_dim = max_dim;
        t[i].calls = calls / nthreads + (i < calls % nthreads);
        t[i].only_dt = dts ? dts[i % ndts] : -1;
        if (pthread_create(&th[i], NULL, ex_thread_main, &t[i])) {
            snprintf(msg, len, "pthread_create failed");
            return 1;
        }
    }
    int bad = 0;
    for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < nthreads; i++)
        if (t[i].failed && !bad++) snprintf(msg, len, "%s", t[i].msg);
    return bad;
}

/* Heap fragmentation on a fixed tile: 8 threads at once, every routine, the threads in s,
 * d, c and z (blocks of 1, 2, 2 and 4 KiB for 16 x 16 tiles) on 3 devices whose 32 KiB
 * heaps hold eight complex-double tiles: every result right, copies evicted.
 * (TESS_EXHAUST_MIXED_MEM sets another heap size. exhaust_two_precisions_four_tile_heap
 * runs it on 20 KiB heaps too, where B7 made 2 runs in 30 under load end in TESS_ENOMEM.) */
TEST(exhaust_mixed_precisions_small_heaps) {
    ex_stop();
    long mem = ref_env_long("TESS_EXHAUST_MIXED_MEM", 8 * 4096);
    ex_knobs(3, mem, 16, "TESSERA_EMULATE_JITTER", "20");
    ASSERT_OK(tess_init());
    tess_reset_stats();
    static const int dts[4] = {TESS_S, TESS_Z, TESS_D, TESS_C};
    char msg[1600];
    int calls = (int)ref_env_long("TESS_EXHAUST_CALLS", 400);
    ASSERT_MSG(ex_run_threads(8, calls, 4711, 16, dts, 4, 0, msg, sizeof msg) == 0, "%s", msg);
    uint64_t ev = ex_evictions();
    fprintf(stderr, "  %d calls from 8 threads right, %llu evictions\n", calls,
            (unsigned long long)ev);
    ASSERT_GT(ev, 0);
    ASSERT_OK(tess_finalize());
}

/* Heap fragmentation with tiles chosen per call (TESSERA_TILE=0): on 96 KiB heaps the
 * runtime picks 16 x 16 complex-double tiles and 32 x 32 ones for the other precisions
 * (twelve tiles per heap), so blocks of 4 and 8 KiB alternate; calls of every routine,
 * precision and shape (1 to 150), first one after another on one thread, then from 8
 * threads at once: every result right, never TESS_ENOMEM. */
TEST(exhaust_fragmentation_auto_tiles) {
    ex_stop();
    ex_knobs(3, 96 * 1024, 0, NULL, NULL);
    ASSERT_OK(tess_init());
    tess_reset_stats();
    char msg[1600];
    int calls = (int)ref_env_long("TESS_EXHAUST_CALLS", 400);
    /* the tile edge each precision gets here, read back from a GEMM's task count */
    for (int d = 0; d < 4; d++) {
        struct fz_case c = ex_case(L3_GEMM, (tess_dtype_t)d, 0, 16);
        c.m = c.n = 160, c.k = 20, c.flags = 0, c.beta[0] = 1;
        tess_reset_stats();
        ASSERT_MSG(fz_run_case(&c, msg, sizeof msg) == 0, "%s", msg);
        uint64_t tasks = 0;
        for (int i = 0; i < tess_device_count(); i++) {
            tess_dev_stats_t s;
            ASSERT_OK(tess_device_stats(i, &s));
            tasks += s.tasks;
        }
        int64_t tile = 0;
        for (int64_t t = 8; t <= 256 && !tile; t *= 2)
            if ((uint64_t)((160 + t - 1) / t * ((160 + t - 1) / t)) == tasks) tile = t;
        fprintf(stderr, "  %s: a 160 x 160 GEMM ran as %llu tasks (tile %lld)\n",
                ref_dtype_name((tess_dtype_t)d), (unsigned long long)tasks, (long long)tile);
    }
    ASSERT_MSG(ex_run_threads(1, calls / 4, 99, 16, NULL, 0, 150, msg, sizeof msg) == 0, "%s", msg);
    ASSERT_MSG(ex_run_threads(8, calls, 98, 16, NULL, 0, 150, msg, sizeof msg) == 0, "%s", msg);
    uint64_t ev = ex_evictions();
    fprintf(stderr, "  %d calls (1 thread, then 8) right, %llu evictions\n", calls / 4 + calls,
            (unsigned long long)ev);
    ASSERT_OK(tess_finalize());
}

struct ex_gemm {
    tess_dtype_t dt;
    int iters, failed;
    char msg[1400];
};

static void *ex_gemm_main(void *p) {
    struct ex_gemm *g = p;
    for (int i = 0; i < g->iters && !g->failed; i++) {
        struct fz_case c;
        memset(&c, 0, sizeof c);
        c.r = L3_GEMM, c.dt = g->dt, c.layout = TESS_COL_MAJOR;
        c.ta = c.tb = TESS_NO_TRANS, c.side = TESS_LEFT, c.uplo = TESS_UPPER;
        c.diag = TESS_NON_UNIT, c.m = c.n = c.k = 48, c.alpha[0] = 1, c.beta[0] = 0.5;
        c.seed = (uint64_t)(100 * g->dt + i);
        g->failed = fz_run_case(&c, g->msg, sizeof g->msg);
    }
    return NULL;
}

/* B7 (fixed): one device whose heap holds four complex-double tiles (16 KiB, tile 16), a
 * ZGEMM and an SGEMM (48 x 48 x 48) from two threads at once, 10 each, on a fresh runtime
 * per round. Blocks of 4 and 1 KiB share the heap: before the fix both calls often waited
 * for room with nothing in flight and returned TESS_ENOMEM after 5 s: the ZGEMM's A copy
 * lay where its B could not fit, the step could not evict it (its own) and the SGEMM's
 * slot came after it in the round. On the old library (through LD_LIBRARY_PATH, 2-core
 * machine) this test failed in 20 runs of 20: in round 0 in 18, round 1 in 2. Now every
 * call is right, never ENOMEM, the tight-heap paths were taken (steps retried after
 * evicting every idle copy, C blocks placed by the room plan) and every retry went through.
 * Rounds: TESS_EXHAUST_B7_ROUNDS (default 24, about 0.02 s each; a failed round takes the
 * 5 s stall limit, so the test stops at the first). Then the 3-device, 8-thread
 * mixed-routine variant (s, z, d, c threads) on 20 KiB heaps, where B7 ended 2 runs in 30
 * in TESS_ENOMEM under load (1 in 60 unloaded, the same stall): every call right. */
TEST(exhaust_two_precisions_four_tile_heap) {
    struct tess__pressure p0, d;
    bool counted = ex_pressure(&p0);
    int rounds = (int)ref_env_long("TESS_EXHAUST_B7_ROUNDS", 24), bad = 0, round = 0;
    char first[1500] = "";
    double t0 = ex_now();
    ex_stop();
    for (; round < rounds && !bad; round++) {
        if (round == 0) ex_knobs(1, 16384, 16, NULL, NULL); /* they stay set: each round */
        ASSERT_OK(tess_init());
        struct ex_gemm g[2] = {{TESS_Z, 10, 0, ""}, {TESS_S, 10, 0, ""}};
        pthread_t th[2];
        for (int i = 0; i < 2; i++) ASSERT_EQ(pthread_create(&th[i], NULL, ex_gemm_main, &g[i]), 0);
        for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
        for (int i = 0; i < 2; i++)
            if (g[i].failed) {
                fprintf(stderr, "  round %d: %s\n", round, g[i].msg);
                if (!bad++) snprintf(first, sizeof first, "round %d: %.1400s", round, g[i].msg);
            }
        ASSERT_OK(tess_finalize());
    }
    fprintf(stderr, "  %d rounds of a ZGEMM and an SGEMM at once (16 KiB heap), %.2f s\n", round,
            ex_now() - t0);
    ASSERT_MSG(bad == 0, "%d call(s) failed in round %d of %d (B7 is back); first: %s", bad,
               round - 1, rounds, first);
    if (counted) {
        ex_pressure_since(&p0, &d);
        ASSERT_EQ(d.stall_enomem, 0);
        /* the heap was tight: steps found no room with nothing in flight and C blocks were
         * placed by the room plan where copies lay */
        ASSERT_GT(d.flushes, 0);
        ASSERT_GT(d.planned_evictions, 0);
        /* the guarantee: on one device (no peer reads our copies) a step that found no room
         * always goes through once every idle copy is evicted */
        ASSERT_EQ(d.flush_retries_ok, d.flushes);
    }

    /* 3 devices, 8 threads of every routine in s, z, d and c, 20 KiB heaps */
    counted = ex_pressure(&p0);
    t0 = ex_now();
    ex_knobs(3, 20 * 1024, 16, "TESSERA_EMULATE_JITTER", "20");
    ASSERT_OK(tess_init());
    static const int dts[4] = {TESS_S, TESS_Z, TESS_D, TESS_C};
    char msg[1600];
    int calls = (int)ref_env_long("TESS_EXHAUST_CALLS", 400);
    ASSERT_MSG(ex_run_threads(8, calls, 4712, 16, dts, 4, 0, msg, sizeof msg) == 0, "%s", msg);
    fprintf(stderr, "  %d calls from 8 threads right on 20 KiB heaps, %.2f s\n", calls,
            ex_now() - t0);
    ASSERT_OK(tess_finalize());
    if (counted) {
        ex_pressure_since(&p0, &d);
        ASSERT_EQ(d.stall_enomem, 0);
    }
}

/* ---- host memory ----------------------------------------------------------------------------- */

/* tess_malloc_host of sizes no machine has (2^62, 2^50 bytes) and of SIZE_MAX and just
 * below it returns NULL; afterwards small host buffers from it work as operands of every
 * routine and the results are right; tess_free_host(NULL) does nothing. SIZE_MAX - 63 ..
 * SIZE_MAX once returned a non-NULL pointer (bug B4: bytes + the 64-byte header wrapped;
 * fixed in src/base/hostmem.c). */
TEST(exhaust_malloc_host_absurd) {
    ex_stop();
    ex_knobs(2, 16 << 20, 16, NULL, NULL);
    ASSERT_OK(tess_init());
    size_t sizes[] = {(size_t)1 << 62, (size_t)1 << 50, SIZE_MAX - 4096, SIZE_MAX - 64,
                      SIZE_MAX - 63,   SIZE_MAX - 1,    SIZE_MAX};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        bool b4 = sizes[i] > SIZE_MAX - 64;
        void *p = tess_malloc_host(sizes[i]);
        ASSERT_MSG(p == NULL, "tess_malloc_host(%zu) = %p, expected NULL%s", sizes[i], p,
                   b4 ? " (bug B4 is back)" : "");
    }
    tess_free_host(NULL);
    /* the library keeps working, with host buffers from tess_malloc_host */
    char msg[1024];
    for (int r = 0; r < L3_NR; r++) {
        struct fz_case c = ex_case((enum l3_routine)r,
                                   l3_herm((enum l3_routine)r) ? TESS_C : TESS_D, r, 16);
        struct fz_data d;
        char what[512];
        fz_describe(&c, what, sizeof what);
        fz_setup(&c, &d);
        size_t es = ref_esize(c.dt);
        void *M[3];
        for (int i = 0; i < 3; i++) {
            M[i] = tess_malloc_host(d.ne[i] * es);
            ASSERT_MSG(M[i] != NULL, "tess_malloc_host(%zu) failed", d.ne[i] * es);
            ASSERT_MSG((uintptr_t)M[i] % 64 == 0, "tess_malloc_host: %p not 64-byte aligned", M[i]);
            memcpy(M[i], d.X[i], d.ne[i] * es);
        }
        struct l3_args a = fz_args_of(&d, M, d.alpha, d.beta);
        int st = l3_call(&a);
        ASSERT_MSG(st == TESS_OK, "%s on tess_malloc_host buffers: status %d: %s", what, st,
                   tess_last_error());
        for (int i = 0; i < 3; i++) {
            memcpy(d.X[i], M[i], d.ne[i] * es);
            tess_free_host(M[i]);
        }
        ASSERT_MSG(fz_verify(&d, msg, sizeof msg) == 0, "%s: %s", what, msg);
        fz_release(&d);
    }
    ASSERT_OK(tess_finalize());
}

TEST_MAIN()
