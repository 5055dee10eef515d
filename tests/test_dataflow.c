/* tests/test_dataflow.c: dataflow inside a call (node/worker.c, ops->awaits; TRSM under
 * TESSERA_DATAFLOW=1): a task starts once its chain predecessor has started and each GEMM
 * step waits for the task that solves the tile it reads. On emulated devices: every side, uplo and transpose of
 * DTRSM and ZTRSM against OpenBLAS with the counters showing tasks started before a tile
 * they read was solved and steps that waited; and a fault sweep (device 1 failing at each of
 * its copies and kernels in turn) where every call ends right or, without TESSERA_RECOVER,
 * with TESS_EDEVICE, never hanging and never wrong; with the knob off, no task starts
 * early. Sizes are not multiples of the tile.
 */
#include <cblas.h>
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../node/node.h"
#include "harness.h"
#include "ref.h"
#include "tessera.h"

enum { TILE = 16 };

static void start(int ndev, const char *gflops, const char *fault, const char *recover) {
    char n[8];
    snprintf(n, sizeof n, "%d", ndev);
    setenv("TESSERA_DEVICES", "none", 1);
    setenv("TESSERA_CPU_WORKER", "0", 1);
    setenv("TESSERA_EMULATE", n, 1);
    setenv("TESSERA_EMULATE_MEM", "16M", 1);
    setenv("TESSERA_EMULATE_GFLOPS", gflops, 1);
    setenv("TESSERA_TILE", "16", 1);
    setenv("TESSERA_RECOVER", recover, 1);
    setenv("TESSERA_DATAFLOW", "1", 1);
    if (fault)
        setenv("TESSERA_FAULT", fault, 1);
    else
        unsetenv("TESSERA_FAULT");
}

/* A well-conditioned triangular A (ka x ka, ld ka): a dominant diagonal. */
static void triangle(tess_dtype_t dt, void *A, int64_t ka, uint64_t *seed) {
    size_t es = tess__dtypes[dt].size, nn = (size_t)(ka * ka);
    ref_fill_random(dt, A, nn, seed);
    for (int64_t i = 0; i < ka; i++) {
        char *d = (char *)A + (size_t)(i + i * ka) * es;
        if (dt == TESS_D)
            *(double *)d += 2.0 * (double)ka;
        else
            ((double *)d)[0] += 2.0 * (double)ka;
    }
}

/* max |X - R| / max |R| over m x n (ld m) */
static double rel_diff(tess_dtype_t dt, const void *X, const void *R, int64_t m, int64_t n) {
    int f = dt == TESS_Z ? 2 : 1;
    const double *x = X, *r = R;
    double d = 0, mx = 0;
    for (int64_t i = 0; i < f * m * n; i++)
        d = fmax(d, fabs(x[i] - r[i])), mx = fmax(mx, fabs(r[i]));
    return mx > 0 ? d / mx : d;
}

/* B := alpha op(A)^-1 B (side L) or B op(A)^-1 (side R) by OpenBLAS into R. */
static void reference(tess_dtype_t dt, tess_side_t sd, tess_uplo_t ul, tess_trans_t ta,
                      tess_diag_t dg, int64_t m, int64_t n, const void *A, int64_t ka, void *R) {
    const double al = 0.5;
    const double complex alz = 0.5 - 0.25 * I;
    enum CBLAS_SIDE s = sd == TESS_LEFT ? CblasLeft : CblasRight;
    enum CBLAS_UPLO u = ul == TESS_UPPER ? CblasUpper : CblasLower;
    enum CBLAS_TRANSPOSE t = ta == TESS_NO_TRANS ? CblasNoTrans
                             : ta == TESS_TRANS  ? CblasTrans
                                                 : CblasConjTrans;
    enum CBLAS_DIAG d = dg == TESS_UNIT ? CblasUnit : CblasNonUnit;
    if (dt == TESS_D)
        cblas_dtrsm(CblasColMajor, s, u, t, d, (int)m, (int)n, al, A, (int)ka, R, (int)m);
    else
        cblas_ztrsm(CblasColMajor, s, u, t, d, (int)m, (int)n, &alz, A, (int)ka, R, (int)m);
}

/* One TRSM through tessera into B (from B0) and its reference into R: tessera's status. */
static int solve(tess_dtype_t dt, tess_side_t sd, tess_uplo_t ul, tess_trans_t ta, tess_diag_t dg,
                 int64_t m, int64_t n, const void *A, const void *B0, void *B, void *R) {
    int64_t ka = sd == TESS_LEFT ? m : n;
    size_t bytes = (size_t)(m * n) * tess__dtypes[dt].size;
    memcpy(B, B0, bytes);
    memcpy(R, B0, bytes);
    reference(dt, sd, ul, ta, dg, m, n, A, ka, R);
    const double complex alz = 0.5 - 0.25 * I;
    const double al = 0.5;
    return tess_trsm(dt, TESS_COL_MAJOR, sd, ul, ta, dg, m, n,
                     dt == TESS_D ? (const void *)&al : (const void *)&alz, A, ka, B, m);
}

/* Every side, uplo and transpose, D and Z, on 3 emulated devices slowed to 2 GFLOP/s (a
 * step takes long enough that the order of tasks matters): results right; tasks started
 * before a tile they read was solved, and steps waited for one. */
TEST(trsm_steps_wait_for_their_tiles) {
    const int64_t m = 6 * TILE - 5, n = 4 * TILE - 3, kmax = m > n ? m : n;
    uint64_t seed = 42;
    void *A = ref_malloc((size_t)(kmax * kmax) * 16), *B0 = ref_malloc((size_t)(m * n) * 16);
    void *B = ref_malloc((size_t)(m * n) * 16), *R = ref_malloc((size_t)(m * n) * 16);
    start(3, "2", NULL, "0");
    ASSERT_OK(tess_init());
    uint64_t e0 = tess__rt_early_starts(), w0 = tess__rt_awaited_steps();
    const tess_dtype_t dts[2] = {TESS_D, TESS_Z};
    const tess_trans_t tas[3] = {TESS_NO_TRANS, TESS_TRANS, TESS_CONJ_TRANS};
    int cases = 0;
    for (int x = 0; x < 2; x++)
        for (int s = 0; s < 2; s++)
            for (int u = 0; u < 2; u++)
                for (int t = 0; t < 3; t++) {
                    tess_dtype_t dt = dts[x];
                    tess_side_t sd = s ? TESS_RIGHT : TESS_LEFT;
                    tess_uplo_t ul = u ? TESS_LOWER : TESS_UPPER;
                    tess_diag_t dg = (s + u + t) % 2 ? TESS_UNIT : TESS_NON_UNIT;
                    if (dt == TESS_D && tas[t] == TESS_CONJ_TRANS) continue;
                    int64_t ka = sd == TESS_LEFT ? m : n;
                    triangle(dt, A, ka, &seed);
                    ref_fill_random(dt, B0, (size_t)(m * n), &seed);
                    ASSERT_OK(solve(dt, sd, ul, tas[t], dg, m, n, A, B0, B, R));
                    double err = rel_diff(dt, B, R, m, n);
                    ASSERT_MSG(err < 1e-11, "%ctrsm side %c uplo %c trans %d: rel err %.2e",
                               dt == TESS_D ? 'd' : 'z', s ? 'R' : 'L', u ? 'L' : 'U', t, err);
                    cases++;
                }
    uint64_t early = tess__rt_early_starts() - e0, waited = tess__rt_awaited_steps() - w0;
    ASSERT_OK(tess_finalize());
    fprintf(stderr, "  %d TRSMs: %llu tasks started early, %llu steps waited\n", cases,
            (unsigned long long)early, (unsigned long long)waited);
    ASSERT_MSG(early > 0, "no task started before a tile it reads was solved");
    ASSERT_MSG(waited > 0, "no step waited for the task solving its tile");
    free(A), free(B0), free(B), free(R);
}

/* Device 1 of 3 fails at its k-th copy or kernel, k = 1 ... 48 (a run may end before it): with TESSERA_RECOVER=1 every call is redone and right; without, each ends right or
 * with TESS_EDEVICE (a tile whose write-back had begun, or one computed from a peer's
 * unfinished copy). Never a wrong result, never a hang (the test's timeout). */
static void fault_sweep(const char *recover) {
    const int64_t m = 5 * TILE - 3, n = 3 * TILE - 1;
    uint64_t seed = 7;
    void *A = ref_malloc((size_t)(m * m) * 8), *B0 = ref_malloc((size_t)(m * n) * 8);
    void *B = ref_malloc((size_t)(m * n) * 8), *R = ref_malloc((size_t)(m * n) * 8);
    triangle(TESS_D, A, m, &seed);
    ref_fill_random(TESS_D, B0, (size_t)(m * n), &seed);
    int ok = 0, failed = 0, hit = 0;
    uint64_t g0 = tess__rt_given_back();
    for (int k = 1; k <= 48; k++) {
        char spec[32];
        snprintf(spec, sizeof spec, "1:%d", k);
        start(3, "0", spec, recover);
        ASSERT_OK(tess_init());
        int rc = solve(TESS_D, TESS_LEFT, TESS_LOWER, TESS_NO_TRANS, TESS_NON_UNIT, m, n, A, B0, B,
                       R);
        tess_dev_stats_t s1;
        ASSERT_OK(tess_device_stats(1, &s1));
        ASSERT_OK(tess_finalize());
        hit += s1.failed;
        if (rc == TESS_OK) {
            double err = rel_diff(TESS_D, B, R, m, n);
            ASSERT_MSG(err < 1e-11, "fault at op %d: rel err %.2e", k, err);
            ok++;
        } else {
            ASSERT_MSG(rc == TESS_EDEVICE && recover[0] == '0',
                       "fault at op %d (TESSERA_RECOVER=%s): status %d", k, recover, rc);
            failed++;
        }
    }
    fprintf(stderr,
            "  TESSERA_RECOVER=%s: faults at ops 1..48 (%d reached): %d right, %d TESS_EDEVICE, "
            "%llu tasks gave their slot back\n",
            recover, hit, ok, failed, (unsigned long long)(tess__rt_given_back() - g0));
    ASSERT_MSG(hit > 0, "device 1 never reached its fault point");
    free(A), free(B0), free(B), free(R);
}

/* TESSERA_DATAFLOW=0 (the default): each task waits for its whole chain predecessor, so
 * none starts early and no step waits; the results are the same. */
TEST(dataflow_off_waits_by_task) {
    const int64_t m = 5 * TILE - 3, n = 3 * TILE - 1;
    uint64_t seed = 9;
    void *A = ref_malloc((size_t)(m * m) * 8), *B0 = ref_malloc((size_t)(m * n) * 8);
    void *B = ref_malloc((size_t)(m * n) * 8), *R = ref_malloc((size_t)(m * n) * 8);
    triangle(TESS_D, A, m, &seed);
    ref_fill_random(TESS_D, B0, (size_t)(m * n), &seed);
    start(3, "2", NULL, "0");
    setenv("TESSERA_DATAFLOW", "0", 1);
    ASSERT_OK(tess_init());
    uint64_t e0 = tess__rt_early_starts(), w0 = tess__rt_awaited_steps();
    ASSERT_OK(
        solve(TESS_D, TESS_LEFT, TESS_LOWER, TESS_NO_TRANS, TESS_NON_UNIT, m, n, A, B0, B, R));
    ASSERT_OK(tess_finalize());
    ASSERT_MSG(rel_diff(TESS_D, B, R, m, n) < 1e-11, "rel err %.2e", rel_diff(TESS_D, B, R, m, n));
    ASSERT_EQ(tess__rt_early_starts(), e0);
    ASSERT_EQ(tess__rt_awaited_steps(), w0);
    free(A), free(B0), free(B), free(R);
}

TEST(trsm_fault_sweep_recover) { fault_sweep("1"); }
TEST(trsm_fault_sweep) { fault_sweep("0"); }

TEST_MAIN()
