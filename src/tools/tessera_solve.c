/* src/tools/tessera_solve.c: tessera-solve, the distributed solver job (issue 25) under
 * mpirun: ScaLAPACK's LU (p?getrf_ then p?getrs_) and Cholesky (p?potrf_ "L" then p?potrs_)
 * of random systems on a P x Q BLACS grid of all the ranks, linked to the glue
 * (libtessera_scalapack) ahead of ScaLAPACK, so the factorizations run where the glue sends
 * them (docs/scalapack.md) and everything else on ScaLAPACK. Every run is verified by its
 * scaled residual ||B - A X||_inf / (||A||_inf ||X||_inf n eps) < 16 (ScaLAPACK's testers'
 * threshold; A X by p?gemv_, A regenerated, not kept); the rate is the factorization's
 * (2/3 n^3 or 1/3 n^3 flops) over the median of the timed runs after one warm-up; then each
 * rank's glue counters. Real precisions. Exit 0 when every run passed, 1 when one failed, 2
 * on a usage error.
 */
#include <float.h>
#include <stdbool.h>
#include <math.h>
#include <stdarg.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "par.h"
#include "tessera_scalapack.h"

/* BLACS (C), ScaLAPACK and PBLAS (Fortran: hidden CHARACTER lengths passed) */
void Cblacs_pinfo(int *, int *);
void Cblacs_get(int, int, int *);
void Cblacs_gridinit(int *, const char *, int, int);
void Cblacs_gridinfo(int, int *, int *, int *, int *);
void Cblacs_gridexit(int);
void Cblacs_exit(int);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);
#define FACT(p, T)                                                                              \
    void p##getrf_(const int *m, const int *n, T *A, const int *ia, const int *ja,              \
                   const int *desca, int *ipiv, int *info);                                     \
    void p##getrs_(const char *trans, const int *n, const int *nrhs, const T *A, const int *ia, \
                   const int *ja, const int *desca, const int *ipiv, T *B, const int *ib,       \
                   const int *jb, const int *descb, int *info, size_t ltrans);                  \
    void p##potrf_(const char *uplo, const int *n, T *A, const int *ia, const int *ja,          \
                   const int *desca, int *info, size_t luplo);                                  \
    void p##potrs_(const char *uplo, const int *n, const int *nrhs, const T *A, const int *ia,  \
                   const int *ja, const int *desca, T *B, const int *ib, const int *jb,         \
                   const int *descb, int *info, size_t luplo);                                  \
    T p##lange_(const char *norm, const int *m, const int *n, const T *A, const int *ia,        \
                const int *ja, const int *desca, T *work, size_t lnorm);                        \
    void p##gemv_(const char *trans, const int *m, const int *n, const T *alpha, const T *A,    \
                  const int *ia, const int *ja, const int *desca, const T *x, const int *ix,    \
                  const int *jx, const int *descx, const int *incx, const T *beta, T *y,        \
                  const int *iy, const int *jy, const int *descy, const int *incy);
FACT(pd, double)
FACT(ps, float)

static int me, nprocs, ctxt, nprow, npcol, myrow, mycol;

/* ---- options ------------------------------------------------------------------------- */

struct opts {
    int n, nb, nrhs, nprow, runs, threads;
    char prec; /* 's' or 'd' */
    bool lu, chol;
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: mpirun -np P*Q tessera-solve [options]\n"
            "Distributed LU and Cholesky solves through ScaLAPACK's entry points, which the\n"
            "tessera glue (libtessera_scalapack, linked ahead of ScaLAPACK) runs on each rank's\n"
            "devices; every run verified by its scaled residual (< 16).\n"
            "  -n N          order of A (default 4096)\n"
            "  --nb NB       ScaLAPACK block size MB = NB (default 256)\n"
            "  --nrhs K      right-hand sides (default 1)\n"
            "  -P ROWS       process rows (a divisor of the ranks; default the squarest grid,\n"
            "                rows <= columns)\n"
            "  -p s|d        precision (default d)\n"
            "  -r RUNS       timed runs after one warm-up (default 3)\n"
            "  --routine getrf|potrf|both   (default both)\n"
            "  --threads T   threads generating the matrices on each rank (default 8)\n"
            "Lines: per run the factorization's and the solve's seconds, the rate, the residual;\n"
            "per routine the median rate; per rank the glue's counters (docs/jobs.md).\n");
}

/* A usage error, printed by rank 0 alone (every rank finds it). */
__attribute__((format(printf, 1, 2))) static void say(const char *fmt, ...) {
    if (me != 0) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tessera-solve: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

static int parse(int argc, char **argv, struct opts *o) {
    *o = (struct opts){.n = 4096,
                       .nb = 256,
                       .nrhs = 1,
                       .runs = 3,
                       .threads = 8,
                       .prec = 'd',
                       .lu = true,
                       .chol = true};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int *num = !strcmp(a, "-n")          ? &o->n
                   : !strcmp(a, "--nb")      ? &o->nb
                   : !strcmp(a, "--nrhs")    ? &o->nrhs
                   : !strcmp(a, "-P")        ? &o->nprow
                   : !strcmp(a, "-r")        ? &o->runs
                   : !strcmp(a, "--threads") ? &o->threads
                                             : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        if (num || !strcmp(a, "-p") || !strcmp(a, "--routine")) {
            if (!v) return say("%s needs a value", a), 2;
            i++;
        }
        if (num) {
            char *end;
            long x = strtol(v, &end, 10);
            if (*end || x < (num == &o->runs ? 0 : 1) || x > (1L << 30))
                return say("%s %s: not a valid count", a, v), 2;
            *num = (int)x;
        } else if (!strcmp(a, "-p")) {
            if ((v[0] != 's' && v[0] != 'd') || v[1]) return say("-p %s: s or d", v), 2;
            o->prec = v[0];
        } else if (!strcmp(a, "--routine")) {
            o->lu = !strcmp(v, "getrf") || !strcmp(v, "both");
            o->chol = !strcmp(v, "potrf") || !strcmp(v, "both");
            if (!o->lu && !o->chol) return say("--routine %s: getrf, potrf or both", v), 2;
        } else {
            return say("unknown option %s", a), 2;
        }
    }
    return 0;
}

/* ---- distributed matrices ------------------------------------------------------------ */

struct dmat {
    int desc[9], lr, lc;
    size_t es;
    void *a;
};

static int dmat_make(struct dmat *x, int m, int n, int nb, size_t es) {
    static const int zero = 0;
    x->es = es;
    x->lr = numroc_(&m, &nb, &myrow, &zero, &nprow);
    x->lc = numroc_(&n, &nb, &mycol, &zero, &npcol);
    int lld = x->lr > 1 ? x->lr : 1, info;
    descinit_(x->desc, &m, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
    x->a = calloc((size_t)lld * (size_t)(x->lc > 0 ? x->lc : 1), es);
    return info == 0 && x->a != NULL;
}

/* the same pseudo-random value of (id, i, j) on every rank, in [-1, 1) */
static double val(int id, int64_t i, int64_t j) {
    uint64_t h = 0x9E3779B97F4A7C15ull * (uint64_t)(id + 1);
    h ^= (uint64_t)i * 0xBF58476D1CE4E5B9ull;
    h ^= (uint64_t)j * 0x94D049BB133111EBull;
    h ^= h >> 31;
    h *= 0xD6E8FEB86659FD93ull;
    h ^= h >> 32;
    return (double)(h >> 11) / (double)(1ull << 52) - 1.0;
}

/* global index of local index l (source process 0) */
static int64_t l2g(int64_t l, int nb, int p, int np) { return ((l / nb) * np + p) * nb + l % nb; }

/* kind 0: general, diagonal raised by 2; 1: symmetric, diagonal raised by n (positive
 * definite); 2: right-hand sides */
struct fill {
    struct dmat *x;
    int kind, n;
};

static void fill_col(void *ctx, int lj) {
    const struct fill *f = ctx;
    struct dmat *x = f->x;
    int nb = x->desc[4];
    int64_t j = l2g(lj, x->desc[5], mycol, npcol);
    size_t col = (size_t)lj * (size_t)x->desc[8];
    for (int li = 0; li < x->lr; li++) {
        int64_t i = l2g(li, nb, myrow, nprow);
        double v = f->kind == 0   ? val(1, i, j) + (i == j ? 2.0 : 0.0)
                   : f->kind == 1 ? val(2, i, j) + val(2, j, i) + (i == j ? (double)f->n : 0.0)
                                  : val(3, i, j);
        if (x->es == sizeof(double))
            ((double *)x->a)[col + (size_t)li] = v;
        else
            ((float *)x->a)[col + (size_t)li] = (float)v;
    }
}

static void dmat_fill(struct dmat *x, int kind, int n, int threads) {
    struct fill f = {x, kind, n};
    tess__par_run(threads, x->lc, fill_col, &f);
}

/* ---- one precision's calls ----------------------------------------------------------- */

static const int ONE = 1;

static void getrf(const struct dmat *A, int *ipiv, int *info) {
    if (A->es == sizeof(double))
        pdgetrf_(&A->desc[2], &A->desc[3], A->a, &ONE, &ONE, A->desc, ipiv, info);
    else
        psgetrf_(&A->desc[2], &A->desc[3], A->a, &ONE, &ONE, A->desc, ipiv, info);
}

static void getrs(const struct dmat *A, const int *ipiv, struct dmat *X, int *info) {
    if (A->es == sizeof(double))
        pdgetrs_("N", &A->desc[2], &X->desc[3], A->a, &ONE, &ONE, A->desc, ipiv, X->a, &ONE, &ONE,
                 X->desc, info, 1);
    else
        psgetrs_("N", &A->desc[2], &X->desc[3], A->a, &ONE, &ONE, A->desc, ipiv, X->a, &ONE, &ONE,
                 X->desc, info, 1);
}

static void potrf(const struct dmat *A, int *info) {
    if (A->es == sizeof(double))
        pdpotrf_("L", &A->desc[2], A->a, &ONE, &ONE, A->desc, info, 1);
    else
        pspotrf_("L", &A->desc[2], A->a, &ONE, &ONE, A->desc, info, 1);
}

static void potrs(const struct dmat *A, struct dmat *X, int *info) {
    if (A->es == sizeof(double))
        pdpotrs_("L", &A->desc[2], &X->desc[3], A->a, &ONE, &ONE, A->desc, X->a, &ONE, &ONE,
                 X->desc, info, 1);
    else
        pspotrs_("L", &A->desc[2], &X->desc[3], A->a, &ONE, &ONE, A->desc, X->a, &ONE, &ONE,
                 X->desc, info, 1);
}

static double norm_inf(const struct dmat *x) {
    size_t lw = (size_t)(x->lr + x->desc[4] + 16);
    void *work = calloc(lw, x->es);
    double r = x->es == sizeof(double)
                   ? pdlange_("I", &x->desc[2], &x->desc[3], x->a, &ONE, &ONE, x->desc, work, 1)
                   : (double)pslange_("I", &x->desc[2], &x->desc[3], x->a, &ONE, &ONE, x->desc,
                                      work, 1);
    free(work);
    return r;
}

/* R -= A X, column by column */
static void resid_update(const struct dmat *A, const struct dmat *X, struct dmat *R) {
    const double md = -1.0, pd = 1.0;
    const float ms = -1.0f, ps = 1.0f;
    for (int j = 1; j <= X->desc[3]; j++) {
        if (A->es == sizeof(double))
            pdgemv_("N", &A->desc[2], &A->desc[3], &md, A->a, &ONE, &ONE, A->desc, X->a, &ONE, &j,
                    X->desc, &ONE, &pd, R->a, &ONE, &j, R->desc, &ONE);
        else
            psgemv_("N", &A->desc[2], &A->desc[3], &ms, A->a, &ONE, &ONE, A->desc, X->a, &ONE, &j,
                    X->desc, &ONE, &ps, R->a, &ONE, &j, R->desc, &ONE);
    }
}

/* ---- the runs ------------------------------------------------------------------------ */

static double now(void) {
    MPI_Barrier(MPI_COMM_WORLD);
    return MPI_Wtime();
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One routine's runs (the first the warm-up): factor, solve, regenerate A, residual.
 * Returns whether every run passed; prints on rank 0. */
static bool runs_of(const struct opts *o, bool lu, struct dmat *A, struct dmat *X, struct dmat *B) {
    const char *name = lu ? (o->prec == 'd' ? "pdgetrf" : "psgetrf")
                          : (o->prec == 'd' ? "pdpotrf" : "pspotrf");
    const int kind = lu ? 0 : 1;
    const double n = o->n, flops = lu ? 2.0 / 3.0 * n * n * n : n * n * n / 3.0,
                 eps = (o->prec == 'd' ? DBL_EPSILON : FLT_EPSILON) / 2;
    int *ipiv = calloc((size_t)(A->lr + o->nb), sizeof(int));
    double *tf = calloc((size_t)o->runs + 1, sizeof(double));
    int mine = ipiv && tf, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    bool ok = all != 0;
    for (int r = 0; ok && r <= o->runs; r++) {
        int info = 0;
        dmat_fill(A, kind, o->n, o->threads);
        dmat_fill(X, 2, o->n, o->threads);
        double t0 = now();
        if (lu)
            getrf(A, ipiv, &info);
        else
            potrf(A, &info);
        double t1 = now();
        if (!info) {
            if (lu)
                getrs(A, ipiv, X, &info);
            else
                potrs(A, X, &info);
        }
        double t2 = now(), res = INFINITY;
        if (!info) { /* B - A0 X, A0 regenerated */
            dmat_fill(A, kind, o->n, o->threads);
            dmat_fill(B, 2, o->n, o->threads);
            double a = norm_inf(A), x = norm_inf(X);
            resid_update(A, X, B);
            res = norm_inf(B) / (a * x * n * eps);
        }
        bool pass = info == 0 && isfinite(res) && res < 16.0;
        ok = ok && pass;
        tf[r] = t1 - t0;
        if (me == 0)
            printf("%s n=%d nb=%d nrhs=%d grid %dx%d %s: factor %.3f s %.4g TFLOP/s, solve %.3f "
                   "s, info %d, scaled residual %.3g %s\n",
                   name, o->n, o->nb, o->nrhs, nprow, npcol, r ? "run" : "warm-up", t1 - t0,
                   flops / (t1 - t0) * 1e-12, t2 - t1, info, res, pass ? "PASSED" : "FAILED");
        fflush(stdout);
    }
    if (ok && o->runs > 0 && me == 0) {
        qsort(tf + 1, (size_t)o->runs, sizeof *tf, cmp_double);
        double med = o->runs % 2 ? tf[1 + o->runs / 2]
                                 : (tf[o->runs / 2] + tf[o->runs / 2 + 1]) / 2;
        printf("%s n=%d nb=%d grid %dx%d: median of %d runs %.3f s, %.4g TFLOP/s, verified\n", name,
               o->n, o->nb, nprow, npcol, o->runs, med, flops / med * 1e-12);
    }
    free(ipiv), free(tf);
    return ok;
}

/* Each rank's glue counters of the factorizations and solves, on rank 0 in rank order. */
static void counters(void) {
    static const char *const what[4] = {"getrf", "getrs", "potrf", "potrs"};
    enum { W = 4, F = 5 };
    double mine[W * F] = {0};
    for (int w = 0; w < W; w++) {
        tess_scalapack_counters_t c;
        if (tess_scalapack_counters(what[w], &c)) continue;
        double *v = mine + w * F;
        v[0] = (double)c.tessera_calls, v[1] = (double)c.device_calls;
        v[2] = (double)c.reference_calls, v[3] = (double)c.fallbacks, v[4] = (double)c.arg_errors;
    }
    double *all = me == 0 ? calloc((size_t)nprocs * W * F, sizeof(double)) : NULL;
    MPI_Gather(mine, W * F, MPI_DOUBLE, all, W * F, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (me != 0) return;
    printf("glue counters (calls: tessera / of them with panels on the devices / reference / "
           "fallbacks / argument errors)\n");
    for (int r = 0; all && r < nprocs; r++) {
        printf("  rank %d:", r);
        for (int w = 0; w < W; w++) {
            const double *v = all + ((size_t)r * W + (size_t)w) * F;
            printf("  %s %.0f/%.0f/%.0f/%.0f/%.0f", what[w], v[0], v[1], v[2], v[3], v[4]);
        }
        printf("\n");
    }
    free(all);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    struct opts o;
    int pr = parse(argc, argv, &o);
    if (!pr && o.nprow && nprocs % o.nprow) {
        say("-P %d does not divide %d ranks", o.nprow, nprocs);
        pr = 2;
    }
    if (pr) {
        if (me == 0) usage(pr == 1 ? stdout : stderr);
        MPI_Finalize();
        return pr == 1 ? 0 : 2;
    }
    int pid;
    Cblacs_pinfo(&pid, &nprocs);
    for (nprow = o.nprow ? o.nprow : (int)sqrt((double)nprocs); nprocs % nprow; nprow--) {}
    npcol = nprocs / nprow;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "R", nprow, npcol);
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);

    size_t es = o.prec == 'd' ? sizeof(double) : sizeof(float);
    struct dmat A = {0}, X = {0}, B = {0};
    int made = dmat_make(&A, o.n, o.n, o.nb, es) && dmat_make(&X, o.n, o.nrhs, o.nb, es) &&
               dmat_make(&B, o.n, o.nrhs, o.nb, es),
        all = 0;
    MPI_Allreduce(&made, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    bool ok = all != 0;
    if (!ok) say("out of host memory for n = %d", o.n);
    if (ok && o.lu) ok = runs_of(&o, true, &A, &X, &B);
    if (ok && o.chol) ok = runs_of(&o, false, &A, &X, &B);
    counters();
    free(A.a), free(X.a), free(B.a);
    int v = ok;
    MPI_Bcast(&v, 1, MPI_INT, 0, MPI_COMM_WORLD); /* rank 0's verdict (it saw every residual) */
    Cblacs_gridexit(ctxt);
    Cblacs_exit(1);
    MPI_Finalize();
    return v ? 0 : 1;
}
