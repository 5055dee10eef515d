/* tests/test_cuda.c: the CUDA backend (src/backend/cuda.c) on real GPUs, through its ops
 * table only: device selection, open/desc, the heap arena, strided 2D copies straight from
 * host matrices, s/d/c/z gemm against OpenBLAS, events (query, sync, reuse), waits across
 * streams and across GPUs, P2P copies (two GPUs), injected faults and argument errors,
 * LASWP against the swaps done in order, and the staging of pageable copies (stage.c):
 * round trips, a one-page pool, faults, and GEMMs through the runtime on malloc'd operands. Skips (exit 77) when no GPU is usable.
 */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/stage.h"
#include "harness.h"

static const struct tess__dev_ops *ops = &tess__cuda_ops;

static struct tess__config cfg_with(const char *devices) {
    struct tess__config c;
    memset(&c, 0, sizeof c);
    snprintf(c.devices, sizeof c.devices, "%s", devices);
    return c;
}

/* Number of CUDA devices, or SKIP the program when there is none. */
static int need_gpu(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) SKIP("no usable CUDA driver/device: %s", cudaGetErrorString(e));
    struct tess__config cfg = cfg_with("all");
    if (n <= 0 || ops->count(&cfg) == 0) SKIP("no GPU visible");
    return n;
}

/* ---- helpers: an opened device with a bump allocator over its arena ------------------ */

struct gpu {
    void *bd;
    struct tess__dev_desc desc;
    char *base;
    size_t got, used;
};

static void gpu_open(struct gpu *g, int i, int nstreams, int64_t fault_at, size_t arena) {
    struct tess__config cfg = cfg_with("all");
    struct tess__dev_params p = {
        .ordinal = tess__cuda_ordinal(&cfg, i), .nstreams = nstreams, .fault_at = fault_at};
    memset(g, 0, sizeof *g);
    ASSERT(p.ordinal >= 0);
    int rc = ops->open(&p, &g->bd, &g->desc);
    ASSERT_MSG(rc == TESS_OK, "open(cuda:%d): %d %s", p.ordinal, rc, tess_last_error());
    if (arena) {
        void *base = NULL;
        rc = ops->arena(g->bd, arena, &base, &g->got);
        ASSERT_MSG(rc == TESS_OK, "arena: %d %s", rc, tess_last_error());
        ASSERT(g->got == arena);
        g->base = base;
    }
}

static void *gpu_alloc(struct gpu *g, size_t bytes) {
    size_t off = (g->used + 255) & ~(size_t)255;
    ASSERT_MSG(off + bytes <= g->got, "test arena too small (%zu + %zu > %zu)", off, bytes, g->got);
    g->used = off + bytes;
    return g->base + off;
}

static tess__event *ev_new(void *bd) {
    tess__event *e = NULL;
    int rc = ops->event_create(bd, &e);
    ASSERT_MSG(rc == TESS_OK && e, "event_create: %d %s", rc, tess_last_error());
    return e;
}

static void ev_sync(void *bd, tess__event *e) {
    int rc = ops->event_sync(bd, e);
    ASSERT_MSG(rc == TESS_OK, "event_sync: %d %s", rc, tess_last_error());
}

/* Deterministic values in [-1, 1). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}

/* Real component idx of a buffer of precision dt (complex: 2 components per element). */
static double comp(tess_dtype_t dt, const void *p, size_t idx) {
    return dt == TESS_S || dt == TESS_C ? (double)((const float *)p)[idx]
                                        : ((const double *)p)[idx];
}
static void set_comp(tess_dtype_t dt, void *p, size_t idx, double v) {
    if (dt == TESS_S || dt == TESS_C)
        ((float *)p)[idx] = (float)v;
    else
        ((double *)p)[idx] = v;
}
static size_t ncomp(tess_dtype_t dt) { return tess__dtypes[dt].complex_ ? 2 : 1; }

/* A host rows x cols matrix with leading dimension ld, random (or constant v if !random). */
static void *host_mat(tess_dtype_t dt, int64_t ld, int64_t cols, bool random, double v) {
    size_t nc = (size_t)ld * (size_t)cols * ncomp(dt);
    void *p = malloc(nc * tess__dtypes[dt].size / ncomp(dt) + 16);
    ASSERT(p);
    for (size_t i = 0; i < nc; i++) set_comp(dt, p, i, random ? rnd() : v);
    return p;
}

/* ---- selection --------------------------------------------------------------------- */

/* TESSERA_DEVICES selects GPUs: all, none, a list (order kept, duplicates and invisible
 * ordinals left out), and tess__cuda_ordinal maps the i-th selected device to its ordinal. */
TEST(cuda_count_and_ordinal) {
    int n = need_gpu();
    struct tess__config all = cfg_with("all"), none = cfg_with("none"), zero = cfg_with("0"),
                        dup = cfg_with("0,0"), far = cfg_with("99"), empty = cfg_with("");
    ASSERT_EQ(ops->count(&all), TESS__MIN(n, TESS_MAX_DEVICES));
    ASSERT_EQ(ops->count(&empty), ops->count(&all));
    ASSERT_EQ(ops->count(NULL), ops->count(&all));
    ASSERT_EQ(ops->count(&none), 0);
    ASSERT_EQ(ops->count(&zero), 1);
    ASSERT_EQ(ops->count(&dup), 1);
    if (n < 99) ASSERT_EQ(ops->count(&far), 0);
    ASSERT_EQ(tess__cuda_ordinal(&all, 0), 0);
    ASSERT_EQ(tess__cuda_ordinal(&all, n), -1);
    ASSERT_EQ(tess__cuda_ordinal(&none, 0), -1);
    if (n >= 2) {
        struct tess__config rev = cfg_with("1, 0");
        ASSERT_EQ(ops->count(&rev), 2);
        ASSERT_EQ(tess__cuda_ordinal(&rev, 0), 1);
        ASSERT_EQ(tess__cuda_ordinal(&rev, 1), 0);
    }
}

/* open fills the description (name "<gpu> (cuda:N)", kind, memory, bus) and rejects a bad
 * ordinal or stream count; close returns the calling thread's current device unchanged. */
TEST(cuda_open_desc) {
    int n = need_gpu();
    struct gpu g;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    gpu_open(&g, 0, 4, 0, 0);
    ASSERT(strstr(g.desc.name, "(cuda:0)") != NULL);
    ASSERT_EQ(g.desc.kind, TESS_DEV_CUDA);
    ASSERT_GT(g.desc.mem_total, (size_t)1 << 30);
    ASSERT(g.desc.pci_bus >= 0);
    ASSERT_EQ(g.desc.caps & TESS__CAP_UNIFIED, 0);
    ASSERT(g.desc.caps & TESS__CAP_SHARED); /* the end game (node/balance.c) counts on it */
    fprintf(stderr, "  %s, %zu MiB, bus %d, caps %#x\n", g.desc.name, g.desc.mem_total >> 20,
            g.desc.pci_bus, g.desc.caps);
    ops->close(g.bd);
    int cur = -1;
    ASSERT_EQ(cudaGetDevice(&cur), cudaSuccess);
    ASSERT_EQ(cur, 0);
    if (n >= 2) { /* opening another GPU leaves this thread's device as it was */
        gpu_open(&g, 1, 1, 0, 0);
        ASSERT(strstr(g.desc.name, "(cuda:1)") != NULL);
        ASSERT_EQ(cudaGetDevice(&cur), cudaSuccess);
        ASSERT_EQ(cur, 0);
        ops->close(g.bd);
        ASSERT_EQ(cudaGetDevice(&cur), cudaSuccess);
        ASSERT_EQ(cur, 0);
    }

    void *bd = NULL;
    struct tess__dev_desc desc;
    struct tess__dev_params bad = {.ordinal = n, .nstreams = 1};
    ASSERT_EQ(ops->open(&bad, &bd, &desc), TESS_ENODEV);
    struct tess__dev_params nostream = {.ordinal = 0, .nstreams = 0};
    ASSERT_EQ(ops->open(&nostream, &bd, &desc), TESS_EINVAL);
    struct tess__dev_params many = {.ordinal = 0,
                                    .nstreams = TESS_MAX_STREAMS + TESS_AUX_STREAMS + 1};
    ASSERT_EQ(ops->open(&many, &bd, &desc), TESS_EINVAL);
}

/* arena(0) takes the free memory but the margin (>= 1 GiB) in one allocation whose last
 * bytes are usable; a second arena is refused. */
TEST(cuda_arena_default) {
    need_gpu();
    struct gpu g;
    gpu_open(&g, 0, 1, 0, 0);
    void *base = NULL;
    size_t got = 0;
    int rc = ops->arena(g.bd, 0, &base, &got);
    ASSERT_MSG(rc == TESS_OK, "arena(0): %d %s", rc, tess_last_error());
    ASSERT(base != NULL);
    ASSERT_GT(got, 0);
    ASSERT(got + ((size_t)1 << 30) <= g.desc.mem_total);
    fprintf(stderr, "  arena %zu MiB of %zu MiB\n", got >> 20, g.desc.mem_total >> 20);
    double in[512], out[512];
    for (int i = 0; i < 512; i++) in[i] = i + 0.5, out[i] = 0;
    char *last = (char *)base + got - sizeof in;
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__H2D, last, sizeof in, in, sizeof in, sizeof in, 1, NULL));
    ASSERT_OK(
        ops->copy2d(g.bd, 0, TESS__D2H, out, sizeof out, last, sizeof out, sizeof out, 1, NULL));
    tess__event *e = ev_new(g.bd);
    ASSERT_OK(ops->event_record(g.bd, 0, e));
    ev_sync(g.bd, e);
    ASSERT(memcmp(in, out, sizeof in) == 0);
    void *b2;
    size_t g2;
    ASSERT_EQ(ops->arena(g.bd, 1 << 20, &b2, &g2), TESS_EINVAL);
    ops->event_destroy(g.bd, e);
    ops->close(g.bd);
}

/* ---- gemm ---------------------------------------------------------------------------- */

/* One gemm on the device vs OpenBLAS: A, B, C copied from strided host matrices on three
 * streams, the kernel on a fourth that waits for the three copies' events, C copied back
 * into a strided host matrix whose padding must stay untouched. beta_zero: the device C
 * holds NaN and must not be read. */
static void check_gemm(struct gpu *g, tess_dtype_t dt, char ta, char tb, int64_t m, int64_t n,
                       int64_t k, bool beta_zero) {
    size_t es = tess__dtypes[dt].size, nc = ncomp(dt);
    int64_t ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m;
    int64_t br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
    int64_t lda = ar + 5, ldb = br + 3, ldc = m + 7;
    int64_t ldda = (ar + 31) / 32 * 32, lddb = (br + 15) / 16 * 16 + 16, lddc = m + 1;
    const double sentinel = 12345.0;
    void *A = host_mat(dt, lda, ac, true, 0), *B = host_mat(dt, ldb, bc, true, 0);
    void *C0 = host_mat(dt, ldc, n, !beta_zero, beta_zero ? NAN : 0);
    void *Cref = host_mat(dt, ldc, n, false, 0);
    void *Cout = host_mat(dt, ldc, n, false, sentinel);
    if (!beta_zero) memcpy(Cref, C0, (size_t)ldc * (size_t)n * es);
    tess__scalar_t alpha, beta;
    memset(&alpha, 0, sizeof alpha);
    memset(&beta, 0, sizeof beta);
    set_comp(dt, &alpha, 0, 0.75);
    if (nc == 2) set_comp(dt, &alpha, 1, -0.5);
    if (!beta_zero) {
        set_comp(dt, &beta, 0, 0.5);
        if (nc == 2) set_comp(dt, &beta, 1, 0.25);
    }
    tess__host_gemm(dt, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, Cref, ldc);

    g->used = 0;
    void *dA = gpu_alloc(g, (size_t)(ldda * ac) * es + 1);
    void *dB = gpu_alloc(g, (size_t)(lddb * bc) * es + 1);
    void *dC = gpu_alloc(g, (size_t)(lddc * n) * es + 1);
    tess__event *ea = ev_new(g->bd), *eb = ev_new(g->bd), *ec = ev_new(g->bd), *ed = ev_new(g->bd);
    ASSERT_OK(ops->copy2d(g->bd, 0, TESS__H2D, dA, (size_t)ldda * es, A, (size_t)lda * es,
                          (size_t)ar * es, (size_t)ac, NULL));
    ASSERT_OK(ops->event_record(g->bd, 0, ea));
    ASSERT_OK(ops->copy2d(g->bd, 1, TESS__H2D, dB, (size_t)lddb * es, B, (size_t)ldb * es,
                          (size_t)br * es, (size_t)bc, NULL));
    ASSERT_OK(ops->event_record(g->bd, 1, eb));
    ASSERT_OK(ops->copy2d(g->bd, 2, TESS__H2D, dC, (size_t)lddc * es, C0, (size_t)ldc * es,
                          (size_t)m * es, (size_t)n, NULL));
    ASSERT_OK(ops->event_record(g->bd, 2, ec));
    ASSERT_OK(ops->stream_wait(g->bd, 3, ea));
    ASSERT_OK(ops->stream_wait(g->bd, 3, eb));
    ASSERT_OK(ops->stream_wait(g->bd, 3, ec));
    int rc = ops->gemm(g->bd, 3, dt, ta, tb, m, n, k, &alpha, dA, ldda, dB, lddb, &beta, dC, lddc);
    ASSERT_MSG(rc == TESS_OK, "gemm: %d %s", rc, tess_last_error());
    ASSERT_OK(ops->copy2d(g->bd, 3, TESS__D2H, Cout, (size_t)ldc * es, dC, (size_t)lddc * es,
                          (size_t)m * es, (size_t)n, NULL));
    ASSERT_OK(ops->event_record(g->bd, 3, ed));
    ev_sync(g->bd, ed);

    /* |error| <= c k eps max(1, |ref|); entries of the inputs are below 1 in magnitude */
    double eps = dt == TESS_S || dt == TESS_C ? 1.2e-7 : 2.3e-16;
    double tol = 8.0 * (double)(k + 2) * eps, worst = 0;
    for (int64_t j = 0; j < n; j++) {
        for (int64_t i = 0; i < ldc; i++) {
            for (size_t c = 0; c < nc; c++) {
                size_t idx = ((size_t)(j * ldc + i)) * nc + c;
                double got = comp(dt, Cout, idx), want = comp(dt, Cref, idx);
                if (i >= m) {
                    ASSERT_MSG(got == sentinel, "%sgemm %c%c: padding C(%lld,%lld) written",
                               tess__dtypes[dt].name, ta, tb, (long long)i, (long long)j);
                    continue;
                }
                double err = fabs(got - want) / fmax(1.0, fabs(want));
                ASSERT_MSG(err <= tol, "%sgemm %c%c beta0=%d: C(%lld,%lld)[%zu] = %g, want %g",
                           tess__dtypes[dt].name, ta, tb, beta_zero, (long long)i, (long long)j, c,
                           got, want);
                worst = fmax(worst, err);
            }
        }
    }
    (void)worst;
    ops->event_destroy(g->bd, ea);
    ops->event_destroy(g->bd, eb);
    ops->event_destroy(g->bd, ec);
    ops->event_destroy(g->bd, ed);
    free(A);
    free(B);
    free(C0);
    free(Cref);
    free(Cout);
}

/* LASWP of k pivots on an m x n device matrix (ldd >= m), the pivots LU's (ipiv[i] - 1 >=
 * i), anywhere in 1..m, or the identity (each row its own pivot), against the swaps done
 * one by one on the host, every element compared bit for bit (the padding rows too:
 * untouched). */
enum piv_kind { PIV_LU, PIV_ANY, PIV_IDENTITY };
static void check_laswp(struct gpu *g, tess_dtype_t dt, int64_t m, int64_t n, int64_t ldd,
                        int64_t k, enum piv_kind pk, int stream) {
    bool lu = pk == PIV_LU;
    size_t es = tess__dtypes[dt].size;
    void *A = host_mat(dt, ldd, n, true, 0), *want = malloc((size_t)(ldd * n) * es + 1),
         *got = malloc((size_t)(ldd * n) * es + 1);
    int *ipiv = malloc((size_t)(k + 1) * sizeof *ipiv);
    ASSERT(want && got && ipiv);
    for (int64_t i = 0; i < k; i++)
        ipiv[i] = lu ? (int)(i + 1 + (int64_t)((rnd() + 1) / 2 * (double)(m - i)))
                     : (int)(1 + (int64_t)((rnd() + 1) / 2 * (double)m));
    for (int64_t i = 0; i < k; i++)
        ipiv[i] = pk == PIV_IDENTITY ? (int)(i + 1) : ipiv[i] > m ? (int)m : ipiv[i];
    memcpy(want, A, (size_t)(ldd * n) * es);
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < k; i++) {
            char *x = (char *)want + (size_t)(j * ldd + i) * es,
                 *y = (char *)want + (size_t)(j * ldd + ipiv[i] - 1) * es, t[16];
            memcpy(t, x, es), memcpy(x, y, es), memcpy(y, t, es);
        }
    g->used = 0;
    void *dA = gpu_alloc(g, (size_t)(ldd * n) * es + 1);
    tess__event *e = ev_new(g->bd);
    ASSERT_OK(ops->copy2d(g->bd, stream, TESS__H2D, dA, (size_t)ldd * es, A, (size_t)ldd * es,
                          (size_t)ldd * es, (size_t)n, NULL));
    struct tess__kernel kn = {
        .kind = TESS__K_LASWP, .dt = dt, .m = m, .n = n, .k = k, .C = dA, .ldc = ldd, .ipiv = ipiv};
    int rc = ops->kernel(g->bd, stream, &kn);
    ASSERT_MSG(rc == TESS_OK, "laswp: %d %s", rc, tess_last_error());
    for (int64_t i = 0; i < k; i++) ipiv[i] = -7; /* the caller's array is free at return */
    ASSERT_OK(ops->copy2d(g->bd, stream, TESS__D2H, got, (size_t)ldd * es, dA, (size_t)ldd * es,
                          (size_t)ldd * es, (size_t)n, NULL));
    ASSERT_OK(ops->event_record(g->bd, stream, e));
    ev_sync(g->bd, e);
    ASSERT_MSG(!memcmp(got, want, (size_t)(ldd * n) * es),
               "%slaswp m %lld n %lld ld %lld k %lld pivots %d: rows differ", tess__dtypes[dt].name,
               (long long)m, (long long)n, (long long)ldd, (long long)k, (int)pk);
    ops->event_destroy(g->bd, e);
    free(A);
    free(want);
    free(got);
    free(ipiv);
}

/* LASWP (the composed permutation on cuda_rows.cu's kernel, cuSOLVER's laswp without it)
 * matches the swaps in order: every precision, LU's pivots and pivots anywhere, one pivot,
 * the identity, a leading dimension past m; and z with some 20000 rows changed, more
 * than a block's shared memory holds, which takes cuSOLVER's path. */
TEST(cuda_laswp_vs_swaps) {
    need_gpu();
    struct gpu g;
    gpu_open(&g, 0, 4, 0, (size_t)96 << 20);
    for (int dt = TESS_S; dt <= TESS_Z; dt++) {
        check_laswp(&g, (tess_dtype_t)dt, 3000, 70, 3000, 500, PIV_LU, dt % 4);
        check_laswp(&g, (tess_dtype_t)dt, 777, 33, 800, 300, PIV_ANY, 1);
        check_laswp(&g, (tess_dtype_t)dt, 5, 3, 5, 1, PIV_LU, 2);
        check_laswp(&g, (tess_dtype_t)dt, 1, 9, 1, 1, PIV_LU, 3);
    }
    check_laswp(&g, TESS_D, 64, 8, 64, 64, PIV_IDENTITY, 0); /* every pivot its own row */
    check_laswp(&g, TESS_Z, 40000, 5, 40000, 12000, PIV_ANY, 1);
    ops->close(g.bd);
}

/* Every precision and op combination agrees with OpenBLAS, beta = 0 ignores a NaN C, and
 * one-column operands (height-1 copies) work. */
TEST(cuda_gemm_vs_openblas) {
    need_gpu();
    struct gpu g;
    gpu_open(&g, 0, 4, 0, (size_t)64 << 20);
    static const char real_ops[][2] = {{'N', 'N'}, {'T', 'N'}, {'N', 'T'}, {'T', 'T'}};
    static const char cplx_ops[][2] = {{'N', 'N'}, {'C', 'N'}, {'N', 'C'}, {'T', 'C'}};
    for (int dt = TESS_S; dt <= TESS_Z; dt++) {
        bool cplx = tess__dtypes[dt].complex_;
        for (int o = 0; o < 4; o++) {
            char ta = cplx ? cplx_ops[o][0] : real_ops[o][0];
            char tb = cplx ? cplx_ops[o][1] : real_ops[o][1];
            check_gemm(&g, (tess_dtype_t)dt, ta, tb, 67, 45, 33, false);
        }
        check_gemm(&g, (tess_dtype_t)dt, 'N', 'N', 67, 45, 33, true);
        check_gemm(&g, (tess_dtype_t)dt, 'N', 'N', 67, 1, 33, false);
        check_gemm(&g, (tess_dtype_t)dt, 'T', 'N', 1, 40, 257, false);
    }
    ops->close(g.bd);
}

/* ---- events ------------------------------------------------------------------------- */

/* A stream waiting for another stream's event sees the kernel's result: C = A B on stream 0
 * (C first overwritten with zeros there), the copy back on stream 1 behind a wait. The
 * result is checked by the probe vector (C t = A (B t)). A never-recorded (or reused)
 * event reports TESS_OK; query answers EAGAIN until the work is done, then OK. */
TEST(cuda_events_cross_stream) {
    need_gpu();
    const int64_t n = 4096;
    size_t bytes = (size_t)(n * n) * sizeof(double);
    struct gpu g;
    gpu_open(&g, 0, 2, 0, 3 * bytes + (1 << 20));
    double *A = host_mat(TESS_D, n, n, true, 0), *B = host_mat(TESS_D, n, n, true, 0);
    double *Z = host_mat(TESS_D, n, n, false, 0), *C = NULL;
    ASSERT_EQ(cudaMallocHost((void **)&C, bytes), cudaSuccess); /* pinned: async D2H */
    void *dA = gpu_alloc(&g, bytes), *dB = gpu_alloc(&g, bytes), *dC = gpu_alloc(&g, bytes);

    tess__event *e0 = ev_new(g.bd), *e1 = ev_new(g.bd);
    ASSERT_EQ(ops->event_query(g.bd, e0), TESS_OK); /* never recorded */
    ASSERT_OK(ops->event_sync(g.bd, e0));
    ASSERT_OK(ops->stream_wait(g.bd, 1, e0)); /* never recorded: no wait */

    size_t row = (size_t)n * sizeof(double);
    double one = 1.0, zero = 0.0;
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__H2D, dA, row, A, row, row, (size_t)n, NULL));
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__H2D, dB, row, B, row, row, (size_t)n, NULL));
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__H2D, dC, row, Z, row, row, (size_t)n, NULL));
    ASSERT_OK(ops->gemm(g.bd, 0, TESS_D, 'N', 'N', n, n, n, &one, dA, n, dB, n, &zero, dC, n));
    ASSERT_OK(ops->event_record(g.bd, 0, e0));
    ASSERT_OK(ops->stream_wait(g.bd, 1, e0));
    ASSERT_OK(ops->copy2d(g.bd, 1, TESS__D2H, C, row, dC, row, row, (size_t)n, NULL));
    ASSERT_OK(ops->event_record(g.bd, 1, e1));
    int first = ops->event_query(g.bd, e1), rc = first, polls = 0;
    double t0 = tess__now();
    while (rc == TESS_EAGAIN && tess__now() - t0 < 60) {
        rc = ops->event_query(g.bd, e1);
        polls++;
    }
    ASSERT_MSG(rc == TESS_OK, "event_query: %d %s", rc, tess_last_error());
    ASSERT(first == TESS_OK || first == TESS_EAGAIN);
    fprintf(stderr, "  first query %s, %d polls, %.1f ms\n", first == TESS_EAGAIN ? "EAGAIN" : "OK",
            polls, 1e3 * (tess__now() - t0));
    ev_sync(g.bd, e1);
    ASSERT_EQ(ops->event_query(g.bd, e0), TESS_OK);

    /* probe: y = C t, z = A (B t) */
    double *t = malloc(row), *bt = calloc((size_t)n, sizeof(double)),
           *y = calloc((size_t)n, sizeof(double)), *z = calloc((size_t)n, sizeof(double));
    ASSERT(t && bt && y && z);
    for (int64_t i = 0; i < n; i++) t[i] = rnd();
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) {
            bt[i] += B[j * n + i] * t[j];
            y[i] += C[j * n + i] * t[j];
        }
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < n; i++) z[i] += A[j * n + i] * bt[j];
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        num += (y[i] - z[i]) * (y[i] - z[i]);
        den += z[i] * z[i];
    }
    ASSERT_MSG(sqrt(num / den) < 1e-12, "probe: relative error %g (wait not honoured?)",
               sqrt(num / den));

    /* a reused event starts as never recorded */
    ops->event_destroy(g.bd, e1);
    tess__event *e2 = ev_new(g.bd);
    ASSERT_EQ(ops->event_query(g.bd, e2), TESS_OK);
    ops->event_destroy(g.bd, e2);
    ops->event_destroy(g.bd, e0);
    ops->close(g.bd);
    cudaFreeHost(C);
    free(A);
    free(B);
    free(Z);
    free(t);
    free(bt);
    free(y);
    free(z);
}

/* ---- two GPUs --------------------------------------------------------------------------- */

/* With two GPUs: can_peer answers consistently with the P2P capability (and refuses the
 * device itself), and a strided P2P copy on GPU 1, ordered behind an event of GPU 0, moves
 * exactly the bytes GPU 0 received. */
TEST(cuda_p2p_copy) {
    int n = need_gpu();
    struct tess__config all = cfg_with("all");
    if (n < 2 || ops->count(&all) < 2) {
        fprintf(stderr, "  one GPU: P2P not tested\n");
        return;
    }
    struct gpu g0, g1;
    gpu_open(&g0, 0, 2, 0, (size_t)16 << 20);
    gpu_open(&g1, 1, 2, 0, (size_t)16 << 20);
    int can = ops->can_peer(g1.bd, g0.bd);
    ASSERT_EQ(ops->can_peer(g1.bd, g0.bd), can); /* cached */
    ASSERT_EQ(ops->can_peer(g0.bd, g0.bd), 0);
    if (can) ASSERT(g1.desc.caps & TESS__CAP_P2P);
    fprintf(stderr, "  %s <- %s: can_peer %d\n", g1.desc.name, g0.desc.name, can);

    const int64_t rows = 300, cols = 200, ldx = 333, ld0 = 320, ld1 = 352, ldy = 301;
    double *X = host_mat(TESS_D, ldx, cols, true, 0);
    double *Y = host_mat(TESS_D, ldy, cols, false, -7);
    void *d0 = gpu_alloc(&g0, (size_t)(ld0 * cols) * 8);
    void *d1 = gpu_alloc(&g1, (size_t)(ld1 * cols) * 8);
    tess__event *e0 = ev_new(g0.bd), *e1 = ev_new(g1.bd);
    ASSERT_OK(ops->copy2d(g0.bd, 1, TESS__H2D, d0, (size_t)ld0 * 8, X, (size_t)ldx * 8,
                          (size_t)rows * 8, (size_t)cols, NULL));
    ASSERT_OK(ops->event_record(g0.bd, 1, e0));
    ASSERT_OK(ops->stream_wait(g1.bd, 0, e0)); /* an event of the other GPU */
    int rc = ops->copy2d(g1.bd, 0, TESS__P2P, d1, (size_t)ld1 * 8, d0, (size_t)ld0 * 8,
                         (size_t)rows * 8, (size_t)cols, g0.bd);
    ASSERT_MSG(rc == TESS_OK, "P2P copy: %d %s", rc, tess_last_error());
    ASSERT_OK(ops->copy2d(g1.bd, 0, TESS__D2H, Y, (size_t)ldy * 8, d1, (size_t)ld1 * 8,
                          (size_t)rows * 8, (size_t)cols, NULL));
    ASSERT_OK(ops->event_record(g1.bd, 0, e1));
    ev_sync(g1.bd, e1);
    for (int64_t j = 0; j < cols; j++) {
        ASSERT_MSG(memcmp(&Y[j * ldy], &X[j * ldx], (size_t)rows * 8) == 0,
                   "column %lld differs after P2P", (long long)j);
        ASSERT(Y[j * ldy + rows] == -7.0);
    }
    ops->event_destroy(g0.bd, e0);
    ops->event_destroy(g1.bd, e1);
    ops->close(g1.bd);
    ops->close(g0.bd);
    free(X);
    free(Y);
}

/* ---- failures ------------------------------------------------------------------------- */

/* fault_at = 3: two operations run, the third copy/gemm fails with TESS_EDEVICE, and from
 * then on every hook answers TESS_EDEVICE: an event recorded before the fault never
 * reports OK, event_sync returns at once instead of hanging, close still works; another
 * instance of the same GPU is unaffected. */
TEST(cuda_fault_injection) {
    need_gpu();
    struct gpu g;
    gpu_open(&g, 0, 2, 3, (size_t)4 << 20);
    double h[64 * 64], one = 1.0, zero = 0.0;
    for (int i = 0; i < 64 * 64; i++) h[i] = rnd();
    void *dA = gpu_alloc(&g, sizeof h), *dC = gpu_alloc(&g, sizeof h);
    tess__event *before = ev_new(g.bd), *spare = ev_new(g.bd);
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__H2D, dA, 512, h, 512, 512, 64, NULL)); /* 1 */
    ASSERT_OK(ops->event_record(g.bd, 0, before));
    ASSERT_OK(ops->gemm(g.bd, 0, TESS_D, 'N', 'N', 64, 64, 64, &one, dA, 64, dA, 64, &zero, dC,
                        64)); /* 2 */
    ASSERT_OK(ops->event_record(g.bd, 0, before));
    int rc = ops->copy2d(g.bd, 1, TESS__D2H, h, 512, dC, 512, 512, 64, NULL); /* 3 */
    ASSERT_EQ(rc, TESS_EDEVICE);
    ASSERT(strstr(tess_last_error(), "cuda:") != NULL);
    fprintf(stderr, "  %s\n", tess_last_error());
    ASSERT_EQ(ops->gemm(g.bd, 0, TESS_D, 'N', 'N', 64, 64, 64, &one, dA, 64, dA, 64, &zero, dC, 64),
              TESS_EDEVICE);
    ASSERT_EQ(ops->copy2d(g.bd, 0, TESS__H2D, dA, 512, h, 512, 512, 64, NULL), TESS_EDEVICE);
    ASSERT_EQ(ops->event_record(g.bd, 0, spare), TESS_EDEVICE);
    ASSERT_EQ(ops->stream_wait(g.bd, 0, before), TESS_EDEVICE);
    tess__event *e3 = NULL;
    ASSERT_EQ(ops->event_create(g.bd, &e3), TESS_EDEVICE);
    double t0 = tess__now();
    ASSERT_EQ(ops->event_query(g.bd, before), TESS_EDEVICE);
    ASSERT_EQ(ops->event_query(g.bd, spare), TESS_EDEVICE);
    ASSERT_EQ(ops->event_sync(g.bd, before), TESS_EDEVICE);
    ASSERT_EQ(ops->event_sync(g.bd, spare), TESS_EDEVICE);
    ASSERT(tess__now() - t0 < 5.0);
    ASSERT_EQ(ops->can_peer(g.bd, g.bd), 0);
    void *b;
    size_t got;
    ASSERT_EQ(ops->arena(g.bd, 1 << 20, &b, &got), TESS_EDEVICE);
    ops->event_destroy(g.bd, before);
    ops->event_destroy(g.bd, spare);
    ops->close(g.bd);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess); /* an injected fault leaves CUDA clean */

    struct gpu ok;
    gpu_open(&ok, 0, 1, 0, (size_t)1 << 20);
    void *d = gpu_alloc(&ok, sizeof h);
    tess__event *e = ev_new(ok.bd);
    ASSERT_OK(ops->copy2d(ok.bd, 0, TESS__H2D, d, 512, h, 512, 512, 64, NULL));
    ASSERT_OK(ops->event_record(ok.bd, 0, e));
    ev_sync(ok.bd, e);
    ops->event_destroy(ok.bd, e);
    ops->close(ok.bd);
}

/* A failed device does not drag another down (as in host.c): a wait on its event is
 * skipped with TESS_OK, and a P2P copy from its memory is still made (an injected fault
 * leaves that memory intact). Two instances of one GPU are enough. */
TEST(cuda_failed_peer_does_not_spread) {
    need_gpu();
    struct gpu bad, good;
    gpu_open(&bad, 0, 1, 2, (size_t)1 << 20);
    gpu_open(&good, 0, 1, 0, (size_t)1 << 20);
    tess__event *e = ev_new(bad.bd), *f = ev_new(good.bd);
    double h[8] = {1, 2, 3, 4, 5, 6, 7, 8}, back[8] = {0};
    ASSERT_OK(ops->copy2d(bad.bd, 0, TESS__H2D, bad.base, 64, h, 64, 64, 1, NULL)); /* 1 */
    ASSERT_OK(ops->event_record(bad.bd, 0, e));
    ev_sync(bad.bd, e);
    ASSERT_EQ(ops->copy2d(bad.bd, 0, TESS__H2D, bad.base, 64, h, 64, 64, 1, NULL),
              TESS_EDEVICE); /* 2 */
    ASSERT_OK(ops->stream_wait(good.bd, 0, e));
    ASSERT_OK(ops->copy2d(good.bd, 0, TESS__P2P, good.base, 64, bad.base, 64, 64, 1, bad.bd));
    ASSERT_OK(ops->copy2d(good.bd, 0, TESS__D2H, back, 64, good.base, 64, 64, 1, NULL));
    ASSERT_OK(ops->event_record(good.bd, 0, f));
    ev_sync(good.bd, f);
    ASSERT(memcmp(h, back, sizeof h) == 0);
    ASSERT_EQ(ops->event_query(good.bd, e), TESS_EDEVICE); /* the failed device's event */
    ops->event_destroy(bad.bd, e);
    ops->event_destroy(good.bd, f);
    ops->close(bad.bd);
    ops->close(good.bd);
}

/* Events outlive their device (as in host.c): destroyed after close, still queryable
 * before; a zero-sized copy is no operation for fault_at. */
TEST(cuda_event_outlives_device) {
    need_gpu();
    struct gpu g;
    gpu_open(&g, 0, 1, 2, (size_t)1 << 20);
    double h[8] = {0};
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__H2D, g.base, 64, h, 64, 0, 1, NULL));  /* no op */
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__H2D, g.base, 64, h, 64, 64, 0, NULL)); /* no op */
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__H2D, g.base, 64, h, 64, 64, 1, NULL)); /* 1 */
    tess__event *a = ev_new(g.bd), *b = ev_new(g.bd), *c = ev_new(g.bd);
    ASSERT_OK(ops->event_record(g.bd, 0, a));
    ev_sync(g.bd, a);
    ops->event_destroy(g.bd, c); /* pooled: freed by close */
    ops->close(g.bd);
    ops->event_destroy(NULL, a);
    ops->event_destroy(NULL, b);
}

/* Bad arguments (our invariants) answer TESS_EINVAL and do not fail the device. */
TEST(cuda_bad_arguments_keep_device) {
    need_gpu();
    struct gpu g;
    gpu_open(&g, 0, 2, 0, (size_t)1 << 20);
    double h[16] = {0}, one = 1.0;
    void *d = gpu_alloc(&g, sizeof h);
    ASSERT_EQ(ops->copy2d(g.bd, 2, TESS__H2D, d, 128, h, 128, 128, 1, NULL), TESS_EINVAL);
    ASSERT_EQ(ops->copy2d(g.bd, 0, TESS__H2D, d, 8, h, 8, 16, 2, NULL), TESS_EINVAL);
    ASSERT_EQ(ops->gemm(g.bd, 0, TESS_D, 'N', 'N', 4, 4, 4, &one, d, 4, d, 4, &one, d, 3),
              TESS_EINVAL);
    ASSERT_EQ(ops->gemm(g.bd, 0, TESS_D, 'X', 'N', 4, 4, 4, &one, d, 4, d, 4, &one, d, 4),
              TESS_EINVAL);
    ASSERT_EQ(ops->gemm(g.bd, -1, TESS_D, 'N', 'N', 4, 4, 4, &one, d, 4, d, 4, &one, d, 4),
              TESS_EINVAL);
    ASSERT_OK(ops->gemm(g.bd, 0, TESS_D, 'N', 'N', 0, 4, 4, &one, d, 1, d, 4, &one, d, 1));
    ASSERT_OK(ops->gemm(g.bd, 0, TESS_D, 'n', 't', 2, 2, 2, &one, d, 2, d, 2, &one, d, 2));
    ASSERT_EQ(ops->gemm(g.bd, 0, TESS_D, 'N', 'N', 2, 2, 2, NULL, d, 2, d, 2, &one, d, 2),
              TESS_EINVAL);
    ASSERT_EQ(ops->copy2d(g.bd, 0, TESS__H2D, NULL, 8, h, 8, 8, 1, NULL), TESS_EINVAL);
    ASSERT_EQ(ops->copy2d(g.bd, 0, (enum tess__copy_kind)9, d, 8, h, 8, 8, 1, NULL), TESS_EINVAL);
    tess__event *e = ev_new(g.bd);
    ASSERT_OK(ops->copy2d(g.bd, 1, TESS__H2D, d, 128, h, 128, 128, 1, NULL));
    ASSERT_OK(ops->event_record(g.bd, 1, e));
    ev_sync(g.bd, e);
    ops->event_destroy(g.bd, e);
    ops->close(g.bd);
}

/* ---- pageable staging (stage.c) ---------------------------------------------------------- */

static struct tess__cuda_staging stage_now(void) {
    struct tess__cuda_staging s;
    tess__cuda_staging_stats(&s);
    return s;
}

/* Open GPU 0 with TESSERA_STAGING = staging (NULL: the default) while it opens. */
static void gpu_open_staging(struct gpu *g, const char *staging, int nstreams, int64_t fault_at,
                             size_t arena) {
    if (staging)
        setenv("TESSERA_STAGING", staging, 1);
    else
        unsetenv("TESSERA_STAGING");
    gpu_open(g, 0, nstreams, fault_at, arena);
    unsetenv("TESSERA_STAGING");
}

/* A strided rows x cols double matrix: host X (ldx), device copy (ldd), host Y (ldy). */
struct rt_shape {
    int64_t rows, cols, ldx, ldd, ldy;
};
static const double rt_sentinel = -4321.0;

/* Queue X -> device -> Y on `stream` and an event behind it. */
static void rt_issue(struct gpu *g, int stream, const struct rt_shape *s, const double *X,
                     double *Y, void *dev, tess__event *e) {
    size_t w = (size_t)s->rows * 8;
    int rc = ops->copy2d(g->bd, stream, TESS__H2D, dev, (size_t)s->ldd * 8, X, (size_t)s->ldx * 8,
                         w, (size_t)s->cols, NULL);
    ASSERT_MSG(rc == TESS_OK, "H2D %lldx%lld: %d %s", (long long)s->rows, (long long)s->cols, rc,
               tess_last_error());
    rc = ops->copy2d(g->bd, stream, TESS__D2H, Y, (size_t)s->ldy * 8, dev, (size_t)s->ldd * 8, w,
                     (size_t)s->cols, NULL);
    ASSERT_MSG(rc == TESS_OK, "D2H %lldx%lld: %d %s", (long long)s->rows, (long long)s->cols, rc,
               tess_last_error());
    ASSERT_OK(ops->event_record(g->bd, stream, e));
}

/* Y holds X's rows x cols block and the padding of Y is untouched. */
static void rt_check(const struct rt_shape *s, const double *X, const double *Y) {
    for (int64_t j = 0; j < s->cols; j++) {
        const double *x = X + j * s->ldx, *y = Y + j * s->ldy;
        if (memcmp(x, y, (size_t)s->rows * 8) != 0) {
            int64_t i = 0;
            while (i < s->rows && x[i] == y[i]) i++;
            ASSERT_MSG(0, "%lldx%lld (ld %lld/%lld/%lld): Y(%lld,%lld) = %g, want %g",
                       (long long)s->rows, (long long)s->cols, (long long)s->ldx, (long long)s->ldd,
                       (long long)s->ldy, (long long)i, (long long)j, y[i], x[i]);
        }
        for (int64_t i = s->rows; i < s->ldy; i++)
            ASSERT_MSG(y[i] == rt_sentinel, "%lldx%lld: padding Y(%lld,%lld) written",
                       (long long)s->rows, (long long)s->cols, (long long)i, (long long)j);
    }
}

/* Poll (no event_sync) until e is reached: what the worker does with `wb`. */
static void ev_poll(void *bd, tess__event *e) {
    double t0 = tess__now();
    int rc;
    while ((rc = ops->event_query(bd, e)) == TESS_EAGAIN && tess__now() - t0 < 120) usleep(50);
    ASSERT_MSG(rc == TESS_OK, "event_query: %d %s", rc, tess_last_error());
}

/* Round trips through the staging pages (default pool) on four streams at once: odd
 * shapes (one segment, several pages, a single 8 MB column, rows not a multiple of 16
 * bytes, contiguous columns), each H2D from a pageable X then D2H into a pageable Y behind
 * it on the same stream. When the event behind the D2H copy reports completion (polled)
 * Y already holds X (the D2H event waits for the staging threads' memcpy), the padding of
 * Y is untouched, and the totals show the bytes went through the staging pages. */
TEST(cuda_staging_round_trips) {
    need_gpu();
    static const struct rt_shape shapes[] = {
        {1000, 3001, 1003, 1008, 1001},      /* 24 MB, 3 segments */
        {4096, 2048, 4099, 4096, 4101},      /* 64 MB, 8 segments */
        {999999, 1, 999999, 999999, 999999}, /* one 8 MB column: height 1 */
        {257, 777, 263, 264, 258},           /* 2056-byte rows: not 16-byte multiples */
        {2000, 1500, 2000, 2000, 2000},      /* contiguous: one memcpy per piece */
        {61, 600, 67, 64, 61},               /* 293 KB, one segment */
        {4500, 900, 4501, 4512, 4503},       /* 32 MB */
        {33, 130, 40, 33, 35},               /* 34 KB: just above the direct threshold */
    };
    enum { NS = sizeof shapes / sizeof shapes[0] };
    size_t dev_bytes = 0, staged = 0;
    for (int i = 0; i < NS; i++) {
        dev_bytes += (size_t)(shapes[i].ldd * shapes[i].cols) * 8 + 256;
        staged += (size_t)(shapes[i].rows * shapes[i].cols) * 8;
    }
    struct gpu g;
    gpu_open_staging(&g, NULL, 4, 0, dev_bytes + ((size_t)1 << 20));
    double *X[NS], *Y[NS];
    void *D[NS];
    tess__event *E[NS];
    for (int i = 0; i < NS; i++) {
        X[i] = host_mat(TESS_D, shapes[i].ldx, shapes[i].cols, true, 0);
        Y[i] = host_mat(TESS_D, shapes[i].ldy, shapes[i].cols, false, rt_sentinel);
        D[i] = gpu_alloc(&g, (size_t)(shapes[i].ldd * shapes[i].cols) * 8);
        E[i] = ev_new(g.bd);
    }
    for (int rep = 0; rep < 2; rep++) { /* the second round reuses the pages */
        struct tess__cuda_staging s0 = stage_now();
        for (int i = 0; i < NS; i++) rt_issue(&g, i % 4, &shapes[i], X[i], Y[i], D[i], E[i]);
        for (int i = NS - 1; i >= 0; i--) {
            ev_poll(g.bd, E[i]);
            rt_check(&shapes[i], X[i], Y[i]);
        }
        struct tess__cuda_staging s1 = stage_now();
        fprintf(stderr,
                "  round %d: staged H2D %.1f MB (%llu copies), D2H %.1f MB, %llu with "
                "fewer pages, %llu direct; pool %.0f MiB, waits by %s\n",
                rep, 1e-6 * (double)(s1.h2d_bytes - s0.h2d_bytes),
                (unsigned long long)(s1.h2d_copies - s0.h2d_copies),
                1e-6 * (double)(s1.d2h_bytes - s0.d2h_bytes),
                (unsigned long long)(s1.ring_copies - s0.ring_copies),
                (unsigned long long)(s1.direct_copies - s0.direct_copies),
                (double)s1.pool_bytes / 1048576.0,
                s1.memops ? "cuStreamWaitValue32" : "host functions");
        uint64_t moved = (s1.h2d_bytes - s0.h2d_bytes) + (s1.direct_bytes - s0.direct_bytes);
        ASSERT_GT(s1.h2d_bytes - s0.h2d_bytes, 0);
        ASSERT_GT(s1.d2h_bytes - s0.d2h_bytes, 0);
        ASSERT_MSG(moved >= staged, "H2D staged + direct %llu < %zu bytes",
                   (unsigned long long)moved, staged);
        ASSERT_GT(s1.pool_bytes, 0);
        for (int i = 0; i < NS; i++) /* fresh sentinels for the next round */
            for (size_t k = 0; k < (size_t)(shapes[i].ldy * shapes[i].cols); k++)
                Y[i][k] = rt_sentinel;
    }
    for (int i = 0; i < NS; i++) {
        ops->event_destroy(g.bd, E[i]);
        free(X[i]);
        free(Y[i]);
    }
    ops->close(g.bd);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
}

/* TESSERA_STAGING=1: a single 8 MiB page. A copy of several segments goes through it as a
 * ring (segment j waits for the page's previous use), in both directions; a copy that finds
 * the page taken waits for the copy holding it (none goes direct: the slow path); and the
 * order of one stream holds: the same device buffer written from X2, read into Y2, written
 * from X1, read into Y3, while copies on three other streams compete for the page. */
TEST(cuda_staging_one_page) {
    need_gpu();
    const struct rt_shape big = {3000, 1800, 3001, 3008, 3003}; /* 43 MB: 6 segments */
    const struct rt_shape small = {500, 700, 509, 512, 501};    /* 2.8 MB: one segment */
    size_t bb = (size_t)(big.ldd * big.cols) * 8, sb = (size_t)(small.ldd * small.cols) * 8;
    struct gpu g;
    gpu_open_staging(&g, "1", 4, 0, bb + 3 * sb + ((size_t)1 << 20));
    double *X1 = host_mat(TESS_D, big.ldx, big.cols, true, 0);
    double *X2 = host_mat(TESS_D, big.ldx, big.cols, true, 0);
    double *Y1 = host_mat(TESS_D, big.ldy, big.cols, false, rt_sentinel);
    double *Y2 = host_mat(TESS_D, big.ldy, big.cols, false, rt_sentinel);
    double *Y3 = host_mat(TESS_D, big.ldy, big.cols, false, rt_sentinel);
    void *Db = gpu_alloc(&g, bb);
    tess__event *e1 = ev_new(g.bd), *e2 = ev_new(g.bd), *e3 = ev_new(g.bd), *es[3];

    /* one copy at a time: the page is free for each, 6 segments through 1 page */
    struct tess__cuda_staging s0 = stage_now();
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__H2D, Db, (size_t)big.ldd * 8, X1, (size_t)big.ldx * 8,
                          (size_t)big.rows * 8, (size_t)big.cols, NULL));
    ASSERT_OK(ops->event_record(g.bd, 0, e1));
    ev_sync(g.bd, e1);
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__D2H, Y1, (size_t)big.ldy * 8, Db, (size_t)big.ldd * 8,
                          (size_t)big.rows * 8, (size_t)big.cols, NULL));
    ASSERT_OK(ops->event_record(g.bd, 0, e1));
    ev_poll(g.bd, e1);
    rt_check(&big, X1, Y1);
    struct tess__cuda_staging s1 = stage_now();
    ASSERT_EQ(s1.ring_copies - s0.ring_copies, 2);
    ASSERT_EQ(s1.direct_copies - s0.direct_copies, 0);

    /* a burst: the page is taken; each copy waits for the one before to release it */
    double *SX[3], *SY[3];
    void *SD[3];
    rt_issue(&g, 0, &big, X2, Y2, Db, e2);
    for (int i = 0; i < 3; i++) {
        SX[i] = host_mat(TESS_D, small.ldx, small.cols, true, 0);
        SY[i] = host_mat(TESS_D, small.ldy, small.cols, false, rt_sentinel);
        SD[i] = gpu_alloc(&g, sb);
        es[i] = ev_new(g.bd);
        rt_issue(&g, 1 + i, &small, SX[i], SY[i], SD[i], es[i]);
    }
    rt_issue(&g, 0, &big, X1, Y3, Db, e3);
    ev_poll(g.bd, e2);
    rt_check(&big, X2, Y2);
    ev_poll(g.bd, e3);
    rt_check(&big, X1, Y3);
    for (int i = 0; i < 3; i++) {
        ev_poll(g.bd, es[i]);
        rt_check(&small, SX[i], SY[i]);
    }
    struct tess__cuda_staging s2 = stage_now();
    fprintf(stderr,
            "  one page, burst: %llu H2D + %llu D2H staged, %llu with fewer pages, "
            "%llu direct, %llu waits for the page\n",
            (unsigned long long)(s2.h2d_copies - s1.h2d_copies),
            (unsigned long long)(s2.d2h_copies - s1.d2h_copies),
            (unsigned long long)(s2.ring_copies - s1.ring_copies),
            (unsigned long long)(s2.direct_copies - s1.direct_copies),
            (unsigned long long)(s2.page_waits - s1.page_waits));
    ASSERT_EQ(s2.direct_copies - s1.direct_copies, 0);
    ASSERT_GT(s2.page_waits - s1.page_waits, 0);
    ASSERT_EQ((s2.h2d_copies - s1.h2d_copies) + (s2.d2h_copies - s1.d2h_copies), 10);
    for (int i = 0; i < 3; i++) {
        ops->event_destroy(g.bd, es[i]);
        free(SX[i]);
        free(SY[i]);
    }
    ops->event_destroy(g.bd, e1);
    ops->event_destroy(g.bd, e2);
    ops->event_destroy(g.bd, e3);
    ops->close(g.bd);
    free(X1), free(X2), free(Y1), free(Y2), free(Y3);
}

/* TESSERA_STAGING=0 copies pageable memory directly (nothing staged); with staging on,
 * pinned host memory (cudaMallocHost) is not staged either. Both still copy right. */
TEST(cuda_staging_off_and_pinned) {
    need_gpu();
    const struct rt_shape s = {1200, 1100, 1201, 1216, 1203};
    size_t db = (size_t)(s.ldd * s.cols) * 8;
    double *X = host_mat(TESS_D, s.ldx, s.cols, true, 0);
    double *Y = host_mat(TESS_D, s.ldy, s.cols, false, rt_sentinel);
    struct gpu g;
    gpu_open_staging(&g, "0", 2, 0, db + ((size_t)1 << 20));
    void *D = gpu_alloc(&g, db);
    tess__event *e = ev_new(g.bd);
    struct tess__cuda_staging s0 = stage_now();
    rt_issue(&g, 1, &s, X, Y, D, e);
    ev_sync(g.bd, e);
    rt_check(&s, X, Y);
    struct tess__cuda_staging s1 = stage_now();
    ASSERT_EQ(s1.h2d_copies + s1.d2h_copies + s1.direct_copies,
              s0.h2d_copies + s0.d2h_copies + s0.direct_copies);
    ops->event_destroy(g.bd, e);
    ops->close(g.bd);

    double *PX = NULL, *PY = NULL;
    size_t xb = (size_t)(s.ldx * s.cols) * 8, yb = (size_t)(s.ldy * s.cols) * 8;
    ASSERT_EQ(cudaMallocHost((void **)&PX, xb), cudaSuccess);
    ASSERT_EQ(cudaMallocHost((void **)&PY, yb), cudaSuccess);
    memcpy(PX, X, xb);
    for (size_t k = 0; k < yb / 8; k++) PY[k] = rt_sentinel;
    gpu_open_staging(&g, NULL, 2, 0, db + ((size_t)1 << 20));
    D = gpu_alloc(&g, db);
    e = ev_new(g.bd);
    s0 = stage_now();
    rt_issue(&g, 0, &s, PX, PY, D, e);
    ev_sync(g.bd, e);
    rt_check(&s, PX, PY);
    s1 = stage_now();
    ASSERT_EQ(s1.h2d_copies + s1.d2h_copies + s1.direct_copies,
              s0.h2d_copies + s0.d2h_copies + s0.direct_copies);
    ops->event_destroy(g.bd, e);
    ops->close(g.bd);
    cudaFreeHost(PX);
    cudaFreeHost(PY);
    free(X);
    free(Y);
}

/* Injected faults with staged copies: fault_at = 3 lets a staged H2D and a staged D2H run
 * (their result is right), the third copy fails, later hooks answer TESS_EDEVICE and close
 * returns promptly. fault_at = 2 fails right behind a large staged copy whose pieces may
 * still be running: close waits for them, and the process stays clean. */
TEST(cuda_staging_fault) {
    need_gpu();
    const struct rt_shape s = {2000, 2500, 2003, 2000, 2001}; /* 40 MB: 5 segments */
    size_t db = (size_t)(s.ldd * s.cols) * 8;
    double *X = host_mat(TESS_D, s.ldx, s.cols, true, 0);
    double *Y = host_mat(TESS_D, s.ldy, s.cols, false, rt_sentinel);
    struct gpu g;
    gpu_open_staging(&g, NULL, 2, 3, db + ((size_t)1 << 20));
    void *D = gpu_alloc(&g, db);
    tess__event *e = ev_new(g.bd);
    rt_issue(&g, 0, &s, X, Y, D, e); /* ops 1 and 2 */
    ev_sync(g.bd, e);
    rt_check(&s, X, Y);
    int rc = ops->copy2d(g.bd, 1, TESS__H2D, D, (size_t)s.ldd * 8, X, (size_t)s.ldx * 8,
                         (size_t)s.rows * 8, (size_t)s.cols, NULL); /* op 3: fails */
    ASSERT_EQ(rc, TESS_EDEVICE);
    ASSERT_EQ(ops->copy2d(g.bd, 0, TESS__D2H, Y, (size_t)s.ldy * 8, D, (size_t)s.ldd * 8,
                          (size_t)s.rows * 8, (size_t)s.cols, NULL),
              TESS_EDEVICE);
    ASSERT_EQ(ops->event_query(g.bd, e), TESS_EDEVICE);
    double t0 = tess__now();
    ops->event_destroy(g.bd, e);
    ops->close(g.bd);
    ASSERT(tess__now() - t0 < 10.0);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);

    gpu_open_staging(&g, NULL, 2, 2, db + ((size_t)1 << 20));
    D = gpu_alloc(&g, db);
    ASSERT_OK(ops->copy2d(g.bd, 0, TESS__H2D, D, (size_t)s.ldd * 8, X, (size_t)s.ldx * 8,
                          (size_t)s.rows * 8, (size_t)s.cols, NULL)); /* op 1, staged */
    ASSERT_EQ(ops->copy2d(g.bd, 1, TESS__D2H, Y, (size_t)s.ldy * 8, D, (size_t)s.ldd * 8,
                          (size_t)s.rows * 8, (size_t)s.cols, NULL),
              TESS_EDEVICE); /* op 2 */
    t0 = tess__now();
    ops->close(g.bd);
    ASSERT(tess__now() - t0 < 10.0);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    free(X);
    free(Y);
}

/* Set (value) or unset (NULL) an environment variable. */
static void env(const char *name, const char *value) {
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

/* One GEMM through the runtime on malloc'd (pageable) operands: odd sizes, padded leading
 * dimensions, 4 streams per GPU, every GPU, tiles of 384 (staged copies of ~1.2 MB, C loaded
 * and written back); compared with OpenBLAS entry by entry. Returns the staged bytes. */
static uint64_t runtime_gemm(tess_dtype_t dt, char ta, char tb, int64_t m, int64_t n, int64_t k,
                             const char *staging) {
    size_t es = tess__dtypes[dt].size, nc = ncomp(dt);
    int64_t ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m;
    int64_t br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
    int64_t lda = ar + 3, ldb = br + 5, ldc = m + 2;
    void *A = host_mat(dt, lda, ac, true, 0), *B = host_mat(dt, ldb, bc, true, 0);
    void *C = host_mat(dt, ldc, n, true, 0);
    void *Cref = malloc((size_t)(ldc * n) * es + 16);
    ASSERT(Cref);
    memcpy(Cref, C, (size_t)(ldc * n) * es);
    tess__scalar_t alpha, beta;
    memset(&alpha, 0, sizeof alpha);
    memset(&beta, 0, sizeof beta);
    set_comp(dt, &alpha, 0, 0.625);
    set_comp(dt, &beta, 0, -0.5);
    if (nc == 2) set_comp(dt, &alpha, 1, 0.25), set_comp(dt, &beta, 1, 0.125);
    ASSERT_OK(tess__hostblas_load());
    tess__host_gemm(dt, ta, tb, m, n, k, &alpha, A, lda, B, ldb, &beta, Cref, ldc);

    env("TESSERA_STAGING", staging);
    env("TESSERA_DEVICES", "all");
    env("TESSERA_CPU_WORKER", "0");
    env("TESSERA_EMULATE", "0");
    env("TESSERA_STREAMS", "4");
    env("TESSERA_TILE", "384");
    struct tess__cuda_staging s0 = stage_now();
    ASSERT_OK(tess_init());
    tess_trans_t TA = ta == 'N' ? TESS_NO_TRANS : ta == 'T' ? TESS_TRANS : TESS_CONJ_TRANS;
    tess_trans_t TB = tb == 'N' ? TESS_NO_TRANS : tb == 'T' ? TESS_TRANS : TESS_CONJ_TRANS;
    double t0 = tess__now();
    int rc = tess_gemm(dt, TESS_COL_MAJOR, TA, TB, m, n, k, &alpha, A, lda, B, ldb, &beta, C, ldc);
    double t1 = tess__now();
    ASSERT_MSG(rc == TESS_OK, "tess_gemm: %d %s", rc, tess_last_error());
    ASSERT_OK(tess_finalize());
    struct tess__cuda_staging s1 = stage_now();
    env("TESSERA_STAGING", NULL);
    env("TESSERA_TILE", NULL);
    env("TESSERA_STREAMS", NULL);

    double eps = dt == TESS_S || dt == TESS_C ? 1.2e-7 : 2.3e-16;
    double tol = 8.0 * (double)(k + 2) * eps;
    for (int64_t j = 0; j < n; j++)
        for (int64_t i = 0; i < ldc; i++)
            for (size_t c = 0; c < nc; c++) {
                size_t idx = (size_t)(j * ldc + i) * nc + c;
                double got = comp(dt, C, idx), want = comp(dt, Cref, idx);
                double err = i < m ? fabs(got - want) / fmax(1.0, fabs(want)) : fabs(got - want);
                ASSERT_MSG(err <= (i < m ? tol : 0.0),
                           "%sgemm %c%c %lldx%lldx%lld staging=%s: C(%lld,%lld)[%zu] = %g, want %g",
                           tess__dtypes[dt].name, ta, tb, (long long)m, (long long)n, (long long)k,
                           staging ? staging : "default", (long long)i, (long long)j, c, got, want);
            }
    uint64_t staged = (s1.h2d_bytes - s0.h2d_bytes) + (s1.d2h_bytes - s0.d2h_bytes);
    fprintf(stderr,
            "  %sgemm %c%c %lldx%lldx%lld staging=%s: %.2f s, staged %.1f MB "
            "(%llu copies, %llu with fewer pages), %llu direct, %llu waits for pages\n",
            tess__dtypes[dt].name, ta, tb, (long long)m, (long long)n, (long long)k,
            staging ? staging : "default", t1 - t0, 1e-6 * (double)staged,
            (unsigned long long)((s1.h2d_copies - s0.h2d_copies) + (s1.d2h_copies - s0.d2h_copies)),
            (unsigned long long)(s1.ring_copies - s0.ring_copies),
            (unsigned long long)(s1.direct_copies - s0.direct_copies),
            (unsigned long long)(s1.page_waits - s0.page_waits));
    free(A);
    free(B);
    free(C);
    free(Cref);
    return staged;
}

/* GEMMs through the runtime on pageable operands: with the default pool (staged bytes
 * must show), with a one-page pool (ring copies, copies waiting for the page), with staging off;
 * results equal OpenBLAS's in every case. */
TEST(cuda_staging_gemm_runtime) {
    need_gpu();
    ASSERT_GT(runtime_gemm(TESS_D, 'N', 'N', 1531, 1283, 1097, NULL), 0);
    ASSERT_GT(runtime_gemm(TESS_D, 'T', 'N', 997, 1409, 771, NULL), 0);
    ASSERT_GT(runtime_gemm(TESS_Z, 'N', 'C', 803, 611, 517, NULL), 0);
    ASSERT_GT(runtime_gemm(TESS_S, 'N', 'T', 1200, 901, 1500, NULL), 0);
    ASSERT_GT(runtime_gemm(TESS_D, 'N', 'N', 1531, 1283, 1097, "1"), 0);
    ASSERT_GT(runtime_gemm(TESS_C, 'C', 'N', 700, 650, 900, "1"), 0);
    ASSERT_EQ(runtime_gemm(TESS_D, 'N', 'N', 1031, 983, 1097, "0"), 0);
}

/* An injected fault on GPU 0 in the middle of a staged GEMM (beta = 0, the CPU worker on
 * as a spare): the call returns, and either TESS_OK with the right C or an error, never a
 * wrong C with TESS_OK; tess_finalize does not hang. */
TEST(cuda_staging_runtime_fault) {
    need_gpu();
    const int64_t m = 1200, n = 1100, k = 900;
    double *A = host_mat(TESS_D, m, k, true, 0), *B = host_mat(TESS_D, k, n, true, 0);
    double *C = host_mat(TESS_D, m, n, false, 0), *R = host_mat(TESS_D, m, n, false, 0);
    double one = 1.0, zero = 0.0;
    ASSERT_OK(tess__hostblas_load());
    tess__host_gemm(TESS_D, 'N', 'N', m, n, k, &one, A, m, B, k, &zero, R, m);
    env("TESSERA_DEVICES", "all");
    env("TESSERA_CPU_WORKER", "1");
    env("TESSERA_EMULATE", "0");
    env("TESSERA_TILE", "256");
    env("TESSERA_FAULT", "0:23");
    ASSERT_OK(tess_init());
    int rc = tess_dgemm(TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, m, n, k, 1.0, A, m, B, k, 0.0,
                        C, m);
    char why[512];
    snprintf(why, sizeof why, "%s", rc ? tess_last_error() : "");
    double t0 = tess__now();
    ASSERT_OK(tess_finalize());
    ASSERT(tess__now() - t0 < 30.0);
    env("TESSERA_FAULT", NULL);
    env("TESSERA_TILE", NULL);
    env("TESSERA_CPU_WORKER", NULL);
    fprintf(stderr, "  fault at op 23 of GPU 0: %s%s%s\n", tess_strerror(rc), rc ? ": " : "", why);
    if (rc == TESS_OK) {
        double worst = 0;
        for (int64_t i = 0; i < m * n; i++)
            worst = fmax(worst, fabs(C[i] - R[i]) / fmax(1.0, fabs(R[i])));
        ASSERT_MSG(worst <= 8.0 * (double)(k + 2) * 2.3e-16, "TESS_OK with a wrong C (%g)", worst);
    }
    free(A), free(B), free(C), free(R);
}

TEST_MAIN()
