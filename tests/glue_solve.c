/* tests/glue_solve.c: a small ScaLAPACK program, linked against the ScaLAPACK library only
 * (no tessera): an LU solve (pdgetrf + pdgetrs) and a Cholesky solve (pdpotrf + pdpotrs) of
 * random systems on a P x Q grid of all the processes, each checked by its scaled residual
 *     ||B - A X||_inf / (||A||_inf ||X||_inf n eps)      (A X through pdgemv_, level 2)
 * against ScaLAPACK's tester threshold 16. tests/test_glue_solve.sh runs it as is and under
 * LD_PRELOAD=libtessera_scalapack.so (issue 7): both runs must pass, and the glue's exit
 * summary must show the pdgemm_ calls going to tessera.
 *
 * Usage: glue_solve [n [nb [nrhs [lu|chol|both [runs]]]]]   (default 190 8 3 both 1; runs:
 * each solve that many times on fresh matrices, the first one the warm-up). Prints one line
 * per solve on rank 0: "LU n=190 nb=8 grid 2x2: info 0 scaled residual 0.0123 PASSED
 * factor 0.01 s solve 0.002 s" (wall times of the ScaLAPACK calls, MPI_Wtime after a
 * barrier). Exit status 0 when every solve run passes. GLUE_SOLVE_NPROW=P: a P x (procs / P)
 * grid instead of the squarest.
 */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* BLACS (C), ScaLAPACK (Fortran: hidden CHARACTER lengths passed), PBLAS (C) */
void Cblacs_pinfo(int *, int *);
void Cblacs_get(int, int, int *);
void Cblacs_gridinit(int *, const char *, int, int);
void Cblacs_gridinfo(int, int *, int *, int *, int *);
void Cblacs_gridexit(int);
void Cblacs_exit(int);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);
void pdgetrf_(const int *m, const int *n, double *A, const int *ia, const int *ja, const int *desca,
              int *ipiv, int *info);
void pdgetrs_(const char *trans, const int *n, const int *nrhs, const double *A, const int *ia,
              const int *ja, const int *desca, const int *ipiv, double *B, const int *ib,
              const int *jb, const int *descb, int *info, size_t ltrans);
void pdpotrf_(const char *uplo, const int *n, double *A, const int *ia, const int *ja,
              const int *desca, int *info, size_t luplo);
void pdpotrs_(const char *uplo, const int *n, const int *nrhs, const double *A, const int *ia,
              const int *ja, const int *desca, double *B, const int *ib, const int *jb,
              const int *descb, int *info, size_t luplo);
double pdlange_(const char *norm, const int *m, const int *n, const double *A, const int *ia,
                const int *ja, const int *desca, double *work, size_t lnorm);
void pdgemv_(const char *trans, const int *m, const int *n, const double *alpha, const double *A,
             const int *ia, const int *ja, const int *desca, const double *x, const int *ix,
             const int *jx, const int *descx, const int *incx, const double *beta, double *y,
             const int *iy, const int *jy, const int *descy, const int *incy);

static int me, nprocs, ctxt, nprow, npcol, myrow, mycol;

/* the same pseudo-random value of (id, i, j) on every process, in [-1, 1) */
static double val(int id, int i, int j) {
    uint64_t h = 0x9E3779B97F4A7C15ull * (uint64_t)(id + 1);
    h ^= (uint64_t)i * 0xBF58476D1CE4E5B9ull;
    h ^= (uint64_t)j * 0x94D049BB133111EBull;
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return (double)(h >> 11) / (double)(1ull << 52) - 1.0;
}

/* global index of local index l (source process 0) */
static int l2g(int l, int nb, int p, int np) { return ((l / nb) * np + p) * nb + l % nb; }

struct dmat {
    int desc[9], lr, lc;
    double *a;
};

static void dmat_make(struct dmat *x, int m, int n, int nb) {
    static const int zero = 0;
    x->lr = numroc_(&m, &nb, &myrow, &zero, &nprow);
    x->lc = numroc_(&n, &nb, &mycol, &zero, &npcol);
    int lld = x->lr > 1 ? x->lr : 1, info;
    descinit_(x->desc, &m, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
    if (info) {
        fprintf(stderr, "descinit: info %d\n", info);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    x->a = calloc((size_t)lld * (size_t)(x->lc > 0 ? x->lc : 1), sizeof(double));
}

/* fill: kind 0 general (diagonal boosted a little), 1 symmetric positive definite, 2 B */
static void dmat_fill(struct dmat *x, int kind, int n) {
    int nb = x->desc[4], lld = x->desc[8];
    for (int lj = 0; lj < x->lc; lj++)
        for (int li = 0; li < x->lr; li++) {
            int i = l2g(li, nb, myrow, nprow), j = l2g(lj, x->desc[5], mycol, npcol);
            double v;
            if (kind == 0)
                v = val(1, i, j) + (i == j ? 2.0 : 0.0);
            else if (kind == 1)
                v = val(2, i, j) + val(2, j, i) + (i == j ? (double)n : 0.0);
            else
                v = val(3, i, j);
            x->a[li + (size_t)lj * lld] = v;
        }
}

static double norm_inf(const struct dmat *x) {
    static const int one = 1;
    size_t lw = (size_t)(x->lr + x->desc[4] + 16);
    double *work = calloc(lw, sizeof(double));
    double r = pdlange_("I", &x->desc[2], &x->desc[3], x->a, &one, &one, x->desc, work, 1);
    free(work);
    return r;
}

/* ||B - A X||_inf / (||A||_inf ||X||_inf n eps) */
static double residual(const struct dmat *A, const struct dmat *X, const struct dmat *B, int n,
                       int nrhs) {
    static const int one = 1;
    static const double mone = -1.0, pone = 1.0;
    struct dmat R;
    dmat_make(&R, n, nrhs, B->desc[4]);
    memcpy(R.a, B->a, sizeof(double) * (size_t)B->desc[8] * (size_t)(B->lc > 0 ? B->lc : 1));
    for (int j = 1; j <= nrhs; j++)
        pdgemv_("N", &n, &n, &mone, A->a, &one, &one, A->desc, X->a, &one, &j, X->desc, &one, &pone,
                R.a, &one, &j, R.desc, &one);
    double r = norm_inf(&R), a = norm_inf(A), x = norm_inf(X);
    free(R.a);
    return r / (a * x * (double)n * (DBL_EPSILON / 2));
}

static int report(const char *what, int n, int nb, int info, double res, double tf, double ts) {
    int ok = info == 0 && res < 16.0 && isfinite(res);
    if (me == 0)
        printf("%s n=%d nb=%d grid %dx%d: info %d scaled residual %.4g %s factor %.3f s "
               "solve %.3f s\n",
               what, n, nb, nprow, npcol, info, res, ok ? "PASSED" : "FAILED", tf, ts);
    fflush(stdout);
    return ok;
}

static double now(void) {
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime();
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 190, nb = argc > 2 ? atoi(argv[2]) : 8;
    int nrhs = argc > 3 ? atoi(argv[3]) : 3;
    const char *which = argc > 4 ? argv[4] : "both";
    int runs = argc > 5 ? atoi(argv[5]) : 1;
    int do_lu = strcmp(which, "chol") != 0, do_chol = strcmp(which, "lu") != 0;
    static const int one = 1;
    Cblacs_pinfo(&me, &nprocs);
    /* the squarest grid of all the processes, nprow <= npcol; GLUE_SOLVE_NPROW: that many
     * process rows (a divisor of the processes) */
    const char *rows = getenv("GLUE_SOLVE_NPROW");
    nprow = rows && atoi(rows) >= 1 && nprocs % atoi(rows) == 0 ? atoi(rows) : 0;
    for (nprow = nprow ? nprow : (int)sqrt((double)nprocs); nprocs % nprow; nprow--) {}
    npcol = nprocs / nprow;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "R", nprow, npcol);
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);

    struct dmat A, A0, B, X;
    int ok = 1, info;

    /* LU */
    dmat_make(&A, n, n, nb);
    dmat_make(&A0, n, n, nb);
    dmat_make(&B, n, nrhs, nb);
    dmat_make(&X, n, nrhs, nb);
    dmat_fill(&A, 0, n);
    dmat_fill(&A0, 0, n);
    dmat_fill(&B, 2, n);
    dmat_fill(&X, 2, n);
    int *ipiv = calloc((size_t)(A.lr + nb), sizeof(int));
    double t0, t1, t2;
    for (int r = 0; do_lu && r < runs; r++) {
        if (r) dmat_fill(&A, 0, n), dmat_fill(&X, 2, n);
        t0 = now();
        pdgetrf_(&n, &n, A.a, &one, &one, A.desc, ipiv, &info);
        t1 = now();
        if (!info)
            pdgetrs_("N", &n, &nrhs, A.a, &one, &one, A.desc, ipiv, X.a, &one, &one, X.desc, &info,
                     1);
        t2 = now();
        ok &= report("LU", n, nb, info, info ? INFINITY : residual(&A0, &X, &B, n, nrhs), t1 - t0,
                     t2 - t1);
    }

    /* Cholesky (lower) */
    for (int r = 0; do_chol && r < runs; r++) {
        dmat_fill(&A, 1, n);
        dmat_fill(&A0, 1, n);
        dmat_fill(&X, 2, n);
        t0 = now();
        pdpotrf_("L", &n, A.a, &one, &one, A.desc, &info, 1);
        t1 = now();
        if (!info)
            pdpotrs_("L", &n, &nrhs, A.a, &one, &one, A.desc, X.a, &one, &one, X.desc, &info, 1);
        t2 = now();
        ok &= report("CHOL", n, nb, info, info ? INFINITY : residual(&A0, &X, &B, n, nrhs), t1 - t0,
                     t2 - t1);
    }

    free(ipiv);
    free(A.a);
    free(A0.a);
    free(B.a);
    free(X.a);
    fflush(stdout);
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD); /* rank 0's verdict, everywhere */
    Cblacs_gridexit(ctxt);
    Cblacs_exit(0); /* finalizes MPI */
    return ok ? 0 : 1;
}
