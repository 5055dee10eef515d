/* src/blas/check.c: the one checked path of the drop-in library and its contract with the
 * program's error handlers. Every door (fortran.c, cblas.c, scipy64.c; 32- and 64-bit
 * integers) hands its column-major call to tess__blas_submit (LAPACK: tess__lapack_submit),
 * which checks it, reports a bad argument or runs it (route.c): nothing reaches the CPU
 * BLAS, the program's LAPACK or the devices unchecked. LAPACK (Cholesky and LU): reference
 * LAPACK's checks and positions; INFO = -pos is set before its XERBLA is called, and nothing
 * else is written.
 * Checks: netlib's, in netlib's order and positions (tess__blas_check below, one case per
 * routine family), then the spans of every array the call touches (at most PTRDIFF_MAX
 * bytes without wrapping: tess__span_ok), reported at the array's position.
 * Reporting, as the reference (netlib BLAS and CBLAS, Debian's libblas3) does: xerbla_ with
 * the Fortran name; for a CBLAS call that name and the position in the folded call (or,
 * without xerbla_, cblas_xerbla(info + 1, "cblas_dgemm ", "")), with the reference's
 * RowMajorStrg and CBLAS_CallFromC set around it (docs/dropin.md). Handlers are looked up
 * on every (rare) error in the program's global scope, then in the CPU BLAS; without any,
 * netlib's message goes to stderr. The library defines none of them. Owns no state.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "hostblas.h"
#include "blas.h"

static int one_of(char c, const char *set) { return c && strchr(set, c) != NULL; }

int tess__blas_check_netlib(const struct tess__blas_call *c) {
    int cplx = tess__dtypes[c->dt].complex_;
    switch (c->kind) {
    case TESS__BLAS_GEMM: {
        if (!one_of(c->ta, "NTC")) return 1;
        if (!one_of(c->tb, "NTC")) return 2;
        if (c->m < 0) return 3;
        if (c->n < 0) return 4;
        if (c->k < 0) return 5;
        int64_t nrowa = c->ta == 'N' ? c->m : c->k, nrowb = c->tb == 'N' ? c->k : c->n;
        if (c->lda < TESS__MAX(1, nrowa)) return 8;
        if (c->ldb < TESS__MAX(1, nrowb)) return 10;
        if (c->ldc < TESS__MAX(1, c->m)) return 13;
        return 0;
    }
    case TESS__BLAS_SYMM:
    case TESS__BLAS_HEMM: {
        if (!one_of(c->side, "LR")) return 1;
        if (!one_of(c->uplo, "UL")) return 2;
        if (c->m < 0) return 3;
        if (c->n < 0) return 4;
        int64_t nrowa = c->side == 'L' ? c->m : c->n;
        if (c->lda < TESS__MAX(1, nrowa)) return 7;
        if (c->ldb < TESS__MAX(1, c->m)) return 9;
        if (c->ldc < TESS__MAX(1, c->m)) return 12;
        return 0;
    }
    case TESS__BLAS_SYRK:
    case TESS__BLAS_HERK:
    case TESS__BLAS_SYR2K:
    case TESS__BLAS_HER2K: {
        int herm = tess__blas_herm(c->kind), two = tess__blas_rank2(c->kind);
        if (!one_of(c->uplo, "UL")) return 1;
        if (!one_of(c->ta, herm ? "NC" : cplx ? "NT" : "NTC")) return 2;
        if (c->n < 0) return 3;
        if (c->k < 0) return 4;
        int64_t nrowa = c->ta == 'N' ? c->n : c->k;
        if (c->lda < TESS__MAX(1, nrowa)) return 7;
        if (two && c->ldb < TESS__MAX(1, nrowa)) return 9;
        if (c->ldc < TESS__MAX(1, c->n)) return two ? 12 : 10;
        return 0;
    }
    case TESS__BLAS_TRMM:
    case TESS__BLAS_TRSM: {
        if (!one_of(c->side, "LR")) return 1;
        if (!one_of(c->uplo, "UL")) return 2;
        if (!one_of(c->ta, "NTC")) return 3;
        if (!one_of(c->diag, "UN")) return 4;
        if (c->m < 0) return 5;
        if (c->n < 0) return 6;
        int64_t nrowa = c->side == 'L' ? c->m : c->n;
        if (c->lda < TESS__MAX(1, nrowa)) return 9;
        if (c->ldb < TESS__MAX(1, c->m)) return 11;
        return 0;
    }
    case TESS__BLAS_NKINDS: break;
    }
    return 0;
}

/* ---- what a call touches --------------------------------------------------------------- */

/* A scalar of the call's precision, or its real counterpart (HERK's alpha and beta,
 * HER2K's beta): zero, one. */
static tess_dtype_t scalar_dt(tess_dtype_t dt, int real) {
    return !real ? dt : dt == TESS_C ? TESS_S : dt == TESS_Z ? TESS_D : dt;
}
static int is_zero(tess_dtype_t dt, int real, const void *p) {
    tess__scalar_t x;
    tess__scalar_load(scalar_dt(dt, real), &x, p);
    return tess__scalar_is_zero(scalar_dt(dt, real), &x);
}
static int is_one(tess_dtype_t dt, int real, const void *p) {
    tess__scalar_t x;
    tess__scalar_load(scalar_dt(dt, real), &x, p);
    return tess__scalar_is_one(scalar_dt(dt, real), &x);
}

int tess__blas_touches(const struct tess__blas_call *c) {
    enum tess__blas_kind k = c->kind;
    int herm = tess__blas_herm(k), rank = tess__blas_rank(k);
    int tri = k == TESS__BLAS_TRMM || k == TESS__BLAS_TRSM;
    int has_b = k != TESS__BLAS_SYRK && k != TESS__BLAS_HERK && !tri;
    /* netlib's quick returns: nothing to compute, nothing read or written */
    int64_t inner = k == TESS__BLAS_GEMM || rank ? c->k : c->side == 'L' ? c->m : c->n;
    int64_t m = rank ? c->n : c->m, n = c->n;
    if (m == 0 || n == 0) return 0;
    int alpha0 = is_zero(c->dt, k == TESS__BLAS_HERK, c->alpha);
    int no_ab = alpha0 || inner == 0; /* A and B not read */
    if (!tri && is_one(c->dt, herm, c->beta) &&
        (k == TESS__BLAS_SYMM || k == TESS__BLAS_HEMM ? alpha0 : no_ab))
        return 0;
    return TESS__BLAS_TOUCH_C | (no_ab ? 0 : TESS__BLAS_TOUCH_A) |
           (no_ab || !has_b ? 0 : TESS__BLAS_TOUCH_B);
}

/* 1 if the rows x cols array X (leading dimension ld) can be addressed. */
static int span_ok(const struct tess__blas_call *c, const void *X, int64_t rows, int64_t cols,
                   int64_t ld) {
    return rows <= 0 || cols <= 0 ||
           tess__span_ok(X, rows, cols, ld, tess__dtypes[c->dt].size, NULL);
}

int tess__blas_check_span(const struct tess__blas_call *c) {
    int t = tess__blas_touches(c);
    if (!t) return 0;
    int64_t ar = 0, ac = 0, br = 0, bc = 0, cr = c->m, cc = c->n;
    int pa = 0, pb = 0, pc = 0;
    switch (c->kind) {
    case TESS__BLAS_GEMM:
        ar = c->ta == 'N' ? c->m : c->k, ac = c->ta == 'N' ? c->k : c->m;
        br = c->tb == 'N' ? c->k : c->n, bc = c->tb == 'N' ? c->n : c->k;
        pa = 7, pb = 9, pc = 12;
        break;
    case TESS__BLAS_SYMM:
    case TESS__BLAS_HEMM:
        ar = ac = c->side == 'L' ? c->m : c->n;
        br = c->m, bc = c->n;
        pa = 6, pb = 8, pc = 11;
        break;
    case TESS__BLAS_SYRK:
    case TESS__BLAS_HERK:
    case TESS__BLAS_SYR2K:
    case TESS__BLAS_HER2K: {
        int two = tess__blas_rank2(c->kind);
        ar = br = c->ta == 'N' ? c->n : c->k, ac = bc = c->ta == 'N' ? c->k : c->n;
        cr = cc = c->n;
        pa = 6, pb = 8, pc = two ? 11 : 9;
        break;
    }
    case TESS__BLAS_TRMM:
    case TESS__BLAS_TRSM:
        ar = ac = c->side == 'L' ? c->m : c->n;
        pa = 8, pc = 10; /* the in/out B, also named C */
        break;
    case TESS__BLAS_NKINDS: return 0;
    }
    if ((t & TESS__BLAS_TOUCH_A) && !span_ok(c, c->A, ar, ac, c->lda)) return pa;
    if ((t & TESS__BLAS_TOUCH_B) && !span_ok(c, c->B, br, bc, c->ldb)) return pb;
    if ((t & TESS__BLAS_TOUCH_C) && !span_ok(c, c->C, cr, cc, c->ldc)) return pc;
    return 0;
}

int tess__blas_check(const struct tess__blas_call *c) {
    int info = tess__blas_check_netlib(c);
    return info ? info : tess__blas_check_span(c);
}

void tess__blas_submit(const struct tess__blas_call *c) {
    int info = tess__blas_check(c);
    if (info)
        tess__blas_report(c, info);
    else
        tess__blas_run(c);
}

/* ---- the program's handlers ------------------------------------------------------------ */

/* A symbol of the program (global scope) or, failing that, of the CPU BLAS. We define none
 * of these names, so the global lookup cannot find ourselves. global_only: the first. */
static void *find_in(const char *sym, int global_only) {
    void *f = dlsym(RTLD_DEFAULT, sym);
    if (!f && !global_only) {
        const struct tess__hostblas *hb = tess__hostblas();
        if (hb) f = dlsym(hb->handle, sym);
    }
    return f;
}

/* The reference CBLAS's globals (its cblas_globals.c), set in the program and in the CPU
 * BLAS where they exist (they may be one object). */
static void set_cblas_globals(int row_major, int from_c) {
    static const char *const names[2] = {"RowMajorStrg", "CBLAS_CallFromC"};
    const int values[2] = {row_major, from_c};
    const struct tess__hostblas *hb = tess__hostblas();
    for (int i = 0; i < 2; i++) {
        int *g = dlsym(RTLD_DEFAULT, names[i]);
        int *h = hb ? dlsym(hb->handle, names[i]) : NULL;
        if (g) *g = values[i];
        if (h && h != g) *h = values[i];
    }
}

/* xerbla_ with gfortran's convention: the string's length comes as a hidden trailing
 * argument. */
static void call_xerbla(void *f, const char *name, int info) {
    void (*xerbla)(const char *, const int *, size_t);
    memcpy(&xerbla, &f, sizeof f);
    xerbla(name, &info, strlen(name));
}

static void call_cblas_xerbla(void *f, int pos, const char *rout, const char *form, int value) {
    void (*cblas_xerbla)(int, const char *, const char *, ...);
    memcpy(&cblas_xerbla, &f, sizeof f);
    cblas_xerbla(pos, rout, form, value);
}

/* "DGEMM ", "ZPOSV ": the precision's letter and the routine's name, upper case,
 * blank-padded to 6 as netlib's SRNAME. */
static void srname(tess_dtype_t dt, const char *k, char name[8]) {
    int i = 0;
    name[i++] = tess__blas_upper(tess__blas_prefix(dt));
    for (; *k && i < 6; k++) name[i++] = tess__blas_upper(*k);
    while (i < 6) name[i++] = ' ';
    name[i] = '\0';
}

void tess__blas_srname(const struct tess__blas_call *c, char name[8]) {
    srname(c->dt, tess__blas_kind_name[c->kind], name);
}

/* A Fortran routine's report: the program's XERBLA, else the CPU BLAS's, else netlib's
 * message. */
static void fortran_report(const char *name, int info) {
    void *f = find_in("xerbla_", 0);
    if (f)
        call_xerbla(f, name, info);
    else
        fprintf(stderr, " ** On entry to %6s parameter number %2d had an illegal value\n", name,
                info);
}

void tess__blas_report(const struct tess__blas_call *c, int info) {
    char name[8];
    tess__blas_srname(c, name);
    if (c->door == TESS__BLAS_DOOR_FORTRAN) {
        fortran_report(name, info);
        return;
    }
    set_cblas_globals(c->door == TESS__BLAS_DOOR_CBLAS_ROW, 1);
    void *f = find_in("xerbla_", 1), *g;
    if (f) {
        call_xerbla(f, name, info);
    } else if ((g = find_in("cblas_xerbla", 1)) != NULL) {
        /* the reference's XERBLA: "cblas_" and the 6 letters of SRNAME in lower case */
        char rout[16] = "cblas_";
        for (int i = 0; i < 6; i++)
            rout[6 + i] = name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] + 32) : name[i];
        call_cblas_xerbla(g, info + 1, rout, "", 0);
    } else if ((f = find_in("xerbla_", 0)) != NULL) {
        call_xerbla(f, name, info);
    } else {
        fprintf(stderr, " ** On entry to %6s parameter number %2d had an illegal value\n", name,
                info);
    }
    set_cblas_globals(0, 0);
}

void tess__blas_cblas_xerbla(int row_major, int pos, const char *rout, const char *form,
                             int value) {
    set_cblas_globals(row_major, 1);
    void *f = find_in("cblas_xerbla", 0);
    if (f) {
        call_cblas_xerbla(f, pos, rout, form, value);
    } else {
        fprintf(stderr, "Parameter %d to routine %s was incorrect\n", pos, rout);
        if (*form) fprintf(stderr, form, value);
    }
    set_cblas_globals(0, 0);
}

/* ---- LAPACK ------------------------------------------------------------------------------ */

int tess__lapack_check_netlib(const struct tess__lapack_call *c) {
    switch (c->kind) {
    case TESS__LAPACK_GETRF:
        /* ?GETRF: M 1, N 2, LDA 4 */
        if (c->m < 0) return 1;
        if (c->n < 0) return 2;
        if (c->lda < TESS__MAX(1, c->m)) return 4;
        return 0;
    case TESS__LAPACK_GETRS:
        /* ?GETRS: TRANS 1, N 2, NRHS 3, LDA 5, LDB 8 */
        if (!one_of(c->trans, "NTC")) return 1;
        if (c->n < 0) return 2;
        if (c->nrhs < 0) return 3;
        if (c->lda < TESS__MAX(1, c->n)) return 5;
        if (c->ldb < TESS__MAX(1, c->n)) return 8;
        return 0;
    case TESS__LAPACK_GESV:
        /* ?GESV: N 1, NRHS 2, LDA 4, LDB 7 */
        if (c->n < 0) return 1;
        if (c->nrhs < 0) return 2;
        if (c->lda < TESS__MAX(1, c->n)) return 4;
        if (c->ldb < TESS__MAX(1, c->n)) return 7;
        return 0;
    default: break;
    }
    /* ?POTRF: UPLO 1, N 2, LDA 4; ?POTRS and ?POSV: UPLO 1, N 2, NRHS 3, LDA 5, LDB 7 */
    int solve = c->kind != TESS__LAPACK_POTRF;
    if (!one_of(c->uplo, "UL")) return 1;
    if (c->n < 0) return 2;
    if (solve && c->nrhs < 0) return 3;
    if (c->lda < TESS__MAX(1, c->n)) return solve ? 5 : 4;
    if (solve && c->ldb < TESS__MAX(1, c->n)) return 7;
    return 0;
}

/* The LU routines' spans: A (GETRF m x n), IPIV (min(m, n) INTEGERs), B (n x nrhs) when the
 * call reads or writes them (GESV factors A even without a right-hand side), at the
 * positions of reference LAPACK's argument lists. */
static int lu_span(const struct tess__lapack_call *c) {
    size_t es = tess__dtypes[c->dt].size, is = c->info64 ? sizeof(int64_t) : sizeof(int);
    int getrf = c->kind == TESS__LAPACK_GETRF, getrs = c->kind == TESS__LAPACK_GETRS;
    int o = getrs; /* GETRS's positions after TRANS are one higher */
    int64_t d = TESS__MIN(c->m, c->n);
    if (d == 0 || (getrs && c->nrhs == 0)) return 0;
    if (!tess__span_ok(c->A, c->m, c->n, c->lda, es, NULL)) return 3 + o;
    if (!tess__span_ok(c->ipiv, d, 1, d, is, NULL)) return 5 + o;
    if (!getrf && c->nrhs > 0 && !tess__span_ok(c->B, c->n, c->nrhs, c->ldb, es, NULL))
        return 6 + o;
    return 0;
}

int tess__lapack_check(const struct tess__lapack_call *c) {
    int info = tess__lapack_check_netlib(c);
    if (info) return info;
    if (tess__lapack_lu(c->kind)) return lu_span(c);
    /* A (position 3 of POTRF, 4 of the solves) when n > 0 (POSV factors A even without a
     * right-hand side); B (6) when there is one */
    int solve = c->kind != TESS__LAPACK_POTRF;
    size_t es = tess__dtypes[c->dt].size;
    if (c->n > 0 && (c->kind != TESS__LAPACK_POTRS || c->nrhs > 0) &&
        !tess__span_ok(c->A, c->n, c->n, c->lda, es, NULL))
        return solve ? 4 : 3;
    if (solve && c->n > 0 && c->nrhs > 0 && !tess__span_ok(c->B, c->n, c->nrhs, c->ldb, es, NULL))
        return 6;
    return 0;
}

void tess__lapack_report(const struct tess__lapack_call *c, int pos) {
    char name[8];
    srname(c->dt, tess__lapack_kind_name[c->kind], name);
    fortran_report(name, pos);
}

void tess__lapack_submit(const struct tess__lapack_call *c) {
    int pos = tess__lapack_check(c);
    if (pos) {
        tess__lapack_set_info(c, -pos);
        tess__lapack_report(c, pos);
    } else {
        tess__lapack_run(c);
    }
}
