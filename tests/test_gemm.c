/* tests/test_gemm.c: tess_gemm and tess_?gemm against OpenBLAS (and the probe-vector
 * oracle) in every precision, transpose pair and layout, on shapes with 0, 1 and
 * non-multiples of the tile, padded leading dimensions, special alpha/beta, NaN inputs that
 * must not be read, many random calls and calls from several host threads at once.
 *
 * One program, registered several times (tests/CMakeLists.txt) with different knobs: CPU
 * worker only, 1-4 emulated devices, tiny tiles, memory caps, stream jitter. Shapes scale
 * with TESSERA_TILE (the unit U below) so every registration runs about the same number of
 * tile kernels; without TESSERA_TILE, U = 64.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "ref.h"
#include "tessera.h"

static const tess_trans_t trans3[3] = {TESS_NO_TRANS, TESS_TRANS, TESS_CONJ_TRANS};
static const tess_dtype_t dtypes[4] = {TESS_S, TESS_D, TESS_C, TESS_Z};
static uint64_t seed_counter = 1;

/* Shape unit: the tile edge when set and small, else 64. */
static int64_t unit(void) {
    long t = ref_env_long("TESSERA_TILE", 0);
    return (t > 0 && t <= 64) ? t : 64;
}

static struct ref_gemm_case mkcase(tess_dtype_t dt, tess_layout_t layout, tess_trans_t ta,
                                   tess_trans_t tb, int64_t m, int64_t n, int64_t k) {
    struct ref_gemm_case c;
    memset(&c, 0, sizeof c);
    c.dt = dt;
    c.layout = layout;
    c.ta = ta;
    c.tb = tb;
    c.m = m;
    c.n = n;
    c.k = k;
    c.alpha[0] = 1;
    c.beta[0] = 1;
    c.seed = seed_counter++;
    return c;
}

#define RUN_CASE(c)                                                         \
    do {                                                                    \
        char msg_[1024];                                                    \
        ASSERT_MSG(ref_gemm_run(&(c), msg_, sizeof msg_) == 0, "%s", msg_); \
    } while (0)

/* tess_gemm computes every precision and all 9 transpose pairs (C = T for real types)
 * on column-major shapes that are not multiples of the tile, with general alpha/beta. */
TEST(gemm_generic_all_precisions_all_trans) {
    int64_t u = unit();
    for (int d = 0; d < 4; d++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                struct ref_gemm_case c = mkcase(dtypes[d], TESS_COL_MAJOR, trans3[a], trans3[b],
                                                2 * u + 3, u + 5, 3 * u + 1);
                c.alpha[0] = 0.75;
                c.alpha[1] = -0.5;
                c.beta[0] = -0.5;
                c.beta[1] = 0.25;
                RUN_CASE(c);
            }
}

/* Each typed entry point (tess_sgemm, tess_dgemm, tess_cgemm, tess_zgemm) computes the same
 * as the reference in both layouts and several transpose pairs. */
TEST(gemm_typed_entries) {
    int64_t u = unit();
    static const int pairs[4][2] = {{0, 0}, {1, 2}, {2, 1}, {1, 1}};
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 2; l++)
            for (int p = 0; p < 4; p++) {
                struct ref_gemm_case c = mkcase(dtypes[d], l ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
                                                trans3[pairs[p][0]], trans3[pairs[p][1]], u + 3,
                                                2 * u + 1, u + 2);
                c.flags = REF_TYPED;
                c.alpha[0] = -1.25;
                c.alpha[1] = 0.5;
                c.beta[0] = 0.5;
                c.beta[1] = -1;
                RUN_CASE(c);
            }
}

/* Row-major (TESS_ROW_MAJOR) matches the CBLAS row-major reference for every precision and
 * transpose pair. */
TEST(gemm_row_major_all_trans) {
    int64_t u = unit();
    for (int d = 0; d < 4; d++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++) {
                struct ref_gemm_case c = mkcase(dtypes[d], TESS_ROW_MAJOR, trans3[a], trans3[b],
                                                u + 2, 2 * u + 1, u > 1 ? u - 1 : 2);
                c.alpha[0] = 1.5;
                c.alpha[1] = 0.25;
                c.beta[0] = -0.75;
                c.beta[1] = 0.5;
                RUN_CASE(c);
            }
}

/* Shapes with 0 and 1 in each of m, n, k (and tile*3+1) are computed correctly; m = 0 or
 * n = 0 writes nothing, k = 0 gives C = beta C. */
TEST(gemm_shapes_zero_one) {
    int64_t u = unit();
    const int64_t dims[5] = {0, 1, 2, u + 1, 3 * u + 1};
    int idx = 0;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            for (int l = 0; l < 5; l++, idx++) {
                struct ref_gemm_case c = mkcase(
                    dtypes[idx % 4], (idx / 4) % 2 ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
                    trans3[idx % 3], trans3[(idx / 3) % 3], dims[i], dims[j], dims[l]);
                c.alpha[0] = 0.5;
                c.alpha[1] = 1;
                c.beta[0] = 2;
                c.beta[1] = -0.5;
                RUN_CASE(c);
            }
}

/* Sizes just around tile multiples (U-1, U, U+1, 2U, 2U+1) in each dimension. */
TEST(gemm_tile_boundaries) {
    int64_t u = unit();
    const int64_t dims[5] = {u > 1 ? u - 1 : 1, u, u + 1, 2 * u, 2 * u + 1};
    uint64_t s = 77;
    for (int it = 0; it < 24; it++) {
        struct ref_gemm_case c = mkcase(
            dtypes[it % 4], it % 5 == 0 ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
            trans3[ref_rand_int(&s, 0, 2)], trans3[ref_rand_int(&s, 0, 2)],
            dims[ref_rand_int(&s, 0, 4)], dims[ref_rand_int(&s, 0, 4)],
            dims[ref_rand_int(&s, 0, 4)]);
        c.alpha[0] = ref_rand_unit(&s);
        c.alpha[1] = ref_rand_unit(&s);
        c.beta[0] = ref_rand_unit(&s);
        c.beta[1] = ref_rand_unit(&s);
        RUN_CASE(c);
    }
}

/* lda, ldb, ldc larger than needed: the result is right and the padding of C (and every
 * byte of A and B) is left untouched, in both layouts. */
TEST(gemm_padded_leading_dims) {
    int64_t u = unit();
    static const int64_t pads[4][3] = {{1, 2, 3}, {7, 0, 5}, {0, 0, 13}, {32, 17, 1}};
    int idx = 0;
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 2; l++)
            for (int p = 0; p < 4; p++, idx++) {
                struct ref_gemm_case c = mkcase(dtypes[d], l ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
                                                trans3[idx % 3], trans3[(idx + 1) % 3], u + 3,
                                                u + 2, u + 1);
                c.pad_a = pads[p][0];
                c.pad_b = pads[p][1];
                c.pad_c = pads[p][2];
                c.alpha[0] = -0.5;
                c.alpha[1] = 2;
                c.beta[0] = 1.5;
                RUN_CASE(c);
            }
}

/* alpha and beta in {0, 1, -1, i, general} in every combination (i only for complex). */
TEST(gemm_alpha_beta_special) {
    int64_t u = unit();
    static const double vals[5][2] = {{0, 0}, {1, 0}, {-1, 0}, {0, 1}, {0.5, -2}};
    int idx = 0;
    for (int d = 0; d < 4; d++) {
        int nv = ref_is_complex(dtypes[d]) ? 5 : 3;
        for (int a = 0; a < nv; a++)
            for (int b = 0; b < nv; b++, idx++) {
                struct ref_gemm_case c = mkcase(
                    dtypes[d], idx % 2 ? TESS_ROW_MAJOR : TESS_COL_MAJOR, trans3[idx % 3],
                    trans3[(idx / 3) % 3], u + 2, u + 1, u + 3);
                c.alpha[0] = vals[a][0];
                c.alpha[1] = vals[a][1];
                c.beta[0] = vals[b][0];
                c.beta[1] = vals[b][1];
                RUN_CASE(c);
            }
    }
}

/* beta = 0 never reads C: C full of NaN (padding included) gives a clean, correct result
 * and the NaN padding stays as it was. */
TEST(gemm_beta_zero_ignores_nan_c) {
    int64_t u = unit();
    int idx = 0;
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 2; l++)
            for (int p = 0; p < 3; p++, idx++) {
                struct ref_gemm_case c = mkcase(dtypes[d], l ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
                                                trans3[p], trans3[(p + l) % 3], 2 * u + 1, u + 2,
                                                u + 3);
                c.flags = REF_NAN_C | (idx % 2 ? REF_TYPED : 0);
                c.pad_c = 3;
                c.alpha[0] = p == 1 ? -1 : 1;
                c.alpha[1] = p == 2 ? 1 : 0;
                c.beta[0] = 0;
                c.beta[1] = 0;
                RUN_CASE(c);
            }
}

/* alpha = 0 never reads A or B: NaN-filled A and B give C = beta C (zeros for beta = 0,
 * even when C is NaN too). */
TEST(gemm_alpha_zero_ignores_nan_ab) {
    int64_t u = unit();
    static const double betas[4][2] = {{0, 0}, {1, 0}, {-1, 0}, {0.5, 1}};
    int idx = 0;
    for (int d = 0; d < 4; d++)
        for (int b = 0; b < 4; b++, idx++) {
            struct ref_gemm_case c = mkcase(dtypes[d], idx % 2 ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
                                            trans3[idx % 3], trans3[(idx + 2) % 3], 2 * u + 1,
                                            u + 2, u + 3);
            c.flags = REF_NAN_AB | (b == 0 && d % 2 ? REF_NAN_C : 0) | (idx % 3 ? 0 : REF_TYPED);
            c.pad_c = 2;
            c.alpha[0] = 0;
            c.alpha[1] = 0;
            c.beta[0] = betas[b][0];
            c.beta[1] = betas[b][1];
            RUN_CASE(c);
        }
}

/* k = 0 gives C = beta C without reading A or B (NaN-filled), for any alpha. */
TEST(gemm_k_zero) {
    int64_t u = unit();
    static const double betas[4][2] = {{0, 0}, {1, 0}, {-1, 0}, {0.25, -1}};
    int idx = 0;
    for (int d = 0; d < 4; d++)
        for (int b = 0; b < 4; b++, idx++) {
            struct ref_gemm_case c = mkcase(dtypes[d], idx % 2 ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
                                            trans3[idx % 3], trans3[(idx / 3) % 3], 2 * u + 1,
                                            u + 4, 0);
            c.flags = REF_NAN_AB | (b == 0 ? REF_NAN_C : 0) | (idx % 2 ? REF_TYPED : 0);
            c.pad_a = idx % 3;
            c.pad_c = 1;
            c.alpha[0] = 1.5;
            c.alpha[1] = -1;
            c.beta[0] = betas[b][0];
            c.beta[1] = betas[b][1];
            RUN_CASE(c);
        }
}

/* One operand buffer passed as both A and B (C = A A^T, A A^H) is handled: the runtime
 * may see the same host tile as two operands. */
TEST(gemm_same_buffer_both_operands) {
    int64_t u = unit();
    for (int d = 0; d < 4; d++)
        for (int l = 0; l < 2; l++) {
            tess_trans_t tb = ref_is_complex(dtypes[d]) ? TESS_CONJ_TRANS : TESS_TRANS;
            /* A stored m x k (N); B = A read as op(B) = A^T is k x m: stored like A. */
            struct ref_gemm_case c = mkcase(dtypes[d], l ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
                                            TESS_NO_TRANS, tb, 2 * u + 3, 2 * u + 3, u + 2);
            c.pad_a = c.pad_b = 2;
            c.alpha[0] = 0.5;
            c.beta[0] = -1;
            struct ref_gemm_data dd;
            char msg[1024] = "";
            ref_gemm_setup(&c, &dd);
            ASSERT_EQ(dd.na, dd.nb);
            void *ownb = dd.B;
            dd.B = dd.A;
            memcpy(dd.B0, dd.A0, dd.na * ref_esize(c.dt));
            int st = ref_gemm_call(&dd);
            int bad = st == TESS_OK ? ref_gemm_verify(&dd, msg, sizeof msg) : 1;
            dd.B = ownb;
            ref_gemm_free(&dd);
            ASSERT_MSG(!bad, "%s: status %d: %s", ref_dtype_name(c.dt), st, msg);
        }
}

/* Repeated calls on the same buffers whose contents change between calls give fresh
 * results: no tile of an earlier call is served from a device cache. */
TEST(gemm_repeated_calls_same_buffers) {
    int64_t u = unit();
    for (int d = 0; d < 4; d++) {
        struct ref_gemm_case c = mkcase(dtypes[d], TESS_COL_MAJOR, TESS_NO_TRANS,
                                        d % 2 ? TESS_TRANS : TESS_NO_TRANS, 3 * u + 1, 2 * u + 1,
                                        2 * u + 3);
        c.pad_c = 1;
        struct ref_gemm_data dd;
        char msg[1024] = "";
        uint64_t s = 999 + (uint64_t)d;
        size_t es = ref_esize(c.dt);
        ref_gemm_setup(&c, &dd);
        int bad = 0, st = 0, it;
        for (it = 0; it < 4 && !bad; it++) {
            st = ref_gemm_call(&dd);
            bad = st != TESS_OK || ref_gemm_verify(&dd, msg, sizeof msg);
            /* next call: C accumulates, A and B get new values in place */
            memcpy(dd.C0, dd.C, dd.nc * es);
            ref_fill_random(c.dt, dd.A, dd.na, &s);
            ref_fill_random(c.dt, dd.B, dd.nb, &s);
            memcpy(dd.A0, dd.A, dd.na * es);
            memcpy(dd.B0, dd.B, dd.nb * es);
        }
        ref_gemm_free(&dd);
        ASSERT_MSG(!bad, "%s call %d: status %d: %s", ref_dtype_name(c.dt), it, st, msg);
    }
}

/* Operands in tess_malloc_host memory (pinned when a GPU is present) compute the same;
 * tess_free_host(NULL) is harmless. */
TEST(gemm_operands_in_tess_malloc_host) {
    int64_t u = unit();
    for (int d = 0; d < 4; d++) {
        struct ref_gemm_case c = mkcase(dtypes[d], d % 2 ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
                                        trans3[d % 3], trans3[(d + 2) % 3], 3 * u + 1, 2 * u + 3,
                                        2 * u + 1);
        c.pad_c = 2;
        c.alpha[0] = -1, c.beta[0] = 0.5, c.beta[1] = 1;
        struct ref_gemm_data dd;
        char msg[1024] = "";
        size_t es = ref_esize(c.dt);
        ref_gemm_setup(&c, &dd);
        void *own[3] = {dd.A, dd.B, dd.C};
        void *pin[3] = {tess_malloc_host(dd.na * es), tess_malloc_host(dd.nb * es),
                        tess_malloc_host(dd.nc * es)};
        ASSERT(pin[0] && pin[1] && pin[2]);
        memcpy(pin[0], dd.A, dd.na * es);
        memcpy(pin[1], dd.B, dd.nb * es);
        memcpy(pin[2], dd.C, dd.nc * es);
        dd.A = pin[0], dd.B = pin[1], dd.C = pin[2];
        int st = ref_gemm_call(&dd);
        int bad = st == TESS_OK ? ref_gemm_verify(&dd, msg, sizeof msg) : 1;
        dd.A = own[0], dd.B = own[1], dd.C = own[2];
        for (int i = 0; i < 3; i++) tess_free_host(pin[i]);
        ref_gemm_free(&dd);
        ASSERT_MSG(!bad, "%s: status %d: %s", ref_dtype_name(c.dt), st, msg);
    }
    tess_free_host(NULL);
}

/* A larger call in each precision, checked by the probe-vector oracle only. */
TEST(gemm_larger_probe_oracle) {
    int64_t u = unit();
    for (int d = 0; d < 4; d++) {
        struct ref_gemm_case c = mkcase(dtypes[d], d == 2 ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
                                        trans3[d % 3], trans3[(d + 1) % 3], 5 * u + 3, 4 * u + 5,
                                        5 * u + 1);
        c.flags = REF_PROBE_ONLY;
        c.alpha[0] = -0.5;
        c.alpha[1] = 0.75;
        c.beta[0] = 0.25;
        RUN_CASE(c);
    }
}

/* 200 random calls: random precision, layout, transposes, shapes (0 included), padding,
 * alpha/beta (special values included), NaN C with beta = 0, NaN A/B with alpha = 0, and
 * both entry kinds. */
TEST(gemm_random_calls) {
    int64_t u = unit();
    int64_t maxd = 5 * u + 8;
    if (maxd > 150) maxd = 150;
    static const double specials[5][2] = {{0, 0}, {1, 0}, {-1, 0}, {0, 1}, {2, -0.5}};
    uint64_t s = 2024;
    for (int it = 0; it < 200; it++) {
        tess_dtype_t dt = dtypes[ref_rand_int(&s, 0, 3)];
        int64_t dim[3];
        for (int i = 0; i < 3; i++)
            dim[i] = ref_rand_int(&s, 0, 9) == 0 ? ref_rand_int(&s, 0, 1)
                                                 : ref_rand_int(&s, 1, maxd);
        struct ref_gemm_case c = mkcase(
            dt, ref_rand_int(&s, 0, 1) ? TESS_ROW_MAJOR : TESS_COL_MAJOR,
            trans3[ref_rand_int(&s, 0, 2)], trans3[ref_rand_int(&s, 0, 2)], dim[0], dim[1], dim[2]);
        c.pad_a = ref_rand_int(&s, 0, 3);
        c.pad_b = ref_rand_int(&s, 0, 3);
        c.pad_c = ref_rand_int(&s, 0, 3);
        for (int w = 0; w < 2; w++) {
            double *x = w ? c.beta : c.alpha;
            int64_t r = ref_rand_int(&s, 0, 9);
            if (r < 5) {
                int64_t sv = ref_rand_int(&s, 0, ref_is_complex(dt) ? 4 : 2);
                x[0] = specials[sv][0];
                x[1] = specials[sv][1];
            } else {
                x[0] = ref_rand_unit(&s);
                x[1] = ref_is_complex(dt) ? ref_rand_unit(&s) : 0;
            }
        }
        if (c.beta[0] == 0 && c.beta[1] == 0 && ref_rand_int(&s, 0, 1)) c.flags |= REF_NAN_C;
        if (c.alpha[0] == 0 && c.alpha[1] == 0 && ref_rand_int(&s, 0, 1)) c.flags |= REF_NAN_AB;
        if (ref_rand_int(&s, 0, 1)) c.flags |= REF_TYPED;
        RUN_CASE(c);
    }
}

/* ---- concurrency ----------------------------------------------------------------------- */

struct worker_arg {
    int id;
    int64_t u;
    int failed;
    char msg[1024];
};

static void *worker(void *p) {
    struct worker_arg *w = p;
    for (int it = 0; it < 6 && !w->failed; it++) {
        struct ref_gemm_case c;
        memset(&c, 0, sizeof c);
        c.dt = (it + w->id) % 2 ? TESS_Z : TESS_D;
        c.layout = it % 3 == 2 ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
        c.ta = trans3[(it + w->id) % 3];
        c.tb = trans3[(it * 2 + w->id) % 3];
        c.m = 3 * w->u + 1 + w->id;
        c.n = 2 * w->u + 3 + it;
        c.k = 2 * w->u + 5;
        c.pad_c = w->id;
        c.alpha[0] = 1;
        c.alpha[1] = -0.5;
        c.beta[0] = it % 2 ? 0 : -0.5;
        c.beta[1] = 0;
        c.flags = REF_TYPED | (it % 2 ? REF_NAN_C : 0);
        c.seed = 100000 + (uint64_t)w->id * 100 + (uint64_t)it;
        if (ref_gemm_run(&c, w->msg, sizeof w->msg)) w->failed = 1;
    }
    return NULL;
}

/* 4 host threads calling tess_dgemm and tess_zgemm at once on independent data all get
 * correct results. */
TEST(gemm_concurrent_threads) {
    enum { NT = 4 };
    pthread_t th[NT];
    struct worker_arg args[NT];
    for (int i = 0; i < NT; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].id = i;
        args[i].u = unit();
        ASSERT_EQ(pthread_create(&th[i], NULL, worker, &args[i]), 0);
    }
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NT; i++) ASSERT_MSG(!args[i].failed, "thread %d: %s", i, args[i].msg);
}

TEST_MAIN()
