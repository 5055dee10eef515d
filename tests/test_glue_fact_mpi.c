/* tests/test_glue_fact_mpi.c: the ScaLAPACK glue's solvers p?potrf_, p?potrs_, p?posv_,
 * p?getrf_, p?getrs_, p?gesv_ (libtessera_scalapack.so, scalapack_glue/solve.c) against the
 * reference ScaLAPACK routines underneath, under mpirun (1 rank: the 1 x 1 grid, where aligned
 * calls run on tessera's node runtime; 2 and 4 ranks: the 2 x 1, 1 x 2 and 2 x 2 grids, where
 * p?potrf_ runs on the glue's distributed Cholesky and every other call goes to the
 * reference). The program links the glue before Debian's ScaLAPACK, so
 * pdpotrf_ & co. are the glue's; the reference routines come from the ScaLAPACK library
 * itself (dlopen of the library defining Cblacs_gridinfo, then dlsym). Every case runs the
 * glue on one copy of the local arrays and the reference on another: INFO equal, IPIV byte for
 * byte, factors and solutions within c n eps of the reference's (max-norm relative) and of the
 * inputs (independent residuals ||A - LL^H||, ||PA - LU||, ||op(A) X - B|| computed here),
 * everything the routine may not write byte for byte unchanged (outside sub(A) and sub(B),
 * LLD gaps, a guard, the triangle potrf/posv leave, filled with NaN, A of the solves); bad
 * arguments reported as the reference reports them (the program's own pxerbla_, recording)
 * with nothing written, also where one process alone finds it (no process may go on to the
 * distributed path alone); the counters of the routine called (tessera for every aligned
 * good call with work on 1 x 1 and for p?potrf_ L on any grid, the reference otherwise:
 * other routines on bigger grids, bad arguments, nothing to do). Every precision, UPLO L/U, TRANS N/T/C, NRHS 1 and 3, offsets inside a bigger
 * matrix, tall and wide LU, a matrix not positive definite, a singular one. TEST_GLUE_SEED
 * changes the matrices and the source processes, TEST_GLUE_SHOW=1 prints each case on rank 0;
 * TEST_GLUE_DEVPANELS=1 (with TESSERA_PGEMM_NCCL=2) asserts that p?potrf_ on a grid of
 * several processes, and p?getrf_ on any grid of several (P > 1: through one process
 * row), kept its panels on the
 * devices where sub(A) starts a block (and p?getrf_ reached tessera there).
 * A failed assertion on any rank aborts the whole job (MPI_Abort).
 */
#include <complex.h>
#include <unistd.h>

#include "glue_test.h"

/* ---- the routines (ScaLAPACK's Fortran interfaces; no hidden CHARACTER lengths passed) -- */
typedef void potrf_t(const char *, const int *, void *, const int *, const int *, const int *,
                     int *);
typedef void posx_t(const char *, const int *, const int *, void *, const int *, const int *,
                    const int *, void *, const int *, const int *, const int *, int *);
typedef void getrf_t(const int *, const int *, void *, const int *, const int *, const int *, int *,
                     int *);
typedef void getrs_t(const char *, const int *, const int *, void *, const int *, const int *,
                     const int *, int *, void *, const int *, const int *, const int *, int *);
typedef void gesv_t(const int *, const int *, void *, const int *, const int *, const int *, int *,
                    void *, const int *, const int *, const int *, int *);

enum { R_POTRF, R_POTRS, R_POSV, R_GETRF, R_GETRS, R_GESV, NR };
static const char *const rname[NR] = {"potrf", "potrs", "posv", "getrf", "getrs", "gesv"};
static void *glue_fn[NR][4], *ref_fn[NR][4];

/* ---- the program's PXERBLA: ScaLAPACK reports bad arguments here; record, do not print ---- */
static struct xrec {
    int calls, info, ctxt;
    char rout[16];
} xr;
EXPORTED void pxerbla_(const int *ictxt, const char *srname, const int *info, size_t len) {
    xr.calls++;
    xr.info = *info;
    xr.ctxt = *ictxt;
    size_t n = len < sizeof xr.rout - 1 ? len : sizeof xr.rout - 1;
    while (n > 0 && srname[n - 1] == ' ') n--;
    memcpy(xr.rout, srname, n);
    xr.rout[n] = '\0';
}

/* ---- one case --------------------------------------------------------------------------- */
enum { NB = 8 }; /* MB_A = NB_A = MB_B */
/* the matrix: general, singular, HPD, not PD; singular with no rows below sub(A) (M_A = IA -
 * 1 + M: p?getrf_'s quick return when that is 1) */
enum { MK_GEN, MK_SING, MK_HPD, MK_NPD, MK_SING_TIGHT };
enum { BAD_NONE, BAD_ARG, BAD_N, BAD_NRHS, BAD_OPT, BAD_LLDA, BAD_LLDA1, BAD_LLDB, BAD_DTYPE };
enum { TO_TESSERA, TO_REFERENCE, TO_EITHER };

struct spec {
    const char *what;
    int r;
    char opt; /* UPLO or TRANS */
    int m, n, nrhs;
    int ia, ja, ib, jb;
    int mbb, nbb;    /* B's blocks (0: NB) */
    int mk, special; /* the zero column (MK_SING), the negative diagonal entry (MK_NPD) */
    int bad;         /* BAD_ARG: the arguments as given are bad (an offset); else a mutation */
};

struct grid {
    int ctxt, P, Q, myrow, mycol;
    MPI_Comm comm;
};

struct args {
    char opt[2];
    int m, n, nrhs, ia, ja, ib, jb;
};

static int cplx(int dt) { return dt >= 2; }
static int single(int dt) { return dt == 0 || dt == 2; }
static double eps_of(int dt) { return single(dt) ? FLT_EPSILON : DBL_EPSILON; }

/* The value as stored in precision dt. */
static double complex rounded(int dt, double re, double im) {
    if (!cplx(dt)) im = 0;
    if (single(dt)) re = (float)re, im = (float)im;
    return re + im * I;
}

/* Element (i, j) of sub(A) (0-based) of case s in precision dt, before any call. The
 * Hermitian ones: random entries, n added to the diagonal (real); not positive definite:
 * -1 at diagonal entry special, so INFO = special + 1. */
static int id_base; /* TEST_GLUE_SEED: other matrices */
static double complex a_val(const struct spec *s, int dt, int i, int j) {
    int id = id_base + 11 + s->r;
    if (s->mk == MK_HPD || s->mk == MK_NPD) {
        if (i == j)
            return s->mk == MK_NPD && i == s->special ? -1.0
                                                      : rounded(dt, val(id, i, i, 0) + s->n, 0);
        if (i < j) return conj(a_val(s, dt, j, i));
        return rounded(dt, val(id, i, j, 0), val(id, i, j, 1));
    }
    if ((s->mk == MK_SING || s->mk == MK_SING_TIGHT) && j == s->special) return 0;
    return rounded(dt, val(id, i, j, 0), val(id, i, j, 1));
}
static double complex b_val(const struct spec *s, int dt, int i, int j) {
    int id = id_base + 31 + s->r;
    return rounded(dt, val(id, i, j, 0), val(id, i, j, 1));
}

static void put(int dt, unsigned char *p, double complex v) {
    double re = creal(v), im = cimag(v);
    switch (dt) {
    case 0: {
        float f = (float)re;
        memcpy(p, &f, 4);
        break;
    }
    case 1: memcpy(p, &re, 8); break;
    case 2: {
        float f[2] = {(float)re, (float)im};
        memcpy(p, f, 8);
        break;
    }
    default: {
        double d[2] = {re, im};
        memcpy(p, d, 16);
    }
    }
}
static double complex get(int dt, const unsigned char *p) {
    return part_of(dt, p, 0) + (cplx(dt) ? part_of(dt, p, 1) : 0) * I;
}

/* A 9-entry M x N matrix of the grid, blocks mb x nb from (rsrc, csrc), LLD two above the
 * local rows; every byte of the local array (guard included) a rank-specific pattern. */
static void fmat_make(struct mat *x, int dt, const struct grid *g, int M, int N, int mb, int nb,
                      int rsrc, int csrc) {
    memset(x, 0, sizeof *x);
    x->rows = (struct dim){M, mb, mb, rsrc, g->P};
    x->cols = (struct dim){N, nb, nb, csrc, g->Q};
    x->lr = count_on(&x->rows, g->myrow);
    x->lc = count_on(&x->cols, g->mycol);
    x->lld = (x->lr > 1 ? x->lr : 1) + 2;
    int d[9] = {1, g->ctxt, M, N, mb, nb, rsrc, csrc, x->lld};
    memcpy(x->desc, d, sizeof d);
    x->dlen = 9;
    x->bytes = (size_t)x->lld * (size_t)(x->lc > 0 ? x->lc : 1) * esize[dt] + GUARD;
    x->buf = malloc(x->bytes);
    ASSERT(x->buf);
    for (size_t b = 0; b < x->bytes; b++)
        x->buf[b] = (unsigned char)(0x5A ^ (b * 13) ^ (unsigned)wrank);
}

/* Which elements (i, j) of sub(A) the routine may write: the UPLO triangle (potrf, posv), all
 * of it (getrf, gesv), none (the solves). */
static int writable(const struct spec *s, int i, int j) {
    switch (s->r) {
    case R_POTRF:
    case R_POSV: return s->opt == 'L' ? i >= j : i <= j;
    case R_GETRF:
    case R_GESV: return 1;
    default: return 0;
    }
}
static int hermitian(const struct spec *s) { return s->mk == MK_HPD || s->mk == MK_NPD; }

/* sub(A) of the case: the values, NaN in the triangle potrf/posv/potrs may not read */
static void fill_a(const struct spec *s, int dt, struct mat *A, int m, int n, int ia, int ja,
                   const struct grid *g) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            unsigned char *p = mat_at(A, A->buf, dt, ia - 1 + i, ja - 1 + j, g->myrow, g->mycol);
            if (!p) continue;
            int unread = hermitian(s) && (s->opt == 'L' ? i < j : i > j);
            put(dt, p, unread ? NAN + NAN * I : a_val(s, dt, i, j));
        }
}
static void fill_b(const struct spec *s, int dt, struct mat *B, int n, int nrhs, int ib, int jb,
                   const struct grid *g) {
    for (int j = 0; j < nrhs; j++)
        for (int i = 0; i < n; i++) {
            unsigned char *p = mat_at(B, B->buf, dt, ib - 1 + i, jb - 1 + j, g->myrow, g->mycol);
            if (p) put(dt, p, b_val(s, dt, i, j));
        }
}

/* sub(X) (rows x cols from (i0, j0), 1-based) of local array buf, on every process of the grid */
static double complex *gather(const struct mat *x, const unsigned char *buf, int dt, int i0, int j0,
                              int rows, int cols, const struct grid *g) {
    size_t len = (size_t)(rows > 0 ? rows : 1) * (size_t)(cols > 0 ? cols : 1);
    double complex *out = calloc(len, sizeof *out);
    ASSERT(out);
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++) {
            const unsigned char *p = mat_at(x, (unsigned char *)buf, dt, i0 - 1 + i, j0 - 1 + j,
                                            g->myrow, g->mycol);
            if (p) out[i + (size_t)j * rows] = get(dt, p);
        }
    MPI_Allreduce(MPI_IN_PLACE, out, (int)(2 * len), MPI_DOUBLE, MPI_SUM, g->comm);
    return out;
}

/* IPIV(IA .. IA+k-1) as global rows, from process column 0 (every process column holds it) */
static int *gather_ipiv(const struct mat *A, const int *ipiv, int ia, int k, const struct grid *g) {
    int *out = calloc((size_t)(k > 0 ? k : 1), sizeof *out);
    ASSERT(out);
    for (int i = 0; i < k; i++)
        if (g->mycol == 0 && owner(&A->rows, ia - 1 + i) == g->myrow)
            out[i] = ipiv[local_of(&A->rows, ia - 1 + i)];
    MPI_Allreduce(MPI_IN_PLACE, out, k > 0 ? k : 1, MPI_INT, MPI_SUM, g->comm);
    return out;
}

/* ---- the calls ---------------------------------------------------------------------------- */
static void call(void *const fn[NR][4], int r, int dt, const struct args *a, void *A, const int *da,
                 int *ipiv, void *B, const int *db, int *info) {
    void *f = fn[r][dt];
    switch (r) {
    case R_POTRF: ((potrf_t *)f)(a->opt, &a->n, A, &a->ia, &a->ja, da, info); break;
    case R_POTRS:
    case R_POSV:
        ((posx_t *)f)(a->opt, &a->n, &a->nrhs, A, &a->ia, &a->ja, da, B, &a->ib, &a->jb, db, info);
        break;
    case R_GETRF: ((getrf_t *)f)(&a->m, &a->n, A, &a->ia, &a->ja, da, ipiv, info); break;
    case R_GETRS:
        ((getrs_t *)f)(a->opt, &a->n, &a->nrhs, A, &a->ia, &a->ja, da, ipiv, B, &a->ib, &a->jb, db,
                       info);
        break;
    default:
        ((gesv_t *)f)(&a->n, &a->nrhs, A, &a->ia, &a->ja, da, ipiv, B, &a->ib, &a->jb, db, info);
    }
}

static void counters_of(int r, int dt, tess_scalapack_counters_t *c) {
    char name[16];
    snprintf(name, sizeof name, "p%c%s", "sdcz"[dt], rname[r]);
    ASSERT_OK(tess_scalapack_counters(name, c));
}

/* The worst of each measure over a test, as a fraction of its bound (rank 0 prints them). */
static double worst_cmp, worst_res;
static int ncalls;

/* max |x - y| / (max |y| + tiny) over the elements where sel says so, on every process */
struct diff {
    double num, den;
    int nonfinite;
};
static void diff_add(struct diff *d, double complex x, double complex y) {
    if (!isfinite(creal(x)) || !isfinite(cimag(x))) d->nonfinite++;
    double e = cabs(x - y), m = cabs(y);
    if (e > d->num) d->num = e;
    if (m > d->den) d->den = m;
}
static double diff_ratio(struct diff *d, const struct grid *g) {
    double v[2] = {d->num, d->den};
    int nf = d->nonfinite;
    MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE, MPI_MAX, g->comm);
    MPI_Allreduce(MPI_IN_PLACE, &nf, 1, MPI_INT, MPI_SUM, g->comm);
    d->nonfinite = nf;
    return v[0] / (v[1] + 1e-300);
}

/* Bounds, as multiples of n eps: factors and solutions against the reference's (tessera
 * blocks differently: rounding differs, and grows with the conditioning, which is small
 * for these matrices), residuals against the inputs. */
enum { C_CMP = 100, C_RES = 30 };

static void check_cmp(const char *what, const char *part, double ratio, int nonfinite, int n,
                      int dt) {
    double tol = C_CMP * (n > 1 ? n : 1) * eps_of(dt);
    ASSERT_MSG(nonfinite == 0, "%s: %s: %d elements not finite", what, part, nonfinite);
    ASSERT_MSG(ratio <= tol, "%s: %s: glue vs reference max|x - y| / max|y| = %.3g > %.3g", what,
               part, ratio, tol);
    if (ratio / tol > worst_cmp) worst_cmp = ratio / tol;
}
static void check_res(const char *what, const char *part, double ratio) {
    double tol = C_RES;
    ASSERT_MSG(isfinite(ratio) && ratio <= tol, "%s: %s: residual %.3g n eps > %g n eps", what,
               part, ratio, tol);
    if (ratio / tol > worst_res) worst_res = ratio / tol;
}

static double cmax(const double complex *x, size_t len) {
    double m = 0;
    for (size_t i = 0; i < len; i++)
        if (cabs(x[i]) > m) m = cabs(x[i]);
    return m;
}

/* ||A - L L^H|| (L) or ||A - U^H U|| (U) / (||A|| n eps), max norms, from the gathered factor */
static double potrf_residual(const struct spec *s, int dt, const double complex *F, int n) {
    double num = 0, amax = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            double complex sum = 0;
            for (int k = 0; k <= (i < j ? i : j); k++)
                sum += s->opt == 'L' ? F[i + (size_t)k * n] * conj(F[j + (size_t)k * n])
                                     : conj(F[k + (size_t)i * n]) * F[k + (size_t)j * n];
            double complex a = a_val(s, dt, i, j);
            if (cabs(a - sum) > num) num = cabs(a - sum);
            if (cabs(a) > amax) amax = cabs(a);
        }
    return num / (amax * n * eps_of(dt));
}

/* ||P A - L U|| / (||A|| max(m, n) eps), pivots piv (global rows) applied in order */
static double getrf_residual(const struct spec *s, int dt, const double complex *F, const int *piv,
                             int m, int n, int ia) {
    int k = m < n ? m : n;
    double complex *PA = malloc(sizeof *PA * (size_t)m * (size_t)n);
    ASSERT(PA);
    double amax = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            PA[i + (size_t)j * m] = a_val(s, dt, i, j);
            if (cabs(PA[i + (size_t)j * m]) > amax) amax = cabs(PA[i + (size_t)j * m]);
        }
    for (int i = 0; i < k; i++) {
        int p = piv[i] - ia; /* 0-based row of sub(A) */
        ASSERT_MSG(p >= i && p < m, "%s: IPIV(%d) = %d: not a row of sub(A) at or below %d",
                   s->what, ia + i, piv[i], ia + i);
        for (int j = 0; j < n; j++) {
            double complex t = PA[i + (size_t)j * m];
            PA[i + (size_t)j * m] = PA[p + (size_t)j * m];
            PA[p + (size_t)j * m] = t;
        }
    }
    double num = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double complex sum = 0;
            for (int q = 0; q < k && q <= i && q <= j; q++)
                sum += (q == i ? 1.0 : F[i + (size_t)q * m]) * F[q + (size_t)j * m];
            if (cabs(PA[i + (size_t)j * m] - sum) > num) num = cabs(PA[i + (size_t)j * m] - sum);
        }
    free(PA);
    return num / (amax * (m > n ? m : n) * eps_of(dt));
}

/* ||op(A) X - B|| / (||A|| ||X|| n eps) with the original A and B */
static double solve_residual(const struct spec *s, int dt, const double complex *X, int n, int nrhs,
                             char trans) {
    double num = 0, amax = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++)
            if (cabs(a_val(s, dt, i, j)) > amax) amax = cabs(a_val(s, dt, i, j));
    for (int c = 0; c < nrhs; c++)
        for (int i = 0; i < n; i++) {
            double complex sum = 0;
            for (int k = 0; k < n; k++) {
                double complex a = trans == 'N' ? a_val(s, dt, i, k) : a_val(s, dt, k, i);
                if (trans == 'C') a = conj(a);
                sum += a * X[k + (size_t)c * n];
            }
            double e = cabs(sum - b_val(s, dt, i, c));
            if (e > num) num = e;
        }
    return num / (amax * cmax(X, (size_t)n * (size_t)nrhs) * n * eps_of(dt) + 1e-300);
}

/* Every byte of x's local array outside the elements sub(X) (rows x cols from (i0, j0))
 * where keep(i, j) is false equals the input's; keep NULL: all of sub(X) may change. */
static void check_untouched(const char *what, const char *name, const struct mat *x, int dt,
                            const unsigned char *out, const unsigned char *in, int i0, int j0,
                            int rows, int cols, const struct spec *s,
                            int (*keep)(const struct spec *, int, int), const struct grid *g) {
    unsigned char *mask = calloc(x->bytes, 1);
    ASSERT(mask);
    size_t es = esize[dt];
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++) {
            if (keep && !keep(s, i, j)) continue;
            unsigned char *p = mat_at(x, (unsigned char *)out, dt, i0 - 1 + i, j0 - 1 + j, g->myrow,
                                      g->mycol);
            if (p) memset(mask + (p - out), 1, es);
        }
    for (size_t b = 0; b < x->bytes; b++)
        if (!mask[b] && out[b] != in[b])
            TEST_FAIL_("%s: byte %zu of the local %s (element %zu%s) changed", what, b, name,
                       b / es,
                       b >= x->bytes - GUARD ? ", guard" : ", outside what the routine may write");
    free(mask);
}

static int show(void) { return wrank == 0 && getenv("TEST_GLUE_SHOW"); }

/* One case in precision dt on grid g: the glue and the reference on copies of the same
 * local arrays, everything compared; the counters of the routine around the glue's call. */
static void run_case(const struct spec *s, int dt, const struct grid *g, int ncase) {
    const int r = s->r, P = g->P, Q = g->Q;
    const char *label = s->what;
    char what[160];
    snprintf(what, sizeof what, "p%c%s_ %s (%dx%d grid)", "sdcz"[dt], rname[r], label, P, Q);
    const int solve = r != R_POTRF && r != R_GETRF;
    const int m = r == R_GETRF ? s->m : s->n, n = s->n, nrhs = solve ? s->nrhs : 0;
    /* A and B: a few rows and columns around the submatrices; on bigger grids random source
     * processes (B's process row A's: ScaLAPACK wants the rows of both together) */
    rng_state = 0x5EED1ull + (uint64_t)ncase * 7919 + seed() * 0x9E3779B97F4A7C15ull;
    int rsrc = rint_(0, g->P - 1), csrc = rint_(0, g->Q - 1), csrc_b = rint_(0, g->Q - 1);
    int ia = s->ia, ja = s->ja, ib = s->ib, jb = s->jb;
    struct mat A, B;
    int MA = ia - 1 + (m > 0 ? m : 0) + (s->mk == MK_SING_TIGHT ? 0 : 5),
        NA = ja - 1 + (n > 0 ? n : 0) + 3;
    fmat_make(&A, dt, g, MA, NA, NB, NB, rsrc, csrc);
    fill_a(s, dt, &A, m, n, ia, ja, g);
    memset(&B, 0, sizeof B);
    if (solve) {
        int MB_ = ib - 1 + (n > 0 ? n : 0) + 3, NB_ = jb - 1 + (nrhs > 0 ? nrhs : 0) + 2;
        fmat_make(&B, dt, g, MB_, NB_, s->mbb ? s->mbb : NB, s->nbb ? s->nbb : NB, rsrc, csrc_b);
        fill_b(s, dt, &B, n, nrhs, ib, jb, g);
    }
    size_t nip = (size_t)A.lr + NB;
    int *ipiv = malloc(sizeof *ipiv * nip);
    ASSERT(ipiv);
    for (size_t i = 0; i < nip; i++) ipiv[i] = -1000 - (int)i - 100 * wrank;
    struct args a = {{s->opt, 0}, m, n, nrhs, ia, ja, ib, jb};

    /* the solves take the reference's factorization of their matrix */
    if (r == R_POTRS || r == R_GETRS) {
        int info = -99;
        struct args f = a;
        f.m = n;
        call(ref_fn, r == R_POTRS ? R_POTRF : R_GETRF, dt, &f, A.buf, A.desc, ipiv, NULL, NULL,
             &info);
        ASSERT_MSG(info == 0, "%s: the reference's factorization: info %d", what, info);
    }
    /* the bad arguments */
    int da[9], db[9];
    memcpy(da, A.desc, sizeof da);
    memcpy(db, B.desc, sizeof db);
    switch (s->bad) {
    case BAD_N:
        if (r == R_GETRF)
            a.m = -1;
        else
            a.n = -1;
        break;
    case BAD_NRHS: a.nrhs = -1; break;
    case BAD_OPT: a.opt[0] = 'X'; break;
    case BAD_LLDA: da[8] = A.lr - 1; break; /* every process holds >= 2 rows of A */
    case BAD_LLDA1:                         /* the last process of the grid only */
        if (g->myrow == P - 1 && g->mycol == Q - 1) da[8] = A.lr - 1;
        break;
    case BAD_LLDB: db[8] = B.lr - 1; break;
    case BAD_DTYPE: da[0] = 2; break;
    }

    /* the glue and the reference on copies of the same input */
    unsigned char *A0 = malloc(A.bytes), *Ar = malloc(A.bytes);
    unsigned char *B0 = solve ? malloc(B.bytes) : NULL, *Br = solve ? malloc(B.bytes) : NULL;
    int *ip0 = malloc(sizeof *ip0 * nip), *ipr = malloc(sizeof *ipr * nip);
    ASSERT(A0 && Ar && ip0 && ipr && (!solve || (B0 && Br)));
    memcpy(A0, A.buf, A.bytes);
    memcpy(Ar, A.buf, A.bytes);
    if (solve) memcpy(B0, B.buf, B.bytes), memcpy(Br, B.buf, B.bytes);
    memcpy(ip0, ipiv, sizeof *ip0 * nip);
    memcpy(ipr, ipiv, sizeof *ipr * nip);

    tess_scalapack_counters_t before, after;
    counters_of(r, dt, &before);
    int info_g = -99, info_r = -99;
    memset(&xr, 0, sizeof xr);
    rec_reset();
    alarm(60); /* a process left waiting for the others ends the test */
    call(glue_fn, r, dt, &a, A.buf, da, ipiv, solve ? B.buf : NULL, db, &info_g);
    alarm(0);
    struct xrec xg = xr;
    counters_of(r, dt, &after);
    /* no PBLAS routine inside found a bad argument (ScaLAPACK checks its own first) */
    ASSERT_MSG(rec.aborts == 0 && !rec.warn[0], "%s: the glue's call: PB_Cabort in %s: %d%s%s",
               what, rec.rout, rec.info, rec.warn[0] ? ", PB_Cwarn " : "", rec.warn);
    memset(&xr, 0, sizeof xr);
    call(ref_fn, r, dt, &a, Ar, da, ipr, Br, db, &info_r);
    ASSERT_MSG(rec.aborts == 0 && !rec.warn[0], "%s: the reference: PB_Cabort in %s: %d%s%s", what,
               rec.rout, rec.info, rec.warn[0] ? ", PB_Cwarn " : "", rec.warn);
    ncalls++;

    /* INFO and the PXERBLA report */
    ASSERT_MSG(info_g == info_r, "%s: INFO %d, the reference's %d", what, info_g, info_r);
    ASSERT_MSG(xg.calls == xr.calls && xg.info == xr.info && xg.ctxt == xr.ctxt &&
                   !strcmp(xg.rout, xr.rout),
               "%s: glue reported %d x (%s, %d, ctxt %d), the reference %d x (%s, %d, ctxt %d)",
               what, xg.calls, xg.rout, xg.info, xg.ctxt, xr.calls, xr.rout, xr.info, xr.ctxt);
    if (s->bad) {
        ASSERT_MSG(info_r < 0 && xr.calls == 1, "%s: the reference took it (info %d)", what,
                   info_r);
        char want[16];
        snprintf(want, sizeof want, "P%c%s", "SDCZ"[dt], rname[r]);
        for (char *p = want; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        ASSERT_MSG(!strcmp(xr.rout, want) && xr.info == -info_r,
                   "%s: reported %s %d, expected %s %d", what, xr.rout, xr.info, want, -info_r);
    } else {
        ASSERT_MSG(info_r >= 0 && xr.calls == 0, "%s: the reference refused it (info %d)", what,
                   info_r);
    }
    if (show())
        fprintf(stderr, "    %-52s info %5d  tessera %+d reference %+d\n", what, info_r,
                (int)(after.tessera_calls - before.tessera_calls),
                (int)(after.reference_calls - before.reference_calls));

    /* nothing written where nothing may be: on a bad argument nothing at all (the
     * reference writes nothing either) */
    if (info_r < 0) {
        ASSERT_MSG(!memcmp(Ar, A0, A.bytes), "%s: the reference wrote into A", what);
        ASSERT_MSG(!memcmp(A.buf, A0, A.bytes), "%s: the glue wrote into A", what);
        ASSERT_MSG(!memcmp(ipiv, ip0, sizeof *ip0 * nip), "%s: the glue wrote into IPIV", what);
        ASSERT_MSG(!solve || !memcmp(Br, B0, B.bytes), "%s: the reference wrote into B", what);
        ASSERT_MSG(!solve || !memcmp(B.buf, B0, B.bytes), "%s: the glue wrote into B", what);
    } else {
        int (*keep)(const struct spec *, int, int) = writable;
        check_untouched(what, "A", &A, dt, A.buf, A0, ia, ja, m, n, s, keep, g);
        check_untouched(what, "A (reference)", &A, dt, Ar, A0, ia, ja, m, n, s, keep, g);
        /* IPIV: the reference's, byte for byte (the whole local array: on grids of several
         * processes the reference's p?getrs_ leaves its own marks there too) */
        ASSERT_MSG(!memcmp(ipiv, ipr, sizeof *ipr * nip), "%s: IPIV differs from the reference's",
                   what);
        if (solve) {
            const int b_written = info_r == 0 && n > 0;
            check_untouched(what, "B", &B, dt, B.buf, B0, ib, jb, b_written ? n : 0, nrhs, s, NULL,
                            g);
            check_untouched(what, "B (reference)", &B, dt, Br, B0, ib, jb, b_written ? n : 0, nrhs,
                            s, NULL, g);
        }
    }

    /* the factor and the solution: within rounding of the reference's, and of the inputs */
    if (info_r >= 0 && n > 0 && m > 0 && r != R_POTRS && r != R_GETRS) {
        /* the factor: all of what may be written; potrf/posv stopped at INFO = k: the
         * leading k - 1 columns and rows, the part LAPACK defines */
        int lim = r == R_POTRF || r == R_POSV ? (info_r > 0 ? info_r - 1 : n) : (m > n ? m : n);
        struct diff d = {0};
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                if (!writable(s, i, j) || i >= lim || j >= lim) continue;
                unsigned char *pg = mat_at(&A, A.buf, dt, ia - 1 + i, ja - 1 + j, g->myrow,
                                           g->mycol);
                if (!pg) continue;
                diff_add(&d, get(dt, pg), get(dt, Ar + (pg - A.buf)));
            }
        double ratio = diff_ratio(&d, g);
        if (lim > 0) check_cmp(what, "the factor", ratio, d.nonfinite, n, dt);
        if (info_r == 0 || r == R_GETRF || r == R_GESV) {
            for (int w = 0; w < 2; w++) { /* the glue's, then the reference's */
                double complex *F = gather(&A, w ? Ar : A.buf, dt, ia, ja, m, n, g);
                double res;
                if (r == R_POTRF || r == R_POSV) {
                    res = potrf_residual(s, dt, F, n);
                } else {
                    int k = m < n ? m : n;
                    int *gp = gather_ipiv(&A, w ? ipr : ipiv, ia, k, g);
                    res = getrf_residual(s, dt, F, gp, m, n, ia);
                    free(gp);
                }
                check_res(what, w ? "the reference's factor" : "the factor", res);
                free(F);
            }
        }
    }
    if (info_r == 0 && solve && n > 0 && nrhs > 0) {
        struct diff d = {0};
        for (int j = 0; j < nrhs; j++)
            for (int i = 0; i < n; i++) {
                unsigned char *pg = mat_at(&B, B.buf, dt, ib - 1 + i, jb - 1 + j, g->myrow,
                                           g->mycol);
                if (pg) diff_add(&d, get(dt, pg), get(dt, Br + (pg - B.buf)));
            }
        check_cmp(what, "the solution", diff_ratio(&d, g), d.nonfinite, n, dt);
        char tr = r == R_GETRS ? (s->opt == 'C' && !cplx(dt) ? 'T' : s->opt) : 'N';
        for (int w = 0; w < 2; w++) {
            double complex *X = gather(&B, w ? Br : B.buf, dt, ib, jb, n, nrhs, g);
            check_res(what, w ? "the reference's solution" : "the solution",
                      solve_residual(s, dt, X, n, nrhs, tr));
            free(X);
        }
    }

    /* where the call went: tessera for an aligned good call with work on 1 x 1, and for
     * p?potrf_ on any grid (the distributed Cholesky); the reference for the
     * rest. B's column offset inside its block (JB = 2): either way (docs/scalapack.md asks
     * for it on a block boundary, ScaLAPACK does not). */
    int route = TO_REFERENCE;
    /* p?getrf_'s quick return for M_A = 1 (IPIV(1) = 1, INFO = 0, A(1, 1) not looked at)
     * stays the reference's, for p?gesv_ too */
    int m_a_1 = (r == R_GETRF || r == R_GESV) && MA == 1;
    /* p?getrf_ on a grid of several processes, the device transport (TEST_GLUE_DEVPANELS),
     * sub(A) starting a block: the distributed LU (P > 1: through one process row) */
    int aligned = (s->ia - 1) % NB == 0 && (s->ja - 1) % NB == 0;
    int lu_dev = getenv("TEST_GLUE_DEVPANELS") && r == R_GETRF && P * Q > 1 && aligned;
    if ((P * Q == 1 || r == R_POTRF || lu_dev) && !s->bad && m > 0 && n > 0 &&
        (!solve || nrhs > 0) && !m_a_1)
        route = s->jb > 1 && (s->jb - 1) % (s->nbb ? s->nbb : NB) ? TO_EITHER : TO_TESSERA;
    uint64_t dt_ = after.tessera_calls - before.tessera_calls,
             dr = after.reference_calls - before.reference_calls;
    if (route == TO_TESSERA)
        ASSERT_MSG(dt_ == 1 && dr == 0,
                   "%s: expected on tessera: tessera calls %+d, reference calls %+d", what,
                   (int)dt_, (int)dr);
    else if (route == TO_REFERENCE)
        ASSERT_MSG(dt_ == 0 && dr >= 1,
                   "%s: expected on the reference: tessera calls %+d, reference calls %+d", what,
                   (int)dt_, (int)dr);
    else
        ASSERT_MSG(dt_ + dr == 1, "%s: tessera calls %+d, reference calls %+d", what, (int)dt_,
                   (int)dr);
    /* TEST_GLUE_DEVPANELS=1 (the device transport on emulated devices): a distributed
     * Cholesky or LU whose sub(A) starts a block keeps its panels on the devices, the
     * others never */
    if (getenv("TEST_GLUE_DEVPANELS") && route == TO_TESSERA) {
        int dev = (r == R_POTRF || r == R_GETRF) && P * Q > 1 && aligned;
        uint64_t dd = after.device_calls - before.device_calls;
        ASSERT_MSG(dd == (uint64_t)dev, "%s: device panels %+d, expected %d", what, (int)dd, dev);
    }

    free(A0), free(Ar), free(B0), free(Br), free(ip0), free(ipr), free(ipiv);
    free(A.buf);
    free(B.buf);
}

/* ---- grids -------------------------------------------------------------------------------
 * 1 rank: 1 x 1; 2 and 4 ranks: every grid of 2 .. wsize processes among 2 x 1, 1 x 2, 2 x 2
 * (the processes outside a grid wait at the barrier). */
static const int grids[][2] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}};

static void for_grids(const struct spec *specs, size_t nspecs, const char *test) {
    worst_cmp = worst_res = 0;
    ncalls = 0;
    for (size_t s = 0; s < sizeof grids / sizeof grids[0]; s++) {
        int P = grids[s][0], Q = grids[s][1];
        if (P * Q > wsize || (wsize > 1 && P * Q < 2)) continue;
        struct grid g = {.ctxt = grid_open(P, Q), .P = P, .Q = Q};
        MPI_Comm_split(MPI_COMM_WORLD, wrank < P * Q ? 0 : MPI_UNDEFINED, wrank, &g.comm);
        if (g.ctxt >= 0) {
            int nprow, npcol;
            Cblacs_gridinfo(g.ctxt, &nprow, &npcol, &g.myrow, &g.mycol);
            ASSERT(nprow == P && npcol == Q);
            for (int dt = 0; dt < 4; dt++)
                for (size_t c = 0; c < nspecs; c++)
                    run_case(&specs[c], dt, &g, (int)(s * 1000 + dt * 100 + c));
            Cblacs_gridexit(g.ctxt);
        }
        if (g.comm != MPI_COMM_NULL) MPI_Comm_free(&g.comm);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (wrank == 0)
        fprintf(stderr,
                "    %s: %d calls on rank 0; worst glue vs reference %.3g n eps (bound %d), "
                "residual %.3g n eps (bound %d)\n",
                test, ncalls, worst_cmp * C_CMP, C_CMP, worst_res * C_RES, C_RES);
}

#define RUN(specs_, test_) for_grids(specs_, sizeof specs_ / sizeof specs_[0], test_)

/* Cholesky factorizations: both triangles, a whole matrix (n = 37, not a multiple of the block)
 * and ones inside a bigger matrix (from (9,9); from (17,9), where sub(A)'s diagonal blocks are
 * off A's); one element, one block; not positive definite at column 21 (INFO 21, the
 * leading 20 x 20 factor as the reference's), at a block's first column, at the last and at
 * the first; n = 0 (the reference's quick return). */
TEST(glue_fact_potrf) {
    static const struct spec specs[] = {
        {"L n=37", R_POTRF, 'L', 0, 37, 0, 1, 1, 0, 0, 0, 0, MK_HPD, 0, 0},
        {"U n=37", R_POTRF, 'U', 0, 37, 0, 1, 1, 0, 0, 0, 0, MK_HPD, 0, 0},
        {"L n=50 at (9,9)", R_POTRF, 'L', 0, 50, 0, 9, 9, 0, 0, 0, 0, MK_HPD, 0, 0},
        {"U n=50 at (9,9)", R_POTRF, 'U', 0, 50, 0, 9, 9, 0, 0, 0, 0, MK_HPD, 0, 0},
        {"L not positive definite", R_POTRF, 'L', 0, 37, 0, 1, 1, 0, 0, 0, 0, MK_NPD, 20, 0},
        {"U not positive definite at (9,9)", R_POTRF, 'U', 0, 50, 0, 9, 9, 0, 0, 0, 0, MK_NPD, 20,
         0},
        {"L n=45 at (17,9)", R_POTRF, 'L', 0, 45, 0, 17, 9, 0, 0, 0, 0, MK_HPD, 0, 0},
        {"U n=45 at (17,9)", R_POTRF, 'U', 0, 45, 0, 17, 9, 0, 0, 0, 0, MK_HPD, 0, 0},
        {"L n=1", R_POTRF, 'L', 0, 1, 0, 1, 1, 0, 0, 0, 0, MK_HPD, 0, 0},
        {"L n=8 at (9,17)", R_POTRF, 'L', 0, 8, 0, 9, 17, 0, 0, 0, 0, MK_HPD, 0, 0},
        {"L not positive definite at a block's first column, (17,9)", R_POTRF, 'L', 0, 45, 0, 17, 9,
         0, 0, 0, 0, MK_NPD, 16, 0},
        {"L not positive definite at the last column", R_POTRF, 'L', 0, 37, 0, 1, 1, 0, 0, 0, 0,
         MK_NPD, 36, 0},
        {"L not positive definite at the first column", R_POTRF, 'L', 0, 37, 0, 9, 9, 0, 0, 0, 0,
         MK_NPD, 0, 0},
        {"L n=0", R_POTRF, 'L', 0, 0, 0, 1, 1, 0, 0, 0, 0, MK_HPD, 0, 0},
    };
    RUN(specs, "potrf");
}

/* Cholesky solves on the reference's factor: both triangles, NRHS 1 and 3, A from (9,9), B
 * from (9,5) in 8 x 4 blocks; one B column offset inside its block (JB = 2). */
TEST(glue_fact_potrs) {
    static const struct spec specs[] = {
        {"L nrhs=1", R_POTRS, 'L', 0, 37, 1, 1, 1, 1, 1, 0, 0, MK_HPD, 0, 0},
        {"U nrhs=3", R_POTRS, 'U', 0, 37, 3, 1, 1, 1, 1, 0, 0, MK_HPD, 0, 0},
        {"L nrhs=3 at (9,9), B (9,5)", R_POTRS, 'L', 0, 50, 3, 9, 9, 9, 5, 0, 4, MK_HPD, 0, 0},
        {"U nrhs=1 at (9,9), B (9,5)", R_POTRS, 'U', 0, 50, 1, 9, 9, 9, 5, 0, 4, MK_HPD, 0, 0},
        {"L nrhs=3, B (1,2)", R_POTRS, 'L', 0, 37, 3, 1, 1, 1, 2, 0, 4, MK_HPD, 0, 0},
    };
    RUN(specs, "potrs");
}

/* Cholesky factor and solve in one: both triangles, NRHS 1 and 3, offsets; not positive
 * definite (INFO as the reference's, B untouched); NRHS = 0 (the factorization only). */
TEST(glue_fact_posv) {
    static const struct spec specs[] = {
        {"L nrhs=3", R_POSV, 'L', 0, 37, 3, 1, 1, 1, 1, 0, 0, MK_HPD, 0, 0},
        {"U nrhs=1", R_POSV, 'U', 0, 37, 1, 1, 1, 1, 1, 0, 0, MK_HPD, 0, 0},
        {"U nrhs=3 at (9,9), B (9,5)", R_POSV, 'U', 0, 50, 3, 9, 9, 9, 5, 0, 4, MK_HPD, 0, 0},
        {"L nrhs=1 at (9,9), B (9,1)", R_POSV, 'L', 0, 50, 1, 9, 9, 9, 1, 0, 0, MK_HPD, 0, 0},
        {"L not positive definite", R_POSV, 'L', 0, 37, 3, 1, 1, 1, 1, 0, 0, MK_NPD, 30, 0},
        {"U nrhs=0", R_POSV, 'U', 0, 37, 0, 1, 1, 1, 1, 0, 0, MK_HPD, 0, 0},
    };
    RUN(specs, "posv");
}

/* LU factorizations: square (n = 37; n = 50 from (9,9)), tall (50 x 37) and wide (37 x 50),
 * one block column (on 1 x 2 one process holds none of it), singular (a zero column 19:
 * INFO 20, the factor and IPIV as the reference's); m = 0. */
TEST(glue_fact_getrf) {
    static const struct spec specs[] = {
        {"37 x 37", R_GETRF, 0, 37, 37, 0, 1, 1, 0, 0, 0, 0, MK_GEN, 0, 0},
        {"50 x 50 at (9,9)", R_GETRF, 0, 50, 50, 0, 9, 9, 0, 0, 0, 0, MK_GEN, 0, 0},
        {"tall 50 x 37 at (9,1)", R_GETRF, 0, 50, 37, 0, 9, 1, 0, 0, 0, 0, MK_GEN, 0, 0},
        {"wide 37 x 50 at (1,9)", R_GETRF, 0, 37, 50, 0, 1, 9, 0, 0, 0, 0, MK_GEN, 0, 0},
        {"one block column 45 x 6", R_GETRF, 0, 45, 6, 0, 1, 1, 0, 0, 0, 0, MK_GEN, 0, 0},
        {"singular 50 x 50 at (9,9)", R_GETRF, 0, 50, 50, 0, 9, 9, 0, 0, 0, 0, MK_SING, 19, 0},
        {"singular tall 50 x 37", R_GETRF, 0, 50, 37, 0, 1, 1, 0, 0, 0, 0, MK_SING, 12, 0},
        {"1 x 3, A(1,1) = 0, M_A = 1", R_GETRF, 0, 1, 3, 0, 1, 1, 0, 0, 0, 0, MK_SING_TIGHT, 0, 0},
        {"m=0", R_GETRF, 0, 0, 5, 0, 1, 1, 0, 0, 0, 0, MK_GEN, 0, 0},
    };
    RUN(specs, "getrf");
}

/* LU solves on the reference's factor and pivots: TRANS N, T, C, NRHS 1 and 3, offsets. */
TEST(glue_fact_getrs) {
    static const struct spec specs[] = {
        {"N nrhs=1", R_GETRS, 'N', 0, 37, 1, 1, 1, 1, 1, 0, 0, MK_GEN, 0, 0},
        {"T nrhs=3", R_GETRS, 'T', 0, 37, 3, 1, 1, 1, 1, 0, 0, MK_GEN, 0, 0},
        {"C nrhs=3", R_GETRS, 'C', 0, 37, 3, 1, 1, 1, 1, 0, 0, MK_GEN, 0, 0},
        {"N nrhs=3 at (9,9), B (9,5)", R_GETRS, 'N', 0, 50, 3, 9, 9, 9, 5, 0, 4, MK_GEN, 0, 0},
        {"T nrhs=1 at (9,9), B (9,5)", R_GETRS, 'T', 0, 50, 1, 9, 9, 9, 5, 0, 4, MK_GEN, 0, 0},
        {"C nrhs=1 at (9,9), B (9,1)", R_GETRS, 'C', 0, 50, 1, 9, 9, 9, 1, 0, 0, MK_GEN, 0, 0},
    };
    RUN(specs, "getrs");
}

/* LU factor and solve in one: NRHS 1 and 3, offsets; singular (INFO, factor and IPIV as the
 * reference's, B untouched); n = 0. */
TEST(glue_fact_gesv) {
    static const struct spec specs[] = {
        {"nrhs=1", R_GESV, 0, 0, 37, 1, 1, 1, 1, 1, 0, 0, MK_GEN, 0, 0},
        {"nrhs=3 at (9,9), B (9,5)", R_GESV, 0, 0, 50, 3, 9, 9, 9, 5, 0, 4, MK_GEN, 0, 0},
        {"singular nrhs=3", R_GESV, 0, 0, 37, 3, 1, 1, 1, 1, 0, 0, MK_SING, 25, 0},
        {"n=0", R_GESV, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, MK_GEN, 0, 0},
    };
    RUN(specs, "gesv");
}

/* Bad arguments, on the reference's path by construction: the glue gives the reference's
 * INFO and PXERBLA report (by the routine called) and writes nothing. Among them the offsets
 * inside a block (IA = JA = 4, IB = 4), which ScaLAPACK's solvers refuse. (p?posv_ does not
 * check DESCB's LLD itself: it would factor A before its p?potrs_ refused B; so LLD_B on
 * p?potrs_.) */
TEST(glue_fact_errors) {
    static const struct spec specs[] = {
        {"N < 0", R_POTRF, 'L', 0, 37, 0, 1, 1, 0, 0, 0, 0, MK_HPD, 0, BAD_N},
        {"UPLO", R_POTRF, 'L', 0, 37, 0, 1, 1, 0, 0, 0, 0, MK_HPD, 0, BAD_OPT},
        {"IA = JA = 4", R_POTRF, 'U', 0, 37, 0, 4, 4, 0, 0, 0, 0, MK_HPD, 0, BAD_ARG},
        {"IA = JA = 4", R_POTRF, 'L', 0, 37, 0, 4, 4, 0, 0, 0, 0, MK_HPD, 0, BAD_ARG},
        {"LLD_A too small", R_POTRF, 'L', 0, 37, 0, 9, 9, 0, 0, 0, 0, MK_HPD, 0, BAD_LLDA},
        {"LLD_A too small on one process", R_POTRF, 'L', 0, 37, 0, 9, 9, 0, 0, 0, 0, MK_HPD, 0,
         BAD_LLDA1},
        {"NRHS < 0", R_POTRS, 'U', 0, 37, 1, 1, 1, 1, 1, 0, 0, MK_HPD, 0, BAD_NRHS},
        {"LLD_B too small", R_POTRS, 'L', 0, 37, 3, 1, 1, 1, 1, 0, 0, MK_HPD, 0, BAD_LLDB},
        {"IB = 4", R_POSV, 'L', 0, 37, 3, 1, 1, 4, 1, 0, 0, MK_HPD, 0, BAD_ARG},
        {"UPLO", R_POSV, 'L', 0, 37, 3, 1, 1, 1, 1, 0, 0, MK_HPD, 0, BAD_OPT},
        {"LLD_A too small", R_GETRF, 0, 37, 37, 0, 1, 1, 0, 0, 0, 0, MK_GEN, 0, BAD_LLDA},
        {"DTYPE_A = 2", R_GETRF, 0, 37, 37, 0, 1, 1, 0, 0, 0, 0, MK_GEN, 0, BAD_DTYPE},
        {"M < 0", R_GETRF, 0, 37, 37, 0, 1, 1, 0, 0, 0, 0, MK_GEN, 0, BAD_N},
        {"IA = JA = 4", R_GETRF, 0, 37, 37, 0, 4, 4, 0, 0, 0, 0, MK_GEN, 0, BAD_ARG},
        {"TRANS", R_GETRS, 'N', 0, 37, 3, 1, 1, 1, 1, 0, 0, MK_GEN, 0, BAD_OPT},
        {"MB_B != MB_A", R_GETRS, 'N', 0, 37, 3, 1, 1, 1, 1, 4, 0, MK_GEN, 0, BAD_ARG},
        {"N < 0", R_GESV, 0, 0, 37, 1, 1, 1, 1, 1, 0, 0, MK_GEN, 0, BAD_N},
        {"IB = 4", R_GESV, 0, 0, 37, 1, 1, 1, 4, 1, 0, 0, MK_GEN, 0, BAD_ARG},
        {"LLD_A too small", R_GESV, 0, 0, 37, 1, 1, 1, 1, 1, 0, 0, MK_GEN, 0, BAD_LLDA},
        {"LLD_A too small on one process", R_GETRF, 0, 37, 37, 0, 1, 1, 0, 0, 0, 0, MK_GEN, 0,
         BAD_LLDA1},
    };
    RUN(specs, "errors");
}

/* The counters of the six kinds: every routine of every precision reached tessera on one
 * process, on more p?potrf_ only (and p?getrf_ on the device transport); the names parse. */
TEST(glue_fact_counters) {
    tess_scalapack_counters_t c, k;
    for (int r = 0; r < NR; r++) {
        ASSERT_OK(tess_scalapack_counters(rname[r], &k));
        uint64_t sum = 0;
        for (int dt = 0; dt < 4; dt++) {
            counters_of(r, dt, &c);
            sum += c.tessera_calls;
            int lu = r == R_GETRF && getenv("TEST_GLUE_DEVPANELS");
            if (wsize == 1 || r == R_POTRF || lu)
                ASSERT_MSG(c.tessera_calls > 0, "p%c%s_: no call reached tessera", "sdcz"[dt],
                           rname[r]);
            else
                ASSERT_MSG(c.tessera_calls == 0, "p%c%s_: %d calls reached tessera", "sdcz"[dt],
                           rname[r], (int)c.tessera_calls);
            ASSERT_MSG(c.reference_calls > 0, "p%c%s_: no reference call", "sdcz"[dt], rname[r]);
        }
        ASSERT_EQ(k.tessera_calls, sum);
    }
    tess_scalapack_counters_t a, b;
    ASSERT_OK(tess_scalapack_counters("PZGETRS_", &a));
    ASSERT_OK(tess_scalapack_counters("pzgetrs", &b));
    ASSERT_EQ(a.tessera_calls + a.reference_calls, b.tessera_calls + b.reference_calls);
    ASSERT_EQ(tess_scalapack_counters("pxgesv", &a), -1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    int me, np;
    Cblacs_pinfo(&me, &np);
    /* the reference routines: from the library that defines BLACS */
    const char *libname;
    void *lib = reference_library(&libname);
    for (int r = 0; r < NR; r++)
        for (int d = 0; d < 4; d++) {
            char name[16];
            snprintf(name, sizeof name, "p%c%s_", "sdcz"[d], rname[r]);
            void *f = dlsym(lib, name), *g = dlsym(RTLD_DEFAULT, name);
            Dl_info gi_;
            if (!f || !g || f == g || !dladdr(g, &gi_) ||
                !strstr(gi_.dli_fname, "tessera_scalapack")) {
                fprintf(stderr, "rank %d: %s: the glue is not in front of %s\n", wrank, name,
                        libname);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            glue_fn[r][d] = g;
            ref_fn[r][d] = f;
        }
    id_base = (int)(seed() % 100000) * 100;
    if (wrank == 0)
        fprintf(stderr, "%d ranks, TESSERA_SCALAPACK_FORCE=%s, reference %s\n", wsize,
                getenv("TESSERA_SCALAPACK_FORCE") ? getenv("TESSERA_SCALAPACK_FORCE") : "unset",
                libname);
    int rc = test_main_(argc, argv);
    Cblacs_exit(1);
    MPI_Finalize();
    return rc;
}
