/* tests/test_level3.c: the level-3 routines other than GEMM (tess_?symm/hemm, ?syrk/herk,
 * ?syr2k/her2k, ?trmm, ?trsm and their generic twins) against OpenBLAS's cblas in every
 * option combination (side x uplo x trans x diag as the routine has them), every
 * precision, both layouts, shapes that are not multiples of the tile (1 and 0 included),
 * padded leading dimensions (padding untouched), alpha = 0 with NaN operands, beta = 0 with
 * a NaN C, the unreferenced triangle of A full of NaN (never read), the untouched triangle
 * of C checked byte for byte, netlib's quick returns, and every argument error; each result
 * within a rounding bound (verify). Run under each setup of the table `configs` below
 * (`test_level3 CONFIG`, CTest's test_level3:CONFIG): CPU worker, 2 emulated devices with
 * tile 7, 3 under a memory cap that forces eviction, jitter, 3 with TRSM by step-level
 * dependencies, emulated + CPU. Shapes scale
 * with TESSERA_TILE (the unit U below; 8 when unset). A setup may turn on the counter
 * assertions of level3_counters: spread (SYRK and TRSM tasks on more than one device),
 * hits (TRSM operands served from a device cache: L1 or L2), evict.
 */
#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "l3_dispatch.h"
#include "oracle.h"
#include "ref.h"
#include "slowdown.h"
#include "tessera.h"

#define GUARD 16 /* elements after every matrix that nobody may write */

static const tess_dtype_t dtypes[4] = {TESS_S, TESS_D, TESS_C, TESS_Z};
static const tess_trans_t trans3[3] = {TESS_NO_TRANS, TESS_TRANS, TESS_CONJ_TRANS};
static const tess_side_t sides[2] = {TESS_LEFT, TESS_RIGHT};
static const tess_uplo_t uplos[2] = {TESS_UPPER, TESS_LOWER};
static const tess_diag_t diags[2] = {TESS_NON_UNIT, TESS_UNIT};
static const tess_layout_t layouts[2] = {TESS_COL_MAJOR, TESS_ROW_MAJOR};
static uint64_t seed_counter = 1;

/* ---- the setups ------------------------------------------------------------------------ */

#define EMU "TESSERA_DEVICES=none TESSERA_CPU_WORKER=0 "
#define EMU16 EMU "TESSERA_EMULATE_MEM=16M "

static const struct l3_config {
    const char *name, *knobs;
    bool spread, hits, evict; /* what level3_counters must see */
} configs[] = {
    {.name = "cpu",
     .knobs = "TESSERA_DEVICES=none TESSERA_EMULATE=0 TESSERA_CPU_WORKER=1 TESSERA_TILE=8"},
    {.name = "emu2_t7", .knobs = EMU16 "TESSERA_EMULATE=2 TESSERA_TILE=7"},
    /* a cap of 8 complex-double tiles of 8^2 (16 double ones): every call evicts */
    {"emu3_cap", EMU "TESSERA_EMULATE=3 TESSERA_TILE=8 TESSERA_EMULATE_MEM=8192", .spread = true,
     .hits = true, .evict = true},
    {.name = "emu2_jitter",
     .knobs = EMU16 "TESSERA_EMULATE=2 TESSERA_TILE=7 TESSERA_EMULATE_JITTER=100 "
                    "TESSERA_EMULATE_STREAMS=4"},
    /* TRSM by step-level dependencies (TESSERA_DATAFLOW=1) */
    {.name = "emu3_flow", .knobs = EMU16 "TESSERA_EMULATE=3 TESSERA_TILE=7 TESSERA_DATAFLOW=1"},
    {.name = "emu2_cpu",
     .knobs = "TESSERA_DEVICES=none TESSERA_EMULATE_MEM=16M TESSERA_EMULATE=2 TESSERA_CPU_WORKER=1 "
              "TESSERA_TILE=7"},
};

/* the setup this run is under; NULL: the environment as it is, no counters expected */
static const struct l3_config *cfg;

/* Shape unit: the tile edge when set and small, else 8. */
static int64_t unit(void) {
    long t = ref_env_long("TESSERA_TILE", 0);
    return (t > 0 && t <= 64) ? t : 8;
}

/* ---- elements ------------------------------------------------------------------------ */

static long double abs1(long double re, long double im) { return fabsl(re) + fabsl(im); }

/* Copy of nelem elements with each replaced by |re| + |im| (imaginary part 0); NaN stays. */
static void *abs_copy(tess_dtype_t dt, const void *X, size_t nelem) {
    void *Y = ref_malloc(nelem * ref_esize(dt));
    for (size_t i = 0; i < nelem; i++) {
        long double re, im;
        ref_get(dt, X, i, &re, &im);
        ref_set(dt, Y, i, isnan(re) || isnan(im) ? NAN : abs1(re, im), 0);
    }
    return Y;
}

static void *dup(const void *X, size_t bytes) {
    void *Y = ref_malloc(bytes);
    memcpy(Y, X, bytes);
    return Y;
}

/* ---- one case ------------------------------------------------------------------------- */

enum {
    F_NAN_C = 1u << 0,  /* the output (all of it, padding too) starts as NaN: beta = 0 */
    F_NAN_AB = 1u << 1, /* A and B are all NaN: alpha = 0 (or k = 0) */
    F_TYPED = 1u << 2,  /* the typed entry point instead of the generic one */
};

struct l3case {
    enum l3_routine r;
    tess_dtype_t dt;
    tess_layout_t layout;
    tess_side_t side;
    tess_uplo_t uplo;
    tess_trans_t trans;
    tess_diag_t diag;
    int64_t m, n, k;          /* SYRK-like: n, k; SYMM/TRMM/TRSM: m, n */
    int64_t pad[3];           /* leading dimension = minimum + pad, for A, B, C */
    double alpha[2], beta[2]; /* re, im (im ignored where the scalar is real) */
    unsigned flags;
    uint64_t seed;
};

static struct l3case mkcase(enum l3_routine r, tess_dtype_t dt, tess_layout_t layout, int64_t m,
                            int64_t n, int64_t k) {
    struct l3case c;
    memset(&c, 0, sizeof c);
    c.r = r, c.dt = dt, c.layout = layout;
    c.side = TESS_LEFT, c.uplo = TESS_UPPER, c.trans = TESS_NO_TRANS, c.diag = TESS_NON_UNIT;
    c.m = m, c.n = n, c.k = k;
    c.alpha[0] = 0.75, c.alpha[1] = -0.5;
    c.beta[0] = -0.5, c.beta[1] = 0.25;
    if (l3_real_beta(r)) c.beta[1] = 0;
    c.seed = seed_counter++;
    return c;
}

static void describe(const struct l3case *c, char *buf, size_t len) {
    static const char *ul[2] = {"U", "L"}, *sd[2] = {"L", "R"}, *dg[2] = {"N", "U"};
    snprintf(
        buf, len,
        "tess_%s%s(%s) %s side=%s uplo=%s trans=%s diag=%s m=%lld n=%lld k=%lld pad=%lld/%lld/%lld "
        "alpha=%g%+gi beta=%g%+gi%s%s seed=%llu",
        c->flags & F_TYPED ? ref_dtype_name(c->dt) : "", l3_rname[c->r],
        c->flags & F_TYPED ? "" : ref_dtype_name(c->dt), ref_layout_name(c->layout),
        sd[c->side == TESS_RIGHT], ul[c->uplo == TESS_LOWER], ref_trans_name(c->trans),
        dg[c->diag == TESS_UNIT], (long long)c->m, (long long)c->n, (long long)c->k,
        (long long)c->pad[0], (long long)c->pad[1], (long long)c->pad[2], c->alpha[0], c->alpha[1],
        c->beta[0], c->beta[1], c->flags & F_NAN_C ? " nanC" : "",
        c->flags & F_NAN_AB ? " nanAB" : "", (unsigned long long)c->seed);
}

/* Logical shapes (rows x cols) of A, B and the output C (B of TRMM/TRSM); 0 x 0 absent. */
static void shapes(const struct l3case *c, int64_t sh[3][2]) {
    memset(sh, 0, sizeof(int64_t) * 6);
    if (l3_rk(c->r)) {
        bool nt = c->trans == TESS_NO_TRANS;
        sh[0][0] = nt ? c->n : c->k, sh[0][1] = nt ? c->k : c->n;
        if (l3_rank2(c->r)) sh[1][0] = sh[0][0], sh[1][1] = sh[0][1];
        sh[2][0] = sh[2][1] = c->n;
        return;
    }
    int64_t ka = c->side == TESS_LEFT ? c->m : c->n;
    sh[0][0] = sh[0][1] = ka;
    if (l3_sm(c->r)) sh[1][0] = c->m, sh[1][1] = c->n;
    sh[2][0] = c->m, sh[2][1] = c->n;
}

/* Output element (r, c) is read and written by the routine (SYRK-like: the triangle). */
static bool referenced(const struct l3case *c, int64_t r, int64_t col) {
    if (!l3_rk(c->r)) return true;
    return c->uplo == TESS_UPPER ? r <= col : r >= col;
}

/* Element (r, c) of the triangular/symmetric A is in the stored triangle. */
static bool a_stored(const struct l3case *c, int64_t r, int64_t col) {
    return c->uplo == TESS_UPPER ? r <= col : r >= col;
}

struct data {
    struct l3case c;
    int64_t sh[3][2], ld[3];
    size_t ne[3];
    void *X[3];  /* what tessera sees: A, B, C */
    void *X0[3]; /* copies of tessera's inputs */
    void *R[3];  /* the reference's inputs (A and B without the alpha = 0 NaN) */
    unsigned char alpha[16], beta[16], aalpha[16], abeta[16]; /* scalars, their |.| */
};

static void scalar_of(enum l3_routine r, bool is_alpha, tess_dtype_t dt, void *out, double re,
                      double im) {
    bool real = is_alpha ? l3_real_alpha(r) : l3_real_beta(r);
    if (real)
        ref_scalar(dt == TESS_C ? TESS_S : TESS_D, out, re, 0);
    else
        ref_scalar(dt, out, re, ref_is_complex(dt) ? im : 0);
}

static void setup(const struct l3case *c, struct data *d) {
    memset(d, 0, sizeof *d);
    d->c = *c;
    tess_dtype_t dt = c->dt;
    size_t es = ref_esize(dt);
    uint64_t s = c->seed * 0x2545f4914f6cdd1dull + 777;
    shapes(c, d->sh);
    for (int i = 0; i < 3; i++) {
        int64_t rows = d->sh[i][0], cols = d->sh[i][1];
        d->ld[i] = ref_min_ld(c->layout, rows, cols) + c->pad[i];
        d->ne[i] = ref_nelem(c->layout, rows, cols, d->ld[i]) + GUARD;
        d->X[i] = ref_malloc(d->ne[i] * es);
        ref_fill_random(dt, d->X[i], d->ne[i], &s);
    }
    /* A of SYMM/HEMM/TRMM/TRSM: NaN outside its triangle; TRMM/TRSM: diagonally dominant
     * (unit diagonal: NaN on the diagonal, never read) */
    if (!l3_rk(c->r)) {
        int64_t ka = d->sh[0][0];
        for (int64_t col = 0; col < ka; col++)
            for (int64_t r = 0; r < ka; r++) {
                size_t idx = ref_index(c->layout, r, col, d->ld[0]);
                if (!a_stored(c, r, col) || (l3_tr(c->r) && r == col && c->diag == TESS_UNIT)) {
                    ref_set(dt, d->X[0], idx, NAN, NAN);
                } else if (l3_tr(c->r) && r == col) {
                    long double re, im;
                    ref_get(dt, d->X[0], idx, &re, &im);
                    ref_set(dt, d->X[0], idx, re + (re < 0 ? -1 : 1) * (ka + 1), im);
                }
            }
    }
    for (int i = 0; i < 3; i++) d->R[i] = dup(d->X[i], d->ne[i] * es);
    if (c->flags & F_NAN_AB) {
        ref_fill_nan(dt, d->X[0], d->ne[0]);
        ref_fill_nan(dt, d->X[1], d->ne[1]);
    }
    if (c->flags & F_NAN_C) {
        ref_fill_nan(dt, d->X[2], d->ne[2]);
        memcpy(d->R[2], d->X[2], d->ne[2] * es);
        /* the reference gets zeros where it may read (beta = 0: the values do not matter) */
        for (int64_t col = 0; col < d->sh[2][1]; col++)
            for (int64_t r = 0; r < d->sh[2][0]; r++)
                if (referenced(c, r, col))
                    ref_set(dt, d->R[2], ref_index(c->layout, r, col, d->ld[2]), 0, 0);
    }
    for (int i = 0; i < 3; i++) d->X0[i] = dup(d->X[i], d->ne[i] * es);
    scalar_of(c->r, true, dt, d->alpha, c->alpha[0], c->alpha[1]);
    scalar_of(c->r, false, dt, d->beta, c->beta[0], c->beta[1]);
    double aa = fabs(c->alpha[0]) + (ref_is_complex(dt) ? fabs(c->alpha[1]) : 0);
    double ab = fabs(c->beta[0]) + (ref_is_complex(dt) ? fabs(c->beta[1]) : 0);
    scalar_of(c->r, true, dt, d->aalpha, aa, 0);
    scalar_of(c->r, false, dt, d->abeta, ab, 0);
}

static void release(struct data *d) {
    for (int i = 0; i < 3; i++) {
        free(d->X[i]);
        free(d->X0[i]);
        free(d->R[i]);
    }
}

/* The arguments of the case on matrices M (A, B, C) with scalars al, be. */
static struct l3_args args_of(const struct data *d, void *const M[3], const void *al,
                              const void *be) {
    const struct l3case *c = &d->c;
    struct l3_args a;
    memset(&a, 0, sizeof a);
    a.r = c->r, a.dt = c->dt, a.typed = !!(c->flags & F_TYPED);
    a.layout = c->layout, a.side = c->side, a.uplo = c->uplo, a.ta = c->trans;
    a.diag = c->diag;
    a.m = c->m, a.n = c->n, a.k = c->k;
    a.alpha = al, a.beta = be;
    a.A = M[0], a.lda = d->ld[0];
    a.B = M[1], a.ldb = d->ld[1];
    a.C = M[2], a.ldc = d->ld[2];
    return a;
}

/* Inner dimension of the bound: products summed per element. */
static int64_t inner_dim(const struct l3case *c) {
    if (l3_rk(c->r)) return l3_rank2(c->r) ? 2 * c->k : c->k;
    return c->side == TESS_LEFT ? c->m : c->n;
}

#define MSG(...) snprintf(msg, len, __VA_ARGS__)

/* Verify tessera's output d->X against the reference; 0 or 1 with msg. The result must
 * match the reference element by element within twice the oracle's bound (src/tools/oracle.h:
 * both results carry it), 2 gamma_N T + oracle_floor, T = |alpha| |op(A)| |op(B)| + |beta| |C0|
 * evaluated by running the same reference routine on the absolute values (|x| = |re| + |im|;
 * K the inner dimension, twice k for the rank-2k updates). TRSM is checked by its residual:
 * |op(A) X - alpha B| within the same bound of |op(A)| |X| + |alpha| |B| (A diagonally
 * dominant, so X is well defined). */
static int verify(const struct data *d, char *msg, size_t len) {
    const struct l3case *c = &d->c;
    tess_dtype_t dt = c->dt;
    size_t es = ref_esize(dt);
    int64_t rows = d->sh[2][0], cols = d->sh[2][1], ldc = d->ld[2];
    const void *C = d->X[2];
    /* inputs unchanged, output padding and guard unchanged */
    for (int i = 0; i < 2; i++)
        if (memcmp(d->X[i], d->X0[i], d->ne[i] * es) != 0) {
            MSG("%s was modified", i ? "B" : "A");
            return 1;
        }
    size_t bad = ref_untouched(dt, c->layout, C, d->X0[2], rows, cols, ldc, d->ne[2]);
    if (bad) {
        MSG("output element %zu (outside the %lld x %lld part, ld %lld) was written", bad - 1,
            (long long)rows, (long long)cols, (long long)ldc);
        return 1;
    }
    for (int64_t col = 0; col < cols; col++)
        for (int64_t r = 0; r < rows; r++) {
            size_t idx = ref_index(c->layout, r, col, ldc);
            if (!referenced(c, r, col)) {
                if (memcmp((const char *)C + idx * es, (const char *)d->X0[2] + idx * es, es)) {
                    MSG("C(%lld,%lld) outside the triangle was written", (long long)r,
                        (long long)col);
                    return 1;
                }
                continue;
            }
            long double re, im;
            ref_get(dt, C, idx, &re, &im);
            if (!isfinite(re) || !isfinite(im)) {
                MSG("C(%lld,%lld) = %Lg%+Lgi is not finite", (long long)r, (long long)col, re, im);
                return 1;
            }
        }
    if (rows == 0 || cols == 0) return 0;

    /* reference value Y and bound W: Y = f(R), W = f(|R|) with |alpha|, |beta|; TRSM:
     * Y = op(A) X (X = tessera's result) against alpha B0, W = |op(A)| |X| + |alpha| |B0| */
    void *Y, *W, *absM[3];
    for (int i = 0; i < 3; i++) absM[i] = abs_copy(dt, d->R[i], d->ne[i]);
    if (c->r == L3_TRSM) {
        unsigned char one[16];
        ref_scalar(dt, one, 1, 0);
        Y = dup(C, d->ne[2] * es);
        void *M[3] = {d->R[0], NULL, Y};
        struct l3_args a = args_of(d, M, one, NULL);
        a.r = L3_TRMM;
        l3_cblas(&a);
        W = abs_copy(dt, C, d->ne[2]);
        void *N[3] = {absM[0], NULL, W};
        a = args_of(d, N, one, NULL);
        a.r = L3_TRMM;
        l3_cblas(&a);
    } else {
        Y = dup(d->R[2], d->ne[2] * es);
        W = dup(absM[2], d->ne[2] * es);
        void *M[3] = {d->R[0], d->R[1], Y}, *N[3] = {absM[0], absM[1], W};
        struct l3_args a = args_of(d, M, d->alpha, d->beta);
        l3_cblas(&a);
        a = args_of(d, N, d->aalpha, d->abeta);
        l3_cblas(&a);
    }
    long double ar, ai;
    ref_get(dt, d->alpha, 0, &ar, &ai);
    long double aabs = abs1(ar, ai);
    long double fac = 2 * oracle_gamma(dt, inner_dim(c)), tiny = oracle_floor(dt, inner_dim(c));
    int rc = 0;
    for (int64_t col = 0; col < cols && !rc; col++)
        for (int64_t r = 0; r < rows && !rc; r++) {
            if (!referenced(c, r, col)) continue;
            size_t idx = ref_index(c->layout, r, col, ldc);
            long double xr, xi, yr, yi, wr, wi;
            ref_get(dt, c->r == L3_TRSM ? (const void *)Y : C, idx, &xr, &xi);
            ref_get(dt, W, idx, &wr, &wi);
            if (c->r == L3_TRSM) {
                /* target alpha B0 */
                long double br, bi;
                ref_get(dt, d->R[2], idx, &br, &bi);
                yr = ar * br - ai * bi;
                yi = ar * bi + ai * br;
                wr += aabs * abs1(br, bi);
            } else {
                ref_get(dt, Y, idx, &yr, &yi);
            }
            long double diff = abs1(xr - yr, xi - yi), bound = fac * fabsl(wr) + tiny;
            if (!(diff <= bound)) {
                MSG("%s(%lld,%lld) = %.10Lg%+.10Lgi, expected %.10Lg%+.10Lgi, |diff| %.3Lg > "
                    "bound %.3Lg",
                    c->r == L3_TRSM ? "(op(A) X)" : "C", (long long)r, (long long)col, xr, xi, yr,
                    yi, diff, bound);
                rc = 1;
            }
        }
    for (int i = 0; i < 3; i++) free(absM[i]);
    free(Y);
    free(W);
    return rc;
}

/* setup + call + verify: 0 on success, else 1 with msg. */
static int run_case(const struct l3case *c, char *msg, size_t len) {
    struct data d;
    char what[512], why[512] = "";
    describe(c, what, sizeof what);
    setup(c, &d);
    struct l3_args a = args_of(&d, d.X, d.alpha, d.beta);
    int st = l3_call(&a);
    int rc = 0;
    if (st != TESS_OK) {
        MSG("%s: returned %d (%s): %s", what, st, tess_strerror(st), tess_last_error());
        rc = 1;
    } else if (verify(&d, why, sizeof why)) {
        MSG("%s: %s", what, why);
        rc = 1;
    }
    release(&d);
    return rc;
}

#define RUN_CASE(c)                                                     \
    do {                                                                \
        char msg_[1024];                                                \
        ASSERT_MSG(run_case(&(c), msg_, sizeof msg_) == 0, "%s", msg_); \
    } while (0)

/* ---- every option combination ------------------------------------------------------------ */

/* SYMM and HEMM: every precision, side, uplo and layout on shapes that are not multiples
 * of the tile, padded leading dimensions, general alpha and beta, both entry kinds. */
TEST(symm_hemm_all_options) {
    int64_t u = unit();
    int x = 0;
    for (int r = L3_SYMM; r <= L3_HEMM; r++)
        for (int d = 0; d < 4; d++) {
            if (r == L3_HEMM && !ref_is_complex(dtypes[d])) continue;
            for (int s = 0; s < 2; s++)
                for (int ul = 0; ul < 2; ul++)
                    for (int l = 0; l < 2; l++, x++) {
                        struct l3case c = mkcase((enum l3_routine)r, dtypes[d], layouts[l],
                                                 3 * u + 2, 2 * u + 3, 0);
                        c.side = sides[s], c.uplo = uplos[ul];
                        c.pad[0] = x % 3, c.pad[1] = (x + 1) % 3, c.pad[2] = (x + 2) % 3;
                        if (x % 2) c.flags |= F_TYPED;
                        RUN_CASE(c);
                    }
        }
}

/* SYRK, HERK, SYR2K, HER2K: every precision, uplo, accepted trans and layout; C's other
 * triangle byte for byte untouched. */
TEST(syrk_family_all_options) {
    int64_t u = unit();
    int x = 0;
    for (int r = L3_SYRK; r <= L3_HER2K; r++)
        for (int d = 0; d < 4; d++) {
            if (l3_herm((enum l3_routine)r) && !ref_is_complex(dtypes[d])) continue;
            for (int ul = 0; ul < 2; ul++)
                for (int t = 0; t < 3; t++) {
                    if (!l3_trans_ok((enum l3_routine)r, dtypes[d], trans3[t])) continue;
                    for (int l = 0; l < 2; l++, x++) {
                        struct l3case c = mkcase((enum l3_routine)r, dtypes[d], layouts[l], 0,
                                                 3 * u + 2, 2 * u + 1);
                        c.uplo = uplos[ul], c.trans = trans3[t];
                        c.pad[0] = x % 3, c.pad[1] = (x + 2) % 3, c.pad[2] = (x + 1) % 3;
                        if (x % 2) c.flags |= F_TYPED;
                        RUN_CASE(c);
                    }
                }
        }
}

static void tr_all(enum l3_routine r) {
    int64_t u = unit();
    int x = 0;
    for (int d = 0; d < 4; d++)
        for (int s = 0; s < 2; s++)
            for (int ul = 0; ul < 2; ul++)
                for (int t = 0; t < 3; t++)
                    for (int dg = 0; dg < 2; dg++)
                        for (int l = 0; l < 2; l++, x++) {
                            struct l3case c = mkcase(r, dtypes[d], layouts[l], 3 * u + 1, 2 * u + 3,
                                                     0);
                            c.side = sides[s], c.uplo = uplos[ul], c.trans = trans3[t];
                            c.diag = diags[dg];
                            c.pad[0] = x % 3, c.pad[2] = (x + 1) % 3;
                            if (x % 2) c.flags |= F_TYPED;
                            RUN_CASE(c);
                        }
}

/* TRMM: every precision, side, uplo, transa, diag and layout. */
TEST(trmm_all_options) { tr_all(L3_TRMM); }

/* TRSM: every precision, side, uplo, transa, diag and layout (residual check). */
TEST(trsm_all_options) { tr_all(L3_TRSM); }

/* ---- shapes, special scalars --------------------------------------------------------------- */

static struct l3case any_case(enum l3_routine r, tess_dtype_t dt, int x) {
    struct l3case c = mkcase(r, dt, layouts[x % 2], 1, 1, 1);
    c.side = sides[(x / 2) % 2];
    c.uplo = uplos[(x / 3) % 2];
    c.diag = diags[(x / 5) % 2];
    c.trans = trans3[x % 3];
    if (!l3_trans_ok(r, dt, c.trans)) c.trans = TESS_NO_TRANS;
    return c;
}

/* Shapes with 1, exact multiples of the tile, one more than a multiple, and 0 (the
 * latter a quick return), in every routine and precision. */
TEST(level3_odd_shapes) {
    int64_t u = unit();
    const int64_t dims[][3] = {{1, 1, 1},
                               {1, 2 * u + 1, u},
                               {2 * u + 1, 1, 1},
                               {u, 2 * u, 3 * u},
                               {u + 1, u - 1 > 0 ? u - 1 : 1, 1},
                               {0, 5, 3},
                               {4, 0, 2}};
    int x = 0;
    for (int r = L3_SYMM; r < L3_NR; r++)
        for (int d = 0; d < 4; d++) {
            if (l3_herm((enum l3_routine)r) && !ref_is_complex(dtypes[d])) continue;
            for (size_t s = 0; s < sizeof dims / sizeof dims[0]; s++, x++) {
                struct l3case c = any_case((enum l3_routine)r, dtypes[d], x);
                c.m = dims[s][0], c.n = l3_rk((enum l3_routine)r) ? dims[s][0] : dims[s][1];
                c.k = l3_rk((enum l3_routine)r) ? dims[s][2] : 0;
                if (l3_rk((enum l3_routine)r) && s == 6) c.n = 0;
                c.pad[0] = x % 2, c.pad[1] = x % 3, c.pad[2] = (x + 1) % 2;
                if (x % 3 == 0) c.flags |= F_TYPED;
                RUN_CASE(c);
            }
        }
}

/* alpha = 0 (and k = 0 for the SYRK family) never reads A or B (all NaN here): C = beta C
 * on the referenced part (TRMM/TRSM: B = 0), HERK/HER2K's diagonal made real. */
TEST(level3_alpha_zero_nan_operands) {
    int64_t u = unit();
    int x = 0;
    for (int r = L3_SYMM; r < L3_NR; r++)
        for (int d = 0; d < 4; d++) {
            if (l3_herm((enum l3_routine)r) && !ref_is_complex(dtypes[d])) continue;
            for (int kz = 0; kz < (l3_rk((enum l3_routine)r) ? 2 : 1); kz++, x++) {
                struct l3case c = any_case((enum l3_routine)r, dtypes[d], x);
                c.m = 2 * u + 1, c.n = u + 3, c.k = u + 2;
                if (l3_rk((enum l3_routine)r)) c.n = 2 * u + 1;
                if (kz)
                    c.k = 0;
                else
                    c.alpha[0] = c.alpha[1] = 0;
                c.pad[0] = c.pad[1] = 1, c.pad[2] = 2;
                c.flags |= F_NAN_AB | (x % 2 ? F_TYPED : 0);
                RUN_CASE(c);
            }
        }
}

/* beta = 0 never reads C (all NaN here, padding too): a clean result, padding and the
 * other triangle still NaN byte for byte. */
TEST(level3_beta_zero_nan_c) {
    int64_t u = unit();
    int x = 0;
    for (int r = L3_SYMM; r < L3_NR; r++) {
        if (l3_tr((enum l3_routine)r)) continue; /* no beta */
        for (int d = 0; d < 4; d++) {
            if (l3_herm((enum l3_routine)r) && !ref_is_complex(dtypes[d])) continue;
            for (int v = 0; v < 2; v++, x++) {
                struct l3case c = any_case((enum l3_routine)r, dtypes[d], x);
                c.m = 2 * u + 3, c.n = u + 2, c.k = u + 4;
                if (l3_rk((enum l3_routine)r)) c.n = 2 * u + 3;
                c.beta[0] = c.beta[1] = 0;
                c.pad[2] = 1 + v;
                c.flags |= F_NAN_C | (v ? F_TYPED : 0);
                RUN_CASE(c);
            }
        }
    }
}

/* Netlib's quick returns write nothing: alpha = 0 and beta = 1 (SYRK family: also k = 0
 * and beta = 1; HERK's diagonal keeps its imaginary parts), m = 0 or n = 0 with NULL
 * operands. */
TEST(level3_quick_returns_write_nothing) {
    for (int r = L3_SYMM; r < L3_NR; r++)
        for (int d = 0; d < 4; d++) {
            tess_dtype_t dt = dtypes[d];
            if (l3_herm((enum l3_routine)r) && !ref_is_complex(dt)) continue;
            if (l3_tr((enum l3_routine)r)) continue; /* alpha = 0 is B = 0 there */
            for (int kz = 0; kz < (l3_rk((enum l3_routine)r) ? 2 : 1); kz++) {
                struct l3case c = any_case((enum l3_routine)r, dt, d + kz);
                c.m = 5, c.n = 6, c.k = kz ? 0 : 4;
                c.alpha[0] = kz ? 1 : 0, c.alpha[1] = 0;
                c.beta[0] = 1, c.beta[1] = 0;
                c.flags |= F_NAN_AB;
                struct data dd;
                setup(&c, &dd);
                struct l3_args a = args_of(&dd, dd.X, dd.alpha, dd.beta);
                int st = l3_call(&a);
                int same = memcmp(dd.X[2], dd.X0[2], dd.ne[2] * ref_esize(dt)) == 0;
                release(&dd);
                ASSERT_MSG(st == TESS_OK && same, "%s %s k=%d: status %d, C %s", l3_rname[r],
                           ref_dtype_name(dt), kz ? 0 : 4, st, same ? "unchanged" : "written");
            }
        }
    /* empty shapes: NULL matrices are fine */
    unsigned char one[16];
    for (int r = L3_SYMM; r < L3_NR; r++) {
        tess_dtype_t dt = l3_herm((enum l3_routine)r) ? TESS_Z : TESS_D;
        ref_scalar(dt, one, 1, 0);
        struct l3_args a;
        memset(&a, 0, sizeof a);
        a.r = (enum l3_routine)r, a.dt = dt, a.layout = TESS_COL_MAJOR, a.side = TESS_LEFT;
        a.uplo = TESS_UPPER, a.ta = TESS_NO_TRANS, a.diag = TESS_NON_UNIT;
        a.m = 0, a.n = l3_rk((enum l3_routine)r) ? 0 : 3, a.k = 2;
        a.alpha = a.beta = one;
        a.lda = a.ldb = a.ldc = 3;
        ASSERT_MSG(l3_call(&a) == TESS_OK, "%s with an empty shape: %s", l3_rname[r],
                   tess_last_error());
    }
}

/* 60 random calls: random routine, precision, options, shapes (up to ~5 tiles), padding,
 * alpha/beta (0 and 1 included), both entry kinds. */
TEST(level3_random_calls) {
    int64_t u = unit();
    uint64_t s = 4242;
    int64_t maxd = 5 * u + 3;
    static const double specials[4][2] = {{0, 0}, {1, 0}, {-1, 0}, {0.5, -2}};
    for (int it = 0; it < 60; it++) {
        enum l3_routine r = (enum l3_routine)(L3_SYMM + ref_rand_int(&s, 0, L3_NR - 1 - L3_SYMM));
        tess_dtype_t dt = dtypes[ref_rand_int(&s, l3_herm(r) ? 2 : 0, 3)];
        struct l3case c = any_case(r, dt, (int)ref_rand_int(&s, 0, 59));
        c.m = ref_rand_int(&s, 1, maxd);
        c.n = ref_rand_int(&s, 1, maxd);
        c.k = ref_rand_int(&s, 1, maxd);
        for (int i = 0; i < 3; i++) c.pad[i] = ref_rand_int(&s, 0, 3);
        for (int w = 0; w < 2; w++) {
            double *v = w ? c.beta : c.alpha;
            if (ref_rand_int(&s, 0, 3) == 0) {
                int64_t sv = ref_rand_int(&s, 0, 3);
                v[0] = specials[sv][0], v[1] = specials[sv][1];
            } else {
                v[0] = ref_rand_unit(&s), v[1] = ref_rand_unit(&s);
            }
        }
        if (l3_real_beta(r)) c.beta[1] = 0;
        if (c.beta[0] == 0 && c.beta[1] == 0 && !l3_tr(r)) c.flags |= F_NAN_C;
        if (ref_rand_int(&s, 0, 1)) c.flags |= F_TYPED;
        RUN_CASE(c);
    }
}

/* ---- argument errors ----------------------------------------------------------------------- */

/* Smallest legal leading dimension of matrix w (0 A, 1 B, 2 C) of the call. */
static int64_t min_ld(const struct l3_args *a, int w) {
    bool row = a->layout == TESS_ROW_MAJOR;
    if (l3_rk(a->r)) {
        if (w == 2) return a->n > 1 ? a->n : 1;
        int64_t v = (a->ta == TESS_NO_TRANS) != row ? a->n : a->k;
        return v > 1 ? v : 1;
    }
    int64_t v = w == 0 ? (a->side == TESS_LEFT ? a->m : a->n) : (row ? a->n : a->m);
    return v > 1 ? v : 1;
}

static unsigned char ebuf[3][4096 * 16], ebuf0[3][4096 * 16];
static unsigned char e_one[16], e_half[16];

/* A valid call of routine r on small shapes (m = 3, n = 4, k = 2; column-major). */
static struct l3_args base_args(enum l3_routine r, tess_dtype_t dt, int typed, int layout) {
    struct l3_args a;
    memset(&a, 0, sizeof a);
    a.r = r, a.dt = dt, a.typed = typed;
    a.layout = layout, a.side = TESS_LEFT, a.uplo = TESS_UPPER, a.ta = TESS_NO_TRANS;
    a.diag = TESS_NON_UNIT;
    a.m = 3, a.n = 4, a.k = 2;
    tess_dtype_t rdt = dt == TESS_C ? TESS_S : dt == TESS_Z ? TESS_D : dt;
    ref_scalar(l3_real_alpha(r) ? rdt : dt, e_one, 1, 0);
    ref_scalar(l3_real_beta(r) ? rdt : dt, e_half, 0.5, 0);
    a.alpha = e_one, a.beta = e_half;
    a.A = ebuf[0], a.B = ebuf[1], a.C = ebuf[2];
    a.lda = min_ld(&a, 0), a.ldb = min_ld(&a, 1), a.ldc = min_ld(&a, 2);
    return a;
}

enum arg_id {
    A_LAYOUT,
    A_SIDE,
    A_UPLO,
    A_TRANS,
    A_DIAG,
    A_M,
    A_N,
    A_K,
    A_ALPHA,
    A_A,
    A_LDA,
    A_B,
    A_LDB,
    A_BETA,
    A_C,
    A_LDC,
    A_NARGS
};
static const char *arg_name[A_NARGS] = {"layout", "side", "uplo",  "trans", "diag", "m",
                                        "n",      "k",    "alpha", "A",     "lda",  "B",
                                        "ldb",    "beta", "C",     "ldc"};

/* 1-based position of argument id in routine r's typed signature (0: not an argument). */
static int arg_pos(enum l3_routine r, enum arg_id id) {
    static const int sm[A_NARGS] = {1, 2, 3, 0, 0, 4, 5, 0, 6, 7, 8, 9, 10, 11, 12, 13};
    static const int rk[A_NARGS] = {1, 0, 2, 3, 0, 0, 4, 5, 6, 7, 8, 0, 0, 9, 10, 11};
    static const int r2[A_NARGS] = {1, 0, 2, 3, 0, 0, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    /* TRMM/TRSM: B (the output) is C here */
    static const int tr[A_NARGS] = {1, 2, 3, 4, 5, 6, 7, 0, 8, 9, 10, 0, 0, 0, 11, 12};
    if (l3_sm(r)) return sm[id];
    if (l3_rank2(r)) return r2[id];
    if (l3_rk(r)) return rk[id];
    return tr[id];
}

/* Make argument id of a invalid; false if it cannot be made invalid (e.g. a real scalar
 * passed by value). */
static bool spoil(struct l3_args *a, enum arg_id id) {
    switch (id) {
    case A_LAYOUT: a->layout = 0; return true;
    case A_SIDE: a->side = 0; return true;
    case A_UPLO: a->uplo = TESS_UPPER + 5; return true;
    case A_TRANS:
        /* the routine-specific bad trans: T for HERK/HER2K, C for complex SYRK/SYR2K */
        if (l3_herm(a->r))
            a->ta = TESS_TRANS;
        else if (l3_rk(a->r) && ref_is_complex(a->dt))
            a->ta = TESS_CONJ_TRANS;
        else
            a->ta = 0;
        return true;
    case A_DIAG: a->diag = 0; return true;
    case A_M: a->m = -1; return true;
    case A_N: a->n = -2; return true;
    case A_K: a->k = -1; return true;
    case A_ALPHA:
        if (a->typed && !ref_is_complex(a->dt)) return false;
        if (a->typed && l3_real_alpha(a->r)) return false;
        a->alpha = NULL;
        return true;
    case A_BETA:
        if (a->typed && (!ref_is_complex(a->dt) || l3_real_beta(a->r))) return false;
        a->beta = NULL;
        return true;
    case A_A: a->A = NULL; return true;
    case A_B: a->B = NULL; return true;
    case A_C: a->C = NULL; return true;
    case A_LDA: a->lda = min_ld(a, 0) - 1; return true;
    case A_LDB: a->ldb = min_ld(a, 1) - 1; return true;
    case A_LDC: a->ldc = min_ld(a, 2) - 1; return true;
    default: return false;
    }
}

/* Every argument error of every routine, typed and generic, in both layouts: TESS_EINVAL,
 * tess_last_error names the argument and its position, and nothing is written. */
TEST(level3_argument_errors) {
    uint64_t s = 5;
    for (int i = 0; i < 3; i++) ref_fill_random(TESS_Z, ebuf[i], 4096, &s);
    memcpy(ebuf0, ebuf, sizeof ebuf);
    for (int r = L3_SYMM; r < L3_NR; r++)
        for (int d = 0; d < 4; d++) {
            if (l3_herm((enum l3_routine)r) && !ref_is_complex(dtypes[d])) continue;
            for (int typed = 0; typed < 2; typed++)
                for (int l = 0; l < 2; l++)
                    for (int id = 0; id < A_NARGS; id++) {
                        int pos = arg_pos((enum l3_routine)r, (enum arg_id)id);
                        if (!pos) continue;
                        struct l3_args a = base_args((enum l3_routine)r, dtypes[d], typed,
                                                     layouts[l]);
                        /* a valid call first (then restore the buffers) */
                        if (id == 0) {
                            int st = l3_call(&a);
                            ASSERT_MSG(st == TESS_OK, "%s %s: valid call returned %d: %s",
                                       l3_rname[r], ref_dtype_name(dtypes[d]), st,
                                       tess_last_error());
                            memcpy(ebuf, ebuf0, sizeof ebuf);
                        }
                        if (!spoil(&a, (enum arg_id)id)) continue;
                        int st = l3_call(&a);
                        if (!typed) pos++;
                        char want[64];
                        snprintf(want, sizeof want, "argument %d (%s", pos, arg_name[id]);
                        const char *msg = tess_last_error();
                        ASSERT_MSG(st == TESS_EINVAL, "%s%s %s %s: spoiled %s: status %d (%s)",
                                   typed ? "typed " : "", l3_rname[r], ref_dtype_name(dtypes[d]),
                                   ref_layout_name(layouts[l]), arg_name[id], st, msg);
                        /* the message names TRMM/TRSM's B "B" */
                        if (l3_tr((enum l3_routine)r) && (id == A_C || id == A_LDC))
                            snprintf(want, sizeof want, "argument %d (%s", pos,
                                     id == A_C ? "B" : "ldb");
                        if (id == A_TRANS && l3_tr((enum l3_routine)r))
                            snprintf(want, sizeof want, "argument %d (transa", pos);
                        ASSERT_MSG(strstr(msg, want),
                                   "%s %s: spoiled %s: message \"%s\" lacks \"%s\"", l3_rname[r],
                                   ref_dtype_name(dtypes[d]), arg_name[id], msg, want);
                        ASSERT_MSG(memcmp(ebuf, ebuf0, sizeof ebuf) == 0,
                                   "%s %s: spoiled %s: a buffer was written", l3_rname[r],
                                   ref_dtype_name(dtypes[d]), arg_name[id]);
                    }
        }
    /* the generic entries check dtype first; HEMM/HERK/HER2K want a complex one */
    struct l3_args a = base_args(L3_SYRK, TESS_D, 0, TESS_COL_MAJOR);
    a.dt = (tess_dtype_t)7;
    ASSERT_EQ(l3_call(&a), TESS_EINVAL);
    ASSERT(strstr(tess_last_error(), "argument 1 (dtype"));
    for (int r = L3_SYMM; r < L3_NR; r++) {
        if (!l3_herm((enum l3_routine)r)) continue;
        a = base_args((enum l3_routine)r, TESS_D, 0, TESS_COL_MAJOR);
        ASSERT_EQ(l3_call(&a), TESS_EINVAL);
        ASSERT_MSG(strstr(tess_last_error(), "argument 1 (dtype"), "%s: %s", l3_rname[r],
                   tess_last_error());
    }
    /* CBLAS order: with m and lda both wrong, m is reported */
    a = base_args(L3_TRSM, TESS_D, 1, TESS_COL_MAJOR);
    a.m = -1, a.lda = 0;
    ASSERT_EQ(l3_call(&a), TESS_EINVAL);
    ASSERT(strstr(tess_last_error(), "argument 6 (m"));
    ASSERT(memcmp(ebuf, ebuf0, sizeof ebuf) == 0);
}

/* ---- counters ---------------------------------------------------------------------------- */

/* Devices that computed tasks since the last reset; prints each device's counters. */
static int dev_with_tasks(int nd, const char *what) {
    int busy = 0;
    for (int i = 0; i < nd; i++) {
        tess_dev_stats_t st;
        if (tess_device_stats(i, &st) != TESS_OK) continue;
        busy += st.tasks > 0;
        fprintf(stderr,
                "  %s: %s: tasks %llu steps %llu l1 %llu l2 %llu misses %llu evictions %llu\n",
                what, st.name, (unsigned long long)st.tasks, (unsigned long long)st.steps,
                (unsigned long long)st.l1_hits, (unsigned long long)st.l2_hits,
                (unsigned long long)st.misses, (unsigned long long)st.evictions);
    }
    return busy;
}

/* What the SYRK and TRSM calls of level3_counters showed, accumulated over its rounds. */
struct seen {
    bool spread_syrk, spread_trsm;
    int evictions;
    uint64_t hits;
};

/* One round: a SYRK and a TRSM call (uplo and trans vary with it), their counters added
 * to *sn. */
static void counters_round(int it, struct seen *sn) {
    int nd = tess_device_count();
    int64_t u = unit();
    tess_reset_stats();
    struct l3case c = mkcase(L3_SYRK, TESS_D, TESS_COL_MAJOR, 0, 6 * u + 1, 2 * u);
    c.uplo = it % 2 ? TESS_LOWER : TESS_UPPER;
    RUN_CASE(c);
    if (dev_with_tasks(nd, "syrk") > 1) sn->spread_syrk = true;
    for (int i = 0; i < nd; i++) {
        tess_dev_stats_t st;
        if (tess_device_stats(i, &st) == TESS_OK) sn->evictions += st.evictions > 0;
    }
    tess_reset_stats();
    c = mkcase(L3_TRSM, TESS_D, TESS_COL_MAJOR, 4 * u + 1, 5 * u, 0);
    c.uplo = it % 2 ? TESS_LOWER : TESS_UPPER;
    c.trans = it % 3 == 1 ? TESS_TRANS : TESS_NO_TRANS;
    RUN_CASE(c);
    if (dev_with_tasks(nd, "trsm") > 1) sn->spread_trsm = true;
    for (int i = 0; i < nd; i++) {
        tess_dev_stats_t st;
        if (tess_device_stats(i, &st) == TESS_OK) {
            sn->hits += st.l1_hits + st.l2_hits;
            sn->evictions += st.evictions > 0;
        }
    }
}

static bool counters_met(const struct seen *sn) {
    return (!cfg->spread || (sn->spread_syrk && sn->spread_trsm)) && (!cfg->hits || sn->hits > 0) &&
           (!cfg->evict || sn->evictions > 0);
}

/* On several devices (the setup's spread, hits, evict): SYRK and TRSM tasks spread over
 * more than one device, TRSM operands are served from device caches (L1 or L2: A tiles and
 * published X tiles), and under a memory cap tiles are evicted. Up to 5 rounds of a SYRK
 * and a TRSM call on a runtime of the setup's knobs; what a short call cannot guarantee (a
 * worker descheduled through a whole call on a loaded host takes no task) then up to 5
 * rounds more on a runtime whose devices are throttled (tests/slowdown.h), counters
 * accumulating. The test owns its runtimes: it first drops the one earlier tests' calls
 * started. */
TEST(level3_counters) {
    if (!cfg || !(cfg->spread || cfg->hits || cfg->evict)) {
        fprintf(stderr, "  (no setup with counters: not asserted here)\n");
        return;
    }
    tess_finalize(); /* the runtime started by the earlier tests' calls, if any */
    struct seen sn = {0};
    int it = 0;
    ASSERT_OK(tess_init());
    int nd = tess_device_count();
    for (; it < 5 && !counters_met(&sn); it++) counters_round(it, &sn);
    ASSERT_OK(tess_finalize());
    if (!counters_met(&sn)) {
        fprintf(stderr, "  not all seen in %d rounds; again slowed down\n", it);
        struct knobs_saved sv;
        slow_down((int)ref_env_long("TESSERA_EMULATE", 0), unit(), 0, &sv);
        int rc = tess_init();
        slow_restore(&sv); /* the knobs are read at tess_init */
        ASSERT_OK(rc);
        for (; it < 10 && !counters_met(&sn); it++) counters_round(it, &sn);
        ASSERT_OK(tess_finalize());
    }
    if (cfg->spread) {
        ASSERT_MSG(nd > 1, "setup %s: spread needs more than one device (%d)", cfg->name, nd);
        ASSERT_MSG(sn.spread_syrk, "SYRK tasks never ran on more than one device");
        ASSERT_MSG(sn.spread_trsm, "TRSM tasks never ran on more than one device");
    }
    if (cfg->hits) ASSERT_MSG(sn.hits > 0, "TRSM: no L1 or L2 hit");
    if (cfg->evict) ASSERT_MSG(sn.evictions > 0, "no eviction");
}

TEST_CONFIG_MAIN(configs, cfg)
