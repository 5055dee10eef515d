/* src/tools/tessera_solve.c: tessera-solve, the distributed solver job (issue 25) under
 * mpirun: ScaLAPACK's LU (p?getrf_ then p?getrs_) and Cholesky (p?potrf_ "L" then p?potrs_)
 * of random systems on a P x Q BLACS grid of all the ranks, linked to the glue
 * (libtessera_scalapack) ahead of ScaLAPACK, so the factorizations run where the glue sends
 * them (docs/scalapack.md) and everything else on ScaLAPACK. Every run is verified by its
 * scaled residual ||B - A X||_inf / (||A||_inf ||X||_inf n eps) < 16 (ScaLAPACK's testers'
 * threshold; A X by p?gemv_, A regenerated, not kept); the rate is the factorization's
 * (2/3 n^3 or 1/3 n^3 flops, four times that complex) over the median of the timed runs
 * after one warm-up; then each rank's glue counters. s, d, c, z. Exit 0 when every run
 * passed, 1 when one failed, 2 on a usage error.
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
/* one precision's routines, element pointers untyped (the table below picks them); R:
 * p?lange_'s (real) result */
#define FACT(p, R)                                                                                 \
    void p##getrf_(const int *m, const int *n, void *A, const int *ia, const int *ja,              \
                   const int *desca, int *ipiv, int *info);                                        \
    void p##getrs_(const char *trans, const int *n, const int *nrhs, const void *A, const int *ia, \
                   const int *ja, const int *desca, const int *ipiv, void *B, const int *ib,       \
                   const int *jb, const int *descb, int *info, size_t ltrans);                     \
    void p##potrf_(const char *uplo, const int *n, void *A, const int *ia, const int *ja,          \
                   const int *desca, int *info, size_t luplo);                                     \
    void p##potrs_(const char *uplo, const int *n, const int *nrhs, const void *A, const int *ia,  \
                   const int *ja, const int *desca, void *B, const int *ib, const int *jb,         \
                   const int *descb, int *info, size_t luplo);                                     \
    R p##lange_(const char *norm, const int *m, const int *n, const void *A, const int *ia,        \
                const int *ja, const int *desca, void *work, size_t lnorm);                        \
    void p##gemv_(const char *trans, const int *m, const int *n, const void *alpha, const void *A, \
                  const int *ia, const int *ja, const int *desca, const void *x, const int *ix,    \
                  const int *jx, const int *descx, const int *incx, const void *beta, void *y,     \
                  const int *iy, const int *jy, const int *descy, const int *incy);                \
    static double p##lange_d(const char *norm, const int *m, const int *n, const void *A,          \
                             const int *desca, void *work) {                                       \
        static const int one = 1;                                                                  \
        return (double)p##lange_(norm, m, n, A, &one, &one, desca, work, 1);                       \
    }
FACT(ps, float)
FACT(pd, double)
FACT(pc, float)
FACT(pz, double)

/* A precision: its letter, element and real sizes, eps (half ULP), routines. */
struct prec {
    char p;
    size_t es, rs;
    bool cplx;
    double eps;
    void (*getrf)(const int *, const int *, void *, const int *, const int *, const int *, int *,
                  int *);
    void (*getrs)(const char *, const int *, const int *, const void *, const int *, const int *,
                  const int *, const int *, void *, const int *, const int *, const int *, int *,
                  size_t);
    void (*potrf)(const char *, const int *, void *, const int *, const int *, const int *, int *,
                  size_t);
    void (*potrs)(const char *, const int *, const int *, const void *, const int *, const int *,
                  const int *, void *, const int *, const int *, const int *, int *, size_t);
    double (*lange)(const char *, const int *, const int *, const void *, const int *, void *);
    void (*gemv)(const char *, const int *, const int *, const void *, const void *, const int *,
                 const int *, const int *, const void *, const int *, const int *, const int *,
                 const int *, const void *, void *, const int *, const int *, const int *,
                 const int *);
};

static const float FM1[2] = {-1, 0}, FP1[2] = {1, 0};
static const double DM1[2] = {-1, 0}, DP1[2] = {1, 0};

static const struct prec PRECS[] = {
#define PREC(c, p, R, cx)                                                                      \
    {                                                                                          \
        c, (cx ? 2 : 1) * sizeof(R), sizeof(R), cx,                                            \
            (sizeof(R) == 4 ? FLT_EPSILON : DBL_EPSILON) / 2, p##getrf_, p##getrs_, p##potrf_, \
            p##potrs_, p##lange_d, p##gemv_                                                    \
    }
    PREC('s', ps, float, false),
    PREC('d', pd, double, false),
    PREC('c', pc, float, true),
    PREC('z', pz, double, true),
#undef PREC
};

static const void *minus_one(const struct prec *P) { return P->rs == 4 ? (const void *)FM1 : DM1; }
static const void *plus_one(const struct prec *P) { return P->rs == 4 ? (const void *)FP1 : DP1; }

static int me, nprocs, ctxt, nprow, npcol, myrow, mycol;

/* ---- options ------------------------------------------------------------------------- */

struct opts {
    int n, nb, nrhs, nprow, runs, threads;
    const struct prec *P;
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
            "  -p s|d|c|z    precision (default d)\n"
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
                       .P = &PRECS[1],
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
            o->P = NULL;
            for (size_t k = 0; k < sizeof PRECS / sizeof *PRECS && !v[1]; k++)
                if (PRECS[k].p == v[0]) o->P = &PRECS[k];
            if (!o->P) return say("-p %s: s, d, c or z", v), 2;
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
    const struct prec *P;
    void *a;
};

static int dmat_make(struct dmat *x, int m, int n, int nb, const struct prec *P) {
    static const int zero = 0;
    x->P = P;
    x->lr = numroc_(&m, &nb, &myrow, &zero, &nprow);
    x->lc = numroc_(&n, &nb, &mycol, &zero, &npcol);
    int lld = x->lr > 1 ? x->lr : 1, info;
    descinit_(x->desc, &m, &n, &nb, &nb, &zero, &zero, &ctxt, &lld, &info);
    x->a = calloc((size_t)lld * (size_t)(x->lc > 0 ? x->lc : 1), P->es);
    return info == 0 && x->a != NULL;
}

/* the same pseudo-random value of (id, i, j) on every rank, in [-1, 1): splitmix64's
 * finaliser of the three (i, j < 2^28) */
static double val(int id, int64_t i, int64_t j) {
    uint64_t z = ((uint64_t)id << 56 | (uint64_t)i << 28 | (uint64_t)j) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull, z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (double)((z ^ (z >> 31)) >> 11) / (double)(1ull << 52) - 1.0;
}

/* global index of local index l (source process 0) */
static int64_t l2g(int64_t l, int nb, int p, int np) { return ((l / nb) * np + p) * nb + l % nb; }

/* kind 0: general, diagonal raised by 2; 1: symmetric (Hermitian), diagonal raised by n
 * (positive definite); 2: right-hand sides. Entry (i, j): v(i, j), real and imaginary
 * parts from ids 2 id and 2 id + 1; kind 1 v(i, j) + conj(v(j, i)). */
struct fill {
    struct dmat *x;
    int kind, n;
};

static void fill_col(void *ctx, int lj) {
    const struct fill *f = ctx;
    struct dmat *x = f->x;
    const struct prec *P = x->P;
    int nb = x->desc[4], id = 2 * (f->kind + 1);
    int64_t j = l2g(lj, x->desc[5], mycol, npcol);
    size_t col = (size_t)lj * (size_t)x->desc[8];
    for (int li = 0; li < x->lr; li++) {
        int64_t i = l2g(li, nb, myrow, nprow);
        double re = val(id, i, j), im = P->cplx ? val(id + 1, i, j) : 0;
        if (f->kind == 1) re += val(id, j, i), im -= P->cplx ? val(id + 1, j, i) : 0;
        if (i == j) re += f->kind == 0 ? 2.0 : f->kind == 1 ? (double)f->n : 0.0;
        size_t at = (col + (size_t)li) * (P->cplx ? 2 : 1);
        if (P->rs == sizeof(double)) {
            ((double *)x->a)[at] = re;
            if (P->cplx) ((double *)x->a)[at + 1] = im;
        } else {
            ((float *)x->a)[at] = (float)re;
            if (P->cplx) ((float *)x->a)[at + 1] = (float)im;
        }
    }
}

static void dmat_fill(struct dmat *x, int kind, int n, int threads) {
    struct fill f = {x, kind, n};
    tess__par_run(threads, x->lc, fill_col, &f);
}

static const int ONE = 1;

static double norm_inf(const struct dmat *x) {
    size_t lw = (size_t)(x->lr + x->desc[4] + 16);
    void *work = calloc(lw, x->P->rs);
    double r = x->P->lange("I", &x->desc[2], &x->desc[3], x->a, x->desc, work);
    free(work);
    return r;
}

/* R -= A X, column by column */
static void resid_update(const struct dmat *A, const struct dmat *X, struct dmat *R) {
    const struct prec *P = A->P;
    for (int j = 1; j <= X->desc[3]; j++)
        P->gemv("N", &A->desc[2], &A->desc[3], minus_one(P), A->a, &ONE, &ONE, A->desc, X->a, &ONE,
                &j, X->desc, &ONE, plus_one(P), R->a, &ONE, &j, R->desc, &ONE);
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
    const struct prec *P = A->P;
    char name[16];
    snprintf(name, sizeof name, "p%c%s", P->p, lu ? "getrf" : "potrf");
    const int kind = lu ? 0 : 1;
    const double n = o->n, flops = (P->cplx ? 4 : 1) * (lu ? 2.0 / 3.0 : 1.0 / 3.0) * n * n * n,
                 eps = P->eps;
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
            P->getrf(&A->desc[2], &A->desc[3], A->a, &ONE, &ONE, A->desc, ipiv, &info);
        else
            P->potrf("L", &A->desc[2], A->a, &ONE, &ONE, A->desc, &info, 1);
        double t1 = now();
        if (!info) {
            if (lu)
                P->getrs("N", &A->desc[2], &X->desc[3], A->a, &ONE, &ONE, A->desc, ipiv, X->a, &ONE,
                         &ONE, X->desc, &info, 1);
            else
                P->potrs("L", &A->desc[2], &X->desc[3], A->a, &ONE, &ONE, A->desc, X->a, &ONE, &ONE,
                         X->desc, &info, 1);
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

    struct dmat A = {0}, X = {0}, B = {0};
    int made = dmat_make(&A, o.n, o.n, o.nb, o.P) && dmat_make(&X, o.n, o.nrhs, o.nb, o.P) &&
               dmat_make(&B, o.n, o.nrhs, o.nb, o.P),
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
