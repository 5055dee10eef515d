/* tests/test_pgemm_fault_mpi.c: faults in the middle of the distributed GEMM, on one rank
 * of two (registered with 2 ranks; exits 77 without MPI or on other than 2 ranks): a
 * device failing at its K-th copy or kernel (TESSERA_FAULT=0:K on rank 1) under every
 * variant, a device lost in the middle of a GPU-transport unit, and NULL operands. Each
 * case starts the runtime afresh on one emulated device per rank (one_device_env: no CPU
 * worker, so nothing can take the failed device's work). Whatever fails, both ranks return
 * the same status and message, nobody hangs, a failed call leaves C as it was where the
 * variant promises it, and the next call is right; each test says what it checks. With
 * TESSERA_PGEMM_NCCL=2 (ctest's :np2_devxport) stationary C runs the GPU transport on the
 * emulated devices, whose copies the fault then hits as well.
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

struct loc {
    double *p;
    int64_t rows, cols;
    tess_desc_t d;
};

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

/* The runtime's knobs for the next tess_init, on every rank: one emulated device (no CPU
 * worker: nothing takes a failed device's work), 8 x 8 tiles, TESSERA_PGEMM_CHUNK=2048 (the
 * split variants run several units), no fault; variant v ('a', 'b', 'c'), or 0 for the
 * library's own choice. */
static void one_device_env(char v) {
    setenv("TESSERA_DEVICES", "none", 1);
    setenv("TESSERA_EMULATE", "1", 1);
    setenv("TESSERA_CPU_WORKER", "0", 1);
    setenv("TESSERA_TILE", "8", 1);
    setenv("TESSERA_EMULATE_MEM", "16M", 1);
    setenv("TESSERA_PGEMM_CHUNK", "2048", 1);
    unsetenv("TESSERA_FAULT");
    char kv[2] = {v, 0};
    if (v)
        setenv("TESSERA_PGEMM_VARIANT", kv, 1);
    else
        unsetenv("TESSERA_PGEMM_VARIANT");
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

/* Every local entry of C is alpha A(:, ja:ja+k-1) B(ib:ib+k-1, :) + beta C0 within a
 * tolerance. */
static void check_C_at(tess_grid_t *g, const struct loc *C, int64_t k, double alpha, double beta,
                       int64_t ja, int64_t ib, const char *what) {
    int Pg, Qg, r, c;
    tess_grid_info(g, &Pg, &Qg, &r, &c);
    for (int64_t j = 0; j < C->cols; j++)
        for (int64_t i = 0; i < C->rows; i++) {
            int64_t gi = l2g(i, r, Pg), gj = l2g(j, c, Qg);
            double want = beta * val(3, gi, gj);
            for (int64_t l = 0; l < k; l++) want += alpha * val(1, gi, ja + l) * val(2, ib + l, gj);
            double got = C->p[i + j * C->d.lld];
            ASSERT_MSG(fabs(got - want) <= 1e-12 * (1 + fabs(want)) * k,
                       "%s: C(%ld,%ld) = %.17g, want %.17g", what, (long)gi, (long)gj, got, want);
        }
}

/* Every local entry of C is alpha A B + beta C0 within a tolerance. */
static void check_C(tess_grid_t *g, const struct loc *C, int64_t k, double alpha, double beta,
                    const char *what) {
    check_C_at(g, C, k, alpha, beta, 0, 0, what);
}

/* One call: variant v, rank 1 failing at its K-th operation (0: no fault). */
static void one_case(char v, int P, int Q, long K) {
    one_device_env(v);
    char kv[32];
    snprintf(kv, sizeof kv, "0:%ld", K);
    if (wrank == 1 && K > 0) setenv("TESSERA_FAULT", kv, 1);
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
    ASSERT_MSG(rcm[0] == -rcm[1],
               "variant %c, %dx%d, K %ld: the ranks returned different "
               "statuses (%d here: %s)",
               v, P, Q, K, rc, tess_last_error());
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
        ASSERT_MSG(K > 0, "variant %c: a device failure without a fault (%s)", v,
                   tess_last_error());
        if (v != 'c')
            ASSERT_MSG(memcmp(C.p, C0, cb) == 0,
                       "variant %c, %dx%d, K %ld: the call failed but C was written on rank %d", v,
                       P, Q, K, wrank);
    }
    free(A.p), free(B.p), free(C.p), free(C0);
    tess_grid_free(g);
    ASSERT_EQ(tess_finalize(), TESS_OK);
}

/* The fault at many points of each variant's call (TESSERA_PGEMM_VARIANT = a, b, c; a small
 * TESSERA_PGEMM_CHUNK, so the split variants run several units), on grids 1 x 2 and 2 x 1,
 * K from the first operation to one never reached: both ranks return the same status,
 * TESS_OK, or TESS_EDEVICE / TESS_ENODEV (the one device failed); TESS_OK: each rank's C is
 * alpha A B + beta C0 within a tolerance; a failure under stationary A or B leaves C
 * unchanged byte for byte on BOTH ranks (the partials are added only after every unit's
 * job succeeded everywhere); the fault failed some calls of each variant, and the
 * unreached K none. */
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
    one_device_env('c');
    setenv("TESSERA_TILE", "16", 1);
    setenv("TESSERA_PGEMM_CHUNK", "65536", 1); /* units of 27 rows: 23 of them */
    const int64_t m = 600, n = 40, k = 300;
    const double alpha = 0.75, beta = -0.5;
    struct loc A, B, C;
    tess_grid_t *g = start(1, 2, m, n, k, &A, &B, &C);
    const long Us[] = {1, 3, 8, 0};
    for (size_t t = 0; t < sizeof Us / sizeof Us[0]; t++) {
        char kv[32];
        snprintf(kv, sizeof kv, "xport:%ld", Us[t]);
        if (wrank == 1 && Us[t] > 0)
            setenv("TESSERA_FAULT", kv, 1);
        else
            unsetenv("TESSERA_FAULT");
        for (int64_t j = 0; j < C.cols; j++) /* C afresh for the checked call */
            for (int64_t i = 0; i < C.rows; i++)
                C.p[i + j * C.d.lld] = val(3, l2g(i, 0, 1), l2g(j, wrank, 2));
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
                           "U %ld: rank 0's message does not name rank 1: %s", Us[t],
                           tess_last_error());
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

/* ---- NULL operands ----------------------------------------------------------------------- */

/* rc and tess_last_error() are the same on both ranks. */
static void same_on_both_ranks(int rc, const char *what) {
    int rcs[2] = {rc, -rc}, rcm[2];
    MPI_Allreduce(rcs, rcm, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    ASSERT_MSG(rcm[0] == -rcm[1], "%s: the ranks returned different statuses (%d here: %s)", what,
               rc, tess_last_error());
    char mine[512], first[512];
    snprintf(mine, sizeof mine, "%s", tess_last_error());
    memcpy(first, mine, sizeof first);
    MPI_Bcast(first, (int)sizeof first, MPI_CHAR, 0, MPI_COMM_WORLD);
    ASSERT_MSG(!strcmp(mine, first), "%s: rank %d says \"%s\", rank 0 \"%s\"", what, wrank, mine,
               first);
}

/* A or B NULL on a rank that holds part of it, on one rank or on both, on grids 1 x 2 and
 * 2 x 1 (every rank holds part of A, B and C): both ranks return TESS_EINVAL with the same
 * message, which names the argument and the lowest rank that passed it; C is untouched
 * byte for byte on both; the next call on the same grid is right. (Without the check the
 * NULL reached MPI_Ialltoallw on the ranks sending from it: a segfault.) */
TEST(pgemm_null_operand) {
    one_device_env(0);
    const int64_t m = 40, n = 28, k = 33;
    const double alpha = 0.75, beta = -0.5;
    static const struct {
        const char *what;
        int a_on, b_on;  /* the rank passing NULL: 0, 1, 2 (both), -1 (none) */
        const char *msg; /* what rank 0 must read */
    } cases[] = {
        {"A NULL on rank 1", 1, -1, "rank 1: tess_pgemm: argument 9 (A) must not be NULL"},
        {"A NULL on every rank", 2, -1, "rank 0: tess_pgemm: argument 9 (A) must not be NULL"},
        {"B NULL on rank 0", -1, 0, "rank 0: tess_pgemm: argument 13 (B) must not be NULL"},
        {"B NULL on rank 1", -1, 1, "rank 1: tess_pgemm: argument 13 (B) must not be NULL"},
        {"B NULL on every rank", -1, 2, "rank 0: tess_pgemm: argument 13 (B) must not be NULL"},
        {"A and B NULL on rank 1", 1, 1, "rank 1: tess_pgemm: argument 9 (A) must not be NULL"},
    };
    for (int shape = 0; shape < 2; shape++) {
        const int P = shape ? 2 : 1, Q = shape ? 1 : 2;
        struct loc A, B, C;
        tess_grid_t *g = start(P, Q, m, n, k, &A, &B, &C);
        ASSERT(A.rows * A.cols > 0 && B.rows * B.cols > 0 && C.rows * C.cols > 0);
        size_t cb = sizeof(double) * (size_t)(C.d.lld * C.cols);
        double *C0 = malloc(cb);
        memcpy(C0, C.p, cb);
        for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
            char what[96];
            snprintf(what, sizeof what, "%s, %d x %d", cases[t].what, P, Q);
            const int an = cases[t].a_on == 2 || cases[t].a_on == wrank;
            const int bn = cases[t].b_on == 2 || cases[t].b_on == wrank;
            alarm(60); /* a rank left waiting in a collective ends the test */
            int rc = tess_pdgemm(g, TESS_NO_TRANS, TESS_NO_TRANS, m, n, k, alpha, an ? NULL : A.p,
                                 0, 0, &A.d, bn ? NULL : B.p, 0, 0, &B.d, beta, C.p, 0, 0, &C.d);
            alarm(0);
            same_on_both_ranks(rc, what);
            ASSERT_MSG(rc == TESS_EINVAL, "%s: status %d (%s), expected TESS_EINVAL", what, rc,
                       tess_last_error());
            ASSERT_MSG(strstr(tess_last_error(), cases[t].msg) == tess_last_error(),
                       "%s: message \"%s\", expected it to start \"%s\"", what, tess_last_error(),
                       cases[t].msg);
            ASSERT_MSG(!memcmp(C.p, C0, cb), "%s: the call failed but C was written on rank %d",
                       what, wrank);
            /* the next call, with the operands, is right */
            rc = tess_pdgemm(g, TESS_NO_TRANS, TESS_NO_TRANS, m, n, k, alpha, A.p, 0, 0, &A.d, B.p,
                             0, 0, &B.d, beta, C.p, 0, 0, &C.d);
            same_on_both_ranks(rc, what);
            ASSERT_MSG(rc == TESS_OK, "%s: the next call: status %d (%s)", what, rc,
                       tess_last_error());
            char after[128];
            snprintf(after, sizeof after, "the call after %s", what);
            check_C(g, &C, k, alpha, beta, after);
            memcpy(C.p, C0, cb);
        }
        free(A.p), free(B.p), free(C.p), free(C0);
        tess_grid_free(g);
        ASSERT_EQ(tess_finalize(), TESS_OK);
    }
}

/* NULL is fine where it is never read: on a rank whose local part of the operand (and of
 * C) is empty, A with no rows or columns there, B likewise, with submatrix offsets (an in
 * place operand's address is computed from them), under each variant; and A and B NULL on
 * every rank with alpha = 0 (C = beta C). Every case: TESS_OK on both ranks, C right. */
TEST(pgemm_null_where_nothing_is_held) {
    static const struct {
        const char *what;
        int P, Q;
        int64_t m, n, k, ja, ib; /* A is m x (ja + k), B (ib + k) x n, C m x n */
        int a1, b1, c1;          /* rank 1 passes NULL for A, B, C */
        double alpha;
    } cases[] = {
        /* 2 x 1, m <= NB: rank 1 holds no row of A or C (A in place, offset along k) */
        {"no rows of A or C on rank 1", 2, 1, 6, 20, 30, 5, 3, 1, 0, 1, 0.75},
        /* 1 x 2, n <= NB: rank 1 holds no column of B or C (B in place, offset along k) */
        {"no columns of B or C on rank 1", 1, 2, 20, 6, 30, 5, 3, 0, 1, 1, 0.75},
        /* 1 x 2, ja + k <= NB: rank 1 holds no column of A, but C (A moves) */
        {"no columns of A on rank 1", 1, 2, 30, 20, 6, 0, 3, 1, 0, 0, 0.75},
        /* 2 x 1, ib + k <= NB: rank 1 holds no row of B, but C (B moves) */
        {"no rows of B on rank 1", 2, 1, 20, 30, 5, 3, 2, 0, 1, 0, 0.75},
    };
    const double beta = -0.5;
    for (int vi = 0; vi < 3; vi++)
        for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
            one_device_env((char)('a' + vi));
            ASSERT_EQ(tess_init(), TESS_OK);
            tess_grid_t *g = NULL;
            ASSERT_EQ(tess_grid_create(MPI_COMM_WORLD, cases[t].P, cases[t].Q, 'R', &g), TESS_OK);
            struct loc A, B, C;
            const int64_t m = cases[t].m, n = cases[t].n, k = cases[t].k;
            make(&A, g, 1, m, cases[t].ja + k);
            make(&B, g, 2, cases[t].ib + k, n);
            make(&C, g, 3, m, n);
            ASSERT(wrank != 1 || !cases[t].a1 || A.rows * A.cols == 0);
            ASSERT(wrank != 1 || !cases[t].b1 || B.rows * B.cols == 0);
            ASSERT(wrank != 1 || !cases[t].c1 || C.rows * C.cols == 0);
            char what[128];
            snprintf(what, sizeof what, "%s, variant %c", cases[t].what, 'a' + vi);
            alarm(60);
            int rc = tess_pdgemm(g, TESS_NO_TRANS, TESS_NO_TRANS, m, n, k, cases[t].alpha,
                                 wrank == 1 && cases[t].a1 ? NULL : A.p, 0, cases[t].ja, &A.d,
                                 wrank == 1 && cases[t].b1 ? NULL : B.p, cases[t].ib, 0, &B.d, beta,
                                 wrank == 1 && cases[t].c1 ? NULL : C.p, 0, 0, &C.d);
            alarm(0);
            same_on_both_ranks(rc, what);
            ASSERT_MSG(rc == TESS_OK, "%s: status %d (%s)", what, rc, tess_last_error());
            check_C_at(g, &C, k, cases[t].alpha, beta, cases[t].ja, cases[t].ib, what);
            free(A.p), free(B.p), free(C.p);
            tess_grid_free(g);
            ASSERT_EQ(tess_finalize(), TESS_OK);
        }
    /* alpha = 0: neither A nor B is read, NULL on every rank */
    one_device_env(0);
    struct loc A, B, C;
    tess_grid_t *g = start(1, 2, 30, 20, 10, &A, &B, &C);
    int rc = tess_pdgemm(g, TESS_NO_TRANS, TESS_NO_TRANS, 30, 20, 10, 0.0, NULL, 0, 0, &A.d, NULL,
                         0, 0, &B.d, beta, C.p, 0, 0, &C.d);
    same_on_both_ranks(rc, "alpha = 0, A and B NULL");
    ASSERT_MSG(rc == TESS_OK, "alpha = 0, A and B NULL: status %d (%s)", rc, tess_last_error());
    check_C(g, &C, 10, 0.0, beta, "alpha = 0, A and B NULL");
    free(A.p), free(B.p), free(C.p);
    tess_grid_free(g);
    ASSERT_EQ(tess_finalize(), TESS_OK);
}

TEST_MPI_MAIN(2, 2)

#endif
