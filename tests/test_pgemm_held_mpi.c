/* tests/test_pgemm_held_mpi.c: the distributed GEMM on held local arrays (issue 23 point 6)
 * under mpirun with 1, 2 and 4 ranks on emulated devices. Every rank builds the same global
 * matrices from a seed, holds (tess_hold) the local arrays a test names, and mirrors each
 * call on the global matrices with OpenBLAS; after tess_sync each rank compares its local
 * part with the mirror. What each test asks:
 * - c_sequence: a held C across calls of every variant (stationary C keeps its tiles on the
 *   devices, the split variants write it on the host), at offsets, beta = 0 and alpha = 0;
 *   and the host-to-device bytes of stationary C: C crosses once when held, every call when
 *   not (counters, not only answers);
 * - dirty_operands: A and B written on the devices by earlier calls, then read by the
 *   exchange (which reads the host: the held tiles must be written back first);
 * - one_matrix: A, B and C parts of one held matrix;
 * - after_async: an asynchronous local GEMM on held data, then the distributed GEMM on the
 *   same C (ordered by tile), then a local one again.
 * Both d and z. Sizes are not multiples of the blocks or the tile.
 */
#include <stdio.h>

#if !defined(TESS_HAVE_MPI)
int main(void) {
    fprintf(stderr, "SKIP: built without MPI\n");
    return 77;
}
#else

#include <cblas.h>
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness_mpi.h"
#include "ref.h"
#include "tessera_mpi.h"

static tess_grid_t *grid;
static int P, Q, myrow, mycol;

static void setup(void) {
    ASSERT_OK(tess_grid_create(MPI_COMM_WORLD, 0, 0, 'R', &grid));
    ASSERT_OK(tess_grid_info(grid, &P, &Q, &myrow, &mycol));
}

static void teardown(void) {
    tess_grid_free(grid);
    tess_finalize();
}

/* ---- one distributed matrix: its global mirror (the same on every rank) and local part -- */

struct dm {
    tess_dtype_t dt;
    tess_desc_t d;
    int64_t ml, nl; /* local rows and columns */
    char *loc;      /* local array, ld d.lld */
    char *glob;     /* global mirror, column-major, ld d.m */
};

static size_t esz(const struct dm *x) { return ref_esize(x->dt); }

/* Global index i of a dimension of block b over p processes from src: local index, owner. */
static int64_t g2l(int64_t i, int64_t b, int p, int src, int *owner) {
    *owner = (int)((src + i / b) % p);
    return i / b / p * b + i % b;
}

static void dm_init(struct dm *x, tess_dtype_t dt, int64_t m, int64_t n, int64_t mb, int64_t nb,
                    int rsrc, int csrc, uint64_t seed) {
    memset(x, 0, sizeof *x);
    x->dt = dt;
    tess_desc_init(&x->d, m, n, mb, nb, rsrc % P, csrc % Q, 1);
    x->ml = tess_desc_local(grid, &x->d, 0);
    x->nl = tess_desc_local(grid, &x->d, 1);
    x->d.lld = (x->ml > 0 ? x->ml : 1) + 3; /* a gap below each local column */
    size_t es = esz(x);
    x->loc = ref_malloc((size_t)(x->d.lld * (x->nl > 0 ? x->nl : 1)) * es);
    x->glob = ref_malloc((size_t)(m * n) * es);
    uint64_t rng = seed;
    ref_fill_random(dt, x->glob, (size_t)(m * n), &rng);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < m; i++) {
            int pr, pc;
            int64_t li = g2l(i, mb, P, x->d.rsrc, &pr), lj = g2l(j, nb, Q, x->d.csrc, &pc);
            if (pr == myrow && pc == mycol)
                memcpy(x->loc + (size_t)(li + lj * x->d.lld) * es,
                       x->glob + (size_t)(i + j * m) * es, es);
        }
}

static void dm_free(struct dm *x) { free(x->loc), free(x->glob); }

static void dm_hold(struct dm *x, int64_t tile) {
    if (x->ml > 0 && x->nl > 0) ASSERT_OK(tess_hold(x->dt, x->loc, x->d.lld, x->ml, x->nl, tile));
}

static void dm_release(struct dm *x) {
    if (x->ml > 0 && x->nl > 0) ASSERT_OK(tess_release(x->loc));
}

/* After tess_sync: the local part equals the mirror within tol (relative, above 1). */
static void dm_check(const char *what, struct dm *x, int held, double tol) {
    if (held && x->ml > 0 && x->nl > 0) {
        int rc = tess_sync(x->loc);
        ASSERT_MSG(rc == TESS_OK, "%s: tess_sync: %s", what, tess_last_error());
    }
    size_t es = esz(x);
    int cplx = ref_is_complex(x->dt);
    double worst = 0;
    for (int64_t j = 0; j < x->d.n; j++)
        for (int64_t i = 0; i < x->d.m; i++) {
            int pr, pc;
            int64_t li = g2l(i, x->d.mb, P, x->d.rsrc, &pr),
                    lj = g2l(j, x->d.nb, Q, x->d.csrc, &pc);
            if (pr != myrow || pc != mycol) continue;
            const double *a = (const double *)(x->loc + (size_t)(li + lj * x->d.lld) * es);
            const double *b = (const double *)(x->glob + (size_t)(i + j * x->d.m) * es);
            for (int p = 0; p <= cplx; p++) {
                double e = fabs(a[p] - b[p]) / (1 + fabs(b[p]));
                if (!(e <= worst)) worst = e;
                ASSERT_MSG(e <= tol, "%s: element (%lld, %lld)%s: %.17g, expected %.17g", what,
                           (long long)i, (long long)j, p ? " (imaginary)" : "", a[p], b[p]);
            }
        }
    (void)worst;
}

/* ---- a call, mirrored ------------------------------------------------------------------ */

static void scalar(tess_dtype_t dt, double re, double im, double out[2]) {
    out[0] = re;
    out[1] = dt == TESS_Z ? im : 0;
}

/* sub(C) = alpha op(sub(A)) op(sub(B)) + beta sub(C) through tess_pgemm, and on the mirrors. */
static void pgemm(tess_trans_t ta, tess_trans_t tb, int64_t m, int64_t n, int64_t k,
                  const double al[2], struct dm *A, int64_t ia, int64_t ja, struct dm *B,
                  int64_t ib, int64_t jb, const double be[2], struct dm *C, int64_t ic,
                  int64_t jc) {
    tess_dtype_t dt = C->dt;
    int rc = tess_pgemm(grid, dt, ta, tb, m, n, k, al, A->loc, ia, ja, &A->d, B->loc, ib, jb, &B->d,
                        be, C->loc, ic, jc, &C->d);
    ASSERT_MSG(rc == TESS_OK, "tess_pgemm: %d: %s", rc, tess_last_error());
    /* the mirror: through a copy of sub(C) when A or B is C itself */
    size_t es = esz(C);
    char *W = ref_malloc((size_t)(m * n) * es);
    for (int64_t j = 0; j < n; j++)
        memcpy(W + (size_t)(j * m) * es, C->glob + (size_t)(ic + (jc + j) * C->d.m) * es,
               (size_t)m * es);
    const char *pa = A->glob + (size_t)(ia + ja * A->d.m) * es;
    const char *pb = B->glob + (size_t)(ib + jb * B->d.m) * es;
    enum CBLAS_TRANSPOSE cta = ta == TESS_NO_TRANS ? CblasNoTrans
                               : ta == TESS_TRANS  ? CblasTrans
                                                   : CblasConjTrans;
    enum CBLAS_TRANSPOSE ctb = tb == TESS_NO_TRANS ? CblasNoTrans
                               : tb == TESS_TRANS  ? CblasTrans
                                                   : CblasConjTrans;
    if (dt == TESS_D) {
        if (be[0] == 0) memset(W, 0, (size_t)(m * n) * es); /* beta = 0: C not read */
        if (k > 0)
            cblas_dgemm(CblasColMajor, cta, ctb, (int)m, (int)n, (int)k, al[0], (const double *)pa,
                        (int)A->d.m, (const double *)pb, (int)B->d.m, be[0], (double *)W, (int)m);
        else
            for (int64_t i = 0; i < m * n; i++) ((double *)W)[i] *= be[0];
    } else {
        if (be[0] == 0 && be[1] == 0) memset(W, 0, (size_t)(m * n) * es);
        if (k > 0)
            cblas_zgemm(CblasColMajor, cta, ctb, (int)m, (int)n, (int)k, al, pa, (int)A->d.m, pb,
                        (int)B->d.m, be, W, (int)m);
        else
            for (int64_t i = 0; i < m * n; i++) {
                double complex *w = (double complex *)W + i;
                *w *= be[0] + I * be[1];
            }
    }
    for (int64_t j = 0; j < n; j++)
        memcpy(C->glob + (size_t)(ic + (jc + j) * C->d.m) * es, W + (size_t)(j * m) * es,
               (size_t)m * es);
    free(W);
}

static void variant(const char *v) { setenv("TESSERA_PGEMM_VARIANT", v, 1); }

static uint64_t h2d_bytes(void) {
    uint64_t s = 0;
    for (int d = 0; d < tess_device_count(); d++) {
        tess_dev_stats_t st;
        ASSERT_OK(tess_device_stats(d, &st));
        s += st.bytes_h2d;
    }
    return s;
}

static const tess_dtype_t dts[2] = {TESS_D, TESS_Z};
static const double TOL = 1e-9;

/* ---- tests ------------------------------------------------------------------------------ */

TEST(c_sequence) {
    const char *vars[4] = {"C", "A", "B", "auto"};
    for (int t = 0; t < 2; t++) {
        tess_dtype_t dt = dts[t];
        struct dm A, B, C;
        dm_init(&A, dt, 67, 60, 7, 6, 0, 1, 11 + t);
        dm_init(&B, dt, 50, 53, 6, 5, 1, 0, 12 + t);
        dm_init(&C, dt, 67, 57, 9, 8, 1, 1, 13 + t);
        dm_hold(&C, 0);
        double al[2], be[2], zero[2] = {0, 0};
        for (int r = 0; r < 8; r++) {
            variant(vars[r % 4]);
            scalar(dt, 0.75 + 0.125 * r, -0.5, al);
            scalar(dt, r == 0 ? 0 : 1.0 - 0.0625 * r, 0.25, be);
            if (r == 5) /* alpha = 0: C = beta C on the host */
                pgemm(TESS_NO_TRANS, TESS_NO_TRANS, 60, 50, 45, zero, &A, 0, 0, &B, 0, 0, be, &C, 3,
                      2);
            else if (r % 3 == 2) /* at offsets, transposed */
                pgemm(TESS_TRANS, dt == TESS_Z ? TESS_CONJ_TRANS : TESS_TRANS, 50, 40, 30, al, &A,
                      5, 2, &B, 7, 4, be, &C, 9, 11);
            else
                pgemm(TESS_NO_TRANS, TESS_NO_TRANS, 67, 53, 45, al, &A, 0, 0, &B, 0, 0, be, &C, 0,
                      0);
        }
        dm_check("c_sequence", &C, 1, TOL);
        dm_release(&C);
        dm_check("c_sequence after release", &C, 0, TOL);

        /* the counters: 4 stationary-C calls, C held or not */
        variant("C");
        uint64_t h2d[2];
        for (int held = 0; held < 2; held++) {
            if (held) dm_hold(&C, 0);
            MPI_Barrier(MPI_COMM_WORLD);
            tess_reset_stats();
            scalar(dt, 1, 0, al);
            scalar(dt, 0.5, 0, be);
            for (int r = 0; r < 4; r++)
                pgemm(TESS_NO_TRANS, TESS_NO_TRANS, 67, 53, 45, al, &A, 0, 0, &B, 0, 0, be, &C, 0,
                      0);
            h2d[held] = h2d_bytes();
            dm_check("c_sequence counted", &C, held, TOL);
            if (held) dm_release(&C);
        }
        uint64_t cb = (uint64_t)(C.ml * C.nl) * esz(&C);
        if (cb)
            ASSERT_MSG(h2d[1] + 2 * cb <= h2d[0],
                       "held C crossed the host link more than once: %llu bytes h2d held, %llu "
                       "not held, local C %llu",
                       (unsigned long long)h2d[1], (unsigned long long)h2d[0],
                       (unsigned long long)cb);
        dm_free(&A), dm_free(&B), dm_free(&C);
    }
    unsetenv("TESSERA_PGEMM_VARIANT");
}

TEST(dirty_operands) {
    for (int t = 0; t < 2; t++) {
        tess_dtype_t dt = dts[t];
        struct dm A, B, C, X, Y;
        dm_init(&A, dt, 58, 47, 8, 7, 1, 0, 21 + t);
        dm_init(&B, dt, 47, 51, 7, 9, 0, 1, 22 + t);
        dm_init(&C, dt, 58, 51, 8, 9, 0, 0, 23 + t);
        dm_init(&X, dt, 58, 19, 8, 5, 1, 0, 24 + t);
        dm_init(&Y, dt, 19, 51, 5, 9, 0, 1, 25 + t);
        dm_hold(&A, 0), dm_hold(&B, 24);
        double al[2], be[2];
        scalar(dt, 0.125, 0.0625, al);
        scalar(dt, -0.5, 0, be);
        for (int r = 0; r < 3; r++) {
            variant(r == 1 ? "A" : "C");
            /* A and B changed on the devices: their held tiles dirty */
            pgemm(TESS_NO_TRANS, TESS_NO_TRANS, 58, 47, 19, al, &X, 0, 0, &Y, 0, 0, be, &A, 0, 0);
            pgemm(TESS_TRANS, TESS_NO_TRANS, 47, 51, 58, al, &A, 0, 0, &C, 0, 0, be, &B, 0, 0);
            /* then read by the exchange from the host */
            pgemm(TESS_NO_TRANS, TESS_NO_TRANS, 58, 51, 47, al, &A, 0, 0, &B, 0, 0, be, &C, 0, 0);
        }
        dm_check("dirty_operands C", &C, 0, TOL);
        dm_check("dirty_operands A", &A, 1, TOL);
        dm_check("dirty_operands B", &B, 1, TOL);
        dm_release(&A), dm_release(&B);
        dm_free(&A), dm_free(&B), dm_free(&C), dm_free(&X), dm_free(&Y);
    }
    unsetenv("TESSERA_PGEMM_VARIANT");
}

TEST(one_matrix) {
    for (int t = 0; t < 2; t++) {
        tess_dtype_t dt = dts[t];
        struct dm M;
        dm_init(&M, dt, 90, 70, 8, 6, 1, 1, 31 + t);
        dm_hold(&M, 0);
        double al[2], be[2];
        scalar(dt, -1, 0, al);
        scalar(dt, 1, 0, be);
        for (int r = 0; r < 4; r++) {
            variant(r == 3 ? "B" : "C");
            /* trailing updates: M[j:, j:] -= M[j:, j - 8 : j] M[j - 8 : j, j:] */
            int64_t j = 8 + 8 * r;
            pgemm(TESS_NO_TRANS, TESS_NO_TRANS, 90 - j, 70 - j, 8, al, &M, j, j - 8, &M, j - 8, j,
                  be, &M, j, j);
        }
        dm_check("one_matrix", &M, 1, 1e-8);
        dm_release(&M);
        dm_free(&M);
    }
    unsetenv("TESSERA_PGEMM_VARIANT");
}

TEST(after_async) {
    for (int t = 0; t < 2; t++) {
        tess_dtype_t dt = dts[t];
        struct dm A, B, C;
        dm_init(&A, dt, 63, 41, 9, 7, 0, 0, 41 + t);
        dm_init(&B, dt, 41, 55, 7, 11, 0, 0, 42 + t);
        dm_init(&C, dt, 63, 55, 9, 11, 0, 0, 43 + t);
        /* local operands of a local GEMM on this rank's part of C */
        int64_t kl = 13, ml = C.ml, nl = C.nl;
        size_t es = esz(&C);
        char *L = ref_malloc((size_t)((ml > 0 ? ml : 1) * kl) * es);
        char *R = ref_malloc((size_t)(kl * (nl > 0 ? nl : 1)) * es);
        uint64_t rng = 77 + (uint64_t)(myrow * 8 + mycol);
        ref_fill_random(dt, L, (size_t)((ml > 0 ? ml : 1) * kl), &rng);
        ref_fill_random(dt, R, (size_t)(kl * (nl > 0 ? nl : 1)), &rng);
        dm_hold(&C, 0);
        double one[2], al[2];
        scalar(dt, 1, 0, one);
        scalar(dt, 0.5, 1, al);
        variant("C");
        for (int r = 0; r < 2; r++) {
            if (ml > 0 && nl > 0) {
                ASSERT_OK(tess_hold(dt, L, ml, ml, kl, 0));
                ASSERT_OK(tess_hold(dt, R, kl, kl, nl, 0));
                /* C_loc += L R: all three held, so it returns at once */
                ASSERT_OK(tess_gemm(dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, ml, nl, kl,
                                    one, L, ml, R, kl, one, C.loc, C.d.lld));
                /* the mirror of this rank's part */
                char *W = ref_malloc((size_t)(ml * nl) * es);
                if (dt == TESS_D)
                    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)ml, (int)nl,
                                (int)kl, 1.0, (double *)L, (int)ml, (double *)R, (int)kl, 0.0,
                                (double *)W, (int)ml);
                else
                    cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)ml, (int)nl,
                                (int)kl, one, L, (int)ml, R, (int)kl, (double[2]){0, 0}, W,
                                (int)ml);
                for (int64_t j = 0; j < C.d.n; j++)
                    for (int64_t i = 0; i < C.d.m; i++) {
                        int pr, pc;
                        int64_t li = g2l(i, C.d.mb, P, C.d.rsrc, &pr),
                                lj = g2l(j, C.d.nb, Q, C.d.csrc, &pc);
                        if (pr != myrow || pc != mycol) continue;
                        double *g = (double *)(C.glob + (size_t)(i + j * C.d.m) * es);
                        const double *w = (const double *)(W + (size_t)(li + lj * ml) * es);
                        g[0] += w[0];
                        if (dt == TESS_Z) g[1] += w[1];
                    }
                free(W);
            }
            /* the mirrors of other ranks' parts differ now; only this rank's is compared */
            pgemm(TESS_NO_TRANS, TESS_NO_TRANS, 63, 55, 41, al, &A, 0, 0, &B, 0, 0, one, &C, 0, 0);
            if (ml > 0 && nl > 0) {
                ASSERT_OK(tess_release(L));
                ASSERT_OK(tess_release(R));
            }
        }
        ASSERT_OK(tess_wait());
        dm_check("after_async", &C, 1, TOL);
        dm_release(&C);
        free(L), free(R);
        dm_free(&A), dm_free(&B), dm_free(&C);
    }
    unsetenv("TESSERA_PGEMM_VARIANT");
}

TEST_MPI_MAIN_WITH(1, 8, setup, teardown)

#endif
