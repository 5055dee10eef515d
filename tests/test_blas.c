/* tests/test_blas.c: the drop-in library (libtessera_blas.so, linked first, so dgemm_ and
 * cblas_dgemm are its symbols) seen from a C program: results against a reference loop,
 * the netlib contract (beta = 0 does not read C, nothing written outside the referenced
 * part, NaN propagation, letters in either case), bad arguments reaching the program's
 * xerbla_/cblas_xerbla exactly as Debian's reference CBLAS passes them, sizes whose span
 * cannot be addressed refused through those handlers before any memory is touched (Fortran,
 * CBLAS, numpy's scipy_cblas_*64_), 8 threads at once, and fork after the runtime started.
 * Where calls went is read by tests/test_dropin.sh from the exit summary. This program
 * defines xerbla_, cblas_xerbla and the reference CBLAS's globals RowMajorStrg and
 * CBLAS_CallFromC, as a BLAS user may: the library must call them and never define its
 * own. Built again with TEST_BLAS_NO_XERBLA (test_blas_cblas_only): without xerbla_.
 */
/* <cblas.h> declares cblas_xerbla with char * (OpenBLAS 0.3.21) or const char * (0.3.26)
 * arguments; this test defines its own, so the header's declaration is renamed away. */
#define cblas_xerbla tess_test_cblas_xerbla_decl
#include <cblas.h>
#undef cblas_xerbla
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double *alpha, const double *A, const int *lda, const double *B, const int *ldb,
            const double *beta, double *C, const int *ldc, size_t, size_t);
void zgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const void *alpha, const void *A, const int *lda, const void *B, const int *ldb,
            const void *beta, void *C, const int *ldc, size_t, size_t);
void dsyrk_(const char *uplo, const char *trans, const int *n, const int *k, const double *alpha,
            const double *A, const int *lda, const double *beta, double *C, const int *ldc, size_t,
            size_t);

/* ---- the program's error handlers ----------------------------------------------------- */

#ifndef TEST_BLAS_NO_XERBLA
static char last_srname[16];
static int last_info, xerbla_calls;
#endif
static char last_rout[32];
static int last_pos, cblas_xerbla_calls;

/* exported (the build hides symbols by default): the library finds them with dlsym */
#define VISIBLE __attribute__((visibility("default")))

/* The reference CBLAS's globals (its cblas_globals.c); a handler reads RowMajorStrg to swap a
 * row-major call's positions back. */
VISIBLE int RowMajorStrg, CBLAS_CallFromC;

/* Every handler call since hook_reset, one line each in the order they came: which handler,
 * its arguments, and the two globals as the handler saw them. */
static char hook_log[2048];

static void hook_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void hook_add(const char *fmt, ...) {
    size_t len = strlen(hook_log);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(hook_log + len, sizeof hook_log - len, fmt, ap);
    va_end(ap);
    len = strlen(hook_log);
    snprintf(hook_log + len, sizeof hook_log - len, " RowMajorStrg=%d CBLAS_CallFromC=%d;",
             RowMajorStrg, CBLAS_CallFromC);
}

static void hook_reset(void) { hook_log[0] = '\0'; }

#ifndef TEST_BLAS_NO_XERBLA
VISIBLE void xerbla_(const char *srname, const int *info, size_t len) {
    size_t n = len < sizeof last_srname - 1 ? len : sizeof last_srname - 1;
    memcpy(last_srname, srname, n);
    last_srname[n] = '\0';
    last_info = *info;
    xerbla_calls++;
    hook_add("xerbla_('%s', %d)", last_srname, *info);
}
#endif

VISIBLE void cblas_xerbla(blasint p, const char *rout, const char *form, ...) {
    snprintf(last_rout, sizeof last_rout, "%s", rout);
    last_pos = p;
    cblas_xerbla_calls++;
    int value = 0;
    if (strchr(form, '%')) {
        va_list ap;
        va_start(ap, form);
        value = va_arg(ap, int);
        va_end(ap);
    }
    char f[64];
    size_t j = 0;
    for (const char *c = form; *c && j + 3 < sizeof f; c++) { /* the newline as \n */
        if (*c == '\n')
            f[j++] = '\\', f[j++] = 'n';
        else
            f[j++] = *c;
    }
    f[j] = '\0';
    hook_add("cblas_xerbla(%d, '%s', '%s', %d)", (int)p, rout, f, value);
}

/* ---- reference and data ----------------------------------------------------------------- */

static double rnd(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return ((double)(*s >> 8) / 16777216.0) - 0.5;
}

static void fill(double *x, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) x[i] = rnd(&seed);
}

/* C = alpha op(A) op(B) + beta C, column-major, beta = 0 not reading C */
static void ref_dgemm(char ta, char tb, int m, int n, int k, double alpha, const double *A, int lda,
                      const double *B, int ldb, double beta, double *C, int ldc) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int l = 0; l < k; l++) {
                double a = ta == 'N' ? A[i + (size_t)l * lda] : A[l + (size_t)i * lda];
                double b = tb == 'N' ? B[l + (size_t)j * ldb] : B[j + (size_t)l * ldb];
                s += a * b;
            }
            double *c = &C[i + (size_t)j * ldc];
            *c = beta == 0 ? alpha * s : alpha * s + beta * *c;
        }
}

static double max_rel(const double *x, const double *y, int m, int n, int ld) {
    double d = 0, s = 1e-300;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double a = x[i + (size_t)j * ld], b = y[i + (size_t)j * ld];
            if (isnan(a) != isnan(b)) return INFINITY;
            if (fabs(a - b) > d) d = fabs(a - b);
            if (fabs(b) > s) s = fabs(b);
        }
    return d / s;
}

/* One dgemm through the Fortran (via = 0) or the CBLAS column-major (1) or row-major (2)
 * door, checked against the reference. Returns the relative error. */
static double one_gemm(int via, char ta_, char tb_, int m, int n, int k, double alpha, double beta,
                       unsigned seed) {
    char ta = (char)(ta_ & ~0x20), tb = (char)(tb_ & ~0x20); /* upper case, for us */
    int lda = (ta == 'N' ? m : k) + 3, ldb = (tb == 'N' ? k : n) + 2, ldc = m + 1;
    int acols = ta == 'N' ? k : m, bcols = tb == 'N' ? n : k;
    double *A = malloc(sizeof(double) * (size_t)lda * acols);
    double *B = malloc(sizeof(double) * (size_t)ldb * bcols);
    double *C = malloc(sizeof(double) * (size_t)ldc * n);
    double *R = malloc(sizeof(double) * (size_t)ldc * n);
    fill(A, (size_t)lda * acols, seed);
    fill(B, (size_t)ldb * bcols, seed + 1);
    fill(C, (size_t)ldc * n, seed + 2);
    memcpy(R, C, sizeof(double) * (size_t)ldc * n);
    ref_dgemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, R, ldc);
    if (via == 0) {
        dgemm_(&ta_, &tb_, &m, &n, &k, &alpha, A, &lda, B, &ldb, &beta, C, &ldc, 1, 1);
    } else if (via == 1) {
        cblas_dgemm(CblasColMajor, ta == 'N' ? CblasNoTrans : CblasTrans,
                    tb == 'N' ? CblasNoTrans : CblasTrans, m, n, k, alpha, A, lda, B, ldb, beta, C,
                    ldc);
    } else {
        /* the same product seen as row-major: C^T (n x m) = op(B)^T op(A)^T */
        cblas_dgemm(CblasRowMajor, tb == 'N' ? CblasNoTrans : CblasTrans,
                    ta == 'N' ? CblasNoTrans : CblasTrans, n, m, k, alpha, B, ldb, A, lda, beta, C,
                    ldc);
    }
    double e = max_rel(C, R, ldc, n, ldc); /* the whole ldc: rows past m must be untouched */
    free(A), free(B), free(C), free(R);
    return e;
}

/* Fortran, CBLAS column-major and CBLAS row-major calls agree with the reference for small
 * and large shapes, every transpose pair, beta 0 and not, letters in lower case too. */
TEST(gemm_matches_reference) {
    const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 40}, {130, 140, 150}, {300, 260, 270}};
    const char tr[] = {'N', 'T', 'n', 't'};
    unsigned seed = 1;
    for (int s = 0; s < 5; s++)
        for (int t = 0; t < 4; t++)
            for (int via = 0; via < 3; via++) {
                const int *sh = shapes[s];
                char ta = tr[t], tb = tr[(t + 1) % 4];
                double beta = (s + t + via) % 2 ? 0.0 : 0.5;
                double e = one_gemm(via, ta, tb, sh[0], sh[1], sh[2], 1.5, beta, seed++);
                ASSERT_MSG(e < 1e-13, "via %d %c%c %dx%dx%d beta %g: error %g", via, ta, tb, sh[0],
                           sh[1], sh[2], beta, e);
            }
}

/* beta = 0: C full of NaN is not read; the rows between m and ldc keep their bytes; a NaN
 * in A reaches C as in the reference; alpha = 0 does not read A and B. */
TEST(gemm_netlib_semantics) {
    for (int big = 0; big < 2; big++) {
        int m = big ? 200 : 9, n = big ? 190 : 8, k = big ? 210 : 7, ld = k + 5; /* > m */
        double *A = malloc(sizeof(double) * (size_t)ld * k);
        double *B = malloc(sizeof(double) * (size_t)ld * n);
        double *C = malloc(sizeof(double) * (size_t)ld * n);
        double *R = malloc(sizeof(double) * (size_t)ld * n);
        fill(A, (size_t)ld * k, 5);
        fill(B, (size_t)ld * n, 6);
        for (size_t i = 0; i < (size_t)ld * n; i++) C[i] = NAN;
        for (int j = 0; j < n; j++) /* a marker between m and ld */
            for (int i = m; i < ld; i++) C[i + (size_t)j * ld] = 42.0;
        memcpy(R, C, sizeof(double) * (size_t)ld * n);
        double one = 1, zero = 0;
        ref_dgemm('N', 'N', m, n, k, 1.0, A, ld, B, ld, 0.0, R, ld);
        dgemm_("N", "N", &m, &n, &k, &one, A, &ld, B, &ld, &zero, C, &ld, 1, 1);
        ASSERT_MSG(max_rel(C, R, ld, n, ld) < 1e-13, "beta = 0 with NaN C (m = %d)", m);

        A[3] = NAN; /* row 3 of C must come out NaN, the rest finite */
        dgemm_("N", "N", &m, &n, &k, &one, A, &ld, B, &ld, &zero, C, &ld, 1, 1);
        for (int j = 0; j < n; j++) {
            ASSERT_MSG(isnan(C[3 + (size_t)j * ld]), "NaN of A lost at (3, %d)", j);
            ASSERT_MSG(!isnan(C[4 + (size_t)j * ld]), "NaN spread to (4, %d)", j);
            ASSERT_MSG(C[m + (size_t)j * ld] == 42.0, "wrote past m in column %d", j);
        }

        for (size_t i = 0; i < (size_t)ld * k; i++) A[i] = NAN; /* alpha = 0: not read */
        double half = 0.5;
        memcpy(R, C, sizeof(double) * (size_t)ld * n);
        dgemm_("N", "N", &m, &n, &k, &zero, A, &ld, B, &ld, &half, C, &ld, 1, 1);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++)
                if (i != 3)
                    ASSERT_MSG(C[i + (size_t)j * ld] == 0.5 * R[i + (size_t)j * ld],
                               "alpha = 0: C(%d, %d) is not beta C", i, j);
        free(A), free(B), free(C), free(R);
    }
}

/* ---- bad arguments ------------------------------------------------------------------------- */

#ifndef TEST_BLAS_NO_XERBLA
/* Fortran door: the program's xerbla_ gets the blank-padded name and the Fortran position;
 * CBLAS door: what the reference's Fortran routine rejects reaches xerbla_ too, with the
 * position in the folded call (row-major cblas_dgemm: lda is 10, ldb 8), what its C layer
 * rejects cblas_xerbla with the CBLAS position; C is not touched. */
TEST(errors_reach_program_handlers) {
    double A[16] = {0}, B[16] = {0}, C[16];
    for (int i = 0; i < 16; i++) C[i] = 7.0;
    int two = 2, one = 1, zero = 0, neg = -1;
    double a = 1, b = 0;
    xerbla_calls = 0;
    dgemm_("N", "N", &two, &two, &two, &a, A, &one, B, &two, &b, C, &two, 1, 1);
    ASSERT_EQ(xerbla_calls, 1);
    ASSERT(!strncmp(last_srname, "DGEMM ", 6));
    ASSERT_EQ(last_info, 8);
    dgemm_("X", "N", &two, &two, &two, &a, A, &two, B, &two, &b, C, &two, 1, 1);
    ASSERT_EQ(last_info, 1);
    dgemm_("n", "q", &two, &two, &two, &a, A, &two, B, &two, &b, C, &two, 1, 1);
    ASSERT_EQ(last_info, 2);
    dgemm_("N", "N", &zero, &neg, &two, &a, A, &two, B, &two, &b, C, &two, 1, 1);
    ASSERT_EQ(last_info, 4);
    dsyrk_("U", "N", &two, &two, &a, A, &one, &b, C, &two, 1, 1);
    ASSERT(!strncmp(last_srname, "DSYRK ", 6));
    ASSERT_EQ(last_info, 7);
    ASSERT_EQ(xerbla_calls, 5);

    xerbla_calls = cblas_xerbla_calls = 0;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0, A, 1, B, 2, 0.0, C, 2);
    ASSERT_EQ(xerbla_calls, 1);
    ASSERT(!strcmp(last_srname, "DGEMM "));
    ASSERT_EQ(last_info, 10);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0, A, 2, B, 1, 0.0, C, 2);
    ASSERT_EQ(last_info, 8);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0, A, 2, B, 2, 0.0, C, 1);
    ASSERT_EQ(last_info, 13);
    ASSERT_EQ(xerbla_calls, 3);
    ASSERT_EQ(cblas_xerbla_calls, 0);
    cblas_dgemm((enum CBLAS_ORDER)7, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0, A, 2, B, 2, 0.0, C,
                2);
    ASSERT(!strcmp(last_rout, "cblas_dgemm"));
    ASSERT_EQ(last_pos, 1);
    ASSERT_EQ(cblas_xerbla_calls, 1);
    ASSERT_EQ(xerbla_calls, 3);
    for (int i = 0; i < 16; i++) ASSERT_MSG(C[i] == 7.0, "C[%d] written by a bad call", i);
}
#endif

/* One level-3 call through the CBLAS prototypes, whatever the routine: fn is its function
 * (tessera's, or the reference library's), p its precision letter. Operands are zeros of
 * 8 x 8 (enough for every dimension used here); alpha 1, beta 0.5. */
enum fam { F_GEMM, F_SYMM, F_SYRK, F_HERK, F_SYR2K, F_HER2K, F_TRMM };
struct l3args {
    int layout, e[4], m, n, k, lda, ldb, ldc;
};

static void call_l3(void *fn, enum fam f, char p, const struct l3args *a) {
    static double A[2 * 64], B[2 * 64], C[2 * 64];
    static const float fone[2] = {1, 0}, fhalf[2] = {0.5f, 0};
    static const double done[2] = {1, 0}, dhalf[2] = {0.5, 0};
    int real = p == 's' || p == 'd', sp = p == 's' || p == 'c';
    memset(A, 0, sizeof A), memset(B, 0, sizeof B), memset(C, 0, sizeof C);
    const void *al = sp ? (const void *)fone : (const void *)done;
    const void *be = sp ? (const void *)fhalf : (const void *)dhalf;
    int o = a->layout, e0 = a->e[0], e1 = a->e[1], e2 = a->e[2], e3 = a->e[3];
    int m = a->m, n = a->n, k = a->k, lda = a->lda, ldb = a->ldb, ldc = a->ldc;
#define CALL(sig, ...) ((void(*) sig)fn)(__VA_ARGS__)
    switch (f) {
    case F_GEMM:
        if (p == 's')
            CALL((int, int, int, int, int, int, float, const void *, int, const void *, int, float,
                  void *, int),
                 o, e0, e1, m, n, k, 1.0f, A, lda, B, ldb, 0.5f, C, ldc);
        else if (p == 'd')
            CALL((int, int, int, int, int, int, double, const void *, int, const void *, int,
                  double, void *, int),
                 o, e0, e1, m, n, k, 1.0, A, lda, B, ldb, 0.5, C, ldc);
        else
            CALL((int, int, int, int, int, int, const void *, const void *, int, const void *, int,
                  const void *, void *, int),
                 o, e0, e1, m, n, k, al, A, lda, B, ldb, be, C, ldc);
        break;
    case F_SYMM:
        if (p == 's')
            CALL((int, int, int, int, int, float, const void *, int, const void *, int, float,
                  void *, int),
                 o, e0, e1, m, n, 1.0f, A, lda, B, ldb, 0.5f, C, ldc);
        else if (p == 'd')
            CALL((int, int, int, int, int, double, const void *, int, const void *, int, double,
                  void *, int),
                 o, e0, e1, m, n, 1.0, A, lda, B, ldb, 0.5, C, ldc);
        else
            CALL((int, int, int, int, int, const void *, const void *, int, const void *, int,
                  const void *, void *, int),
                 o, e0, e1, m, n, al, A, lda, B, ldb, be, C, ldc);
        break;
    case F_SYRK:
        if (p == 's')
            CALL((int, int, int, int, int, float, const void *, int, float, void *, int), o, e0, e1,
                 n, k, 1.0f, A, lda, 0.5f, C, ldc);
        else if (p == 'd')
            CALL((int, int, int, int, int, double, const void *, int, double, void *, int), o, e0,
                 e1, n, k, 1.0, A, lda, 0.5, C, ldc);
        else
            CALL((int, int, int, int, int, const void *, const void *, int, const void *, void *,
                  int),
                 o, e0, e1, n, k, al, A, lda, be, C, ldc);
        break;
    case F_HERK: /* real alpha and beta by value */
        if (sp)
            CALL((int, int, int, int, int, float, const void *, int, float, void *, int), o, e0, e1,
                 n, k, 1.0f, A, lda, 0.5f, C, ldc);
        else
            CALL((int, int, int, int, int, double, const void *, int, double, void *, int), o, e0,
                 e1, n, k, 1.0, A, lda, 0.5, C, ldc);
        break;
    case F_SYR2K:
        if (p == 's')
            CALL((int, int, int, int, int, float, const void *, int, const void *, int, float,
                  void *, int),
                 o, e0, e1, n, k, 1.0f, A, lda, B, ldb, 0.5f, C, ldc);
        else if (p == 'd')
            CALL((int, int, int, int, int, double, const void *, int, const void *, int, double,
                  void *, int),
                 o, e0, e1, n, k, 1.0, A, lda, B, ldb, 0.5, C, ldc);
        else
            CALL((int, int, int, int, int, const void *, const void *, int, const void *, int,
                  const void *, void *, int),
                 o, e0, e1, n, k, al, A, lda, B, ldb, be, C, ldc);
        break;
    case F_HER2K: /* complex alpha by pointer, real beta by value */
        if (sp)
            CALL((int, int, int, int, int, const void *, const void *, int, const void *, int,
                  float, void *, int),
                 o, e0, e1, n, k, al, A, lda, B, ldb, 0.5f, C, ldc);
        else
            CALL((int, int, int, int, int, const void *, const void *, int, const void *, int,
                  double, void *, int),
                 o, e0, e1, n, k, al, A, lda, B, ldb, 0.5, C, ldc);
        break;
    case F_TRMM:
        if (p == 's')
            CALL((int, int, int, int, int, int, int, float, const void *, int, void *, int), o, e0,
                 e1, e2, e3, m, n, 1.0f, A, lda, B, ldb);
        else if (p == 'd')
            CALL((int, int, int, int, int, int, int, double, const void *, int, void *, int), o, e0,
                 e1, e2, e3, m, n, 1.0, A, lda, B, ldb);
        else
            CALL((int, int, int, int, int, int, int, const void *, const void *, int, void *, int),
                 o, e0, e1, e2, e3, m, n, al, A, lda, B, ldb);
        break;
    }
#undef CALL
    (void)real;
}

/* The handler calls of one call, as hook_log shows them, and the globals after it. */
static const char *hooks_of(void *fn, enum fam f, char p, const struct l3args *a) {
    static char out[sizeof hook_log + 64];
    hook_reset();
    RowMajorStrg = CBLAS_CallFromC = 0;
    call_l3(fn, f, p, a);
    snprintf(out, sizeof out, "%s%s", hook_log,
             RowMajorStrg || CBLAS_CallFromC ? " (globals left set)" : "");
    return out;
}

static void *tess_fn(const char *name) {
    void *f = dlsym(RTLD_DEFAULT, name); /* the library's: linked before any other BLAS */
    if (!f) TEST_FAIL_("%s not found", name);
    return f;
}

enum {
    COL = CblasColMajor,
    ROW = CblasRowMajor,
    NT = CblasNoTrans,
    TR = CblasTrans,
    CT = CblasConjTrans,
    UP = CblasUpper,
    LO = CblasLower,
    LE = CblasLeft,
    RI = CblasRight,
    UN = CblasUnit,
    NU = CblasNonUnit
};

/* What Debian's reference CBLAS (libblas3, netlib's CBLAS/src of LAPACK 3.11) does with
 * these calls, read from its source and seen from a program that defines both handlers
 * (and, for the last column, cblas_xerbla only): which handler, its arguments, and the
 * globals the handler sees. */
static const struct pinned {
    const char *rout;
    enum fam f;
    struct l3args a;
    const char *with_xerbla, *cblas_only;
} pinned[] = {
    /* the reference's Fortran routine rejects lda of the folded call (position 10; the
     * reference's own XERBLA passes cblas_xerbla 11 and a handler swaps it back to 9) */
    {"cblas_dgemm",
     F_GEMM,
     {ROW, {NT, NT}, 2, 2, 2, 1, 2, 2},
     "xerbla_('DGEMM ', 10) RowMajorStrg=1 CBLAS_CallFromC=1;",
     "cblas_xerbla(11, 'cblas_dgemm ', '', 0) RowMajorStrg=1 CBLAS_CallFromC=1;"},
    {"cblas_dgemm",
     F_GEMM,
     {ROW, {NT, NT}, 2, 2, 2, 2, 1, 2},
     "xerbla_('DGEMM ', 8) RowMajorStrg=1 CBLAS_CallFromC=1;",
     "cblas_xerbla(9, 'cblas_dgemm ', '', 0) RowMajorStrg=1 CBLAS_CallFromC=1;"},
    {"cblas_dgemm",
     F_GEMM,
     {COL, {NT, NT}, 2, 2, 2, 2, 2, 1},
     "xerbla_('DGEMM ', 13) RowMajorStrg=0 CBLAS_CallFromC=1;",
     "cblas_xerbla(14, 'cblas_dgemm ', '', 0) RowMajorStrg=0 CBLAS_CallFromC=1;"},
    /* its C layer: row-major TransB is position 2 */
    {"cblas_dgemm",
     F_GEMM,
     {ROW, {NT, 99}, 2, 2, 2, 2, 2, 2},
     "cblas_xerbla(2, 'cblas_dgemm', 'Illegal TransB setting, %d\\n', 99) RowMajorStrg=1 CBLAS_CallFromC=1;",
     NULL},
    {"cblas_sgemm",
     F_GEMM,
     {COL, {NT, 99}, 2, 2, 2, 2, 2, 2},
     "cblas_xerbla(3, 'cblas_sgemm', 'Illegal TransB setting, %d\\n', 99) RowMajorStrg=0 CBLAS_CallFromC=1;",
     NULL},
    {"cblas_zgemm",
     F_GEMM,
     {7, {NT, NT}, 2, 2, 2, 2, 2, 2},
     "cblas_xerbla(1, 'cblas_zgemm', 'Illegal layout setting, %d\\n', 7) RowMajorStrg=0 CBLAS_CallFromC=1;",
     NULL},
    /* row-major Uplo: 3 for SYRK, HERK, SYR2K, 2 for HER2K */
    {"cblas_dsyrk",
     F_SYRK,
     {ROW, {99, NT}, 0, 2, 2, 2, 2, 2},
     "cblas_xerbla(3, 'cblas_dsyrk', 'Illegal Uplo setting, %d\\n', 99) RowMajorStrg=1 CBLAS_CallFromC=1;",
     NULL},
    {"cblas_zher2k",
     F_HER2K,
     {ROW, {99, NT}, 0, 2, 2, 2, 2, 2},
     "cblas_xerbla(2, 'cblas_zher2k', 'Illegal Uplo setting, %d\\n', 99) RowMajorStrg=1 CBLAS_CallFromC=1;",
     NULL},
    /* column-major complex SYRK takes ConjTrans, HERK Trans, to the Fortran routine, which
     * rejects it; row-major takes both as the transposing letter: no error */
    {"cblas_zsyrk",
     F_SYRK,
     {COL, {UP, CT}, 0, 2, 2, 2, 2, 2},
     "xerbla_('ZSYRK ', 2) RowMajorStrg=0 CBLAS_CallFromC=1;",
     "cblas_xerbla(3, 'cblas_zsyrk ', '', 0) RowMajorStrg=0 CBLAS_CallFromC=1;"},
    {"cblas_zsyrk", F_SYRK, {ROW, {UP, CT}, 0, 2, 2, 2, 2, 2}, "", ""},
    {"cblas_cherk",
     F_HERK,
     {COL, {LO, TR}, 0, 2, 2, 2, 2, 2},
     "xerbla_('CHERK ', 2) RowMajorStrg=0 CBLAS_CallFromC=1;",
     "cblas_xerbla(3, 'cblas_cherk ', '', 0) RowMajorStrg=0 CBLAS_CallFromC=1;"},
    {"cblas_cherk", F_HERK, {ROW, {LO, TR}, 0, 2, 2, 2, 2, 2}, "", ""},
    /* row-major TRSM: m < 0 is n of the folded call (6) */
    {"cblas_dtrsm",
     F_TRMM,
     {ROW, {LE, UP, NT, NU}, -1, 2, 0, 2, 2, 0},
     "xerbla_('DTRSM ', 6) RowMajorStrg=1 CBLAS_CallFromC=1;",
     "cblas_xerbla(7, 'cblas_dtrsm ', '', 0) RowMajorStrg=1 CBLAS_CallFromC=1;"},
};

/* Every case above reaches the program's handlers as the reference passes it, and the
 * library leaves RowMajorStrg and CBLAS_CallFromC at 0 after the call. */
TEST(cblas_errors_as_reference_pinned) {
#ifdef TEST_BLAS_NO_XERBLA
    const int with = 0;
#else
    const int with = 1;
#endif
    for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
        const struct pinned *c = &pinned[i];
        const char *want = with || !c->cblas_only ? c->with_xerbla : c->cblas_only;
        const char *got = hooks_of(tess_fn(c->rout), c->f, c->rout[6], &c->a);
        ASSERT_MSG(!strcmp(got, want), "case %zu %s layout %d: got \"%s\", the reference \"%s\"", i,
                   c->rout, c->a.layout, got, want);
    }
}

#ifndef TEST_BLAS_NO_XERBLA
/* The reference CBLAS when installed (Debian's libblas3; TEST_BLAS_REFERENCE names another
 * netlib libblas.so.3 with CBLAS), opened RTLD_LOCAL: its symbols do not replace ours, its
 * own calls find the program's handlers and globals first, as in a program linked to it;
 * its Fortran routines' calls (dgemm_ ...) reach this library's Fortran door, whose
 * checks the reference's own tester holds to netlib (blas_tester:xblat3*). NULL if absent. */
static void *reference_cblas(void) {
    const char *path = getenv("TEST_BLAS_REFERENCE");
    if (!path || !*path) path = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3";
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h && !dlsym(h, "cblas_dgemm")) {
        dlclose(h);
        h = NULL;
    }
    if (!h)
        fprintf(stderr, "  (no reference CBLAS at %s: compared with the pinned cases only)\n",
                path);
    return h;
}

/* Every CBLAS level-3 routine, both layouts and a bad one, every value of each enumerated
 * argument (and a bad one), each dimension negative and each leading dimension too small
 * under every option: the handler calls (which handler, name, position, message, value,
 * RowMajorStrg and CBLAS_CallFromC as the handler sees them) are the reference's, call by
 * call. (Left out: column-major ctrmm/ztrmm with a bad Diag, after which the reference
 * calls its Fortran routine with an unset letter.) */
TEST(cblas_errors_as_reference_all) {
    void *ref = reference_cblas();
    if (!ref) return;
    static const struct {
        const char *kind;
        enum fam f;
        const char *prec;
    } routines[] = {
        {"gemm", F_GEMM, "sdcz"}, {"symm", F_SYMM, "sdcz"}, {"hemm", F_SYMM, "cz"},
        {"syrk", F_SYRK, "sdcz"}, {"herk", F_HERK, "cz"},   {"syr2k", F_SYR2K, "sdcz"},
        {"her2k", F_HER2K, "cz"}, {"trmm", F_TRMM, "sdcz"}, {"trsm", F_TRMM, "sdcz"},
    };
    static const int tr[3] = {NT, TR, CT}, ul[2] = {UP, LO}, sd[2] = {LE, RI}, dg[2] = {UN, NU};
    int compared = 0, errors = 0;
    for (size_t r = 0; r < sizeof routines / sizeof routines[0]; r++)
        for (const char *p = routines[r].prec; *p; p++) {
            char name[24];
            snprintf(name, sizeof name, "cblas_%c%s", *p, routines[r].kind);
            void *mine = tess_fn(name), *theirs = dlsym(ref, name);
            ASSERT_MSG(theirs != NULL, "the reference has no %s", name);
            enum fam f = routines[r].f;
            int ne = f == F_TRMM ? 4 : 2;
            /* the option sets: every combination of the enumerated arguments' values */
            int nopt = f == F_GEMM ? 9 : f == F_SYMM ? 4 : f == F_TRMM ? 24 : 6;
            for (int layout = 0; layout < 3; layout++)
                for (int opt = 0; opt < nopt; opt++)
                    for (int what = -1; what < 4 + 6; what++) {
                        /* what: -1 valid, 0..3 enumerated argument what bad, 4..6 m, n, k
                         * negative, 7..9 lda, ldb, ldc too small */
                        struct l3args a = {
                            layout == 0 ? COL : layout == 1 ? ROW : 7, {0}, 3, 4, 5, 8, 8, 8};
                        int x = opt;
                        switch (f) {
                        case F_GEMM: a.e[0] = tr[x % 3], a.e[1] = tr[x / 3]; break;
                        case F_SYMM: a.e[0] = sd[x % 2], a.e[1] = ul[x / 2]; break;
                        case F_TRMM:
                            a.e[0] = sd[x % 2], x /= 2, a.e[1] = ul[x % 2], x /= 2;
                            a.e[2] = tr[x % 3], a.e[3] = dg[x / 3];
                            break;
                        default: a.e[0] = ul[x % 2], a.e[1] = tr[x / 2]; break;
                        }
                        if (what >= 0 && what < 4) {
                            if (what >= ne) continue;
                            a.e[what] = 99;
                            if (layout == 0 && f == F_TRMM && what == 3 && (*p == 'c' || *p == 'z'))
                                continue; /* the reference goes on with DI unset */
                        }
                        if (what == 4) a.m = -1;
                        if (what == 5) a.n = -1;
                        if (what == 6) a.k = -1;
                        if (what == 7) a.lda = 1;
                        if (what == 8) a.ldb = 1;
                        if (what == 9) a.ldc = 1;
                        /* an unused dimension changes nothing; valid calls only where the
                         * reference's C layer treats the options differently */
                        int rank = f == F_SYRK || f == F_HERK || f == F_SYR2K || f == F_HER2K;
                        if ((what == 4 && rank) || (what == 6 && (f == F_SYMM || f == F_TRMM)) ||
                            (what == 8 && (f == F_SYRK || f == F_HERK)) ||
                            (what == 9 && f == F_TRMM))
                            continue;
                        if (what == -1 && !rank) continue;
                        char got[sizeof hook_log + 64], want[sizeof hook_log + 64];
                        snprintf(want, sizeof want, "%s", hooks_of(theirs, f, *p, &a));
                        snprintf(got, sizeof got, "%s", hooks_of(mine, f, *p, &a));
                        ASSERT_MSG(!strcmp(got, want),
                                   "%s layout %d options %d %d %d %d m %d n %d k %d lda %d ldb "
                                   "%d ldc %d: got \"%s\", the reference \"%s\"",
                                   name, a.layout, a.e[0], a.e[1], a.e[2], a.e[3], a.m, a.n, a.k,
                                   a.lda, a.ldb, a.ldc, got, want);
                        compared++;
                        errors += want[0] != '\0';
                    }
        }
    fprintf(stderr, "  %d calls as the reference's (%d of them errors)\n", compared, errors);
    ASSERT_GT(errors, 1000);
    dlclose(ref);
}

/* ---- spans that cannot be addressed ------------------------------------------------------ */

void scipy_cblas_dgemm64_(int o, int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha,
                          const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                          double *C, int64_t ldc);
void scipy_cblas_dsyrk64_(int o, int u, int t, int64_t n, int64_t k, double alpha, const double *A,
                          int64_t lda, double beta, double *C, int64_t ldc);
void dtrmm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m,
            const int *n, const double *alpha, const double *A, const int *lda, double *B,
            const int *ldb, size_t, size_t, size_t, size_t);

static double span_A[64], span_B[64], span_C[64];

/* One call of each door whose dimensions pass netlib's checks but whose arrays span more
 * than the address space (the span check tess_gemm does). */
static void span_call(int which) {
    const int64_t big = (int64_t)1 << 61;
    int one = 1, imax = INT_MAX, two = 2, kbig = 1 << 30;
    double a = 1, b = 0;
    double za[2] = {1, 0}, zb[2] = {0, 0};
    switch (which) {
    case 0: /* numpy's wheel name, column-major: A is 2^61 x 1, 2^64 bytes */
        scipy_cblas_dgemm64_(COL, NT, NT, big, 1, 1, 1.0, span_A, big, span_B, 1, 0.0, span_C, big);
        break;
    case 1: /* row-major: A (k x n of the folded call, B) 1 x 2^61 with leading dimension 1 */
        scipy_cblas_dgemm64_(ROW, NT, NT, big, 1, 1, 1.0, span_A, 1, span_B, 1, 0.0, span_C, 1);
        break;
    case 2: scipy_cblas_dsyrk64_(COL, UP, NT, big, 1, 1.0, span_A, big, 0.0, span_C, big); break;
    case 3: /* 32-bit integers: C 1 x (2^31 - 1) with ldc 2^31 - 1, 2^66 bytes */
        zgemm_("N", "N", &one, &imax, &one, za, span_A, &one, span_B, &one, zb, span_C, &imax, 1,
               1);
        break;
    case 4:
        cblas_zgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 1, INT_MAX, 1, za, span_A, 1, span_B,
                    1, zb, span_C, INT_MAX);
        break;
    case 5: /* B of TRMM 1 x (2^31 - 1) with ldb 2^31 - 1 */
        dtrmm_("L", "U", "N", "N", &one, &imax, &a, span_A, &one, span_C, &imax, 1, 1, 1, 1);
        break;
    case 6: /* alpha = 0: A (2^61 elements) is not read, so nothing to refuse: C = beta C */
        b = 0.5;
        dgemm_("N", "N", &two, &two, &kbig, (const double[]){0.0}, span_A, &imax, span_B, &kbig, &b,
               span_C, &two, 1, 1);
        break;
    }
}

/* Each door refuses such a call through the program's handler, at the array's position in
 * the (folded) Fortran call, before touching memory: no crash, C unchanged. A call that
 * does not touch the array (alpha = 0) is not refused. Each call runs in a child process,
 * so a crash fails this test only. With TEST_WHEEL_BLAS (the wheel's stand-in library,
 * tests/wheel_blas.c) loaded RTLD_LOCAL first, as numpy loads its OpenBLAS, the
 * scipy_cblas_*64_ calls have a next definition, which must not be called either. */
TEST(spans_refused_before_memory) {
    static const char *const want[] = {
        "xerbla_('DGEMM ', 7) RowMajorStrg=0 CBLAS_CallFromC=1;",
        "xerbla_('DGEMM ', 9) RowMajorStrg=1 CBLAS_CallFromC=1;",
        "xerbla_('DSYRK ', 6) RowMajorStrg=0 CBLAS_CallFromC=1;",
        "xerbla_('ZGEMM ', 12) RowMajorStrg=0 CBLAS_CallFromC=0;",
        "xerbla_('ZGEMM ', 12) RowMajorStrg=0 CBLAS_CallFromC=1;",
        "xerbla_('DTRMM ', 10) RowMajorStrg=0 CBLAS_CallFromC=0;",
        "",
    };
    for (int i = 0; i < 7; i++) {
        int fd[2];
        ASSERT_OK(pipe(fd));
        fflush(NULL);
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
            close(fd[0]);
            alarm(60);
            const char *wheel = getenv("TEST_WHEEL_BLAS");
            long *wheel_calls = NULL, before = 0;
            if (wheel && *wheel) {
                void *h = dlopen(wheel, RTLD_NOW | RTLD_LOCAL);
                wheel_calls = h ? dlsym(h, "wheel_calls") : NULL;
                if (!wheel_calls) _exit(3);
                before = *wheel_calls;
            }
            for (int j = 0; j < 64; j++) span_C[j] = 7.0;
            hook_reset();
            span_call(i);
            int same = 1;
            for (int j = 0; j < 64; j++) same &= span_C[j] == (i == 6 && j < 4 ? 3.5 : 7.0);
            char out[sizeof hook_log + 48];
            int len = snprintf(out, sizeof out, "%s%s%s", hook_log, same ? "" : " (C changed)",
                               wheel_calls && *wheel_calls != before ? " (the wheel called)" : "");
            if (write(fd[1], out, (size_t)len) != len) _exit(2);
            _exit(0);
        }
        close(fd[1]);
        char got[sizeof hook_log + 48];
        ssize_t len = 0, r;
        while ((r = read(fd[0], got + len, sizeof got - 1 - (size_t)len)) > 0) len += r;
        got[len] = '\0';
        close(fd[0]);
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "case %d: the call %s %d", i,
                   WIFSIGNALED(status) ? "died of signal" : "exited",
                   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        ASSERT_MSG(!strcmp(got, want[i]), "case %d: got \"%s\", expected \"%s\"", i, got, want[i]);
    }
}
#endif

/* zgemm_ with conjugate transposes, through whichever path the routing picks. */
TEST(zgemm_conj) {
    int m = 150, n = 140, k = 160;
    double *A = malloc(sizeof(double) * 2 * (size_t)k * m);
    double *B = malloc(sizeof(double) * 2 * (size_t)n * k);
    double *C = malloc(sizeof(double) * 2 * (size_t)m * n);
    fill(A, 2 * (size_t)k * m, 11);
    fill(B, 2 * (size_t)n * k, 12);
    double alpha[2] = {0.5, -1.0}, beta[2] = {0, 0};
    zgemm_("C", "c", &m, &n, &k, alpha, A, &k, B, &n, beta, C, &m, 1, 1);
    /* C(i, j) = alpha sum_l conj(A(l, i)) conj(B(j, l)) */
    double err = 0, scale = 0;
    for (int j = 0; j < n; j += 7)
        for (int i = 0; i < m; i += 5) {
            double sr = 0, si = 0;
            for (int l = 0; l < k; l++) {
                double ar = A[2 * (l + (size_t)i * k)], ai = -A[2 * (l + (size_t)i * k) + 1];
                double br = B[2 * (j + (size_t)l * n)], bi = -B[2 * (j + (size_t)l * n) + 1];
                sr += ar * br - ai * bi, si += ar * bi + ai * br;
            }
            double rr = alpha[0] * sr - alpha[1] * si, ri = alpha[0] * si + alpha[1] * sr;
            err = fmax(err, fabs(rr - C[2 * (i + (size_t)j * m)]));
            err = fmax(err, fabs(ri - C[2 * (i + (size_t)j * m) + 1]));
            scale = fmax(scale, fabs(rr) + fabs(ri));
        }
    ASSERT_MSG(err <= 1e-13 * scale, "zgemm CC error %g (scale %g)", err, scale);
    free(A), free(B), free(C);
}

/* ---- concurrency --------------------------------------------------------------------------- */

#define NTHREADS 8
struct worker_arg {
    int id;
    double err;
};

static void *worker(void *p) {
    struct worker_arg *w = p;
    /* each thread alternates the two doors and a small and a large shape */
    for (int it = 0; it < 4; it++) {
        int big = (it + w->id) % 2;
        int m = big ? 260 : 40 + w->id, n = big ? 250 : 30, k = big ? 270 : 20 + it;
        double e = one_gemm((it + w->id) % 3, it % 2 ? 'T' : 'N', w->id % 2 ? 'T' : 'N', m, n, k,
                            1.0, it % 2 ? 0.0 : 1.0, (unsigned)(100 * w->id + it));
        if (e > w->err) w->err = e;
    }
    return NULL;
}

/* 8 threads call dgemm_ and cblas_dgemm at once; every result is right. */
TEST(threads_at_once) {
    pthread_t t[NTHREADS];
    struct worker_arg a[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        a[i] = (struct worker_arg){.id = i, .err = 0};
        ASSERT_OK(pthread_create(&t[i], NULL, worker, &a[i]));
    }
    for (int i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < NTHREADS; i++)
        ASSERT_MSG(a[i].err < 1e-13, "thread %d: error %g", i, a[i].err);
}

/* fork after the runtime started: the child's calls complete (on the CPU BLAS: the
 * runtime's threads are not in the child), its exit does not hang, and the parent goes on
 * using the runtime. */
TEST(fork_after_start) {
    ASSERT(one_gemm(0, 'N', 'N', 300, 300, 300, 1.0, 0.0, 77) < 1e-13); /* starts it */
    fflush(NULL);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        alarm(60); /* a hang becomes SIGALRM, which the parent sees */
        double e = one_gemm(0, 'N', 'T', 300, 280, 290, 1.0, 0.5, 78);
        e = fmax(e, one_gemm(2, 'T', 'N', 270, 300, 260, 1.0, 0.0, 79));
        exit(e < 1e-13 ? 0 : 3); /* exit, not _exit: the drop-in's exit handlers run */
    }
    ASSERT(one_gemm(1, 'T', 'T', 300, 300, 300, 1.0, 1.0, 80) < 1e-13);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_MSG(WIFEXITED(status), "child did not exit (signal %d)",
               WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    ASSERT_EQ(WEXITSTATUS(status), 0);
}

TEST_MAIN()
