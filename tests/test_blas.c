/* tests/test_blas.c: the drop-in library (libtessera_blas.so, linked first, so dgemm_ and
 * cblas_dgemm are its symbols) seen from a C program: results against a plain reference
 * loop, the netlib contract (beta = 0 does not read C, nothing written outside the
 * referenced part, NaN propagation, xerbla_/cblas_xerbla with the right positions, letters
 * in either case), concurrent calls from 8 threads, and fork after the runtime started.
 * Which calls went to tessera is read by tests/test_dropin.sh from the exit summary
 * (TESSERA_BLAS_VERBOSE=2); this program checks the numbers and the contract.
 * This program defines xerbla_ and cblas_xerbla, as a BLAS user may: the library must call
 * them (it finds them in the program) and never define its own.
 */
/* <cblas.h> declares cblas_xerbla with char * (OpenBLAS 0.3.21) or const char * (0.3.26)
 * arguments; this test defines its own, so the header's declaration is renamed away. */
#define cblas_xerbla tess_test_cblas_xerbla_decl
#include <cblas.h>
#undef cblas_xerbla
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const double *alpha, const double *A, const int *lda, const double *B,
            const int *ldb, const double *beta, double *C, const int *ldc, size_t, size_t);
void zgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k,
            const void *alpha, const void *A, const int *lda, const void *B, const int *ldb,
            const void *beta, void *C, const int *ldc, size_t, size_t);
void dsyrk_(const char *uplo, const char *trans, const int *n, const int *k,
            const double *alpha, const double *A, const int *lda, const double *beta,
            double *C, const int *ldc, size_t, size_t);

/* ---- the program's error handlers ----------------------------------------------------- */

static char last_srname[16];
static int last_info, xerbla_calls;
static char last_rout[32];
static int last_pos, cblas_xerbla_calls;

/* exported (the build hides symbols by default): the library finds them with dlsym */
#define VISIBLE __attribute__((visibility("default")))

VISIBLE void xerbla_(const char *srname, const int *info, size_t len) {
    size_t n = len < sizeof last_srname - 1 ? len : sizeof last_srname - 1;
    memcpy(last_srname, srname, n);
    last_srname[n] = '\0';
    last_info = *info;
    xerbla_calls++;
}

VISIBLE void cblas_xerbla(blasint p, const char *rout, const char *form, ...) {
    snprintf(last_rout, sizeof last_rout, "%s", rout);
    last_pos = p;
    cblas_xerbla_calls++;
    (void)form;
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
static void ref_dgemm(char ta, char tb, int m, int n, int k, double alpha, const double *A,
                      int lda, const double *B, int ldb, double beta, double *C, int ldc) {
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
static double one_gemm(int via, char ta_, char tb_, int m, int n, int k, double alpha,
                       double beta, unsigned seed) {
    char ta = (char)(ta_ & ~0x20), tb = (char)(tb_ & ~0x20);  /* upper case, for us */
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
                    tb == 'N' ? CblasNoTrans : CblasTrans, m, n, k, alpha, A, lda, B, ldb,
                    beta, C, ldc);
    } else {
        /* the same product seen as row-major: C^T (n x m) = op(B)^T op(A)^T */
        cblas_dgemm(CblasRowMajor, tb == 'N' ? CblasNoTrans : CblasTrans,
                    ta == 'N' ? CblasNoTrans : CblasTrans, n, m, k, alpha, B, ldb, A, lda,
                    beta, C, ldc);
    }
    double e = max_rel(C, R, ldc, n, ldc);  /* the whole ldc: rows past m must be untouched */
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
                ASSERT_MSG(e < 1e-13, "via %d %c%c %dx%dx%d beta %g: error %g", via, ta, tb,
                           sh[0], sh[1], sh[2], beta, e);
            }
}

/* beta = 0: C full of NaN is not read; the rows between m and ldc keep their bytes; a NaN
 * in A reaches C as in the reference; alpha = 0 does not read A and B. */
TEST(gemm_netlib_semantics) {
    for (int big = 0; big < 2; big++) {
        int m = big ? 200 : 9, n = big ? 190 : 8, k = big ? 210 : 7, ld = k + 5;  /* > m */
        double *A = malloc(sizeof(double) * (size_t)ld * k);
        double *B = malloc(sizeof(double) * (size_t)ld * n);
        double *C = malloc(sizeof(double) * (size_t)ld * n);
        double *R = malloc(sizeof(double) * (size_t)ld * n);
        fill(A, (size_t)ld * k, 5);
        fill(B, (size_t)ld * n, 6);
        for (size_t i = 0; i < (size_t)ld * n; i++) C[i] = NAN;
        for (int j = 0; j < n; j++)  /* a marker between m and ld */
            for (int i = m; i < ld; i++) C[i + (size_t)j * ld] = 42.0;
        memcpy(R, C, sizeof(double) * (size_t)ld * n);
        double one = 1, zero = 0;
        ref_dgemm('N', 'N', m, n, k, 1.0, A, ld, B, ld, 0.0, R, ld);
        dgemm_("N", "N", &m, &n, &k, &one, A, &ld, B, &ld, &zero, C, &ld, 1, 1);
        ASSERT_MSG(max_rel(C, R, ld, n, ld) < 1e-13, "beta = 0 with NaN C (m = %d)", m);

        A[3] = NAN;  /* row 3 of C must come out NaN, the rest finite */
        dgemm_("N", "N", &m, &n, &k, &one, A, &ld, B, &ld, &zero, C, &ld, 1, 1);
        for (int j = 0; j < n; j++) {
            ASSERT_MSG(isnan(C[3 + (size_t)j * ld]), "NaN of A lost at (3, %d)", j);
            ASSERT_MSG(!isnan(C[4 + (size_t)j * ld]), "NaN spread to (4, %d)", j);
            ASSERT_MSG(C[m + (size_t)j * ld] == 42.0, "wrote past m in column %d", j);
        }

        for (size_t i = 0; i < (size_t)ld * k; i++) A[i] = NAN;  /* alpha = 0: not read */
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

/* Bad arguments: the program's xerbla_ gets the blank-padded name and the Fortran
 * position, the program's cblas_xerbla the CBLAS name and position (row-major lda of
 * cblas_dgemm is position 9, ldb 11), and C is not touched. */
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

    cblas_xerbla_calls = 0;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0, A, 1, B, 2, 0.0, C, 2);
    ASSERT_EQ(cblas_xerbla_calls, 1);
    ASSERT(!strcmp(last_rout, "cblas_dgemm"));
    ASSERT_EQ(last_pos, 9);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0, A, 2, B, 1, 0.0, C, 2);
    ASSERT_EQ(last_pos, 11);
    cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0, A, 2, B, 2, 0.0, C, 1);
    ASSERT_EQ(last_pos, 14);
    cblas_dgemm((enum CBLAS_ORDER)7, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0, A, 2, B, 2, 0.0,
                C, 2);
    ASSERT_EQ(last_pos, 1);
    ASSERT_EQ(cblas_xerbla_calls, 4);
    for (int i = 0; i < 16; i++) ASSERT_MSG(C[i] == 7.0, "C[%d] written by a bad call", i);
}

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
struct worker_arg { int id; double err; };

static void *worker(void *p) {
    struct worker_arg *w = p;
    /* each thread alternates the two doors and a small and a large shape */
    for (int it = 0; it < 4; it++) {
        int big = (it + w->id) % 2;
        int m = big ? 260 : 40 + w->id, n = big ? 250 : 30, k = big ? 270 : 20 + it;
        double e = one_gemm((it + w->id) % 3, it % 2 ? 'T' : 'N', w->id % 2 ? 'T' : 'N', m, n,
                            k, 1.0, it % 2 ? 0.0 : 1.0, (unsigned)(100 * w->id + it));
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
    ASSERT(one_gemm(0, 'N', 'N', 300, 300, 300, 1.0, 0.0, 77) < 1e-13);  /* starts it */
    fflush(NULL);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        alarm(60);  /* a hang becomes SIGALRM, which the parent sees */
        double e = one_gemm(0, 'N', 'T', 300, 280, 290, 1.0, 0.5, 78);
        e = fmax(e, one_gemm(2, 'T', 'N', 270, 300, 260, 1.0, 0.0, 79));
        exit(e < 1e-13 ? 0 : 3);  /* exit, not _exit: the drop-in's exit handlers run */
    }
    ASSERT(one_gemm(1, 'T', 'T', 300, 300, 300, 1.0, 1.0, 80) < 1e-13);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_MSG(WIFEXITED(status), "child did not exit (signal %d)",
               WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    ASSERT_EQ(WEXITSTATUS(status), 0);
}

TEST_MAIN()
