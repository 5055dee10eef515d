/* tests/test_scaling.c: issue 9's runs in miniature, on what CI has: eight emulated devices
 * against one. Each emulated device has its own capped arena, a kernel throttle (GFLOP/s)
 * and a link throttle (GB/s, host and peer copies alike), so a call's time is set by how
 * the runtime spreads tasks, not by the two cores that emulate them. Checked:
 *   - DGEMM: eight devices finish at least SPEEDUP_MIN times sooner than one, every device
 *     computes tasks, the host link carries each byte of A, B and C about once (tiles
 *     come from peers instead: l2 hits), far below what streaming every task's panels
 *     would move; the result matches OpenBLAS;
 *   - SYRK and TRSM (the other two routines): right on eight devices, spread over
 *     them; SYRK also faster than on one device.
 * Sizes are not multiples of the tile. The environment of the registration is ignored:
 * each test sets its own knobs before tess_init. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "ref.h"
#include "tessera.h"

enum { TILE = 64 };
/* Least speedup of 8 devices over one (the GPUs' target is 0.95 x 8; here two cores
 * emulate all eight, beside other tests): 4 in a plain build (5.9-7.0 measured, also
 * while CI ran beside it), 3 under AddressSanitizer (6.0), 2 under ThreadSanitizer
 * (3.2-4.9 at the plain rates), whose bookkeeping slows the runtime's own threads. One
 * device doing all the work gives 1; the spread is also asserted on its own. */
#if defined(__SANITIZE_THREAD__) /* gcc */
#define UNDER_TSAN 1
#elif defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature) /* clang */
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#elif __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
/* The emulated rates: per kernel of an emulated device (2 streams each) and per copy. Under
 * ThreadSanitizer four times slower, so that the throttles, not the bookkeeping of the
 * runtime's threads on two shared cores, set the time: at the plain rates one TSan run beside
 * another TSan test got only 1.99x (1 device 2.14 s, 8 devices 1.07 s: CPU-bound). */
#if defined(UNDER_TSAN)
#define SPEEDUP_MIN 2.0
#define GFLOPS "0.0625"
#define LINK "1"
#elif defined(UNDER_ASAN)
#define SPEEDUP_MIN 3.0
#define GFLOPS "0.25"
#define LINK "4"
#else
#define SPEEDUP_MIN 4.0
#define GFLOPS "0.25" /* GFLOP/s */
#define LINK "4"      /* GB/s */
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void start(int ndev) {
    setenv("TESSERA_DEVICES", "none", 1);
    setenv("TESSERA_CPU_WORKER", "0", 1);
    char n[8];
    snprintf(n, sizeof n, "%d", ndev);
    setenv("TESSERA_EMULATE", n, 1);
    setenv("TESSERA_EMULATE_MEM", "64M", 1);
    setenv("TESSERA_EMULATE_STREAMS", "2", 1);
    setenv("TESSERA_EMULATE_GFLOPS", GFLOPS, 1);
    setenv("TESSERA_EMULATE_LINK", LINK, 1);
    setenv("TESSERA_TILE", "64", 1);
    unsetenv("TESSERA_FAULT");
    unsetenv("TESSERA_EMULATE_JITTER");
    unsetenv("TESSERA_P2P");
}

struct totals {
    int used; /* devices with at least one task */
    uint64_t tasks, h2d, p2p, l2;
};

static struct totals totals(void) {
    struct totals t = {0};
    for (int i = 0; i < tess_device_count(); i++) {
        tess_dev_stats_t s;
        if (tess_device_stats(i, &s)) continue;
        t.used += s.tasks > 0;
        t.tasks += s.tasks;
        t.h2d += s.bytes_h2d;
        t.p2p += s.bytes_p2p;
        t.l2 += s.l2_hits;
    }
    return t;
}

static double *rand_mat(size_t n, uint64_t seed) {
    double *x = ref_malloc(n * sizeof *x);
    ref_fill_random(TESS_D, x, n, &seed);
    return x;
}

/* max |x - y| / max |y| */
static double rel_err(const double *x, const double *y, size_t n) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs(x[i] - y[i]));
        m = fmax(m, fabs(y[i]));
    }
    return m > 0 ? d / m : d;
}

/* C = A B + 0.5 C, n x n, on ndev devices: seconds of the call; *t the counters. */
static double dgemm_on(int ndev, int64_t n, const double *A, const double *B, double *C,
                       struct totals *t) {
    start(ndev);
    ASSERT_OK(tess_init());
    ASSERT_EQ(tess_device_count(), ndev);
    tess_reset_stats();
    double t0 = now_s();
    ASSERT_OK(tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, n, n, n, 1.0, A, n, B, n,
                         0.5, C, n));
    double el = now_s() - t0;
    *t = totals();
    ASSERT_OK(tess_finalize());
    return el;
}

/* Eight devices against one on a DGEMM of 12 x 12 tiles (12 k steps each): the time, the
 * spread, the host traffic and the peer fetches. */
TEST(scaling_dgemm_8_vs_1) {
    const int64_t n = 12 * TILE - 7;
    const size_t nn = (size_t)n * (size_t)n;
    double *A = rand_mat(nn, 1), *B = rand_mat(nn, 2), *C0 = rand_mat(nn, 3);
    double *C1 = ref_malloc(nn * sizeof *C1), *C8 = ref_malloc(nn * sizeof *C8);
    double *R = ref_malloc(nn * sizeof *R);
    memcpy(R, C0, nn * sizeof *R);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1.0, A, (int)n,
                B, (int)n, 0.5, R, (int)n);
    memcpy(C1, C0, nn * sizeof *C1);
    memcpy(C8, C0, nn * sizeof *C8);
    struct totals s1, s8;
    double t1 = dgemm_on(1, n, A, B, C1, &s1);
    double t8 = dgemm_on(8, n, A, B, C8, &s8);
    double bytes = 3.0 * (double)nn * sizeof(double); /* A, B, C once */
    double tiles = (double)((n + TILE - 1) / TILE);
    double stream = 2.0 * tiles * (double)nn * sizeof(double); /* every task's panels */
    fprintf(stderr,
            "  dgemm n = %lld: 1 device %.3f s, 8 devices %.3f s (x%.2f); 8 devices: "
            "%d used, %llu tasks, H2D %.1f MB (A+B+C %.1f MB, streamed panels %.1f MB), "
            "P2P %.1f MB, l2 hits %llu\n",
            (long long)n, t1, t8, t1 / t8, s8.used, (unsigned long long)s8.tasks,
            (double)s8.h2d / 1e6, bytes / 1e6, stream / 1e6, (double)s8.p2p / 1e6,
            (unsigned long long)s8.l2);
    ASSERT_MSG(rel_err(C1, R, nn) < 1e-12, "1 device: rel err %.2e", rel_err(C1, R, nn));
    ASSERT_MSG(rel_err(C8, R, nn) < 1e-12, "8 devices: rel err %.2e", rel_err(C8, R, nn));
    ASSERT_EQ(s8.used, 8);
    ASSERT_EQ(s8.tasks, (uint64_t)(tiles * tiles));
    ASSERT_MSG(t1 / t8 >= SPEEDUP_MIN, "8 devices only %.2fx faster than one (%.3f s, %.3f s)",
               t1 / t8, t1, t8);
    ASSERT_MSG((double)s8.h2d <= 1.5 * bytes, "H2D %.1f MB for %.1f MB of operands",
               (double)s8.h2d / 1e6, bytes / 1e6);
    ASSERT(s8.l2 > 0 && s8.p2p > 0);
    free(A), free(B), free(C0), free(C1), free(C8), free(R);
}

/* SYRK (lower, C = A A^T + 0.5 C, A n x k) on 8 devices: right, spread, faster than one. */
TEST(scaling_dsyrk_8) {
    const int64_t n = 10 * TILE + 9, k = 6 * TILE - 5;
    const size_t nn = (size_t)n * (size_t)n, nk = (size_t)n * (size_t)k;
    double *A = rand_mat(nk, 4), *C0 = rand_mat(nn, 5), *R = ref_malloc(nn * sizeof *R);
    memcpy(R, C0, nn * sizeof *R);
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, (int)n, (int)k, 1.0, A, (int)n, 0.5, R,
                (int)n);
    double t[2];
    struct totals s8 = {0};
    for (int r = 0; r < 2; r++) {
        int ndev = r ? 8 : 1;
        double *C = ref_malloc(nn * sizeof *C);
        memcpy(C, C0, nn * sizeof *C);
        start(ndev);
        ASSERT_OK(tess_init());
        tess_reset_stats();
        double t0 = now_s();
        ASSERT_OK(
            tess_dsyrk(TESS_COL_MAJOR, TESS_LOWER, TESS_NO_TRANS, n, k, 1.0, A, n, 0.5, C, n));
        t[r] = now_s() - t0;
        if (r) s8 = totals();
        ASSERT_OK(tess_finalize());
        /* the strict upper triangle is not referenced: compare it to C0, the rest to R */
        double err = 0, mx = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < n; i++) {
                size_t x = (size_t)i + (size_t)j * (size_t)n;
                double want = i >= j ? R[x] : C0[x];
                err = fmax(err, fabs(C[x] - want));
                mx = fmax(mx, fabs(want));
            }
        ASSERT_MSG(err / mx < 1e-12, "%d device(s): rel err %.2e", ndev, err / mx);
        free(C);
    }
    fprintf(stderr,
            "  dsyrk n = %lld, k = %lld: 1 device %.3f s, 8 devices %.3f s (x%.2f), "
            "%d devices used, l2 hits %llu\n",
            (long long)n, (long long)k, t[0], t[1], t[0] / t[1], s8.used,
            (unsigned long long)s8.l2);
    ASSERT_MSG(s8.used >= 6, "only %d of 8 devices computed tiles", s8.used);
    ASSERT_MSG(t[0] / t[1] >= 0.6 * SPEEDUP_MIN, "8 devices only %.2fx faster", t[0] / t[1]);
    free(A), free(C0), free(R);
}

/* TRSM (left, lower, no transpose, non-unit: B = A^-1 B, B n x nrhs) on 8 devices: right
 * and spread (its tiles form chains: a tile is solved after the tiles it reads). */
TEST(scaling_dtrsm_8) {
    const int64_t n = 9 * TILE + 3, nrhs = 8 * TILE - 11;
    const size_t nn = (size_t)n * (size_t)n, nb = (size_t)n * (size_t)nrhs;
    double *A = rand_mat(nn, 6), *B0 = rand_mat(nb, 7);
    for (int64_t i = 0; i < n; i++)
        A[(size_t)i * (size_t)(n + 1)] += (double)n; /* well conditioned */
    double *R = ref_malloc(nb * sizeof *R), *B = ref_malloc(nb * sizeof *B);
    memcpy(R, B0, nb * sizeof *R);
    memcpy(B, B0, nb * sizeof *B);
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, (int)n, (int)nrhs,
                1.0, A, (int)n, R, (int)n);
    start(8);
    ASSERT_OK(tess_init());
    tess_reset_stats();
    ASSERT_OK(tess_dtrsm(TESS_COL_MAJOR, TESS_LEFT, TESS_LOWER, TESS_NO_TRANS, TESS_NON_UNIT, n,
                         nrhs, 1.0, A, n, B, n));
    struct totals s8 = totals();
    ASSERT_OK(tess_finalize());
    fprintf(stderr,
            "  dtrsm n = %lld, nrhs = %lld on 8 devices: %d used, %llu tasks, l2 hits %llu\n",
            (long long)n, (long long)nrhs, s8.used, (unsigned long long)s8.tasks,
            (unsigned long long)s8.l2);
    ASSERT_MSG(rel_err(B, R, nb) < 1e-12, "rel err %.2e", rel_err(B, R, nb));
    ASSERT_MSG(s8.used >= 4, "only %d of 8 devices computed tiles", s8.used);
    free(A), free(B0), free(B), free(R);
}

TEST_MAIN()
