/* tests/test_args.c: bad input to the public API. Every argument error of tess_gemm and
 * tess_?gemm returns TESS_EINVAL, tess_last_error() names the argument, and C is left
 * byte-for-byte untouched; the smallest legal leading dimensions and NULL operands of
 * empty dimensions are accepted; quick returns write nothing; tess_strerror and
 * tess_last_error behave. Hostile input to every level-3 routine (the section at the end):
 * every bad argument alone and in pairs, both layouts, typed and generic entries: the first
 * in netlib's order is named and nothing is written; huge sizes give TESS_EINVAL or
 * TESS_ENOMEM, write nothing and leave the runtime usable (TESS_HUGE_FORK=1: each case in a
 * child process); aliased operands return without a crash; leading dimensions of 2^32 + 3
 * and 2^31 + 5 give the right result on every device kind; nothing is printed. Independent
 * of the device configuration; dispatch and cases from l3_dispatch.c and test_fuzz_l3.c.
 */
#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "ref.h"
#include "tessera.h"

/* the level-3 dispatch (l3_call, fz_cblas) and cases (fz_setup, fz_verify): shared with
 * the fuzz test, without its tests */
#define TESS_FUZZ_L3_NO_TESTS
#include "test_fuzz_l3.c"

#define BUF_ELEMS 4096 /* every buffer here: 4096 elements of the widest type */

static unsigned char bufA[BUF_ELEMS * 16], bufB[BUF_ELEMS * 16], bufC[BUF_ELEMS * 16];
static unsigned char bufC0[BUF_ELEMS * 16];

static const tess_trans_t trans3[3] = {TESS_NO_TRANS, TESS_TRANS, TESS_CONJ_TRANS};

/* One call of tess_gemm (typed = 0) or tess_?gemm (typed = 1). */
struct call {
    tess_dtype_t dt;
    int typed;
    int layout, ta, tb; /* int so that invalid values can be passed */
    int64_t m, n, k;
    const void *alpha;
    const void *A;
    int64_t lda;
    const void *B;
    int64_t ldb;
    const void *beta;
    void *C;
    int64_t ldc;
};

static unsigned char one_[16], half_[16];

/* A valid call: m = 5, n = 7, k = 3 column-major NN with minimal leading dimensions. */
static struct call base_call(tess_dtype_t dt, int typed) {
    struct call c;
    memset(&c, 0, sizeof c);
    ref_scalar(dt, one_, 1.0, 0.0);
    ref_scalar(dt, half_, 0.5, 0.25);
    c.dt = dt;
    c.typed = typed;
    c.layout = TESS_COL_MAJOR;
    c.ta = TESS_NO_TRANS;
    c.tb = TESS_NO_TRANS;
    c.m = 5, c.n = 7, c.k = 3;
    c.alpha = one_;
    c.beta = half_;
    c.A = bufA, c.lda = 5;
    c.B = bufB, c.ldb = 3;
    c.C = bufC, c.ldc = 5;
    return c;
}

static int do_call(const struct call *c) {
    if (!c->typed)
        return tess_gemm(c->dt, (tess_layout_t)c->layout, (tess_trans_t)c->ta, (tess_trans_t)c->tb,
                         c->m, c->n, c->k, c->alpha, c->A, c->lda, c->B, c->ldb, c->beta, c->C,
                         c->ldc);
    switch (c->dt) {
    case TESS_S:
        return tess_sgemm((tess_layout_t)c->layout, (tess_trans_t)c->ta, (tess_trans_t)c->tb, c->m,
                          c->n, c->k, *(const float *)c->alpha, c->A, c->lda, c->B, c->ldb,
                          *(const float *)c->beta, c->C, c->ldc);
    case TESS_D:
        return tess_dgemm((tess_layout_t)c->layout, (tess_trans_t)c->ta, (tess_trans_t)c->tb, c->m,
                          c->n, c->k, *(const double *)c->alpha, c->A, c->lda, c->B, c->ldb,
                          *(const double *)c->beta, c->C, c->ldc);
    case TESS_C:
        return tess_cgemm((tess_layout_t)c->layout, (tess_trans_t)c->ta, (tess_trans_t)c->tb, c->m,
                          c->n, c->k, c->alpha, c->A, c->lda, c->B, c->ldb, c->beta, c->C, c->ldc);
    case TESS_Z:
        return tess_zgemm((tess_layout_t)c->layout, (tess_trans_t)c->ta, (tess_trans_t)c->tb, c->m,
                          c->n, c->k, c->alpha, c->A, c->lda, c->B, c->ldb, c->beta, c->C, c->ldc);
    }
    return -100;
}

/* 1 if word occurs in s delimited by non-identifier characters. */
static int has_word(const char *s, const char *word) {
    size_t wl = strlen(word);
    for (const char *p = s; (p = strstr(p, word)) != NULL; p++) {
        int before = p == s || !(isalnum((unsigned char)p[-1]) || p[-1] == '_');
        int after = !(isalnum((unsigned char)p[wl]) || p[wl] == '_');
        if (before && after) return 1;
    }
    return 0;
}

static uint64_t fill_seed = 5;

/* Fill A, B, C with random values (C also saved in bufC0). */
static void fill_buffers(tess_dtype_t dt) {
    ref_fill_random(dt, bufA, BUF_ELEMS, &fill_seed);
    ref_fill_random(dt, bufB, BUF_ELEMS, &fill_seed);
    ref_fill_random(dt, bufC, BUF_ELEMS, &fill_seed);
    memcpy(bufC0, bufC, sizeof bufC);
}

static const char *call_str(const struct call *c) {
    static char buf[256];
    snprintf(buf, sizeof buf,
             "%s%s layout=%d ta=%d tb=%d m=%lld n=%lld k=%lld lda=%lld ldb=%lld ldc=%lld "
             "A=%s B=%s C=%s alpha=%s beta=%s",
             c->typed ? "tess_" : "tess_gemm:", ref_dtype_name(c->dt), c->layout, c->ta, c->tb,
             (long long)c->m, (long long)c->n, (long long)c->k, (long long)c->lda,
             (long long)c->ldb, (long long)c->ldc, c->A ? "ptr" : "NULL", c->B ? "ptr" : "NULL",
             c->C ? "ptr" : "NULL", c->alpha ? "ptr" : "NULL", c->beta ? "ptr" : "NULL");
    return buf;
}

/* The call returns TESS_EINVAL, the message names `word`, and no byte of C changed. */
#define EXPECT_EINVAL(callp, word)                                                               \
    do {                                                                                         \
        fill_buffers((callp)->dt);                                                               \
        int st_ = do_call(callp);                                                                \
        ASSERT_MSG(st_ == TESS_EINVAL, "%s: returned %d, expected TESS_EINVAL (%s)",             \
                   call_str(callp), st_, tess_last_error());                                     \
        const char *e_ = tess_last_error();                                                      \
        ASSERT_MSG(e_ != NULL && has_word(e_, word),                                             \
                   "%s: tess_last_error() = \"%s\" does not name \"%s\"", call_str(callp),       \
                   e_ ? e_ : "(null)", word);                                                    \
        ASSERT_MSG(memcmp(bufC, bufC0, sizeof bufC) == 0, "%s: C was written", call_str(callp)); \
    } while (0)

#define EXPECT_OK_UNTOUCHED(callp)                                                               \
    do {                                                                                         \
        fill_buffers((callp)->dt);                                                               \
        int st_ = do_call(callp);                                                                \
        ASSERT_MSG(st_ == TESS_OK, "%s: returned %d (%s)", call_str(callp), st_,                 \
                   tess_last_error());                                                           \
        ASSERT_MSG(memcmp(bufC, bufC0, sizeof bufC) == 0, "%s: C was written", call_str(callp)); \
    } while (0)

/* An invalid layout (0, 103, a trans value) is TESS_EINVAL naming "layout", in the generic
 * and the typed entries. */
TEST(args_layout_invalid) {
    static const int bad[3] = {0, 103, TESS_NO_TRANS};
    for (int typed = 0; typed < 2; typed++)
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < 3; i++) {
                struct call c = base_call((tess_dtype_t)d, typed);
                c.layout = bad[i];
                EXPECT_EINVAL(&c, "layout");
            }
}

/* An invalid transa or transb (0, 110, 114, 'N') is TESS_EINVAL naming it. */
TEST(args_trans_invalid) {
    static const int bad[4] = {0, 110, 114, 'N'};
    for (int typed = 0; typed < 2; typed++)
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < 4; i++) {
                struct call c = base_call((tess_dtype_t)d, typed);
                c.ta = bad[i];
                EXPECT_EINVAL(&c, "transa");
                c = base_call((tess_dtype_t)d, typed);
                c.tb = bad[i];
                EXPECT_EINVAL(&c, "transb");
            }
}

/* tess_gemm with a dtype outside s/d/c/z is TESS_EINVAL naming "dtype". */
TEST(args_dtype_invalid) {
    static const int bad[3] = {4, -1, 100};
    for (int i = 0; i < 3; i++) {
        struct call c = base_call(TESS_D, 0);
        c.dt = (tess_dtype_t)bad[i];
        memcpy(bufC0, bufC, sizeof bufC);
        int st = tess_gemm(c.dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, 5, 7, 3, one_, bufA,
                           5, bufB, 3, half_, bufC, 5);
        ASSERT_EQ(st, TESS_EINVAL);
        ASSERT_MSG(has_word(tess_last_error(), "dtype"), "message \"%s\" does not name dtype",
                   tess_last_error());
        ASSERT(memcmp(bufC, bufC0, sizeof bufC) == 0);
    }
}

/* Negative m, n or k is TESS_EINVAL naming the dimension, in both layouts. */
TEST(args_negative_dims) {
    for (int typed = 0; typed < 2; typed++)
        for (int d = 0; d < 4; d++)
            for (int l = 0; l < 2; l++) {
                struct call c = base_call((tess_dtype_t)d, typed);
                c.layout = l ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
                c.lda = c.ldb = c.ldc = 8;
                c.m = -1;
                EXPECT_EINVAL(&c, "m");
                c.m = 5, c.n = -3;
                EXPECT_EINVAL(&c, "n");
                c.n = 7, c.k = -1;
                EXPECT_EINVAL(&c, "k");
                c.k = INT64_MIN;
                EXPECT_EINVAL(&c, "k");
            }
}

/* For every layout and transpose pair, lda, ldb and ldc one below the minimum are
 * TESS_EINVAL naming them; exactly the minimum is accepted and computes correctly. */
TEST(args_leading_dims_too_small) {
    int idx = 0;
    for (int l = 0; l < 2; l++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++, idx++) {
                tess_layout_t layout = l ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
                tess_dtype_t dt = (tess_dtype_t)(idx % 4);
                int64_t m = 5, n = 7, k = 3, ar, ac, br, bc;
                ref_stored_dims(trans3[a], m, k, &ar, &ac);
                ref_stored_dims(trans3[b], k, n, &br, &bc);
                int64_t lda = ref_min_ld(layout, ar, ac), ldb = ref_min_ld(layout, br, bc);
                int64_t ldc = ref_min_ld(layout, m, n);
                for (int typed = 0; typed < 2; typed++) {
                    struct call c = base_call(dt, typed);
                    c.layout = layout, c.ta = trans3[a], c.tb = trans3[b];
                    c.m = m, c.n = n, c.k = k;
                    c.lda = lda - 1, c.ldb = ldb, c.ldc = ldc;
                    EXPECT_EINVAL(&c, "lda");
                    c.lda = lda, c.ldb = ldb - 1;
                    EXPECT_EINVAL(&c, "ldb");
                    c.ldb = ldb, c.ldc = ldc - 1;
                    EXPECT_EINVAL(&c, "ldc");
                    c.ldc = 0;
                    EXPECT_EINVAL(&c, "ldc");
                    c.ldc = -5;
                    EXPECT_EINVAL(&c, "ldc");
                }
                /* exactly the minimum: accepted, and the result is right */
                struct ref_gemm_case rc;
                memset(&rc, 0, sizeof rc);
                rc.dt = dt, rc.layout = layout, rc.ta = trans3[a], rc.tb = trans3[b];
                rc.m = m, rc.n = n, rc.k = k;
                rc.alpha[0] = 1, rc.beta[0] = -1;
                rc.flags = idx % 2 ? REF_TYPED : 0;
                rc.seed = 300 + (uint64_t)idx;
                char msg[1024];
                ASSERT_MSG(ref_gemm_run(&rc, msg, sizeof msg) == 0, "%s", msg);
            }
}

/* Leading dimensions must be >= 1 even when the dimension they cover is 0 (netlib). */
TEST(args_leading_dims_zero_with_empty_matrix) {
    struct call c = base_call(TESS_D, 0);
    c.m = 0, c.lda = 0, c.ldc = 1;
    EXPECT_EINVAL(&c, "lda");
    c = base_call(TESS_D, 1);
    c.m = 0, c.lda = 1, c.ldc = 0;
    EXPECT_EINVAL(&c, "ldc");
    c = base_call(TESS_Z, 0);
    c.k = 0, c.ldb = 0;
    EXPECT_EINVAL(&c, "ldb");
    c = base_call(TESS_S, 0);
    c.layout = TESS_ROW_MAJOR, c.n = 0, c.ldb = 0, c.ldc = 1, c.lda = 3;
    EXPECT_EINVAL(&c, "ldb");
}

/* With several bad arguments, the first in CBLAS order is reported. */
TEST(args_first_bad_argument_reported) {
    struct call c = base_call(TESS_D, 0);
    c.layout = 0, c.m = -1, c.lda = 0;
    EXPECT_EINVAL(&c, "layout");
    c = base_call(TESS_C, 1);
    c.m = -1, c.lda = 0, c.ldc = 0;
    EXPECT_EINVAL(&c, "m");
    c = base_call(TESS_Z, 0);
    c.lda = 1, c.ldc = 0;
    EXPECT_EINVAL(&c, "lda");
}

/* NULL A, B, C, alpha or beta where they are needed is TESS_EINVAL naming them. */
TEST(args_null_pointers) {
    for (int typed = 0; typed < 2; typed++)
        for (int d = 0; d < 4; d++) {
            struct call c = base_call((tess_dtype_t)d, typed);
            c.A = NULL;
            EXPECT_EINVAL(&c, "A");
            c = base_call((tess_dtype_t)d, typed);
            c.B = NULL;
            EXPECT_EINVAL(&c, "B");
            c = base_call((tess_dtype_t)d, typed);
            c.C = NULL;
            { /* C is NULL: nothing to compare, only the status and the message */
                int st = do_call(&c);
                ASSERT_MSG(st == TESS_EINVAL, "%s: returned %d", call_str(&c), st);
                ASSERT_MSG(has_word(tess_last_error(), "C"), "\"%s\" does not name C",
                           tess_last_error());
            }
            if (typed && (d == TESS_S || d == TESS_D)) continue; /* scalars by value */
            c = base_call((tess_dtype_t)d, typed);
            c.alpha = NULL;
            EXPECT_EINVAL(&c, "alpha");
            c = base_call((tess_dtype_t)d, typed);
            c.beta = NULL;
            EXPECT_EINVAL(&c, "beta");
        }
}

/* NULL operands of an empty dimension are accepted: m = 0 or n = 0 with NULL A, B, C, and
 * k = 0 with NULL A and B (C = beta C). */
TEST(args_null_allowed_when_empty) {
    for (int d = 0; d < 4; d++) {
        struct call c = base_call((tess_dtype_t)d, d % 2);
        c.m = 0, c.A = NULL, c.C = NULL, c.lda = 1, c.ldc = 1;
        ASSERT_MSG(do_call(&c) == TESS_OK, "%s: %s", call_str(&c), tess_last_error());
        c = base_call((tess_dtype_t)d, d % 2);
        c.n = 0, c.B = NULL, c.C = NULL;
        ASSERT_MSG(do_call(&c) == TESS_OK, "%s: %s", call_str(&c), tess_last_error());
        c = base_call((tess_dtype_t)d, 0);
        c.m = c.n = c.k = 0, c.A = c.B = NULL, c.C = NULL, c.lda = c.ldb = c.ldc = 1;
        ASSERT_MSG(do_call(&c) == TESS_OK, "%s: %s", call_str(&c), tess_last_error());

        /* k = 0: C = beta C, A and B not needed */
        c = base_call((tess_dtype_t)d, d % 2);
        c.k = 0, c.A = NULL, c.B = NULL, c.ldb = 1;
        fill_buffers(c.dt);
        ASSERT_MSG(do_call(&c) == TESS_OK, "%s: %s", call_str(&c), tess_last_error());
        memcpy(bufA, bufC0, sizeof bufA); /* expected: beta * C0 in bufA */
        ref_gemm(c.dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, c.m, c.n, 0, one_, NULL, c.lda,
                 NULL, 1, half_, bufA, c.ldc);
        size_t es = ref_esize(c.dt);
        ASSERT_MSG(memcmp(bufA, bufC, (size_t)(c.ldc * c.n) * es) == 0, "%s: C != beta C",
                   call_str(&c));
        ASSERT(memcmp(bufC + (size_t)(c.ldc * c.n) * es, bufC0 + (size_t)(c.ldc * c.n) * es,
                      sizeof bufC - (size_t)(c.ldc * c.n) * es) == 0);
    }
}

/* Quick return: m = 0 or n = 0 writes nothing at all, even with beta = 0. */
TEST(args_quick_return_writes_nothing) {
    for (int d = 0; d < 4; d++)
        for (int typed = 0; typed < 2; typed++) {
            unsigned char zero[16];
            ref_scalar((tess_dtype_t)d, zero, 0, 0);
            struct call c = base_call((tess_dtype_t)d, typed);
            c.m = 0, c.ldc = 3;
            EXPECT_OK_UNTOUCHED(&c);
            c.beta = zero;
            EXPECT_OK_UNTOUCHED(&c);
            c = base_call((tess_dtype_t)d, typed);
            c.n = 0;
            EXPECT_OK_UNTOUCHED(&c);
            c.beta = zero;
            EXPECT_OK_UNTOUCHED(&c);
            c.layout = TESS_ROW_MAJOR, c.lda = 3, c.ldb = 1, c.ldc = 1;
            EXPECT_OK_UNTOUCHED(&c);
        }
}

/* tess_strerror gives a distinct non-empty message for every status and something
 * non-empty for unknown codes. */
TEST(strerror_messages) {
    static const int codes[] = {
#define TESS_X_(name, value, msg) TESS_##name,
        TESS_STATUS_MAP(TESS_X_)
#undef TESS_X_
    };
    size_t nc = sizeof codes / sizeof codes[0];
    ASSERT(nc >= 9);
    for (size_t i = 0; i < nc; i++) {
        const char *s = tess_strerror(codes[i]);
        ASSERT_MSG(s && *s, "tess_strerror(%d) empty", codes[i]);
        for (size_t j = 0; j < i; j++)
            ASSERT_MSG(strcmp(s, tess_strerror(codes[j])) != 0,
                       "tess_strerror(%d) == tess_strerror(%d)", codes[i], codes[j]);
    }
    static const int unknown[] = {1, -9, -100, 12345, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *s = tess_strerror(unknown[i]);
        ASSERT_MSG(s && *s, "tess_strerror(%d) empty", unknown[i]);
    }
}

/* The message names the entry point that failed. */
TEST(last_error_names_entry_point) {
    static const char *names[4] = {"tess_sgemm", "tess_dgemm", "tess_cgemm", "tess_zgemm"};
    for (int d = 0; d < 4; d++) {
        struct call c = base_call((tess_dtype_t)d, 1);
        c.lda = 1;
        EXPECT_EINVAL(&c, "lda");
        ASSERT_MSG(strstr(tess_last_error(), names[d]), "\"%s\" does not name %s",
                   tess_last_error(), names[d]);
    }
    struct call c = base_call(TESS_Z, 0);
    c.ldb = 1;
    EXPECT_EINVAL(&c, "ldb");
    ASSERT_MSG(strstr(tess_last_error(), "tess_gemm"), "\"%s\" does not name tess_gemm",
               tess_last_error());
}

struct thread_err {
    char seen_before[512];
    char seen_after[512];
    int st;
};

static void *error_in_thread(void *p) {
    struct thread_err *t = p;
    snprintf(t->seen_before, sizeof t->seen_before, "%s", tess_last_error());
    double a = 1, b = 1, cc = 0;
    t->st = tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, 1, 1, -7, 1.0, &a, 1, &b, 1,
                       0.0, &cc, 1);
    snprintf(t->seen_after, sizeof t->seen_after, "%s", tess_last_error());
    return NULL;
}

/* tess_last_error is per thread and cleared by the next successful call. */
TEST(last_error_thread_local_and_cleared) {
    struct call c = base_call(TESS_D, 1);
    c.ldc = 2;
    EXPECT_EINVAL(&c, "ldc");
    char mine[512];
    snprintf(mine, sizeof mine, "%s", tess_last_error());

    pthread_t th;
    struct thread_err te;
    memset(&te, 0, sizeof te);
    ASSERT_EQ(pthread_create(&th, NULL, error_in_thread, &te), 0);
    pthread_join(th, NULL);
    ASSERT_MSG(te.seen_before[0] == '\0', "a new thread sees \"%s\"", te.seen_before);
    ASSERT_EQ(te.st, TESS_EINVAL);
    ASSERT_MSG(has_word(te.seen_after, "k"), "other thread: \"%s\"", te.seen_after);
    ASSERT_MSG(strcmp(mine, tess_last_error()) == 0,
               "this thread's message changed to \"%s\" by another thread", tess_last_error());

    c = base_call(TESS_D, 1);
    fill_buffers(TESS_D);
    ASSERT_OK(do_call(&c));
    ASSERT_MSG(tess_last_error()[0] == '\0', "after success: \"%s\"", tess_last_error());
}

/* tess_device_stats rejects a device index out of range and a NULL output. */
TEST(device_stats_bad_args) {
    int n = tess_device_count();
    ASSERT_GT(n, 0);
    tess_dev_stats_t st;
    ASSERT_EQ(tess_device_stats(-1, &st), TESS_EINVAL);
    ASSERT_EQ(tess_device_stats(n, &st), TESS_EINVAL);
    ASSERT_EQ(tess_device_stats(0, NULL), TESS_EINVAL);
    ASSERT_OK(tess_device_stats(n - 1, &st));
}

/* Every CBLAS-equivalent enum value is accepted (CBLAS enums pass through unchanged). */
TEST(args_cblas_values_accepted) {
    ASSERT_EQ(TESS_ROW_MAJOR, 101);
    ASSERT_EQ(TESS_COL_MAJOR, 102);
    ASSERT_EQ(TESS_NO_TRANS, 111);
    ASSERT_EQ(TESS_TRANS, 112);
    ASSERT_EQ(TESS_CONJ_TRANS, 113);
}

/* ==== issue 8: hostile input to every level-3 routine ======================================= */

/* The arguments of a level-3 call that can be made invalid, as tessera names them. */
enum ha_arg {
    HA_LAYOUT,
    HA_SIDE,
    HA_UPLO,
    HA_TA,
    HA_TB,
    HA_DIAG,
    HA_M,
    HA_N,
    HA_K,
    HA_LDA,
    HA_LDB,
    HA_LDC,
    HA_ALPHA,
    HA_BETA,
    HA_A,
    HA_B,
    HA_C
};

struct ha_spec {
    enum ha_arg id;
    int pos;          /* 1-based position in the typed signature (generic: one more) */
    const char *name; /* as tess_last_error names it */
};

/* The arguments netlib checks (enumerations, dimensions, leading dimensions), in its order,
 * which is the CBLAS positional order; returns their number. */
static int ha_netlib_args(enum l3_routine r, struct ha_spec *o) {
    int n = 0;
#define HA_(id_, pos_, name_) (o[n].id = (id_), o[n].pos = (pos_), o[n++].name = (name_))
    switch (r) {
    case L3_GEMM:
        HA_(HA_LAYOUT, 1, "layout"), HA_(HA_TA, 2, "transa"), HA_(HA_TB, 3, "transb");
        HA_(HA_M, 4, "m"), HA_(HA_N, 5, "n"), HA_(HA_K, 6, "k");
        HA_(HA_LDA, 9, "lda"), HA_(HA_LDB, 11, "ldb"), HA_(HA_LDC, 14, "ldc");
        break;
    case L3_SYMM:
    case L3_HEMM:
        HA_(HA_LAYOUT, 1, "layout"), HA_(HA_SIDE, 2, "side"), HA_(HA_UPLO, 3, "uplo");
        HA_(HA_M, 4, "m"), HA_(HA_N, 5, "n");
        HA_(HA_LDA, 8, "lda"), HA_(HA_LDB, 10, "ldb"), HA_(HA_LDC, 13, "ldc");
        break;
    case L3_SYRK:
    case L3_HERK:
        HA_(HA_LAYOUT, 1, "layout"), HA_(HA_UPLO, 2, "uplo"), HA_(HA_TA, 3, "trans");
        HA_(HA_N, 4, "n"), HA_(HA_K, 5, "k"), HA_(HA_LDA, 8, "lda"), HA_(HA_LDC, 11, "ldc");
        break;
    case L3_SYR2K:
    case L3_HER2K:
        HA_(HA_LAYOUT, 1, "layout"), HA_(HA_UPLO, 2, "uplo"), HA_(HA_TA, 3, "trans");
        HA_(HA_N, 4, "n"), HA_(HA_K, 5, "k"), HA_(HA_LDA, 8, "lda"), HA_(HA_LDB, 10, "ldb");
        HA_(HA_LDC, 13, "ldc");
        break;
    case L3_TRMM:
    case L3_TRSM: /* the in-place B is l3_args' C */
        HA_(HA_LAYOUT, 1, "layout"), HA_(HA_SIDE, 2, "side"), HA_(HA_UPLO, 3, "uplo");
        HA_(HA_TA, 4, "transa"), HA_(HA_DIAG, 5, "diag"), HA_(HA_M, 6, "m"), HA_(HA_N, 7, "n");
        HA_(HA_LDA, 10, "lda"), HA_(HA_LDC, 12, "ldb");
        break;
    default: break;
    }
    return n;
}

/* The pointer arguments that can be NULL in this entry (real scalars of a typed entry are
 * passed by value); returns their number. */
static int ha_pointer_args(enum l3_routine r, tess_dtype_t dt, int typed, struct ha_spec *o) {
    int n = 0;
    bool by_value_alpha = typed && (!ref_is_complex(dt) || l3_real_alpha(r));
    bool by_value_beta = typed && (!ref_is_complex(dt) || l3_real_beta(r));
    switch (r) {
    case L3_GEMM:
        if (!by_value_alpha) HA_(HA_ALPHA, 7, "alpha");
        if (!by_value_beta) HA_(HA_BETA, 12, "beta");
        HA_(HA_A, 8, "A"), HA_(HA_B, 10, "B"), HA_(HA_C, 13, "C");
        break;
    case L3_SYMM:
    case L3_HEMM:
    case L3_SYR2K:
    case L3_HER2K:
        if (!by_value_alpha) HA_(HA_ALPHA, 6, "alpha");
        if (!by_value_beta) HA_(HA_BETA, 11, "beta");
        HA_(HA_A, 7, "A"), HA_(HA_B, 9, "B"), HA_(HA_C, 12, "C");
        break;
    case L3_SYRK:
    case L3_HERK:
        if (!by_value_alpha) HA_(HA_ALPHA, 6, "alpha");
        if (!by_value_beta) HA_(HA_BETA, 9, "beta");
        HA_(HA_A, 7, "A"), HA_(HA_C, 10, "C");
        break;
    case L3_TRMM:
    case L3_TRSM:
        if (!by_value_alpha) HA_(HA_ALPHA, 8, "alpha");
        HA_(HA_A, 9, "A"), HA_(HA_C, 11, "B");
        break;
    default: break;
    }
#undef HA_
    return n;
}

/* Make argument id of a invalid (a value no routine accepts, whatever the others are). */
static void ha_spoil(struct l3_args *a, enum ha_arg id) {
    switch (id) {
    case HA_LAYOUT: a->layout = 0; break;
    case HA_SIDE: a->side = 0; break;
    case HA_UPLO: a->uplo = 0; break;
    case HA_TA: a->ta = 0; break;
    case HA_TB: a->tb = 0; break;
    case HA_DIAG: a->diag = 0; break;
    case HA_M: a->m = -1; break;
    case HA_N: a->n = -1; break;
    case HA_K: a->k = -1; break;
    case HA_LDA: a->lda = 0; break;
    case HA_LDB: a->ldb = 0; break;
    case HA_LDC: a->ldc = 0; break;
    case HA_ALPHA: a->alpha = NULL; break;
    case HA_BETA: a->beta = NULL; break;
    case HA_A: a->A = NULL; break;
    case HA_B: a->B = NULL; break;
    case HA_C: a->C = NULL; break;
    }
}

static unsigned char ha_buf[3][BUF_ELEMS * 16], ha_buf0[3][BUF_ELEMS * 16];
static unsigned char ha_one[16], ha_half[16];

/* A valid call of routine r (m = 3, n = 4, k = 2, minimal leading dimensions). */
static struct l3_args ha_base(enum l3_routine r, tess_dtype_t dt, int typed, tess_layout_t layout) {
    struct fz_case c;
    memset(&c, 0, sizeof c);
    c.r = r, c.dt = dt, c.layout = layout, c.side = TESS_LEFT, c.uplo = TESS_UPPER;
    c.ta = c.tb = TESS_NO_TRANS, c.diag = TESS_NON_UNIT;
    c.m = 3, c.n = 4, c.k = 2;
    int64_t sh[3][2];
    fz_shapes(&c, sh);
    struct l3_args a;
    memset(&a, 0, sizeof a);
    a.r = r, a.dt = dt, a.typed = typed;
    a.layout = layout, a.side = TESS_LEFT, a.uplo = TESS_UPPER, a.ta = a.tb = TESS_NO_TRANS;
    a.diag = TESS_NON_UNIT;
    a.m = c.m, a.n = c.n, a.k = c.k;
    tess_dtype_t rdt = dt == TESS_C ? TESS_S : dt == TESS_Z ? TESS_D : dt;
    ref_scalar(l3_real_alpha(r) ? rdt : dt, ha_one, 1, 0);
    ref_scalar(l3_real_beta(r) ? rdt : dt, ha_half, 0.5, 0);
    a.alpha = ha_one, a.beta = ha_half;
    a.A = ha_buf[0], a.B = ha_buf[1], a.C = ha_buf[2];
    a.lda = ref_min_ld(layout, sh[0][0], sh[0][1]);
    a.ldb = ref_min_ld(layout, sh[1][0], sh[1][1]);
    a.ldc = ref_min_ld(layout, sh[2][0], sh[2][1]);
    return a;
}

/* Call with the buffers freshly restored; TESS_EINVAL naming `want` (position pos, +1 for
 * the generic entry), nothing written. 0, or 1 with msg. */
static int ha_expect(const struct l3_args *a, const struct ha_spec *want, char *msg, size_t len,
                     const char *what) {
    memcpy(ha_buf, ha_buf0, sizeof ha_buf);
    int st = l3_call(a);
    char exp[64];
    snprintf(exp, sizeof exp, "argument %d (%s", want->pos + (a->typed ? 0 : 1), want->name);
    const char *e = tess_last_error();
    if (st != TESS_EINVAL) {
        snprintf(msg, len, "%s: status %d (%s), expected TESS_EINVAL naming %s", what, st, e, exp);
        return 1;
    }
    if (!strstr(e, exp)) {
        snprintf(msg, len, "%s: message \"%s\" lacks \"%s\"", what, e, exp);
        return 1;
    }
    if (memcmp(ha_buf, ha_buf0, sizeof ha_buf) != 0) {
        snprintf(msg, len, "%s: a buffer was written", what);
        return 1;
    }
    return 0;
}

/* Every routine, precision, entry kind and layout: each bad argument alone is named; with
 * two bad arguments the first in netlib's order is named; a bad enumeration, dimension or
 * leading dimension is named before any NULL pointer; nothing is ever written. */
TEST(args_level3_every_pair_in_netlib_order) {
    uint64_t s = 77;
    for (int i = 0; i < 3; i++) ref_fill_random(TESS_Z, ha_buf0[i], BUF_ELEMS, &s);
    int ncalls = 0;
    char msg[768], what[256];
    for (int r = 0; r < L3_NR; r++)
        for (int d = l3_herm((enum l3_routine)r) ? 2 : 0; d < 4; d++)
            for (int typed = 0; typed < 2; typed++)
                for (int l = 0; l < 2; l++) {
                    tess_layout_t layout = l ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
                    struct l3_args base = ha_base((enum l3_routine)r, (tess_dtype_t)d, typed,
                                                  layout);
                    memcpy(ha_buf, ha_buf0, sizeof ha_buf);
                    int st = l3_call(&base);
                    ASSERT_MSG(st == TESS_OK, "%s %s: the valid base call returned %d: %s",
                               l3_rname[r], ref_dtype_name((tess_dtype_t)d), st, tess_last_error());
                    struct ha_spec nl[12], pl[8];
                    int nn = ha_netlib_args((enum l3_routine)r, nl);
                    int np = ha_pointer_args((enum l3_routine)r, (tess_dtype_t)d, typed, pl);
                    for (int i = 0; i < nn + np; i++) {
                        const struct ha_spec *x = i < nn ? &nl[i] : &pl[i - nn];
                        struct l3_args a = base;
                        ha_spoil(&a, x->id);
                        snprintf(what, sizeof what, "%s%s %s %s: bad %s", typed ? "typed " : "",
                                 l3_rname[r], ref_dtype_name((tess_dtype_t)d),
                                 ref_layout_name(layout), x->name);
                        ASSERT_MSG(ha_expect(&a, x, msg, sizeof msg, what) == 0, "%s", msg);
                        ncalls++;
                        if (i >= nn) continue;
                        /* with a later netlib argument, or any pointer, bad too */
                        for (int j = i + 1; j < nn + np; j++) {
                            const struct ha_spec *y = j < nn ? &nl[j] : &pl[j - nn];
                            struct l3_args b = base;
                            ha_spoil(&b, x->id);
                            ha_spoil(&b, y->id);
                            snprintf(what, sizeof what, "%s%s %s %s: bad %s and %s",
                                     typed ? "typed " : "", l3_rname[r],
                                     ref_dtype_name((tess_dtype_t)d), ref_layout_name(layout),
                                     x->name, y->name);
                            ASSERT_MSG(ha_expect(&b, x, msg, sizeof msg, what) == 0, "%s", msg);
                            ncalls++;
                        }
                    }
                }
    fprintf(stderr, "  %d rejected calls checked\n", ncalls);
}

/* ---- huge sizes: each in a child process ------------------------------------------------- */

/* One huge-size case: routine, precision, which dimensions are huge (bit 0 m, 1 n, 2 k),
 * and the size. Dimensions a routine does not have are left out. */
struct ha_huge {
    enum l3_routine r;
    tess_dtype_t dt;
    int mask;
    int64_t size;
};

static int ha_huge_cases(struct ha_huge *out, int max) {
    static const int64_t sizes[3] = {(int64_t)1 << 40, (int64_t)1 << 62, INT64_MAX};
    int n = 0;
    for (int r = 0; r < L3_NR; r++) {
        /* the dimension masks that mean something for the routine */
        int masks[5], nm = 0;
        if (r == L3_GEMM)
            masks[nm++] = 1, masks[nm++] = 2, masks[nm++] = 4, masks[nm++] = 3, masks[nm++] = 7;
        else if (l3_rk((enum l3_routine)r))
            masks[nm++] = 2, masks[nm++] = 4, masks[nm++] = 6;
        else
            masks[nm++] = 1, masks[nm++] = 2, masks[nm++] = 3;
        tess_dtype_t dt = l3_herm((enum l3_routine)r) ? TESS_Z : TESS_D;
        for (int i = 0; i < nm; i++)
            for (int z = 0; z < 3 && n < max; z++)
                out[n].r = (enum l3_routine)r, out[n].dt = dt, out[n].mask = masks[i],
                out[n++].size = sizes[z];
    }
    return n;
}

static void ha_huge_describe(const struct ha_huge *h, char *buf, size_t len) {
    int64_t m = h->mask & 1 ? h->size : 3, n = h->mask & 2 ? h->size : 3,
            k = h->mask & 4 ? h->size : 3;
    if (l3_rk(h->r))
        snprintf(buf, len, "tess_%s%s n=%lld k=%lld", ref_dtype_name(h->dt), l3_rname[h->r],
                 (long long)n, (long long)k);
    else if (h->r == L3_GEMM)
        snprintf(buf, len, "tess_%s%s m=%lld n=%lld k=%lld", ref_dtype_name(h->dt), l3_rname[h->r],
                 (long long)m, (long long)n, (long long)k);
    else
        snprintf(buf, len, "tess_%s%s m=%lld n=%lld", ref_dtype_name(h->dt), l3_rname[h->r],
                 (long long)m, (long long)n);
}

/* (Bugs B1/B2, fixed: tile and task counts overflowed int64 when a dimension was INT64_MAX
 * (ceil(m / T) = (m + T - 1) / T) or the output had two dimensions >= 2^40 (products of
 * tile counts), and nothing checked that an array's extent ld x cols x esize could be
 * addressed: TESS_OK without computing anything, SIGSEGV in a worker, every device failed
 * for the rest of the process. Every routine now rejects an array it would touch that
 * cannot be addressed, naming it, before anything is queued.) */

/* 1 if some device of the runtime is marked failed. */
static int ha_any_device_failed(void) {
    for (int i = 0; i < tess_device_count(); i++) {
        tess_dev_stats_t s;
        if (tess_device_stats(i, &s) == TESS_OK && s.failed) return 1;
    }
    return 0;
}

/* Run huge-size case h in this process: the call returns TESS_EINVAL (naming an argument)
 * or TESS_ENOMEM with a message, writes nothing, fails no device, and the runtime still
 * computes a small GEMM and TRSM right afterwards. 0 (*einval counts a passing
 * TESS_EINVAL, when einval is not NULL), or 1 with msg. */
static int ha_huge_run(const struct ha_huge *h, char *msg, size_t len, int *einval) {
    struct l3_args a = ha_base(h->r, h->dt, 1, TESS_COL_MAJOR);
    if (h->mask & 1) a.m = h->size;
    if (h->mask & 2) a.n = h->size;
    if (h->mask & 4) a.k = h->size;
    struct fz_case c;
    memset(&c, 0, sizeof c);
    c.r = h->r, c.dt = h->dt, c.layout = TESS_COL_MAJOR, c.side = TESS_LEFT;
    c.uplo = TESS_UPPER, c.ta = c.tb = TESS_NO_TRANS, c.diag = TESS_NON_UNIT;
    c.m = a.m, c.n = a.n, c.k = a.k;
    int64_t sh[3][2];
    fz_shapes(&c, sh);
    a.lda = ref_min_ld(TESS_COL_MAJOR, sh[0][0], sh[0][1]);
    a.ldb = ref_min_ld(TESS_COL_MAJOR, sh[1][0], sh[1][1]);
    a.ldc = ref_min_ld(TESS_COL_MAJOR, sh[2][0], sh[2][1]);
    uint64_t s = 5;
    for (int i = 0; i < 3; i++) ref_fill_random(TESS_Z, ha_buf0[i], BUF_ELEMS, &s);
    memcpy(ha_buf, ha_buf0, sizeof ha_buf);
    char what[256];
    ha_huge_describe(h, what, sizeof what);
    int st = l3_call(&a);
    char err[512];
    snprintf(err, sizeof err, "%s", tess_last_error());
    if (st != TESS_EINVAL && st != TESS_ENOMEM) {
        snprintf(msg, len, "%s: status %d (%s: %s), expected TESS_EINVAL or TESS_ENOMEM", what, st,
                 tess_strerror(st), err);
        return 1;
    }
    if (!err[0]) {
        snprintf(msg, len, "%s: status %d without a message", what, st);
        return 1;
    }
    /* TESS_EINVAL names the argument (the array that cannot be addressed) */
    if (st == TESS_EINVAL && !strstr(err, "argument ")) {
        snprintf(msg, len, "%s: TESS_EINVAL names no argument: %s", what, err);
        return 1;
    }
    if (memcmp(ha_buf, ha_buf0, sizeof ha_buf) != 0) {
        snprintf(msg, len, "%s: a buffer was written", what);
        return 1;
    }
    if (ha_any_device_failed()) {
        snprintf(msg, len, "%s (status %d: %s): a device was marked failed", what, st, err);
        return 1;
    }
    /* the runtime is still whole */
    struct fz_case g;
    memset(&g, 0, sizeof g);
    g.dt = TESS_D, g.layout = TESS_COL_MAJOR, g.side = TESS_LEFT, g.uplo = TESS_LOWER;
    g.ta = g.tb = TESS_NO_TRANS, g.diag = TESS_NON_UNIT;
    g.m = 37, g.n = 29, g.k = 41, g.alpha[0] = 1, g.beta[0] = 0.5, g.seed = 3;
    char why[768];
    for (int i = 0; i < 2; i++) {
        g.r = i ? L3_TRSM : L3_GEMM;
        if (fz_run_case(&g, why, sizeof why)) {
            snprintf(msg, len, "after %.200s (status %d: %.200s): %.500s", what, st, err, why);
            return 1;
        }
    }
    if (einval) *einval += st == TESS_EINVAL;
    return 0;
}

/* The child's side of args_huge_sizes_never_crash under TESS_HUGE_FORK=1: the case
 * TESS_HUGE_CASE (an index) in a fresh process. Passes at once without TESS_HUGE_CASE. */
TEST(args_huge_child_case) {
    const char *e = getenv("TESS_HUGE_CASE");
    if (!e || !*e) return;
    alarm(60);
    struct ha_huge cases[128];
    int nc = ha_huge_cases(cases, 128), idx = atoi(e);
    ASSERT(idx >= 0 && idx < nc);
    char msg[1024];
    ASSERT_MSG(ha_huge_run(&cases[idx], msg, sizeof msg, NULL) == 0, "%s", msg);
}

/* Run case i in a child process (this program, test args_huge_child_case); 0 if it passed,
 * else 1 with how it ended and the tail of its output in msg. */
static int ha_huge_in_child(int i, char *msg, size_t len) {
    char logpath[] = "/tmp/tess_huge_XXXXXX";
    int fd = mkstemp(logpath);
    if (fd < 0) {
        snprintf(msg, len, "mkstemp failed");
        return 1;
    }
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i);
        setenv("TESS_HUGE_CASE", idx, 1);
        execl("/proc/self/exe", "test_args", "args_huge_child_case", (char *)NULL);
        _exit(126);
    }
    int ws = 0;
    if (pid > 0) waitpid(pid, &ws, 0);
    bool ok = pid > 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
    if (!ok) {
        char tail[600] = "";
        off_t end = lseek(fd, 0, SEEK_END);
        off_t from = end > (off_t)sizeof tail - 1 ? end - (off_t)sizeof tail + 1 : 0;
        ssize_t got = pread(fd, tail, sizeof tail - 1, from);
        tail[got > 0 ? got : 0] = '\0';
        for (char *p = tail; *p; p++)
            if (*p == '\n') *p = ' ';
        if (WIFSIGNALED(ws))
            snprintf(msg, len, "killed by signal %d: ...%s", WTERMSIG(ws), tail);
        else
            snprintf(msg, len, "exit %d: ...%s", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, tail);
    }
    close(fd);
    unlink(logpath);
    return !ok;
}

/* Huge sizes (2^40, 2^62, INT64_MAX in each dimension of every routine, alone and
 * together; leading dimensions legal, operands a few elements: no such matrix can exist)
 * return TESS_EINVAL (naming the array) or TESS_ENOMEM with a message, write nothing,
 * never crash or hang, fail no device, and leave the runtime usable. With TESS_HUGE_FORK=1
 * every case runs in a child process of its own, so that each crash is reported. */
TEST(args_huge_sizes_never_crash) {
    struct ha_huge cases[128];
    int nc = ha_huge_cases(cases, 128);
    bool fork_each = ref_env_long("TESS_HUGE_FORK", 0) != 0;
    int bad = 0, einval = 0;
    char first[1024] = "", msg[1024], what[256];
    for (int i = 0; i < nc; i++) {
        ha_huge_describe(&cases[i], what, sizeof what);
        int failed = fork_each ? ha_huge_in_child(i, msg, sizeof msg)
                               : ha_huge_run(&cases[i], msg, sizeof msg, &einval);
        if (failed) {
            fprintf(stderr, "  FAILED %s: %s\n", what, msg);
            if (!bad++) snprintf(first, sizeof first, "%.200s: %.800s", what, msg);
        }
    }
    fprintf(stderr, "  %d huge-size cases%s: %d failed", nc, fork_each ? " (each in a child)" : "",
            bad);
    if (!fork_each) fprintf(stderr, ", %d TESS_EINVAL, %d TESS_ENOMEM", einval, nc - bad - einval);
    fprintf(stderr, "\n");
    ASSERT_MSG(bad == 0, "%d huge-size case(s) failed; first: %s", bad, first);
}

/* ---- aliasing ------------------------------------------------------------------------------ */

/* Aliased operands where BLAS forbids them (the output overlapping an input: C == A,
 * C == B, TRMM/TRSM's B == A, C one element past A) are not detected: the call returns
 * TESS_OK with an unspecified result (tiles of the input may be read before or after the
 * output tiles covering them are written), never crashes or hangs, writes nothing outside
 * the output's declared storage, and the runtime computes correctly afterwards. A == B
 * (two inputs: allowed) gives the right result. */
TEST(args_aliased_operands) {
    long t = ref_env_long("TESSERA_TILE", 0);
    int64_t N = 2 * (t > 0 && t <= 64 ? t : 16) + 3;
    char msg[1024], what[512];
    for (int r = 0; r < L3_NR; r++)
        for (int cplx = 0; cplx < 2; cplx++) {
            if (l3_herm((enum l3_routine)r) && !cplx) continue;
            tess_dtype_t dt = cplx ? TESS_Z : TESS_D;
            size_t es = ref_esize(dt);
            /* forbidden: the output is A (or B), or starts one element into A */
            for (int mode = 0; mode < 3; mode++) {
                if (mode == 1 && !l3_has_b((enum l3_routine)r)) continue;
                struct l3_args a = ha_base((enum l3_routine)r, dt, cplx, TESS_COL_MAJOR);
                a.m = a.n = a.k = N;
                a.lda = a.ldb = a.ldc = N + 1;
                size_t nel = (size_t)((N + 1) * N) + 1, tot = nel + 64;
                unsigned char *buf = ref_malloc(tot * es), *buf0 = ref_malloc(tot * es);
                uint64_t s = 11 + (uint64_t)r;
                ref_fill_random(dt, buf, tot, &s);
                /* keep a TRSM's diagonal away from 0 at first */
                for (int64_t j = 0; j < N; j++) {
                    long double re, im;
                    ref_get(dt, buf, (size_t)(j + j * (N + 1)), &re, &im);
                    ref_set(dt, buf, (size_t)(j + j * (N + 1)), re + 4, im);
                }
                memcpy(buf0, buf, tot * es);
                unsigned char *other = ref_malloc(nel * es);
                ref_fill_random(dt, other, nel, &s);
                a.A = buf, a.B = other, a.C = buf;
                if (mode == 1) a.A = other, a.B = buf;
                if (mode == 2) a.C = buf + es; /* C(0,0) = A(1,0) */
                snprintf(what, sizeof what, "tess_%s%s N=%lld: %s", ref_dtype_name(dt), l3_rname[r],
                         (long long)N,
                         mode == 0   ? (l3_tr((enum l3_routine)r) ? "B == A" : "C == A")
                         : mode == 1 ? "C == B"
                                     : "C = A + 1 element");
                int st = l3_call(&a);
                fprintf(stderr, "  %s: status %d %s\n", what, st, tess_last_error());
                ASSERT_MSG(st == TESS_OK, "%s: status %d (%s): %s", what, st, tess_strerror(st),
                           tess_last_error());
                /* nothing beyond the output's storage (ldc * N elements from C) */
                size_t end = (size_t)((unsigned char *)a.C - buf) / es + (size_t)((N + 1) * N);
                ASSERT_MSG(memcmp(buf + end * es, buf0 + end * es, (tot - end) * es) == 0,
                           "%s: written past the output's storage", what);
                free(buf);
                free(buf0);
                free(other);
            }
            /* allowed: A == B (GEMM, SYR2K/HER2K: both inputs) must be right */
            if (r == L3_GEMM || l3_rank2((enum l3_routine)r)) {
                struct fz_case c;
                memset(&c, 0, sizeof c);
                c.r = (enum l3_routine)r, c.dt = dt, c.layout = TESS_COL_MAJOR;
                c.uplo = TESS_LOWER, c.ta = TESS_NO_TRANS, c.tb = TESS_TRANS;
                c.side = TESS_LEFT, c.diag = TESS_NON_UNIT;
                c.m = c.n = c.k = N, c.pad[0] = c.pad[1] = 2, c.pad[2] = 1;
                c.alpha[0] = 0.5, c.alpha[1] = cplx ? 0.25 : 0, c.beta[0] = -1;
                c.seed = 500 + (uint64_t)r;
                struct fz_data d;
                fz_setup(&c, &d);
                size_t bytes = d.ne[0] * es;
                ASSERT(d.ne[1] == d.ne[0]);
                memcpy(d.X[1], d.X[0], bytes);
                memcpy(d.X0[1], d.X0[0], bytes);
                memcpy(d.R[1], d.R[0], bytes);
                struct l3_args a = fz_args_of(&d, d.X, d.alpha, d.beta);
                a.B = a.A;
                fz_describe(&c, what, sizeof what);
                int st = l3_call(&a);
                ASSERT_MSG(st == TESS_OK, "%s with B == A: status %d: %s", what, st,
                           tess_last_error());
                ASSERT_MSG(fz_verify(&d, msg, sizeof msg) == 0, "%s with B == A: %s", what, msg);
                fz_release(&d);
            }
        }
    /* the runtime is whole afterwards */
    struct fz_case g;
    memset(&g, 0, sizeof g);
    g.r = L3_SYR2K, g.dt = TESS_Z, g.layout = TESS_ROW_MAJOR, g.uplo = TESS_UPPER;
    g.ta = TESS_TRANS, g.m = g.n = N, g.k = N - 5, g.alpha[0] = 1, g.beta[0] = 0.5, g.seed = 8;
    ASSERT_MSG(fz_run_case(&g, msg, sizeof msg) == 0, "after the aliased calls: %s", msg);
}

/* ---- leading dimensions beyond 32 bits ------------------------------------------------------ */

/* 1 if the runtime has a CPU worker (host kernels in place on the caller's arrays). */
static int ha_has_cpu_worker(void) {
    for (int i = 0; i < tess_device_count(); i++) {
        tess_dev_stats_t s;
        if (tess_device_stats(i, &s) == TESS_OK && s.kind == TESS_DEV_CPU) return 1;
    }
    return 0;
}

/* Run l3_call(a) with the process's stdout and stderr sent to a temporary file; the bytes
 * printed meanwhile (the library prints nothing unless asked; the LP64 CPU BLAS's xerbla
 * would print a truncated leading dimension's "illegal value"), their start in out. */
static long ha_call_silently(const struct l3_args *a, int *st, char *out, size_t len) {
    out[0] = '\0';
    fflush(stdout);
    fflush(stderr);
    FILE *tf = tmpfile();
    int s1 = dup(1), s2 = dup(2);
    if (!tf || s1 < 0 || s2 < 0) { /* cannot capture: just call */
        if (tf) fclose(tf);
        if (s1 >= 0) close(s1);
        if (s2 >= 0) close(s2);
        *st = l3_call(a);
        return 0;
    }
    dup2(fileno(tf), 1);
    dup2(fileno(tf), 2);
    *st = l3_call(a);
    fflush(stdout);
    fflush(stderr);
    dup2(s1, 1);
    dup2(s2, 2);
    close(s1);
    close(s2);
    long n = (long)lseek(fileno(tf), 0, SEEK_END);
    if (n > 0) {
        ssize_t got = pread(fileno(tf), out, len - 1, 0);
        out[got > 0 ? got : 0] = '\0';
        for (char *p = out; *p; p++)
            if (*p == '\n') *p = ' ';
    }
    fclose(tf);
    return n;
}

/* Leading dimensions beyond 32 bits (legal: BLAS only asks ld >= the rows) on small
 * matrices (every routine, d and z, 5 x 4 and k = 3, stored in sparse anonymous mappings
 * (MAP_NORESERVE): only the touched pages exist): 2^32 + 3 with beta = -1, and 2^31 + 5
 * with beta = 0 on a C full of NaN (C must not be read; TRMM/TRSM: beta has no part).
 * The result equals the compact call's within the rounding bound, the elements right
 * after each column are untouched, and nothing is printed. Every device kind: on the CPU
 * worker (test_args:cpu) the kernels run in place on these arrays, and the LP64 CPU BLAS
 * cannot take such leading dimensions (bug B3, fixed: they were cast to int, so 2^32 + 3
 * read as 3 gave a silently wrong TESS_OK, and 2^31 + 5, negative, made OpenBLAS print
 * "parameter number 8 had an illegal value" and compute nothing); emulated devices
 * (test_args:emu2) copy tiles with 64-bit pitches. */
TEST(args_leading_dims_beyond_int32) {
    const int64_t bigs[2] = {((int64_t)1 << 32) + 3, ((int64_t)1 << 31) + 5};
    char msg[1024], what[512], printed[256];
    int ran = 0;
    for (int b = 0; b < 2; b++)
        for (int r = 0; r < L3_NR; r++)
            for (int cplx = 0; cplx < 2; cplx++) {
                if (l3_herm((enum l3_routine)r) && !cplx) continue;
                const int64_t big = bigs[b];
                struct fz_case c;
                memset(&c, 0, sizeof c);
                c.r = (enum l3_routine)r, c.dt = cplx ? TESS_Z : TESS_D;
                c.layout = TESS_COL_MAJOR;
                c.side = b ? TESS_RIGHT : TESS_LEFT, c.uplo = b ? TESS_UPPER : TESS_LOWER;
                c.diag = TESS_NON_UNIT;
                c.ta = b && !l3_rk(c.r) ? TESS_TRANS : TESS_NO_TRANS;
                if (b && l3_rk(c.r)) c.ta = l3_herm(c.r) ? TESS_CONJ_TRANS : TESS_TRANS;
                c.tb = TESS_NO_TRANS;
                c.m = 5, c.n = 4, c.k = 3, c.alpha[0] = 0.5, c.alpha[1] = cplx ? 0.25 : 0;
                c.beta[0] = l3_tr(c.r) || b ? 0 : -1, c.seed = 70 + (uint64_t)r;
                if (b && !l3_tr(c.r)) c.flags |= FZ_NAN_C;
                struct fz_data d;
                fz_setup(&c, &d);
                fz_describe(&c, what, sizeof what);
                size_t es = ref_esize(c.dt);
                void *M[3] = {NULL, NULL, NULL};
                size_t bytes[3] = {0, 0, 0};
                bool ok = true;
                for (int i = 0; i < 3 && ok; i++) {
                    int64_t rows = d.sh[i][0], cols = d.sh[i][1];
                    if (rows == 0 || cols == 0) continue;
                    bytes[i] = (size_t)(big * (cols - 1) + rows + 4) * es;
                    M[i] = mmap(NULL, bytes[i], PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
                    if (M[i] == MAP_FAILED) {
                        M[i] = NULL, ok = false;
                        break;
                    }
                    /* column j at j * big; three sentinels of 0.125 after each column */
                    for (int64_t j = 0; j < cols; j++) {
                        memcpy((char *)M[i] + (size_t)(j * big) * es,
                               (char *)d.X[i] + (size_t)(j * d.ld[i]) * es, (size_t)rows * es);
                        for (int g = 0; g < 3; g++)
                            ref_set(c.dt, M[i], (size_t)(j * big + rows + g), 0.125, 0.125);
                    }
                }
                if (!ok) {
                    fprintf(stderr, "  sparse mappings refused here: skipped\n");
                    for (int i = 0; i < 3; i++)
                        if (M[i]) munmap(M[i], bytes[i]);
                    fz_release(&d);
                    return;
                }
                struct l3_args a = fz_args_of(&d, M, d.alpha, d.beta);
                a.lda = a.ldb = a.ldc = big;
                int st;
                long np = ha_call_silently(&a, &st, printed, sizeof printed);
                ASSERT_MSG(st == TESS_OK, "%s with leading dimensions %lld: status %d: %s", what,
                           (long long)big, st, tess_last_error());
                ASSERT_MSG(np == 0, "%s with leading dimensions %lld: %ld bytes printed: %s", what,
                           (long long)big, np, printed);
                /* gather the output back into the compact layout, check the sentinels */
                int64_t rows = d.sh[2][0], cols = d.sh[2][1];
                for (int64_t j = 0; j < cols; j++) {
                    memcpy((char *)d.X[2] + (size_t)(j * d.ld[2]) * es,
                           (char *)M[2] + (size_t)(j * big) * es, (size_t)rows * es);
                    for (int g = 0; g < 3; g++) {
                        long double re, im;
                        ref_get(c.dt, M[2], (size_t)(j * big + rows + g), &re, &im);
                        ASSERT_MSG(re == 0.125L, "%s: the element after column %lld was written",
                                   what, (long long)j);
                    }
                }
                ASSERT_MSG(fz_verify(&d, msg, sizeof msg) == 0,
                           "%s with leading dimensions %lld: %s", what, (long long)big, msg);
                for (int i = 0; i < 3; i++)
                    if (M[i]) munmap(M[i], bytes[i]);
                fz_release(&d);
                ran++;
            }
    fprintf(stderr, "  %d calls with leading dimensions 2^32 + 3 and 2^31 + 5 right%s\n", ran,
            ha_has_cpu_worker() ? " (CPU worker among the devices)" : "");
}

TEST_MAIN()
