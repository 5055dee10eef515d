/* tests/test_pgemm_fault_mpi.c: a device failing in the middle of the distributed GEMM, on
 * one rank of two (registered with 2 ranks). Each case starts the runtime afresh on one
 * emulated device per rank (no CPU worker, so nothing can take the failed device's work);
 * rank 1's device fails at its K-th copy or kernel (TESSERA_FAULT=0:K), rank 0's never.
 * For every variant (TESSERA_PGEMM_VARIANT = a, b, c; small TESSERA_PGEMM_CHUNK, so the
 * split variants run several units) on grids 1 x 2 and 2 x 1, and K from the first
 * operation to one never reached:
 *   - both ranks return the same status, TESS_OK, or TESS_EDEVICE / TESS_ENODEV (the one
 *     device failed);
 *   - TESS_OK: each rank's sub(C) is alpha A B + beta C0 within a tolerance;
 *   - a failure under stationary A or B: C unchanged byte for byte on BOTH ranks (the
 *     partials are added only after every unit's job succeeded everywhere);
 *   - the fault must have failed some calls of each variant, and the unreached K none.
 * With TESSERA_PGEMM_NCCL=2 (ctest's :np2_devxport) stationary C runs the GPU transport on
 * the emulated devices, whose copies the fault then hits as well; there, too, rank 1's
 * device is lost in the middle of a unit (TESSERA_FAULT=xport:U): no rank may hang, both
 * return TESS_EDEVICE, the next call is right.
 * Exits 77 when built without MPI or run on other than 2 ranks.
 */
#include <stdio.h>

#ifndef TESS_HAVE_MPI
int main(void) {
    fprintf(stderr, "SKIP: built without MPI\n");
    return 77;
}
#else

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "harness_mpi.h"
#include "tessera.h"
#include "tessera_mpi.h"

enum { NB = 8 };

/* the global matrices, the same on every rank */
static double val(int tag, int64_t i, int64_t j) {
    uint64_t h = (uint64_t)tag * 0x9e3779b97f4a7c15ull ^ (uint64_t)i * 0xbf58476d1ce4e5b9ull ^
                 (uint64_t)j * 0x94d049bb133111ebull;
    h ^= h >> 31, h *= 0xd6e8feb86659fd39ull, h ^= h >> 29;
    return (double)(h >> 11) / (double)(1ull << 53) * 2 - 1;
}

/* global index of local index l along a dimension dealt in NB blocks over np processes */
static int64_t l2g(int64_t l, int p, int np) { return ((l / NB) * np + p) * NB + l % NB; }

struct loc { double *p; int64_t rows, cols; tess_desc_t d; };

static void make(struct loc *x, tess_grid_t *g, int tag, int64_t m, int64_t n) {
    int P, Q, r, c;
    tess_grid_info(g, &P, &Q, &r, &c);
    tess_desc_init(&x->d, m, n, NB, NB, 0, 0, 1);
    x->rows = tess_desc_local(g, &x->d, 0), x->cols = tess_desc_local(g, &x->d, 1);
    x->d.lld = x->rows > 0 ? x->rows : 1;
    x->p = malloc(sizeof(double) * (size_t)(x->d.lld * (x->cols > 0 ? x->cols : 1)));
    for (int64_t j = 0; j < x->cols; j++)
        for (int64_t i = 0; i < x->rows; i++)
            x->p[i + j * x->d.lld] = val(tag, l2g(i, r, P), l2g(j, c, Q));
}

static long n_failed[3], n_ok[3], n_ok_unreached;

/* Start the runtime and a P x Q grid, and deal A (m x k), B (k x n), C (m x n). */
static tess_grid_t *start(int P, int Q, int64_t m, int64_t n, int64_t k, struct loc *A,
                          struct loc *B, struct loc *C) {
    ASSERT_EQ(tess_init(), TESS_OK);
    tess_grid_t *g = NULL;
    ASSERT_EQ(tess_grid_create(MPI_COMM_WORLD, P, Q, 'R', &g), TESS_OK);
    make(A, g, 1, m, k);
    make(B, g, 2, k, n);
    make(C, g, 3, m, n);
    return g;
}

/* Every local entry of C is alpha A B + beta C0 within a tolerance. */
static void check_C(tess_grid_t *g, const struct loc *C, int64_t k, double alpha, double beta,
                    const char *what) {
    int Pg, Qg, r, c;
    tess_grid_info(g, &Pg, &Qg, &r, &c);
    for (int64_t j = 0; j < C->cols; j++)
        for (int64_t i = 0; i < C->rows; i++) {
            int64_t gi = l2g(i, r, Pg), gj = l2g(j, c, Qg);
            double want = beta * val(3, gi, gj);
            for (int64_t l = 0; l < k; l++) want += alpha * val(1, gi, l) * val(2, l, gj);
            double got = C->p[i + j * C->d.lld];
            ASSERT_MSG(fabs(got - want) <= 1e-12 * (1 + fabs(want)) * k,
                       "%s: C(%ld,%ld) = %.17g, want %.17g", what, (long)gi, (long)gj, got, want);
        }
}

/* One call: variant v, rank 1 failing at its K-th operation (0: no fault). */
static void one_case(char v, int P, int Q, long K) {
    char kv[32];
    setenv("TESSERA_DEVICES", "none", 1);
    setenv("TESSERA_EMULATE", "1", 1);
    setenv("TESSERA_CPU_WORKER", "0", 1);
    setenv("TESSERA_TILE", "8", 1);
    setenv("TESSERA_EMULATE_MEM", "16M", 1);
    setenv("TESSERA_PGEMM_CHUNK", "2048", 1);
    snprintf(kv, sizeof kv, "%c", v);
    setenv("TESSERA_PGEMM_VARIANT", kv, 1);
    snprintf(kv, sizeof kv, "0:%ld", K);
    if (wrank == 1 && K > 0) setenv("TESSERA_FAULT", kv, 1);
    else unsetenv("TESSERA_FAULT");
    const int64_t m = 90, n = 37, k = 75;
    const double alpha = 0.75, beta = -0.5;
    struct loc A, B, C;
    tess_grid_t *g = start(P, Q, m, n, k, &A, &B, &C);
    size_t cb = sizeof(double) * (size_t)(C.d.lld * (C.cols > 0 ? C.cols : 1));
    double *C0 = malloc(cb);
    memcpy(C0, C.p, cb);
    int rc = tess_pdgemm(g, TESS_NO_TRANS, TESS_NO_TRANS, m, n, k, alpha, A.p, 0, 0, &A.d, B.p, 0,
                         0, &B.d, beta, C.p, 0, 0, &C.d);
    int rcs[2] = {rc, -rc}, rcm[2];
    MPI_Allreduce(rcs, rcm, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ASSERT_MSG(rcm[0] == -rcm[1], "variant %c, %dx%d, K %ld: the ranks returned different "
               "statuses (%d here: %s)", v, P, Q, K, rc, tess_last_error());
    ASSERT_MSG(rc == TESS_OK || rc == TESS_EDEVICE || rc == TESS_ENODEV,
               "variant %c, K %ld: status %d (%s)", v, K, rc, tess_last_error());
    tess_pgemm_stats_t st;
    ASSERT_EQ(tess_pgemm_last_stats(g, &st), TESS_OK);
    int vi = v - 'a';
    if (rc == TESS_OK) {
        n_ok[vi]++;
        if (K == 0) n_ok_unreached++;
        ASSERT_EQ(st.variant, v - 'a' + 'A');
        if (v != 'c') ASSERT_GT(st.units, 1);
        /* stationary C takes the GPU transport where TESSERA_PGEMM_NCCL=2 (emulated) */
        const char *xk = getenv("TESSERA_PGEMM_NCCL");
        if (v == 'c') ASSERT_EQ(st.nccl, xk && !strcmp(xk, "2"));
        char what[64];
        snprintf(what, sizeof what, "variant %c, %dx%d, K %ld", v, P, Q, K);
        check_C(g, &C, k, alpha, beta, what);
    } else {
        n_failed[vi]++;
        ASSERT_MSG(K > 0, "variant %c: a device failure without a fault (%s)", v, tess_last_error());
        if (v != 'c')
            ASSERT_MSG(memcmp(C.p, C0, cb) == 0,
                       "variant %c, %dx%d, K %ld: the call failed but C was written on rank %d",
                       v, P, Q, K, wrank);
    }
    free(A.p), free(B.p), free(C.p), free(C0);
    tess_grid_free(g);
    ASSERT_EQ(tess_finalize(), TESS_OK);
}

/* The fault at many points of each variant's call: the same status on both ranks, C
 * untouched on both when a split variant fails, the right product when nothing failed. */
TEST(pgemm_device_fault_on_one_rank) {
    const long Ks[] = {1, 3, 8, 21, 55, 144, 377, 610, 987, 1597, 2584, 4181, 0};
    for (int vi = 0; vi < 3; vi++)
        for (int gshape = 0; gshape < 2; gshape++)
            for (size_t i = 0; i < sizeof Ks / sizeof Ks[0]; i++)
                one_case((char)('a' + vi), gshape ? 2 : 1, gshape ? 1 : 2, Ks[i]);
    for (int vi = 0; vi < 3; vi++) {
        ASSERT_MSG(n_failed[vi] > 0, "variant %c: the fault never failed a call", 'a' + vi);
        ASSERT_MSG(n_ok[vi] > 0, "variant %c: no call succeeded", 'a' + vi);
    }
    ASSERT_EQ(n_ok_unreached, 6);
    if (wrank == 0)
        printf("  calls failed / succeeded: A %ld / %ld, B %ld / %ld, C %ld / %ld\n", n_failed[0],
               n_ok[0], n_failed[1], n_ok[1], n_failed[2], n_ok[2]);
    unsetenv("TESSERA_FAULT");
}

/* The GPU transport with a device lost in the middle of a unit (TESSERA_FAULT=xport:U on
 * rank 1: its device is gone after unit U's agreement, so it sends nothing of that unit,
 * as NCCL on a lost GPU would not). Without the lost-device notice rank 0 would wait for
 * those pieces forever (the watchdog and CTest's timeout catch that); with it both ranks
 * return TESS_EDEVICE, and the next call, on a transport opened afresh, is right. Only
 * under TESSERA_PGEMM_NCCL=2 (:np2_devxport). */
TEST(pgemm_transport_device_lost_mid_unit) {
    const char *xk = getenv("TESSERA_PGEMM_NCCL");
    if (!xk || strcmp(xk, "2")) {
        if (wrank == 0) printf("  (the GPU transport is not on: TESSERA_PGEMM_NCCL=2 runs this)\n");
        return;
    }
    setenv("TESSERA_DEVICES", "none", 1);
    setenv("TESSERA_EMULATE", "1", 1);
    setenv("TESSERA_CPU_WORKER", "0", 1);
    setenv("TESSERA_TILE", "16", 1);
    setenv("TESSERA_EMULATE_MEM", "16M", 1);
    setenv("TESSERA_PGEMM_CHUNK", "65536", 1); /* units of 27 rows: 23 of them */
    setenv("TESSERA_PGEMM_VARIANT", "c", 1);
    unsetenv("TESSERA_FAULT");
    const int64_t m = 600, n = 40, k = 300;
    const double alpha = 0.75, beta = -0.5;
    struct loc A, B, C;
    tess_grid_t *g = start(1, 2, m, n, k, &A, &B, &C);
    const long Us[] = {1, 3, 8, 0};
    for (size_t t = 0; t < sizeof Us / sizeof Us[0]; t++) {
        char kv[32];
        snprintf(kv, sizeof kv, "xport:%ld", Us[t]);
        if (wrank == 1 && Us[t] > 0) setenv("TESSERA_FAULT", kv, 1);
        else unsetenv("TESSERA_FAULT");
        for (int64_t j = 0; j < C.cols; j++) /* C afresh for the checked call */
            for (int64_t i = 0; i < C.rows; i++) C.p[i + j * C.d.lld] = val(3, l2g(i, 0, 1), l2g(j, wrank, 2));
        alarm(60);
        int rc = tess_pdgemm(g, TESS_NO_TRANS, TESS_NO_TRANS, m, n, k, alpha, A.p, 0, 0, &A.d, B.p,
                             0, 0, &B.d, beta, C.p, 0, 0, &C.d);
        alarm(0);
        int rcs[2] = {rc, -rc}, rcm[2];
        MPI_Allreduce(rcs, rcm, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        ASSERT_MSG(rcm[0] == -rcm[1], "U %ld: the ranks returned different statuses (%d here: %s)",
                   Us[t], rc, tess_last_error());
        tess_pgemm_stats_t st;
        ASSERT_EQ(tess_pgemm_last_stats(g, &st), TESS_OK);
        ASSERT_MSG(st.nccl == 1, "U %ld: the GPU transport did not run", Us[t]);
        if (Us[t] > 0) {
            ASSERT_MSG(rc == TESS_EDEVICE, "U %ld: status %d (%s), expected TESS_EDEVICE", Us[t],
                       rc, tess_last_error());
            if (wrank == 0)
                ASSERT_MSG(strstr(tess_last_error(), "rank 1") != NULL,
                           "U %ld: rank 0's message does not name rank 1: %s", Us[t], tess_last_error());
            continue;
        }
        ASSERT_MSG(rc == TESS_OK, "after the lost device: status %d (%s)", rc, tess_last_error());
        ASSERT_GT(st.units, 8);
        check_C(g, &C, k, alpha, beta, "after the lost device");
    }
    unsetenv("TESSERA_FAULT");
    free(A.p), free(B.p), free(C.p);
    tess_grid_free(g);
    ASSERT_EQ(tess_finalize(), TESS_OK);
}

TEST_MPI_MAIN(2, 2)

#endif
