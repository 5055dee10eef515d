/* tests/test_fuzz.c: random GEMM calls against OpenBLAS from several host threads at once:
 * every precision, layout, transpose pair, shape (0 and 1 included, edges of the tile),
 * padding and special alpha/beta (0, 1, -1, beta = 0 over a NaN C, alpha = 0 over NaN A and
 * B). Each result is verified (values, untouched padding, inputs unchanged). The count and
 * the threads come from TESS_FUZZ_CALLS (default 300) and TESS_FUZZ_THREADS (default 8);
 * the full run of issue 8 is TESS_FUZZ_CALLS=10000 (docs/reliability.md). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref.h"
#include "tessera.h"

struct fuzz_thread {
    int id, calls, failed;
    char msg[1024];
};

static uint64_t next_rand(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static int64_t pick_dim(uint64_t *s, int64_t tile) {
    static const int64_t fixed[] = {0, 1, 2, 3};
    switch (next_rand(s) % 4) {
    case 0: return fixed[next_rand(s) % 4];
    case 1: return tile * (int64_t)(1 + next_rand(s) % 3) + (int64_t)(next_rand(s) % 3) - 1;
    default: return (int64_t)(next_rand(s) % 61);
    }
}

static void *fuzz_main(void *arg) {
    struct fuzz_thread *ft = arg;
    uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(ft->id + 1);
    int64_t tile = ref_env_long("TESSERA_TILE", 16);
    static const double specials[] = {0.0, 1.0, -1.0, 0.75};
    static const tess_trans_t tr[] = {TESS_NO_TRANS, TESS_TRANS, TESS_CONJ_TRANS};
    for (int i = 0; i < ft->calls && !ft->failed; i++) {
        struct ref_gemm_case g;
        memset(&g, 0, sizeof g);
        g.dt = (tess_dtype_t)(next_rand(&s) % 4);
        g.layout = next_rand(&s) % 2 ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
        g.ta = tr[next_rand(&s) % 3];
        g.tb = tr[next_rand(&s) % 3];
        g.m = pick_dim(&s, tile);
        g.n = pick_dim(&s, tile);
        g.k = pick_dim(&s, tile);
        g.pad_a = (int64_t)(next_rand(&s) % 3);
        g.pad_b = (int64_t)(next_rand(&s) % 3);
        g.pad_c = (int64_t)(next_rand(&s) % 3);
        g.alpha[0] = specials[next_rand(&s) % 4];
        g.beta[0] = specials[next_rand(&s) % 4];
        if (next_rand(&s) % 3 == 0) g.alpha[1] = 0.5, g.beta[1] = -0.25;
        if (g.beta[0] == 0.0 && g.beta[1] == 0.0 && next_rand(&s) % 2) g.flags |= REF_NAN_C;
        if (g.alpha[0] == 0.0 && g.alpha[1] == 0.0 && next_rand(&s) % 2) g.flags |= REF_NAN_AB;
        if (next_rand(&s) % 4 == 0) g.flags |= REF_TYPED;
        g.seed = next_rand(&s);
        if (ref_gemm_run(&g, ft->msg, sizeof ft->msg)) {
            char what[256];
            ref_gemm_describe(&g, what, sizeof what);
            size_t used = strlen(ft->msg);
            snprintf(ft->msg + used, sizeof ft->msg - used, " [thread %d call %d: %s]", ft->id, i,
                     what);
            ft->failed = 1;
        }
    }
    return NULL;
}

/* TESS_FUZZ_CALLS random verified GEMMs spread over TESS_FUZZ_THREADS threads calling at
 * once: zero results outside the rounding bound, zero bytes written outside C's m x n. */
TEST(fuzz_random_gemms_from_threads) {
    int calls = (int)ref_env_long("TESS_FUZZ_CALLS", 300);
    int nthreads = (int)ref_env_long("TESS_FUZZ_THREADS", 8);
    ASSERT(nthreads >= 1 && nthreads <= 64);
    ASSERT_OK(tess_init());
    struct fuzz_thread ft[64];
    pthread_t th[64];
    for (int t = 0; t < nthreads; t++) {
        memset(&ft[t], 0, sizeof ft[t]);
        ft[t].id = t;
        ft[t].calls = calls / nthreads + (t < calls % nthreads);
        ASSERT_EQ(pthread_create(&th[t], NULL, fuzz_main, &ft[t]), 0);
    }
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < nthreads; t++) ASSERT_MSG(!ft[t].failed, "%s", ft[t].msg);
    ASSERT_OK(tess_finalize());
}

TEST_MAIN()
