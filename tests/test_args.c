/* tests/test_args.c: bad input to the public API. Every argument error of tess_gemm and
 * tess_?gemm returns TESS_EINVAL, tess_last_error() names the argument, and C is left
 * byte-for-byte untouched; the smallest legal leading dimensions and NULL operands of
 * empty dimensions are accepted; quick returns write nothing; tess_strerror and
 * tess_last_error behave. Independent of the device configuration.
 */
#include <ctype.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>

#include "harness.h"
#include "ref.h"
#include "tessera.h"

#define BUF_ELEMS 4096  /* every buffer here: 4096 elements of the widest type */

static unsigned char bufA[BUF_ELEMS * 16], bufB[BUF_ELEMS * 16], bufC[BUF_ELEMS * 16];
static unsigned char bufC0[BUF_ELEMS * 16];

static const tess_trans_t trans3[3] = {TESS_NO_TRANS, TESS_TRANS, TESS_CONJ_TRANS};

/* One call of tess_gemm (typed = 0) or tess_?gemm (typed = 1). */
struct call {
    tess_dtype_t dt;
    int typed;
    int layout, ta, tb;   /* int so that invalid values can be passed */
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
        return tess_gemm(c->dt, (tess_layout_t)c->layout, (tess_trans_t)c->ta,
                         (tess_trans_t)c->tb, c->m, c->n, c->k, c->alpha, c->A, c->lda, c->B,
                         c->ldb, c->beta, c->C, c->ldc);
    switch (c->dt) {
    case TESS_S:
        return tess_sgemm((tess_layout_t)c->layout, (tess_trans_t)c->ta, (tess_trans_t)c->tb,
                          c->m, c->n, c->k, *(const float *)c->alpha, c->A, c->lda, c->B,
                          c->ldb, *(const float *)c->beta, c->C, c->ldc);
    case TESS_D:
        return tess_dgemm((tess_layout_t)c->layout, (tess_trans_t)c->ta, (tess_trans_t)c->tb,
                          c->m, c->n, c->k, *(const double *)c->alpha, c->A, c->lda, c->B,
                          c->ldb, *(const double *)c->beta, c->C, c->ldc);
    case TESS_C:
        return tess_cgemm((tess_layout_t)c->layout, (tess_trans_t)c->ta, (tess_trans_t)c->tb,
                          c->m, c->n, c->k, c->alpha, c->A, c->lda, c->B, c->ldb, c->beta,
                          c->C, c->ldc);
    case TESS_Z:
        return tess_zgemm((tess_layout_t)c->layout, (tess_trans_t)c->ta, (tess_trans_t)c->tb,
                          c->m, c->n, c->k, c->alpha, c->A, c->lda, c->B, c->ldb, c->beta,
                          c->C, c->ldc);
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
#define EXPECT_EINVAL(callp, word)                                                       \
    do {                                                                                 \
        fill_buffers((callp)->dt);                                                       \
        int st_ = do_call(callp);                                                        \
        ASSERT_MSG(st_ == TESS_EINVAL, "%s: returned %d, expected TESS_EINVAL (%s)",     \
                   call_str(callp), st_, tess_last_error());                             \
        const char *e_ = tess_last_error();                                              \
        ASSERT_MSG(e_ != NULL && has_word(e_, word),                                     \
                   "%s: tess_last_error() = \"%s\" does not name \"%s\"", call_str(callp),\
                   e_ ? e_ : "(null)", word);                                            \
        ASSERT_MSG(memcmp(bufC, bufC0, sizeof bufC) == 0, "%s: C was written",           \
                   call_str(callp));                                                     \
    } while (0)

#define EXPECT_OK_UNTOUCHED(callp)                                                       \
    do {                                                                                 \
        fill_buffers((callp)->dt);                                                       \
        int st_ = do_call(callp);                                                        \
        ASSERT_MSG(st_ == TESS_OK, "%s: returned %d (%s)", call_str(callp), st_,         \
                   tess_last_error());                                                   \
        ASSERT_MSG(memcmp(bufC, bufC0, sizeof bufC) == 0, "%s: C was written",           \
                   call_str(callp));                                                     \
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
        int st = tess_gemm(c.dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, 5, 7, 3, one_,
                           bufA, 5, bufB, 3, half_, bufC, 5);
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
            {   /* C is NULL: nothing to compare, only the status and the message */
                int st = do_call(&c);
                ASSERT_MSG(st == TESS_EINVAL, "%s: returned %d", call_str(&c), st);
                ASSERT_MSG(has_word(tess_last_error(), "C"), "\"%s\" does not name C",
                           tess_last_error());
            }
            if (typed && (d == TESS_S || d == TESS_D)) continue;  /* scalars by value */
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
        memcpy(bufA, bufC0, sizeof bufA);  /* expected: beta * C0 in bufA */
        ref_gemm(c.dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, c.m, c.n, 0, one_, NULL,
                 c.lda, NULL, 1, half_, bufA, c.ldc);
        size_t es = ref_esize(c.dt);
        ASSERT_MSG(memcmp(bufA, bufC, (size_t)(c.ldc * c.n) * es) == 0,
                   "%s: C != beta C", call_str(&c));
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

struct thread_err { char seen_before[512]; char seen_after[512]; int st; };

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

TEST_MAIN()
