/* tests/test_async.c: asynchronous GEMMs on held data (node/hold.c): a GEMM whose A, B and C
 * all lie in held matrices returns once queued and its tasks wait by tile for earlier calls.
 * On emulated devices: chains of calls that read what earlier ones wrote (read after
 * write), overwrite what earlier ones read (write after read) and write the same tiles
 * (write after write) give OpenBLAS's answers; a task of a later call starts before an
 * earlier call ended (counter); a stateless call on a held range sees the asynchronous
 * results; a fault sweep ends with every answer right or TESS_EDEVICE naming an
 * asynchronous call, a later call that used its tiles naming it as the cause.
 */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../node/node.h"
#include "harness.h"
#include "ref.h"
#include "tessera.h"

enum { TILE = 16 };

static void start(int ndev, const char *mem, const char *gflops, const char *fault) {
    char n[8];
    snprintf(n, sizeof n, "%d", ndev);
    setenv("TESSERA_DEVICES", "none", 1);
    setenv("TESSERA_CPU_WORKER", "0", 1);
    setenv("TESSERA_EMULATE", n, 1);
    setenv("TESSERA_EMULATE_MEM", mem, 1);
    setenv("TESSERA_EMULATE_GFLOPS", gflops, 1);
    setenv("TESSERA_TILE", "16", 1);
    if (fault)
        setenv("TESSERA_FAULT", fault, 1);
    else
        unsetenv("TESSERA_FAULT");
}

static double max_rel(const double *x, const double *r, size_t n) {
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs(x[i] - r[i])), m = fmax(m, fabs(r[i]));
    return m > 0 ? d / m : d;
}

/* One step of the chain on matrices X, Y, Z (n x n, ld n) both ways: Z(block) += X * Y or
 * one of them re-used in another role, as picked by `kind`; blocks at offsets not on the
 * tile grid. Returns the tessera status. */
static int chain_step(int kind, int64_t n, double *X, double *Y, double *Z, double *rX, double *rY,
                      double *rZ) {
    int64_t h = 2 * TILE, o = 5; /* h on the tile grid: case 2 is asynchronous */
    double *a, *b, *c, *ra, *rb, *rc;
    switch (kind % 3) {
    case 0: /* Z += X Y: writes Z after earlier reads and writes of it */
        a = X, b = Y, c = Z, ra = rX, rb = rY, rc = rZ;
        break;
    case 1: /* X(rows o..) += Z Y: reads Z just written (RAW), writes X read before (WAR) */
        a = Z, b = Y, c = X + o, ra = rZ, rb = rY, rc = rX + o;
        break;
    default: /* Y(:, h..) -= X(:, :h) Z(:h, ...): another shape on the same tiles */
        a = X, b = Z, c = Y + h * n, ra = rX, rb = rZ, rc = rY + h * n;
        break;
    }
    int64_t m = kind % 3 == 1 ? n - o : n, nn = kind % 3 == 2 ? n - h : n,
            k = kind % 3 == 2 ? h : n;
    double al = kind % 3 == 2 ? -0.5 / (double)n : 0.5 / (double)n, be = 1.0;
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)nn, (int)k, al, ra, (int)n,
                rb, (int)n, be, rc, (int)n);
    return tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, m, nn, k, al, a, n, b, n, be, c,
                      n);
}

struct mats {
    int64_t n;
    double *X, *Y, *Z, *rX, *rY, *rZ;
};

static void mats_new(struct mats *M, int64_t n, uint64_t seed) {
    M->n = n;
    size_t nn = (size_t)(n * n);
    double **p[6] = {&M->X, &M->Y, &M->Z, &M->rX, &M->rY, &M->rZ};
    for (int i = 0; i < 6; i++) *p[i] = ref_malloc(nn * sizeof(double));
    ref_fill_random(TESS_D, M->X, nn, &seed);
    ref_fill_random(TESS_D, M->Y, nn, &seed);
    ref_fill_random(TESS_D, M->Z, nn, &seed);
    memcpy(M->rX, M->X, nn * sizeof(double));
    memcpy(M->rY, M->Y, nn * sizeof(double));
    memcpy(M->rZ, M->Z, nn * sizeof(double));
}

static void mats_free(struct mats *M) {
    free(M->X), free(M->Y), free(M->Z), free(M->rX), free(M->rY), free(M->rZ);
}

static int hold_all(struct mats *M) {
    int rc = tess_hold(TESS_D, M->X, M->n, M->n, M->n, TILE);
    if (!rc) rc = tess_hold(TESS_D, M->Y, M->n, M->n, M->n, TILE);
    if (!rc) rc = tess_hold(TESS_D, M->Z, M->n, M->n, M->n, TILE);
    return rc;
}

/* Chains of 30 dependent asynchronous calls give OpenBLAS's answers, with tasks of a call
 * starting before the call before it ended; on 1 and 3 devices, with room for everything
 * and with a tenth of it (write-backs under pressure). */
TEST(chains_match_openblas_and_overlap) {
    const char *mems[2] = {"8M", "40K"};
    for (int ndev = 1; ndev <= 3; ndev += 2)
        for (int mi = 0; mi < 2; mi++) {
            start(ndev, mems[mi], "2", NULL);
            ASSERT_EQ(tess_init(), TESS_OK);
            struct mats M;
            mats_new(&M, 75, 11u + (uint64_t)ndev);
            ASSERT_EQ(hold_all(&M), TESS_OK);
            uint64_t ov0 = tess__hold_overlapped();
            for (int i = 0; i < 30; i++)
                ASSERT_MSG(chain_step(i, M.n, M.X, M.Y, M.Z, M.rX, M.rY, M.rZ) == TESS_OK,
                           "%d devices, %s, call %d: %s", ndev, mems[mi], i, tess_last_error());
            /* then calls on the two halves of Z by turns: each may start while the one
             * before it, on the other half, still runs */
            int n = (int)M.n, h = n / 2;
            for (int i = 0; i < 8; i++) {
                int c0 = i % 2 ? h : 0, w = i % 2 ? n - h : h;
                cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, w, n, 1.0 / n, M.rX, n,
                            M.rY + (size_t)c0 * n, n, 1.0, M.rZ + (size_t)c0 * n, n);
                ASSERT_EQ(tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, M.n, w, M.n,
                                     1.0 / n, M.X, M.n, M.Y + (size_t)c0 * n, M.n, 1.0,
                                     M.Z + (size_t)c0 * n, M.n),
                          TESS_OK);
            }
            ASSERT_EQ(tess_wait(), TESS_OK);
            ASSERT_EQ(tess_sync(M.X), TESS_OK);
            ASSERT_EQ(tess_sync(M.Y), TESS_OK);
            ASSERT_EQ(tess_sync(M.Z), TESS_OK);
            size_t nn = (size_t)(M.n * M.n);
            double e = fmax(max_rel(M.X, M.rX, nn),
                            fmax(max_rel(M.Y, M.rY, nn), max_rel(M.Z, M.rZ, nn)));
            ASSERT_MSG(e < 1e-12, "%d devices, %s: max relative difference %g", ndev, mems[mi], e);
            ASSERT_MSG(tess__hold_overlapped() > ov0,
                       "%d devices, %s: no call started before the one before it ended", ndev,
                       mems[mi]);
            ASSERT_EQ(tess_release(M.X), TESS_OK);
            ASSERT_EQ(tess_release(M.Y), TESS_OK);
            ASSERT_EQ(tess_release(M.Z), TESS_OK);
            mats_free(&M);
            tess_finalize();
        }
}

/* A call served stateless on a held range (DSYRK on Z, a GEMM on X with another ld) waits
 * for the asynchronous calls that write it and sees their results; so does the host after
 * tess_release. */
TEST(stateless_call_sees_async_results) {
    start(2, "8M", "2", NULL);
    ASSERT_EQ(tess_init(), TESS_OK);
    struct mats M;
    mats_new(&M, 60, 5);
    ASSERT_EQ(hold_all(&M), TESS_OK);
    for (int i = 0; i < 6; i++)
        ASSERT_EQ(chain_step(i, M.n, M.X, M.Y, M.Z, M.rX, M.rY, M.rZ), TESS_OK);
    int n = (int)M.n;
    cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, n, n, 1.0, M.rX, n, 1.0, M.rZ, n);
    ASSERT_EQ(tess_dsyrk(TESS_COL_MAJOR, TESS_LOWER, TESS_NO_TRANS, M.n, M.n, 1.0, M.X, M.n, 1.0,
                         M.Z, M.n),
              TESS_OK);
    /* X seen as a 30 x 60 matrix of ld 2n: overlaps the held X without lying in it */
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 30, 30, 30, 1.0, M.rY, n, M.rZ, n, 1.0,
                M.rX, 2 * n);
    ASSERT_EQ(tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, 30, 30, 30, 1.0, M.Y, M.n,
                         M.Z, M.n, 1.0, M.X, 2 * M.n),
              TESS_OK);
    for (int i = 6; i < 9; i++)
        ASSERT_EQ(chain_step(i, M.n, M.X, M.Y, M.Z, M.rX, M.rY, M.rZ), TESS_OK);
    ASSERT_EQ(tess_release(M.X), TESS_OK);
    ASSERT_EQ(tess_release(M.Y), TESS_OK);
    ASSERT_EQ(tess_release(M.Z), TESS_OK);
    size_t nn = (size_t)(M.n * M.n);
    double e = fmax(max_rel(M.X, M.rX, nn), fmax(max_rel(M.Y, M.rY, nn), max_rel(M.Z, M.rZ, nn)));
    ASSERT_MSG(e < 1e-12, "max relative difference %g", e);
    mats_free(&M);
    tess_finalize();
}

/* Device 1 of 3 fails at its k-th copy or kernel during a chain of asynchronous calls: the
 * waits say TESS_OK with every answer right, or TESS_EDEVICE naming an asynchronous call;
 * never TESS_OK with a wrong answer, never a hang. */
TEST(fault_sweep) {
    int edevice = 0, named_cause = 0;
    for (int k = 1; k <= 300; k += 7) {
        char fault[32];
        snprintf(fault, sizeof fault, "1:%d", k);
        start(3, "8M", "4", fault);
        ASSERT_EQ(tess_init(), TESS_OK);
        struct mats M;
        mats_new(&M, 50, (uint64_t)k);
        ASSERT_EQ(hold_all(&M), TESS_OK);
        int rc = TESS_OK;
        for (int i = 0; i < 12; i++) {
            /* kinds 0 and 2 only: every call asynchronous, each reading what the one
             * before wrote */
            int r = chain_step(i % 2 ? 2 : 0, M.n, M.X, M.Y, M.Z, M.rX, M.rY, M.rZ);
            ASSERT_MSG(r == TESS_OK || r == TESS_EDEVICE, "fault %s: call %d returned %d", fault, i,
                       r);
            if (r && getenv("TEST_ASYNC_VERBOSE"))
                printf("  fault %s: call %d: %s\n", fault, i, tess_last_error());
            if (r && !rc) rc = r;
        }
        int w = tess_wait();
        ASSERT_MSG(w == TESS_OK || w == TESS_EDEVICE, "fault %s: tess_wait %d", fault, w);
        if (w) {
            ASSERT_MSG(strstr(tess_last_error(), "asynchronous call"), "fault %s: %s", fault,
                       tess_last_error());
            edevice++;
            named_cause += strstr(tess_last_error(), " 0 later call") == NULL;
        }
        int s[3] = {tess_sync(M.X), tess_sync(M.Y), tess_sync(M.Z)};
        if (getenv("TEST_ASYNC_VERBOSE"))
            printf("  fault %s: calls %d wait %d syncs %d %d %d: %s\n", fault, rc, w, s[0], s[1],
                   s[2], tess_last_error());
        bool all_ok = !rc && !w && !s[0] && !s[1] && !s[2];
        if (all_ok) {
            size_t nn = (size_t)(M.n * M.n);
            double e = fmax(max_rel(M.X, M.rX, nn),
                            fmax(max_rel(M.Y, M.rY, nn), max_rel(M.Z, M.rZ, nn)));
            ASSERT_MSG(e < 1e-12, "fault %s: every status TESS_OK, max relative difference %g",
                       fault, e);
        }
        for (int i = 0; i < 3; i++)
            ASSERT_MSG(s[i] == TESS_OK || s[i] == TESS_EDEVICE, "fault %s: sync %d", fault, s[i]);
        tess_release(M.X), tess_release(M.Y), tess_release(M.Z);
        mats_free(&M);
        tess_finalize();
    }
    printf("  fault sweep: %d of 43 runs reported TESS_EDEVICE at tess_wait, %d with later "
           "calls failed because of it\n",
           edevice, named_cause);
    ASSERT(edevice > 0 && named_cause > 0); /* the sweep reaches both paths */
}

/* tess_wait with nothing held and nothing in flight returns TESS_OK and starts nothing. */
TEST(wait_with_nothing) {
    start(1, "8M", "2", NULL);
    ASSERT_EQ(tess_wait(), TESS_OK);
    ASSERT_EQ(tess_init(), TESS_OK);
    ASSERT_EQ(tess_wait(), TESS_OK);
    tess_finalize();
}

TEST_MAIN()
