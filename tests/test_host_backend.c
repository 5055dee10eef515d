/* tests/test_host_backend.c: the host backend (src/backend/host.c): emulated devices with
 * separate arenas, stream threads, events, throttles and injected faults, and the CPU worker;
 * its LAPACK tile kernels (POTRF, GETRF, LASWP) against the CPU library's own routines.
 * Timings use throttled ops of 100-300 ms. Lower bounds on time are always safe; where a
 * claim needs an upper bound or an ordering, the test retries or only reaches a verdict when
 * the run was conclusive, so a loaded machine can hide a bug but never fail a good backend.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "harness.h"
#include "hostblas.h" /* LAPACK's xPOTRF, xGETRF, xLASWP: the references */

#define MIB ((size_t)1 << 20)

static const struct tess__dev_ops *emu = &tess__emu_ops, *cpu = &tess__cpu_ops;

static struct tess__dev_params prm(int ordinal, int nstreams) {
    struct tess__dev_params p;
    memset(&p, 0, sizeof p);
    p.ordinal = ordinal;
    p.nstreams = nstreams;
    p.mem_cap = 8 * MIB;
    return p;
}

/* One opened emulated device and its arena. */
struct edev {
    void *bd;
    unsigned char *base;
    size_t size;
    struct tess__dev_desc desc;
};

static void edev_open(struct edev *e, struct tess__dev_params p) {
    ASSERT_OK(emu->open(&p, &e->bd, &e->desc));
    void *b = NULL;
    ASSERT_OK(emu->arena(e->bd, 0, &b, &e->size));
    e->base = b;
}

/* Record a fresh event on `stream`, wait for it, return the status of event_sync. */
static int drain(const struct tess__dev_ops *ops, void *bd, int stream) {
    tess__event *ev;
    int rc = ops->event_create(bd, &ev);
    if (rc) return rc;
    rc = ops->event_record(bd, stream, ev);
    if (!rc) rc = ops->event_sync(bd, ev);
    ops->event_destroy(bd, ev);
    return rc;
}

/* Poll event_query until it stops answering EAGAIN or `secs` pass; returns the last answer. */
static int query_until(const struct tess__dev_ops *ops, void *bd, tess__event *ev, double secs) {
    double t0 = tess__now();
    int rc;
    while ((rc = ops->event_query(bd, ev)) == TESS_EAGAIN && tess__now() - t0 < secs) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return rc;
}

static void fill_d(double *x, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = (double)((seed >> 8) % 2001) / 1000.0 - 1.0;
    }
}

static double max_rel_diff(const double *a, const double *b, size_t n) {
    double worst = 0, scale = 1e-300;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(b[i]));
    for (size_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]);
        if (!(d <= worst)) worst = d; /* NaN propagates as a failure */
    }
    return worst / scale;
}

/* count() follows cfg->emulate, open describes the device, its one arena starts as 0xFF
 * bytes and cannot be taken twice, and two emulated devices can peer. */
/* Every layer of a CUDA build sees TESS_HAVE_CUDA: tess_malloc_host (src/base) pins host
 * memory exactly when the library was built with CUDA (once, base lacked it and "pinned"
 * operands and the transport's buffers were pageable on the GPUs). */
TEST(hostmem_pins_in_a_cuda_build) {
    bool cuda = strstr(tess_build_config(), "cuda=ON") != NULL;
    ASSERT_MSG(tess__hostmem_pins() == cuda, "build %s, but hostmem.c %s CUDA", tess_build_config(),
               tess__hostmem_pins() ? "has" : "lacks");
}

TEST(emu_open_desc_arena) {
    struct tess__config cfg;
    memset(&cfg, 0, sizeof cfg);
    ASSERT_EQ(emu->count(&cfg), 0);
    cfg.emulate = 3;
    ASSERT_EQ(emu->count(&cfg), 3);
    struct edev a, b;
    edev_open(&a, prm(0, 2));
    edev_open(&b, prm(1, 1));
    ASSERT(strcmp(a.desc.name, "emulated:0") == 0);
    ASSERT(strcmp(b.desc.name, "emulated:1") == 0);
    ASSERT_EQ(a.desc.kind, TESS_DEV_EMULATED);
    ASSERT_EQ(a.desc.caps, TESS__CAP_P2P);
    ASSERT_EQ(a.size, 8 * MIB);
    ASSERT_EQ(a.desc.mem_total, 8 * MIB);
    for (size_t i = 0; i < a.size; i += 4093) ASSERT_EQ(a.base[i], 0xFF);
    ASSERT_EQ(a.base[a.size - 1], 0xFF);
    void *p;
    size_t got;
    ASSERT_EQ(emu->arena(a.bd, 0, &p, &got), TESS_EINVAL);
    ASSERT_EQ(emu->can_peer(a.bd, b.bd), 1);
    ASSERT_EQ(emu->can_peer(a.bd, a.bd), 0);
    emu->close(a.bd);
    emu->close(b.bd);
}

/* Resident bytes of this process (/proc/self/statm), 0 where unreadable. */
static size_t resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

/* Opening an arena costs nothing per byte (tess_init with three default 256 MiB arenas took
 * most of a second filling them): a 1 GiB arena adds under 80 MiB of resident memory,
 * still reads as 0xFF everywhere, keeps what is written and becomes resident only where
 * written. */
TEST(emu_arena_opens_lazily) {
    struct tess__dev_params p = prm(0, 1);
    p.mem_cap = 1024 * MIB;
    size_t r0 = resident_bytes();
    if (!r0) SKIP("no /proc/self/statm");
    struct edev a;
    edev_open(&a, p);
    ASSERT_EQ(a.size, 1024 * MIB);
    size_t r1 = resident_bytes();
    ASSERT_MSG(r1 < r0 + 80 * MIB, "opening a 1 GiB arena made %zu MiB resident", (r1 - r0) >> 20);
    unsigned char *b = a.base;
    b[0] = 1;
    b[a.size / 2] = 2;
    memset(b + 100 * MIB, 0x3C, 3 * MIB);
    for (size_t i = 1; i < a.size; i += 1048573)
        if (i != a.size / 2 && !(i >= 100 * MIB && i < 103 * MIB)) ASSERT_EQ(b[i], 0xFF);
    ASSERT_EQ(b[a.size - 1], 0xFF);
    ASSERT_EQ(b[0], 1);
    ASSERT_EQ(b[a.size / 2], 2);
    ASSERT_EQ(b[100 * MIB + 12345], 0x3C);
    ASSERT_EQ(b[103 * MIB], 0xFF);
    ASSERT_MSG(resident_bytes() < r0 + 100 * MIB, "reading the arena made it resident");
    emu->close(a.bd);
}

/* A strided 2D block goes host -> dev0 (H2D) -> dev0 (D2D) -> dev1 (P2P) -> host (D2H),
 * across streams and devices ordered by events, and comes back exact with its surroundings
 * untouched. */
TEST(copy_round_trip_two_devices) {
    struct tess__dev_params p0 = prm(0, 2), p1 = prm(1, 2);
    p0.jitter_us = p1.jitter_us = 300;
    struct edev a, b;
    edev_open(&a, p0);
    edev_open(&b, p1);
    enum { LD = 41, COLS = 29, R0 = 5, C0 = 3, ROWS = 20, NC = 17, LDOUT = 50 };
    double *host = malloc(sizeof(double) * LD * COLS), *out = malloc(sizeof(double) * LDOUT * NC);
    fill_d(host, (size_t)LD * COLS, 7);
    for (int i = 0; i < LDOUT * NC; i++) out[i] = -99.0;
    size_t w = ROWS * sizeof(double);
    double *d0 = (double *)a.base + 1000, *d0b = (double *)a.base + 9000;
    double *d1 = (double *)b.base + 333;
    tess__event *e0, *e1;
    ASSERT_OK(emu->event_create(a.bd, &e0));
    ASSERT_OK(emu->event_create(b.bd, &e1));
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, d0, 24 * sizeof(double), host + R0 + C0 * LD,
                          LD * sizeof(double), w, NC, NULL));
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__D2D, d0b, w, d0, 24 * sizeof(double), w, NC, NULL));
    ASSERT_OK(emu->event_record(a.bd, 0, e0));
    ASSERT_OK(emu->stream_wait(b.bd, 1, e0));
    ASSERT_OK(emu->copy2d(b.bd, 1, TESS__P2P, d1, 32 * sizeof(double), d0b, w, w, NC, a.bd));
    ASSERT_OK(emu->copy2d(b.bd, 1, TESS__D2H, out + 2, LDOUT * sizeof(double), d1,
                          32 * sizeof(double), w, NC, NULL));
    ASSERT_OK(emu->event_record(b.bd, 1, e1));
    ASSERT_OK(emu->event_sync(b.bd, e1));
    for (int j = 0; j < NC; j++)
        for (int i = 0; i < LDOUT; i++) {
            double want = i >= 2 && i < 2 + ROWS ? host[R0 + i - 2 + (C0 + j) * LD] : -99.0;
            ASSERT_MSG(out[i + j * LDOUT] == want, "out(%d,%d) = %g, want %g", i, j,
                       out[i + j * LDOUT], want);
        }
    emu->event_destroy(a.bd, e0);
    emu->event_destroy(b.bd, e1);
    emu->close(a.bd);
    emu->close(b.bd);
    free(host);
    free(out);
}

/* gemm on device memory (s, d, c, z, transposes, complex scalars) equals tess__host_gemm
 * on host copies of the operands, and beta = 0 ignores the NaN fill left in C. */
TEST(gemm_on_device_matches_host) {
    struct edev a;
    edev_open(&a, prm(0, 1));
    enum { M = 37, N = 23, K = 19 };
    const struct {
        tess_dtype_t dt;
        char ta, tb;
        int beta_zero;
    } cases[] = {
        {TESS_D, 'N', 'N', 0}, {TESS_D, 'T', 'N', 1}, {TESS_Z, 'C', 'T', 0},
        {TESS_Z, 'N', 'C', 1}, {TESS_S, 'N', 'T', 0}, {TESS_C, 'T', 'C', 0},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        tess_dtype_t dt = cases[c].dt;
        size_t es = tess__dtypes[dt].size;
        int64_t ar = cases[c].ta == 'N' ? M : K, ac = cases[c].ta == 'N' ? K : M;
        int64_t br = cases[c].tb == 'N' ? K : N, bc = cases[c].tb == 'N' ? N : K;
        int64_t lda = ar + 3, ldb = br + 1, ldc = M + 2;
        size_t na = (size_t)(lda * ac), nb = (size_t)(ldb * bc), nc = (size_t)(ldc * N);
        /* operands as doubles regardless of dt: only bytes matter until compared */
        size_t words = (na + nb + nc) * es / sizeof(double) + 1;
        double *h = malloc(words * sizeof(double)), *ref = malloc(nc * es), *got = malloc(nc * es);
        unsigned char *hA = (unsigned char *)h, *hB = hA + na * es, *hC = hB + nb * es;
        if (dt == TESS_S || dt == TESS_C) {
            float *f = (float *)h;
            for (size_t i = 0; i < (na + nb + nc) * es / sizeof(float); i++)
                f[i] = (float)((int)((i * 7919) % 2001) - 1000) / 1000.0f;
        } else {
            fill_d(h, (na + nb + nc) * es / sizeof(double), (unsigned)c + 1);
        }
        tess__scalar_t alpha, beta;
        memset(&alpha, 0, sizeof alpha);
        memset(&beta, 0, sizeof beta);
        switch (dt) {
        case TESS_S:
            alpha.s = 1.5f;
            beta.s = -0.5f;
            break;
        case TESS_D:
            alpha.d = 1.5;
            beta.d = -0.5;
            break;
        case TESS_C:
            alpha.c[0] = 0.5f, alpha.c[1] = -1.25f, beta.c[0] = 0.75f, beta.c[1] = 0.5f;
            break;
        case TESS_Z: alpha.z[0] = 0.5, alpha.z[1] = -1.25, beta.z[0] = 0.75, beta.z[1] = 0.5; break;
        }
        if (cases[c].beta_zero) memset(&beta, 0, sizeof beta);
        unsigned char *dA = a.base + 4096, *dB = dA + na * es + 512, *dC = dB + nb * es + 512;
        /* arena bytes are 0xFF (NaN) until written: reset the C area for this case */
        memset(dC, 0xFF, nc * es);
        ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, dA, 0, hA, 0, na * es, 1, NULL));
        ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, dB, 0, hB, 0, nb * es, 1, NULL));
        if (!cases[c].beta_zero)
            ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, dC, 0, hC, 0, nc * es, 1, NULL));
        ASSERT_OK(emu->gemm(a.bd, 0, dt, cases[c].ta, cases[c].tb, M, N, K, &alpha, dA, lda, dB,
                            ldb, &beta, dC, ldc));
        ASSERT_OK(emu->copy2d(a.bd, 0, TESS__D2H, got, 0, dC, 0, nc * es, 1, NULL));
        ASSERT_OK(drain(emu, a.bd, 0));
        memcpy(ref, hC, nc * es);
        if (cases[c].beta_zero) memset(ref, 0xFF, nc * es); /* NaN: must not be read */
        tess__host_gemm(dt, cases[c].ta, cases[c].tb, M, N, K, &alpha, hA, lda, hB, ldb, &beta, ref,
                        ldc);
        /* compare the m rows of every column, as reals */
        for (int64_t j = 0; j < N; j++) {
            size_t off = (size_t)(j * ldc) * es, len = (size_t)M * es;
            if (dt == TESS_S || dt == TESS_C) {
                const float *x = (const float *)((unsigned char *)got + off),
                            *y = (const float *)((unsigned char *)ref + off);
                for (size_t i = 0; i < len / sizeof(float); i++)
                    ASSERT_MSG(fabsf(x[i] - y[i]) <= 1e-4f * (1 + fabsf(y[i])),
                               "case %zu: C[%zu] col %lld: %g vs %g", c, i, (long long)j, x[i],
                               y[i]);
            } else {
                double r = max_rel_diff((const double *)((unsigned char *)got + off),
                                        (const double *)((unsigned char *)ref + off),
                                        len / sizeof(double));
                ASSERT_MSG(r <= 1e-13, "case %zu col %lld: rel diff %g", c, (long long)j, r);
            }
        }
        free(h);
        free(ref);
        free(got);
    }
    emu->close(a.bd);
}

/* alpha and beta are read when gemm is called: changing the caller's scalars while the
 * gemm still waits behind a slow copy does not change the result. */
TEST(gemm_reads_scalars_at_call) {
    struct tess__dev_params p = prm(0, 1);
    p.link_gbs = 0.01; /* 1 MB: 100 ms */
    struct edev a;
    edev_open(&a, p);
    double *dA = (double *)a.base, *dB = dA + 4, *dC = dB + 4;
    double one[4] = {1, 1, 1, 1}, c = 0, alpha = 2.0, beta = 0.0;
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, dA, 0, one, 0, sizeof one, 1, NULL));
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, dB, 0, one, 0, sizeof one, 1, NULL));
    static unsigned char slow[1000000]; /* keeps the gemm queued while alpha changes */
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, a.base + 4 * MIB, 0, slow, 0, sizeof slow, 1, NULL));
    ASSERT_OK(emu->gemm(a.bd, 0, TESS_D, 'N', 'N', 1, 1, 4, &alpha, dA, 1, dB, 4, &beta, dC, 1));
    alpha = 100.0;
    beta = 1.0;
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__D2H, &c, 0, dC, 0, sizeof c, 1, NULL));
    ASSERT_OK(drain(emu, a.bd, 0));
    ASSERT_MSG(c == 8.0, "C = %g, want 8 (alpha 2 captured at the call, beta 0)", c);
    emu->close(a.bd);
}

/* Ops of one stream run in FIFO order despite jitter, as each D2H reads the value that the
 * H2D just before it wrote to the same device word. */
TEST(stream_is_fifo) {
    struct tess__dev_params p = prm(0, 2);
    p.jitter_us = 200;
    struct edev a;
    edev_open(&a, p);
    enum { N = 60 };
    double src[N], out[N];
    for (int i = 0; i < N; i++) {
        src[i] = i;
        out[i] = -1;
    }
    double *word = (double *)a.base + 17;
    for (int i = 0; i < N; i++) {
        ASSERT_OK(emu->copy2d(a.bd, 1, TESS__H2D, word, 0, &src[i], 0, sizeof(double), 1, NULL));
        ASSERT_OK(emu->copy2d(a.bd, 1, TESS__D2H, &out[i], 0, word, 0, sizeof(double), 1, NULL));
    }
    ASSERT_OK(drain(emu, a.bd, 1));
    for (int i = 0; i < N; i++) ASSERT_MSG(out[i] == i, "out[%d] = %g", i, out[i]);
    emu->close(a.bd);
}

/* Two streams of one device run at once: two 200 ms copies on two streams finish in well
 * under 400 ms (best of three tries, so a loaded machine cannot fake a failure). */
TEST(streams_run_concurrently) {
    struct tess__dev_params p = prm(0, 2);
    p.link_gbs = 0.01; /* 2 MB: 200 ms */
    struct edev a;
    edev_open(&a, p);
    size_t n = 2000000;
    unsigned char *h = calloc(1, n);
    double best = 1e9;
    for (int attempt = 0; attempt < 3 && best >= 0.39; attempt++) {
        double t0 = tess__now();
        ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, a.base, 0, h, 0, n, 1, NULL));
        ASSERT_OK(emu->copy2d(a.bd, 1, TESS__H2D, a.base + 4 * MIB, 0, h, 0, n, 1, NULL));
        ASSERT_OK(drain(emu, a.bd, 0));
        ASSERT_OK(drain(emu, a.bd, 1));
        best = TESS__MIN(best, tess__now() - t0);
    }
    ASSERT_MSG(best >= 0.19 && best < 0.39, "two 200 ms copies on two streams took %.3f s", best);
    emu->close(a.bd);
    free(h);
}

/* A stream waiting on an event recorded on another stream behind a slow copy is held until
 * that copy is done: its own event never completes first, and its D2H sees the copy's bytes. */
TEST(cross_stream_wait) {
    struct tess__dev_params p = prm(0, 3);
    p.link_gbs = 0.01; /* 2 MB: 200 ms */
    p.jitter_us = 100;
    struct edev a;
    edev_open(&a, p);
    size_t n = 2000000;
    unsigned char *h0 = malloc(n), *back = calloc(1, n);
    for (size_t i = 0; i < n; i++) h0[i] = (unsigned char)(i * 31 + 1);
    tess__event *e0, *e2;
    ASSERT_OK(emu->event_create(a.bd, &e0));
    ASSERT_OK(emu->event_create(a.bd, &e2));
    double t0 = tess__now();
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, a.base, 0, h0, 0, n, 1, NULL));
    ASSERT_OK(emu->event_record(a.bd, 0, e0));
    ASSERT_OK(emu->stream_wait(a.bd, 2, e0));
    ASSERT_OK(emu->copy2d(a.bd, 2, TESS__D2H, back, 0, a.base, 0, n, 1, NULL));
    ASSERT_OK(emu->event_record(a.bd, 2, e2));
    /* whatever the load: e2 done implies e0 done (e0 is asked second) */
    int q2 = emu->event_query(a.bd, e2), q0 = emu->event_query(a.bd, e0);
    ASSERT_MSG(!(q2 == TESS_OK && q0 == TESS_EAGAIN), "the waiting stream ran ahead");
    ASSERT_OK(emu->event_sync(a.bd, e2));
    ASSERT_EQ(emu->event_query(a.bd, e0), TESS_OK);
    ASSERT_MSG(tess__now() - t0 >= 0.39, "wait + two 200 ms copies took %.3f s", tess__now() - t0);
    ASSERT(memcmp(back, h0, n) == 0);
    emu->event_destroy(a.bd, e0);
    emu->event_destroy(a.bd, e2);
    emu->close(a.bd);
    free(h0);
    free(back);
}

/* stream_wait holds on to the record current at its call: re-recording the event on an
 * idle stream completes the event but releases no earlier wait (and a never-recorded event
 * counts as complete). */
TEST(wait_captures_generation) {
    struct tess__dev_params p = prm(0, 3);
    p.link_gbs = 0.01; /* 3 MB: 300 ms */
    struct edev a;
    edev_open(&a, p);
    size_t n = 3000000;
    unsigned char *h = calloc(1, n);
    tess__event *ev, *after, *slow, *never;
    ASSERT_OK(emu->event_create(a.bd, &ev));
    ASSERT_OK(emu->event_create(a.bd, &after));
    ASSERT_OK(emu->event_create(a.bd, &slow));
    ASSERT_OK(emu->event_create(a.bd, &never));
    ASSERT_EQ(emu->event_query(a.bd, never), TESS_OK);
    ASSERT_OK(emu->event_sync(a.bd, never));
    ASSERT_OK(emu->stream_wait(a.bd, 1, never));
    int conclusive = 0;
    for (int attempt = 0; attempt < 3 && !conclusive; attempt++) {
        double t0 = tess__now();
        ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, a.base, 0, h, 0, n, 1, NULL));
        ASSERT_OK(emu->event_record(a.bd, 0, slow));
        ASSERT_OK(emu->event_record(a.bd, 0, ev)); /* record g: behind the slow copy */
        ASSERT_OK(emu->stream_wait(a.bd, 1, ev));  /* waits for record g */
        ASSERT_OK(emu->event_record(a.bd, 2, ev)); /* record g+1: reached at once */
        ASSERT_OK(emu->event_record(a.bd, 1, after));
        ASSERT_EQ(query_until(emu, a.bd, ev, 5.0), TESS_OK);
        /* asked in this order, "after" done while "slow" is not means the wait let go early */
        int qa = emu->event_query(a.bd, after), qs = emu->event_query(a.bd, slow);
        ASSERT_MSG(!(qa == TESS_OK && qs == TESS_EAGAIN), "the wait followed the re-record");
        conclusive = qs == TESS_EAGAIN; /* else the machine was too slow to tell */
        ASSERT_OK(emu->event_sync(a.bd, after));
        ASSERT_MSG(tess__now() - t0 >= 0.29, "wait released after %.3f s", tess__now() - t0);
    }
    ASSERT_MSG(conclusive, "3 tries, the slow copy always ended before the re-record was seen");
    emu->event_destroy(a.bd, ev);
    emu->event_destroy(a.bd, after);
    emu->event_destroy(a.bd, slow);
    emu->event_destroy(a.bd, never);
    emu->close(a.bd);
    free(h);
}

/* copy2d and gemm refuse pointers on the wrong side (a host pointer as device memory, an
 * arena pointer as host memory, the own arena as a P2P source, a block running past the
 * arena's end) with TESS_EINVAL, and the device stays usable. */
TEST(bounds_checks) {
    struct edev a, b;
    edev_open(&a, prm(0, 1));
    edev_open(&b, prm(1, 1));
    double host[64] = {0};
    size_t w = 8 * sizeof(double);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__H2D, host, w, host + 8, w, w, 2, NULL), TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__H2D, a.base, w, b.base, w, w, 2, NULL), TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__H2D, a.base, w, a.base + 4096, w, w, 2, NULL),
              TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__D2H, host, w, host + 8, w, w, 2, NULL), TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__D2H, b.base, w, a.base, w, w, 2, NULL), TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__D2D, host, w, a.base, w, w, 2, NULL), TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__D2D, a.base, w, b.base, w, w, 2, NULL), TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__P2P, a.base, w, a.base + 4096, w, w, 2, b.bd),
              TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__P2P, b.base, w, b.base + 4096, w, w, 2, b.bd),
              TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__P2P, a.base, w, b.base, w, w, 2, NULL), TESS_EINVAL);
    /* second row ends 8 bytes past the arena */
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__H2D, a.base + a.size - w - 8, w, host, w, w, 2, NULL),
              TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 0, TESS__H2D, a.base, 4, host, w, w, 2, NULL), TESS_EINVAL);
    ASSERT_EQ(emu->copy2d(a.bd, 5, TESS__H2D, a.base, w, host, w, w, 2, NULL), TESS_EINVAL);
    double one = 1, zero = 0;
    double *d = (double *)a.base;
    ASSERT_EQ(emu->gemm(a.bd, 0, TESS_D, 'N', 'N', 2, 2, 2, &one, d, 2, d, 2, &zero, host, 2),
              TESS_EINVAL);
    ASSERT_EQ(emu->gemm(a.bd, 0, TESS_D, 'N', 'N', 2, 2, 2, &one, host, 2, d, 2, &zero, d + 8, 2),
              TESS_EINVAL);
    ASSERT_EQ(emu->gemm(a.bd, 0, TESS_D, 'N', 'N', 2, 2, 2, &one, d, 1, d, 2, &zero, d + 8, 2),
              TESS_EINVAL);
    ASSERT(strstr(tess_last_error(), "emulated:0") != NULL);
    /* still healthy: an exact-fit copy to the last bytes works */
    for (int i = 0; i < 16; i++) host[i] = i;
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, a.base + a.size - 2 * w, w, host, w, w, 2, NULL));
    ASSERT_OK(
        emu->copy2d(a.bd, 0, TESS__D2H, host + 32, w, a.base + a.size - 2 * w, w, w, 2, NULL));
    ASSERT_OK(drain(emu, a.bd, 0));
    ASSERT(memcmp(host, host + 32, 2 * w) == 0);
    emu->close(a.bd);
    emu->close(b.bd);
}

/* link_gbs makes a 4 MB copy last at least 4 MB / link, and gflops makes a gemm last at
 * least its flops / rate. */
TEST(throttles) {
    struct tess__dev_params p = prm(0, 1);
    p.link_gbs = 0.05;
    p.gflops = 0.005;
    struct edev a;
    edev_open(&a, p);
    size_t n = 4000000; /* 80 ms at 0.05 GB/s */
    unsigned char *h = calloc(1, n);
    double t0 = tess__now();
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, a.base, 0, h, 0, n, 1, NULL));
    ASSERT_OK(drain(emu, a.bd, 0));
    double dt = tess__now() - t0;
    ASSERT_MSG(dt >= 0.08, "copy took %.4f s, want >= 0.08", dt);
    double one = 1, zero = 0;
    double *d = (double *)a.base;
    memset(d, 0, 3 * 64 * 64 * sizeof(double));
    t0 = tess__now(); /* 2 * 64^3 flops = 524288: 105 ms at 5 MFLOP/s */
    ASSERT_OK(emu->gemm(a.bd, 0, TESS_D, 'N', 'N', 64, 64, 64, &one, d, 64, d + 4096, 64, &zero,
                        d + 8192, 64));
    ASSERT_OK(drain(emu, a.bd, 0));
    dt = tess__now() - t0;
    ASSERT_MSG(dt >= 0.104, "gemm took %.4f s, want >= 0.104", dt);
    emu->close(a.bd);
    free(h);
}

/* Two streams' throttled gemms at once: each on its own time by default (together about
 * as long as one), on one engine in turn with shared_engine (together at least twice one,
 * and the device says TESS__CAP_SHARED). Half a second each: at 52 ms a loaded 2-core
 * machine's wake-up delays made the two streams look serial (a CI run under ASan). */
TEST(shared_engine_takes_turns) {
    double el[2];
    for (int shared = 0; shared < 2; shared++) {
        struct tess__dev_params p = prm(0, 2);
        p.gflops = 0.001; /* 2 * 64^3 flops: 524 ms, long against a loaded machine's delays */
        p.shared_engine = shared;
        struct edev a;
        edev_open(&a, p);
        ASSERT_EQ(a.desc.caps, TESS__CAP_P2P | (shared ? TESS__CAP_SHARED : 0));
        double one = 1, zero = 0, *d = (double *)a.base;
        memset(d, 0, 4 * 64 * 64 * sizeof(double));
        double t0 = tess__now();
        for (int s = 0; s < 2; s++)
            ASSERT_OK(emu->gemm(a.bd, s, TESS_D, 'N', 'N', 64, 64, 64, &one, d, 64, d + 4096, 64,
                                &zero, d + (2 + s) * 4096, 64));
        ASSERT_OK(drain(emu, a.bd, 0));
        ASSERT_OK(drain(emu, a.bd, 1));
        el[shared] = tess__now() - t0;
        emu->close(a.bd);
    }
    fprintf(stderr, "  two gemms of 524 ms on two streams: %.3f s apart, %.3f s on one engine\n",
            el[0], el[1]);
    ASSERT_MSG(el[1] >= 1.04, "one engine: %.4f s, want >= 1.04", el[1]);
    ASSERT_MSG(el[0] < 0.9 * el[1], "own streams %.4f s, one engine %.4f s", el[0], el[1]);
}

struct sync_arg {
    void *bd;
    tess__event *ev;
    int rc;
};

static void *sync_thread(void *arg) {
    struct sync_arg *s = arg;
    s->rc = emu->event_sync(s->bd, s->ev);
    return NULL;
}

/* With fault_at = 3 the third copy/gemm does nothing and fails the device: ops queued
 * behind it are dropped, a blocked event_sync and every later call return TESS_EDEVICE
 * naming the device, and another device's stream waiting on its event goes on unharmed. */
TEST(fault_at_fails_device) {
    struct tess__dev_params pa = prm(0, 2), pb = prm(1, 1);
    pa.link_gbs = 0.01; /* 1.5 MB: 150 ms */
    pa.fault_at = 3;
    struct edev a, b;
    edev_open(&a, pa);
    edev_open(&b, pb);
    size_t n = 1500000;
    unsigned char *h = calloc(1, n);
    double src[4] = {1, 2, 3, 4}, out[4] = {-1, -1, -1, -1}, one = 1, zero = 0;
    double *d = (double *)(a.base + 2 * MIB);
    tess__event *ea, *eb;
    ASSERT_OK(emu->event_create(a.bd, &ea));
    ASSERT_OK(emu->event_create(b.bd, &eb));
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, a.base, 0, h, 0, n, 1, NULL));       /* op 1 */
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, d, 0, src, 0, sizeof src, 1, NULL)); /* op 2 */
    ASSERT_OK(emu->gemm(a.bd, 0, TESS_D, 'N', 'N', 2, 2, 2, &one, d, 2, d, 2, &zero, d + 4,
                        2));                                                       /* op 3 */
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__D2H, out, 0, d, 0, sizeof out, 1, NULL)); /* op 4 */
    ASSERT_OK(emu->event_record(a.bd, 0, ea));
    ASSERT_OK(emu->stream_wait(b.bd, 0, ea));
    ASSERT_OK(emu->event_record(b.bd, 0, eb));
    struct sync_arg sa = {a.bd, ea, 12345};
    pthread_t th;
    ASSERT_OK(pthread_create(&th, NULL, sync_thread, &sa));
    pthread_join(th, NULL);
    ASSERT_EQ(sa.rc, TESS_EDEVICE);
    /* the peer's stream is not stuck and its device is healthy */
    ASSERT_EQ(query_until(emu, b.bd, eb, 5.0), TESS_OK);
    ASSERT_OK(drain(emu, b.bd, 0));
    /* op 3 did nothing (C area still 0xFF) and op 4 was discarded */
    unsigned char ff[32];
    memset(ff, 0xFF, sizeof ff);
    ASSERT(memcmp(d + 4, ff, sizeof ff) == 0);
    for (int i = 0; i < 4; i++) ASSERT_EQ(out[i], -1);
    /* sticky: every later call of device a fails */
    ASSERT_EQ(emu->copy2d(a.bd, 1, TESS__H2D, d, 0, src, 0, sizeof src, 1, NULL), TESS_EDEVICE);
    ASSERT(strstr(tess_last_error(), "emulated:0") != NULL);
    ASSERT(strstr(tess_last_error(), "injected fault at op 3 (gemm") != NULL);
    ASSERT_EQ(emu->gemm(a.bd, 1, TESS_D, 'N', 'N', 2, 2, 2, &one, d, 2, d, 2, &zero, d + 4, 2),
              TESS_EDEVICE);
    ASSERT_EQ(emu->event_query(a.bd, ea), TESS_EDEVICE);
    ASSERT_EQ(emu->event_sync(a.bd, ea), TESS_EDEVICE);
    ASSERT_EQ(emu->event_record(a.bd, 1, ea), TESS_EDEVICE);
    ASSERT_EQ(emu->stream_wait(a.bd, 1, eb), TESS_EDEVICE);
    tess__event *x;
    ASSERT_EQ(emu->event_create(a.bd, &x), TESS_EDEVICE);
    /* the failed device's event is an error for anyone; waiting on it is skipped */
    ASSERT_EQ(emu->event_query(b.bd, ea), TESS_EDEVICE);
    ASSERT_OK(emu->stream_wait(b.bd, 0, ea));
    ASSERT_OK(drain(emu, b.bd, 0));
    emu->event_destroy(a.bd, ea);
    emu->event_destroy(b.bd, eb);
    emu->close(a.bd);
    emu->close(b.bd);
    free(h);
}

/* The fault counter spans streams: with fault_at = 2 and one copy on each of two streams,
 * exactly one copy lands and the device fails. */
TEST(fault_counts_across_streams) {
    struct tess__dev_params p = prm(0, 2);
    p.fault_at = 2;
    struct edev a;
    edev_open(&a, p);
    double x = 5, y = 6, o0 = 0, o1 = 0;
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, a.base, 0, &x, 0, sizeof x, 1, NULL));
    ASSERT_OK(emu->copy2d(a.bd, 1, TESS__H2D, a.base + 64, 0, &y, 0, sizeof y, 1, NULL));
    int r0 = drain(emu, a.bd, 0), r1 = drain(emu, a.bd, 1);
    ASSERT(r0 == TESS_EDEVICE || r1 == TESS_EDEVICE);
    memcpy(&o0, a.base, sizeof o0);
    memcpy(&o1, a.base + 64, sizeof o1);
    ASSERT_EQ((o0 == 5) + (o1 == 6), 1);
    emu->close(a.bd);
}

/* TESS_EDEVICE is reported only once a copy already running on another stream of the
 * failing device has finished, so the caller may reuse its buffers at once. */
TEST(fault_published_after_running_ops) {
    size_t n = 3000000;
    unsigned char *h = malloc(n), *back = malloc(n);
    memset(h, 0x3C, n);
    int conclusive = 0;
    for (int attempt = 0; attempt < 3 && !conclusive; attempt++) {
        struct tess__dev_params p = prm(0, 2);
        p.link_gbs = 0.01; /* 3 MB: 300 ms */
        p.fault_at = 2;
        struct edev a;
        edev_open(&a, p);
        memset(a.base, 0x3C, n);
        memset(back, 0, n);
        double x = 1;
        tess__event *e1;
        ASSERT_OK(emu->event_create(a.bd, &e1));
        double t0 = tess__now();
        ASSERT_OK(emu->copy2d(a.bd, 0, TESS__D2H, back, 0, a.base, 0, n, 1, NULL));
        struct timespec ts = {0, 80000000}; /* let the slow copy start: it is op 1 */
        nanosleep(&ts, NULL);
        ASSERT_OK(emu->copy2d(a.bd, 1, TESS__H2D, a.base + 4 * MIB, 0, &x, 0, sizeof x, 1, NULL));
        ASSERT_OK(emu->event_record(a.bd, 1, e1));
        int rc = emu->event_sync(a.bd, e1);
        double dt = tess__now() - t0;
        if (rc == TESS_EDEVICE && memcmp(back, h, n) == 0) {
            /* the slow copy was op 1 and ran; the small copy was op 2 and failed */
            conclusive = 1;
            ASSERT_MSG(dt >= 0.29, "failure reported after %.3f s, while op 1 still ran", dt);
        }
        emu->event_destroy(a.bd, e1);
        emu->close(a.bd);
    }
    ASSERT_MSG(conclusive, "3 tries, the small copy always came first");
    free(h);
    free(back);
}

/* close waits for queued work (a slow copy issued just before lands), even with an event
 * destroyed while its record was still queued. */
TEST(close_drains) {
    struct tess__dev_params p = prm(0, 1);
    p.link_gbs = 0.01; /* 1 MB: 100 ms */
    struct edev a;
    edev_open(&a, p);
    size_t n = 1000000;
    unsigned char *h = malloc(n), *back = calloc(1, n);
    memset(h, 0x5A, n);
    tess__event *ev;
    ASSERT_OK(emu->event_create(a.bd, &ev));
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, a.base, 0, h, 0, n, 1, NULL));
    ASSERT_OK(emu->event_record(a.bd, 0, ev));
    emu->event_destroy(a.bd, ev);
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__D2H, back, 0, a.base, 0, n, 1, NULL));
    emu->close(a.bd);
    ASSERT(memcmp(back, h, n) == 0);
    free(h);
    free(back);
}

/* The CPU worker is one unified device without an arena, whose in-place gemm equals
 * tess__host_gemm and whose copy2d is a plain strided memcpy. */
TEST(cpu_gemm_in_place) {
    struct tess__config cfg;
    memset(&cfg, 0, sizeof cfg);
    ASSERT_EQ(cpu->count(&cfg), 1);
    struct tess__dev_params p = prm(0, 2);
    void *bd;
    struct tess__dev_desc desc;
    ASSERT_OK(cpu->open(&p, &bd, &desc));
    ASSERT_EQ(desc.kind, TESS_DEV_CPU);
    ASSERT_EQ(desc.caps, TESS__CAP_UNIFIED | TESS__CAP_SHARED); /* its kernels share the cores */
    ASSERT(strncmp(desc.name, "cpu (OpenBLAS, ", 15) == 0);
    ASSERT(strstr(desc.name, " cores)") != NULL);
    void *base;
    size_t got;
    ASSERT_EQ(cpu->arena(bd, 0, &base, &got), TESS_ENOSYS);
    ASSERT_EQ(cpu->can_peer(bd, bd), 0);
    enum { M = 50, N = 40, K = 30 };
    double *A = malloc(sizeof(double) * M * K), *B = malloc(sizeof(double) * K * N);
    double *C = malloc(sizeof(double) * M * N), *R = malloc(sizeof(double) * M * N);
    fill_d(A, M * K, 1);
    fill_d(B, K * N, 2);
    fill_d(C, M * N, 3);
    memcpy(R, C, sizeof(double) * M * N);
    double alpha = -0.75, beta = 2.0;
    ASSERT_OK(cpu->gemm(bd, 1, TESS_D, 'N', 'T', M, N, K, &alpha, A, M, B, N, &beta, C, M));
    ASSERT_OK(drain(cpu, bd, 1));
    tess__host_gemm(TESS_D, 'N', 'T', M, N, K, &alpha, A, M, B, N, &beta, R, M);
    ASSERT_MSG(max_rel_diff(C, R, M * N) <= 1e-14, "cpu gemm differs: %g",
               max_rel_diff(C, R, M * N));
    /* strided copy: 3 rows of 16 bytes, pitches 40 and 24 */
    unsigned char s[120], t[72];
    for (int i = 0; i < 120; i++) s[i] = (unsigned char)i;
    memset(t, 0, sizeof t);
    ASSERT_OK(cpu->copy2d(bd, 0, TESS__H2D, t, 24, s, 40, 16, 3, NULL));
    ASSERT_OK(drain(cpu, bd, 0));
    for (int r = 0; r < 3; r++) {
        ASSERT(memcmp(t + 24 * r, s + 40 * r, 16) == 0);
        for (int i = 16; i < 24; i++) ASSERT_EQ(t[24 * r + i], 0);
    }
    cpu->close(bd);
    free(A);
    free(B);
    free(C);
    free(R);
}

/* ---- POTRF ------------------------------------------------------------------------- */

/* What the POTRF, GETRF and LASWP tests share: the CPU worker, a tile kernel run on either
 * worker, the refusals of a bad ldc and of a C outside the arena, the throttle, the fault
 * (and, below, tile_diff: a result tile against LAPACK's). */

/* The CPU worker, opened with one stream. */
static void *cpu_open(void) {
    struct tess__dev_params p = prm(0, 1);
    struct tess__dev_desc desc;
    void *bd;
    ASSERT_OK(cpu->open(&p, &bd, &desc));
    return bd;
}

/* The tile kernel k on stream 1 of the emulated device a: the tile `in` (bytes) copied to
 * a->base + 8192, k run there, the result copied out to got (zeroed first), an event waited
 * for. k's C and info are set here: C the device tile, info `info`, -12345 until written. */
static void emu_tile_run(const struct edev *a, struct tess__kernel *k, const void *in, size_t bytes,
                         void *got, int *info) {
    unsigned char *dC = a->base + 8192;
    memset(got, 0, bytes);
    *info = -12345;
    k->C = dC;
    k->info = info;
    ASSERT_OK(emu->copy2d(a->bd, 1, TESS__H2D, dC, 0, in, 0, bytes, 1, NULL));
    ASSERT_OK(emu->kernel(a->bd, 1, k));
    ASSERT_OK(emu->copy2d(a->bd, 1, TESS__D2H, got, 0, dC, 0, bytes, 1, NULL));
    ASSERT_OK(drain(emu, a->bd, 1));
}

/* The same on the CPU worker cbd: in place on host memory, got a copy of `in` beforehand. */
static void cpu_tile_run(void *cbd, struct tess__kernel *k, const void *in, size_t bytes, void *got,
                         int *info) {
    memcpy(got, in, bytes);
    *info = -12345;
    k->C = got;
    k->info = info;
    ASSERT_OK(cpu->kernel(cbd, 0, k));
    ASSERT_OK(drain(cpu, cbd, 0));
}

/* k, valid on stream 0 of the emulated device a as an order-n tile with ldc = n = k.m, is
 * TESS_EINVAL at the call with ldc = n - 1, and with C outside the arena (a 2 x 2 tile in
 * host memory), the error naming the device. k itself is left as it was. */
static void refuses_ldc_and_host_c(const struct edev *a, struct tess__kernel k) {
    double host[4] = {4, 0, 0, 4};
    k.ldc = k.m - 1;
    ASSERT_EQ(emu->kernel(a->bd, 0, &k), TESS_EINVAL);
    k.ldc = 2;
    k.n = k.m = 2;
    k.C = host;
    ASSERT_EQ(emu->kernel(a->bd, 0, &k), TESS_EINVAL);
    ASSERT(strstr(tess_last_error(), "emulated:0") != NULL);
}

/* Seconds the kernel k takes on stream 0 of the emulated device a, once the tile `in` (bytes)
 * is copied to k->C. */
static double timed_run(const struct edev *a, const struct tess__kernel *k, const void *in,
                        size_t bytes) {
    ASSERT_OK(emu->copy2d(a->bd, 0, TESS__H2D, k->C, 0, in, 0, bytes, 1, NULL));
    ASSERT_OK(drain(emu, a->bd, 0));
    double t0 = tess__now();
    ASSERT_OK(emu->kernel(a->bd, 0, k));
    ASSERT_OK(drain(emu, a->bd, 0));
    return tess__now() - t0;
}

/* The kernel k as the faulting op of a fresh emulated device a (fault_at = 2; op 1 the copy
 * of the tile `in`, bytes, to a->base + 4096, k->C set to it): the device fails, the error
 * naming the kernel, and the tile on the device is still `in`. Leaves a open. */
static void faults_as_op_2(struct edev *a, struct tess__kernel *k, const void *in, size_t bytes) {
    struct tess__dev_params p = prm(0, 1);
    p.fault_at = 2;
    edev_open(a, p);
    k->C = a->base + 4096;
    ASSERT_OK(emu->copy2d(a->bd, 0, TESS__H2D, k->C, 0, in, 0, bytes, 1, NULL));
    ASSERT_OK(emu->kernel(a->bd, 0, k));
    ASSERT_EQ(drain(emu, a->bd, 0), TESS_EDEVICE);
    ASSERT(strstr(tess_last_error(), "injected fault at op 2 (kernel") != NULL);
    ASSERT(memcmp(k->C, in, bytes) == 0);
}

/* Element idx of a tile of precision dt, as (re, im) doubles (im 0 for s, d). */
static void el_put(tess_dtype_t dt, void *t, size_t idx, double re, double im) {
    switch (dt) {
    case TESS_S: ((float *)t)[idx] = (float)re; break;
    case TESS_D: ((double *)t)[idx] = re; break;
    case TESS_C: ((float *)t)[2 * idx] = (float)re, ((float *)t)[2 * idx + 1] = (float)im; break;
    case TESS_Z: ((double *)t)[2 * idx] = re, ((double *)t)[2 * idx + 1] = im; break;
    }
}
static void el_get(tess_dtype_t dt, const void *t, size_t idx, double *re, double *im) {
    *im = 0;
    switch (dt) {
    case TESS_S: *re = ((const float *)t)[idx]; break;
    case TESS_D: *re = ((const double *)t)[idx]; break;
    case TESS_C: *re = ((const float *)t)[2 * idx], *im = ((const float *)t)[2 * idx + 1]; break;
    case TESS_Z: *re = ((const double *)t)[2 * idx], *im = ((const double *)t)[2 * idx + 1]; break;
    }
}

/* Does (i, j) lie in the triangle uplo (diagonal included)? */
static bool in_tri(char uplo, int i, int j) { return uplo == 'L' ? i >= j : i <= j; }

/* A POTRF tile of order n, leading dimension ld, precision dt: its triangle uplo holds the
 * Hermitian positive definite G G^H + n I (G entries in [-1, 1], a real diagonal; bad >= 0:
 * the diagonal entry bad set to -1, so the leading minor of order bad + 1 is the first that
 * is not positive definite), its other strict triangle and the rows n..ld-1 hold values no
 * factorization may touch (nor read: they are not the Hermitian mirror). */
static void potrf_tile(tess_dtype_t dt, char uplo, int n, int ld, int bad, unsigned seed, void *t) {
    double *gr = malloc(sizeof(double) * (size_t)n * n),
           *gi = malloc(sizeof(double) * (size_t)n * n);
    bool cplx = tess__dtypes[dt].complex_;
    fill_d(gr, (size_t)n * n, seed);
    fill_d(gi, (size_t)n * n, seed + 99);
    if (!cplx) memset(gi, 0, sizeof(double) * (size_t)n * n);
    for (int j = 0; j < ld && j < n; j++)
        for (int i = 0; i < ld; i++) {
            size_t idx = (size_t)i + (size_t)j * (size_t)ld;
            if (i >= n || !in_tri(uplo, i, j)) { /* untouchable */
                el_put(dt, t, idx, 1000.0 + i + 0.25 * j, cplx ? -500.0 - j : 0.0);
                continue;
            }
            double re = i == j ? n : 0, im = 0; /* (G G^H)(i, j) = sum_l G(i,l) conj(G(j,l)) */
            for (int l = 0; l < n; l++) {
                double ar = gr[i + l * n], ai = gi[i + l * n], br = gr[j + l * n],
                       bi = gi[j + l * n];
                re += ar * br + ai * bi;
                im += ai * br - ar * bi;
            }
            if (i == j) im = 0, re = j == bad ? -1.0 : re;
            el_put(dt, t, idx, re, im);
        }
    free(gr);
    free(gi);
}

/* got (a kernel's result on the m x n tile `in`, leading dimension ld) against ref (LAPACK's
 * on a copy of in): what the kernel writes, rows 0..m-1 (uplo 'L' or 'U': only that triangle;
 * 0: all), within a relative tol of ref; everything else, rows m..ld-1 included, exactly in's.
 * Returns a message for the first mismatch, naming the parts as `outside` and `inside` say,
 * or NULL. */
static const char *tile_diff(tess_dtype_t dt, char uplo, int m, int n, int ld, const void *in,
                             const void *ref, const void *got, double tol, const char *outside,
                             const char *inside, char *msg, size_t len) {
    double scale = 1e-300, worst = 0;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < ld; i++) {
            size_t idx = (size_t)i + (size_t)j * (size_t)ld;
            double gre, gim, rre, rim, ire, iim;
            el_get(dt, got, idx, &gre, &gim);
            el_get(dt, ref, idx, &rre, &rim);
            el_get(dt, in, idx, &ire, &iim);
            if (i >= m || (uplo && !in_tri(uplo, i, j))) {
                if (gre != ire || gim != iim) {
                    snprintf(msg, len, "(%d,%d) %s changed: %g%+gi, was %g%+gi", i, j, outside, gre,
                             gim, ire, iim);
                    return msg;
                }
                continue;
            }
            scale = fmax(scale, hypot(rre, rim));
            double d = hypot(gre - rre, gim - rim);
            if (!(d <= worst)) worst = d; /* NaN: a failure */
        }
    if (!(worst <= tol * scale)) {
        snprintf(msg, len, "%s from LAPACK's by %g (relative %g > %g)", inside, worst,
                 worst / scale, tol);
        return msg;
    }
    return NULL;
}

/* got (a POTRF result) against ref (LAPACK's potrf on a copy of the input `in`): the
 * triangle uplo within a relative tol of ref, everything else exactly in's; when info is 0,
 * also the factor F of got reproduces the matrix (F F^H or F^H F against in's triangle).
 * Returns a message for the first mismatch or NULL. */
static const char *potrf_compare(tess_dtype_t dt, char uplo, int n, int ld, const void *in,
                                 const void *ref, const void *got, int info, double tol, char *msg,
                                 size_t len) {
    const char *why = tile_diff(dt, uplo, n, n, ld, in, ref, got, tol, "outside the triangle",
                                "triangle differs", msg, len);
    if (why || info != 0) return why;
    /* the factor reproduces the input: A(i,j) = sum_l F'(i,l) conj(F'(j,l)) with F' = L,
     * or U^H (F'(i,l) = conj(U(l,i))) */
    double aw = 0, ascale = 1e-300;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            if (!in_tri(uplo, i, j)) continue;
            double re = 0, im = 0;
            for (int l = 0; l <= (i < j ? i : j); l++) {
                double xr, xi, yr, yi;
                if (uplo == 'L') {
                    el_get(dt, got, (size_t)i + (size_t)l * ld, &xr, &xi);
                    el_get(dt, got, (size_t)j + (size_t)l * ld, &yr, &yi);
                } else {
                    el_get(dt, got, (size_t)l + (size_t)i * ld, &xr, &xi);
                    el_get(dt, got, (size_t)l + (size_t)j * ld, &yr, &yi);
                    xi = -xi, yi = -yi;
                }
                re += xr * yr + xi * yi;
                im += xi * yr - xr * yi;
            }
            double ar, ai;
            el_get(dt, in, (size_t)i + (size_t)j * ld, &ar, &ai);
            if (i == j) ai = 0; /* Hermitian: the diagonal's imaginary part is not read */
            ascale = fmax(ascale, hypot(ar, ai));
            double d = hypot(re - ar, im - ai);
            if (!(d <= aw)) aw = d;
        }
    if (!(aw <= tol * n * ascale)) {
        snprintf(msg, len, "the factor does not reproduce the matrix: residual %g (relative %g)",
                 aw, aw / ascale);
        return msg;
    }
    return NULL;
}

/* POTRF on an emulated device (tile copied in and out, alpha, beta, A, B NULL) and on the
 * CPU worker (in place on host memory) equals LAPACK's potrf on a copy: s, d, c, z, uplo L
 * and U, an order not a power of two, ldc > n; *info 0 and the factor reproduces the matrix;
 * with diagonal entry j = -1, *info is LAPACK's, j + 1; the other strict triangle and the
 * rows below n untouched. */
TEST(potrf_matches_lapack) {
    tess__potrf_fn *fn[4];
    for (int dt = 0; dt < 4; dt++)
        if (tess__hostblas_potrf(dt, "test", &fn[dt]) != TESS_OK)
            SKIP("the CPU BLAS has no LAPACK: %s", tess_last_error());
    struct tess__dev_params p = prm(0, 2);
    p.jitter_us = 200;
    struct edev a;
    edev_open(&a, p);
    void *cbd = cpu_open();
    enum { N = 37, LD = 42, BAD = 22 };
    char msg[256];
    int ncase = 0;
    for (int dt = 0; dt < 4; dt++)
        for (int u = 0; u < 2; u++)
            for (int bad = 0; bad < 2; bad++) {
                char uplo = u ? 'U' : 'L';
                size_t es = tess__dtypes[dt].size, bytes = (size_t)LD * N * es;
                unsigned char *in = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes),
                              *cgot = malloc(bytes);
                potrf_tile((tess_dtype_t)dt, uplo, N, LD, bad ? BAD : -1, 17u + (unsigned)ncase++,
                           in);
                memcpy(ref, in, bytes);
                int rinfo = -7, n = N, ld = LD;
                fn[dt](&uplo, &n, ref, &ld, &rinfo, 1);
                ASSERT_EQ(rinfo, bad ? BAD + 1 : 0); /* the tile is what it should be */
                double tol = dt == TESS_S || dt == TESS_C ? 2e-5 : 1e-12;
                struct tess__kernel k;
                memset(&k, 0, sizeof k);
                k.kind = TESS__K_POTRF;
                k.dt = (tess_dtype_t)dt;
                k.uplo = uplo;
                k.m = k.n = N;
                k.ldc = LD;
                int info;
                emu_tile_run(&a, &k, in, bytes, got, &info);
                ASSERT_MSG(info == rinfo, "emulated %s uplo %c: info %d, LAPACK's %d",
                           tess__dtypes[dt].name, uplo, info, rinfo);
                const char *why = potrf_compare((tess_dtype_t)dt, uplo, N, LD, in, ref, got, rinfo,
                                                tol, msg, sizeof msg);
                ASSERT_MSG(!why, "emulated %s uplo %c info %d: %s", tess__dtypes[dt].name, uplo,
                           rinfo, why);
                cpu_tile_run(cbd, &k, in, bytes, cgot, &info);
                ASSERT_MSG(info == rinfo, "cpu %s uplo %c: info %d, LAPACK's %d",
                           tess__dtypes[dt].name, uplo, info, rinfo);
                why = potrf_compare((tess_dtype_t)dt, uplo, N, LD, in, ref, cgot, rinfo, tol, msg,
                                    sizeof msg);
                ASSERT_MSG(!why, "cpu %s uplo %c info %d: %s", tess__dtypes[dt].name, uplo, rinfo,
                           why);
                free(in);
                free(ref);
                free(got);
                free(cgot);
            }
    cpu->close(cbd);
    emu->close(a.bd);
}

/* POTRF on an emulated device: info may be NULL; a bad uplo, ldc < n or a C outside the
 * arena is TESS_EINVAL at the call (the device stays healthy); gflops makes it last
 * (n^3 / 3 multiply-adds) / rate; and it counts as one op for fault_at: as the faulting op
 * it does nothing (C and *info untouched) and fails the device. */
TEST(potrf_checks_throttle_fault) {
    tess__potrf_fn *fn;
    if (tess__hostblas_potrf(TESS_D, "test", &fn) != TESS_OK)
        SKIP("the CPU BLAS has no LAPACK: %s", tess_last_error());
    enum { N = 64 };
    size_t bytes = sizeof(double) * N * N;
    double *in = malloc(bytes), *got = malloc(bytes);
    potrf_tile(TESS_D, 'L', N, N, -1, 5, in);
    struct tess__dev_params p = prm(0, 1);
    p.gflops = 0.002; /* 2 * 64^3 / 3 flops = 174763: 87 ms */
    struct edev a;
    edev_open(&a, p);
    double *dC = (double *)(a.base + 4096);
    struct tess__kernel k;
    memset(&k, 0, sizeof k);
    k.kind = TESS__K_POTRF;
    k.dt = TESS_D;
    k.uplo = 'X';
    k.m = k.n = N;
    k.C = dC;
    k.ldc = N;
    ASSERT_EQ(emu->kernel(a.bd, 0, &k), TESS_EINVAL);
    k.uplo = 'L';
    refuses_ldc_and_host_c(&a, k);
    double dt = timed_run(&a, &k, in, bytes); /* info NULL: not written */
    ASSERT_MSG(dt >= 0.087, "potrf took %.4f s, want >= 0.087", dt);
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__D2H, got, 0, dC, 0, bytes, 1, NULL));
    ASSERT_OK(drain(emu, a.bd, 0));
    int info = -1, n = N;
    double *ref = malloc(bytes);
    memcpy(ref, in, bytes);
    fn("L", &n, ref, &n, &info, 1);
    char msg[256];
    const char *why = potrf_compare(TESS_D, 'L', N, N, in, ref, got, info, 1e-12, msg, sizeof msg);
    ASSERT_MSG(!why, "%s", why);
    emu->close(a.bd);

    /* fault_at = 2: the copy is op 1, the POTRF op 2 */
    info = -12345;
    k.info = &info;
    faults_as_op_2(&a, &k, in, bytes);
    ASSERT_EQ(info, -12345);
    ASSERT_EQ(emu->kernel(a.bd, 0, &k), TESS_EDEVICE);
    emu->close(a.bd);
    free(in);
    free(got);
    free(ref);
}

/* ---- GETRF and LASWP --------------------------------------------------------------- */

/* A GETRF tile m x n at leading dimension ld: entries (real and imaginary parts) in
 * [-1, 1] in rows 0..m-1 (zero_col >= 0: that column exactly 0), values no kernel may touch
 * in rows m..ld-1. */
static void lu_tile(tess_dtype_t dt, int m, int n, int ld, int zero_col, unsigned seed, void *t) {
    bool cplx = tess__dtypes[dt].complex_;
    size_t cnt = (size_t)ld * n;
    double *re = malloc(sizeof(double) * cnt), *im = malloc(sizeof(double) * cnt);
    fill_d(re, cnt, seed);
    fill_d(im, cnt, seed + 77);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < ld; i++) {
            size_t idx = (size_t)i + (size_t)j * ld;
            if (i >= m)
                el_put(dt, t, idx, 2000.0 + i + 0.5 * j, cplx ? -700.0 - j : 0.0);
            else if (j == zero_col)
                el_put(dt, t, idx, 0.0, 0.0);
            else
                el_put(dt, t, idx, re[idx], cplx ? im[idx] : 0.0);
        }
    free(re);
    free(im);
}

/* LAPACK's xLASWP (k1 = 1, k2 = k, incx = 1) on the n columns of t (ld), through the CPU
 * BLAS's own routine: the reference the kernels are held to. */
static void ref_laswp(tess__laswp_fn *fn, int n, void *t, int ld, int k, const int *ipiv) {
    int k1 = 1, inc = 1;
    fn(&n, t, &ld, &k1, &k, ipiv, &inc);
}

/* got (a GETRF result with pivots gpiv) against ref (LAPACK's getrf on a copy of `in`, its
 * pivots rpiv): the pivots identical, rows 0..m-1 within a relative tol of ref's, rows
 * m..ld-1 exactly in's; and on its own, P L U of got's factors reproduces in (L unit lower
 * trapezoidal m x r, U upper r x n, r = min(m, n); P: gpiv applied to in as LASWP does).
 * Returns a message for the first mismatch or NULL. */
static const char *getrf_compare(tess_dtype_t dt, int m, int n, int ld, const void *in,
                                 const void *ref, const int *rpiv, const void *got, const int *gpiv,
                                 double tol, char *msg, size_t len) {
    int r = m < n ? m : n;
    for (int i = 0; i < r; i++)
        if (gpiv[i] != rpiv[i]) {
            snprintf(msg, len, "ipiv[%d] = %d, LAPACK's %d", i, gpiv[i], rpiv[i]);
            return msg;
        }
    const char *why = tile_diff(dt, 0, m, n, ld, in, ref, got, tol, "below the tile",
                                "factors differ", msg, len);
    if (why) return why;
    /* P L U = in, i.e. L U = in with rows interchanged as gpiv says */
    double *pa = malloc(sizeof(double) * 2 * (size_t)m * n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            el_get(dt, in, (size_t)i + (size_t)j * ld, &pa[2 * ((size_t)i + (size_t)j * m)],
                   &pa[2 * ((size_t)i + (size_t)j * m) + 1]);
    for (int i = 0; i < r; i++) {
        int p = gpiv[i] - 1;
        if (p < 0 || p >= m) {
            free(pa);
            snprintf(msg, len, "ipiv[%d] = %d not in 1..%d", i, gpiv[i], m);
            return msg;
        }
        for (int j = 0; j < n && p != i; j++)
            for (int c = 0; c < 2; c++) {
                double t = pa[2 * ((size_t)i + (size_t)j * m) + c];
                pa[2 * ((size_t)i + (size_t)j * m) + c] = pa[2 * ((size_t)p + (size_t)j * m) + c];
                pa[2 * ((size_t)p + (size_t)j * m) + c] = t;
            }
    }
    double aw = 0, ascale = 1e-300;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double sr = 0, si = 0; /* sum over l <= min(i, j) of L(i,l) U(l,j) */
            for (int l = 0; l <= i && l <= j && l < r; l++) {
                double lr = 1, li = 0, ur, ui;
                if (l < i) el_get(dt, got, (size_t)i + (size_t)l * ld, &lr, &li);
                el_get(dt, got, (size_t)l + (size_t)j * ld, &ur, &ui);
                sr += lr * ur - li * ui;
                si += lr * ui + li * ur;
            }
            double ar = pa[2 * ((size_t)i + (size_t)j * m)],
                   ai = pa[2 * ((size_t)i + (size_t)j * m) + 1];
            ascale = fmax(ascale, hypot(ar, ai));
            double d = hypot(sr - ar, si - ai);
            if (!(d <= aw)) aw = d;
        }
    free(pa);
    if (!(aw <= tol * (m + n) * ascale)) {
        snprintf(msg, len, "P L U does not reproduce the matrix: residual %g (relative %g)", aw,
                 aw / ascale);
        return msg;
    }
    return NULL;
}

/* GETRF on an emulated device (tile copied in and out, alpha, beta, A, B NULL) and on the
 * CPU worker (in place on host memory) equals LAPACK's getrf on a copy: s, d, c, z, m > n,
 * m < n, m = n (sizes of no special form), ldc > m; the pivots identical, the factors to a
 * tight tolerance, P L U reproduces the matrix, rows m..ld-1 and ipiv past min(m, n)
 * untouched; INFO 0, or with column j exactly 0 LAPACK's INFO (j + 1: U(j, j) = 0, the
 * factorization completed). The comparison itself catches a wrong pivot and a wrong
 * factor entry. */
TEST(getrf_matches_lapack) {
    tess__getrf_fn *fn[4];
    for (int dt = 0; dt < 4; dt++)
        if (tess__hostblas_getrf(dt, "test", &fn[dt]) != TESS_OK)
            SKIP("the CPU BLAS has no LAPACK: %s", tess_last_error());
    struct tess__dev_params p = prm(0, 2);
    p.jitter_us = 200;
    struct edev a;
    edev_open(&a, p);
    void *cbd = cpu_open();
    static const int shape[3][2] = {{37, 23}, {23, 37}, {31, 31}};
    enum { PAD = 5, ZERO = 13 };
    char msg[256];
    int ncase = 0;
    for (int dt = 0; dt < 4; dt++)
        for (int sh = 0; sh < 3; sh++)
            for (int bad = 0; bad < 2; bad++) {
                int m = shape[sh][0], n = shape[sh][1], ld = m + PAD, r = m < n ? m : n;
                size_t es = tess__dtypes[dt].size, bytes = (size_t)ld * n * es;
                unsigned char *in = malloc(bytes), *ref = malloc(bytes), *got = malloc(bytes),
                              *cgot = malloc(bytes);
                int rpiv[40], gpiv[42], cpiv[42];
                lu_tile((tess_dtype_t)dt, m, n, ld, bad ? ZERO : -1, 31u + (unsigned)ncase++, in);
                memcpy(ref, in, bytes);
                for (int i = 0; i < 42; i++) gpiv[i] = cpiv[i] = -5;
                int rinfo = -7, mm = m, nn = n, ldd = ld;
                fn[dt](&mm, &nn, ref, &ldd, rpiv, &rinfo);
                ASSERT_EQ(rinfo, bad ? ZERO + 1 : 0); /* the tile is what it should be */
                double tol = dt == TESS_S || dt == TESS_C ? 2e-5 : 1e-12;
                struct tess__kernel k;
                memset(&k, 0, sizeof k);
                k.kind = TESS__K_GETRF;
                k.dt = (tess_dtype_t)dt;
                k.m = m;
                k.n = n;
                k.ldc = ld;
                k.ipiv = gpiv;
                int info;
                emu_tile_run(&a, &k, in, bytes, got, &info);
                const char *what = tess__dtypes[dt].name;
                ASSERT_MSG(info == rinfo, "emulated %s %dx%d: info %d, LAPACK's %d", what, m, n,
                           info, rinfo);
                ASSERT_MSG(gpiv[r] == -5 && gpiv[r + 1] == -5,
                           "emulated %s %dx%d: ipiv written past min(m, n)", what, m, n);
                const char *why = getrf_compare((tess_dtype_t)dt, m, n, ld, in, ref, rpiv, got,
                                                gpiv, tol, msg, sizeof msg);
                ASSERT_MSG(!why, "emulated %s %dx%d info %d: %s", what, m, n, rinfo, why);
                k.ipiv = cpiv;
                cpu_tile_run(cbd, &k, in, bytes, cgot, &info);
                ASSERT_MSG(info == rinfo, "cpu %s %dx%d: info %d, LAPACK's %d", what, m, n, info,
                           rinfo);
                ASSERT_MSG(cpiv[r] == -5, "cpu %s %dx%d: ipiv written past min(m, n)", what, m, n);
                why = getrf_compare((tess_dtype_t)dt, m, n, ld, in, ref, rpiv, cgot, cpiv, tol, msg,
                                    sizeof msg);
                ASSERT_MSG(!why, "cpu %s %dx%d info %d: %s", what, m, n, rinfo, why);
                /* the comparison can fail: one pivot off, one factor entry off */
                int save = cpiv[r / 2];
                cpiv[r / 2] = save == m ? 1 : save + 1;
                ASSERT_MSG(getrf_compare((tess_dtype_t)dt, m, n, ld, in, ref, rpiv, cgot, cpiv, tol,
                                         msg, sizeof msg) != NULL,
                           "%s %dx%d: a wrong pivot went unnoticed", what, m, n);
                cpiv[r / 2] = save;
                double er, ei;
                size_t at_ = (size_t)(m - 1) + (size_t)(n / 2) * ld;
                el_get((tess_dtype_t)dt, cgot, at_, &er, &ei);
                el_put((tess_dtype_t)dt, cgot, at_, er + 1e-3, ei);
                ASSERT_MSG(getrf_compare((tess_dtype_t)dt, m, n, ld, in, ref, rpiv, cgot, cpiv, tol,
                                         msg, sizeof msg) != NULL,
                           "%s %dx%d: a wrong factor entry went unnoticed", what, m, n);
                free(in);
                free(ref);
                free(got);
                free(cgot);
            }
    cpu->close(cbd);
    emu->close(a.bd);
}

/* GETRF on an emulated device: its pivots and INFO are written on the stream thread in
 * stream order (still untouched while a slow copy queued before it runs, both there once
 * an event recorded after it completed); m = 0 or n = 0 gives INFO 0 and no pivot; info may
 * be NULL; ipiv NULL (min(m, n) > 0), ldc < m and a C outside the arena are TESS_EINVAL at
 * the call (the device stays healthy); gflops makes it last (m n^2 - n^3 / 3 real flops) /
 * rate; and it counts as one op for fault_at: as the faulting op it does nothing (C, ipiv
 * and *info untouched) and fails the device. */
TEST(getrf_order_checks_throttle_fault) {
    tess__getrf_fn *fn;
    if (tess__hostblas_getrf(TESS_D, "test", &fn) != TESS_OK)
        SKIP("the CPU BLAS has no LAPACK: %s", tess_last_error());
    enum { N = 64 };
    size_t bytes = sizeof(double) * N * N;
    double *in = malloc(bytes), *got = malloc(bytes), *ref = malloc(bytes);
    lu_tile(TESS_D, N, N, N, -1, 9, in);
    memcpy(ref, in, bytes);
    int rpiv[N], rinfo = -1, n = N;
    fn(&n, &n, ref, &n, rpiv, &rinfo);
    ASSERT_EQ(rinfo, 0);
    struct tess__dev_params p = prm(0, 1);
    p.link_gbs = 0.01; /* the slow copy, 1 MB: 100 ms */
    struct edev a;
    edev_open(&a, p);
    double *dC = (double *)(a.base + 4096);
    int ipiv[N + 1], info;
    struct tess__kernel k;
    memset(&k, 0, sizeof k);
    k.kind = TESS__K_GETRF;
    k.dt = TESS_D;
    k.m = k.n = N;
    k.C = dC;
    k.ldc = N;
    k.info = &info;
    /* arguments */
    ASSERT_EQ(emu->kernel(a.bd, 0, &k), TESS_EINVAL); /* ipiv NULL */
    k.ipiv = ipiv;
    refuses_ldc_and_host_c(&a, k);
    /* empty: INFO 0, no pivot written, ipiv may be NULL */
    k.m = 0;
    k.ipiv = NULL;
    info = -3;
    ASSERT_OK(emu->kernel(a.bd, 0, &k));
    ASSERT_OK(drain(emu, a.bd, 0));
    ASSERT_EQ(info, 0);
    /* order: behind a slow copy, nothing is written yet; after an event, everything */
    k.m = k.n = N;
    k.ipiv = ipiv;
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, dC, 0, in, 0, bytes, 1, NULL));
    int conclusive = 0;
    for (int attempt = 0; attempt < 3 && !conclusive; attempt++) {
        for (int i = 0; i <= N; i++) ipiv[i] = -9;
        info = -12345;
        tess__event *slow, *after;
        ASSERT_OK(emu->event_create(a.bd, &slow));
        ASSERT_OK(emu->event_create(a.bd, &after));
        static unsigned char big[1000000];
        ASSERT_OK(
            emu->copy2d(a.bd, 0, TESS__H2D, a.base + 4 * MIB, 0, big, 0, sizeof big, 1, NULL));
        ASSERT_OK(emu->event_record(a.bd, 0, slow));
        ASSERT_OK(emu->kernel(a.bd, 0, &k));
        ASSERT_OK(emu->event_record(a.bd, 0, after));
        int seen_info = info, seen_piv = ipiv[0];
        if (emu->event_query(a.bd, slow) == TESS_EAGAIN) { /* the GETRF cannot have run */
            conclusive = 1;
            ASSERT_MSG(seen_info == -12345 && seen_piv == -9,
                       "info %d, ipiv[0] %d written before the GETRF's turn", seen_info, seen_piv);
        }
        ASSERT_OK(emu->event_sync(a.bd, after));
        ASSERT_EQ(info, 0);
        ASSERT_EQ(ipiv[N], -9);
        for (int i = 0; i < N; i++) ASSERT_EQ(ipiv[i], rpiv[i]);
        emu->event_destroy(a.bd, slow);
        emu->event_destroy(a.bd, after);
        ASSERT_OK(emu->copy2d(a.bd, 0, TESS__D2H, got, 0, dC, 0, bytes, 1, NULL));
        ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, dC, 0, in, 0, bytes, 1, NULL));
        ASSERT_OK(drain(emu, a.bd, 0));
        char msg[256];
        const char *why = getrf_compare(TESS_D, N, N, N, in, ref, rpiv, got, ipiv, 1e-12, msg,
                                        sizeof msg);
        ASSERT_MSG(!why, "%s", why);
    }
    ASSERT_MSG(conclusive, "3 tries, the slow copy always ended before the check");
    emu->close(a.bd);

    /* throttle: 64^3 - 64^3 / 3 = 174763 flops at 2 MFLOP/s: 87 ms; info NULL */
    p = prm(0, 1);
    p.gflops = 0.002;
    edev_open(&a, p);
    k.C = a.base + 4096;
    k.info = NULL;
    double el = timed_run(&a, &k, in, bytes);
    ASSERT_MSG(el >= 0.087, "getrf took %.4f s, want >= 0.087", el);
    emu->close(a.bd);

    /* fault_at = 2: the copy is op 1, the GETRF op 2 */
    info = -12345;
    k.info = &info;
    for (int i = 0; i <= N; i++) ipiv[i] = -9;
    faults_as_op_2(&a, &k, in, bytes);
    ASSERT_EQ(info, -12345);
    for (int i = 0; i <= N; i++) ASSERT_EQ(ipiv[i], -9);
    ASSERT_EQ(emu->kernel(a.bd, 0, &k), TESS_EDEVICE);
    emu->close(a.bd);
    free(in);
    free(got);
    free(ref);
}

/* LASWP on an emulated device and on the CPU worker equals LAPACK's laswp (k1 = 1, k2 = k,
 * incx = 1) on a copy, exactly: s, d, c, z, k < m, ldc > m, pivots pointing down, up and at
 * their own row; the caller overwriting its ipiv right after the call (the LASWP still
 * queued behind a slow copy) changes nothing, although those pivots would give another
 * result; k = 0 is a no-op; a pivot of 0 or m + 1, k > m and ipiv NULL are TESS_EINVAL at
 * the call, the device healthy; as the faulting op it does nothing and fails the device. */
TEST(laswp_matches_lapack) {
    tess__laswp_fn *fn[4];
    for (int dt = 0; dt < 4; dt++)
        if (tess__hostblas_laswp(dt, "test", &fn[dt]) != TESS_OK)
            SKIP("the CPU BLAS has no LAPACK: %s", tess_last_error());
    struct tess__dev_params p = prm(0, 2);
    p.link_gbs = 0.01; /* the slow copy, 1 MB: 100 ms (the tiles: about 1 ms) */
    struct edev a;
    edev_open(&a, p);
    void *cbd = cpu_open();
    enum { M = 41, N = 19, LD = 45, K = 29 };
    int piv[K], later[K];
    for (int i = 0; i < K; i++) { /* down, up, and its own row */
        piv[i] = i % 3 == 0 ? M - i : i % 3 == 1 ? 1 + i / 2 : i + 1;
        later[i] = 1; /* what the caller writes over its array after the call */
    }
    int conclusive = 0;
    static unsigned char big[1000000];
    for (int dt = 0; dt < 4; dt++) {
        size_t es = tess__dtypes[dt].size, bytes = (size_t)LD * N * es;
        unsigned char *in = malloc(bytes), *ref = malloc(bytes), *other = malloc(bytes),
                      *got = malloc(bytes), *cgot = malloc(bytes);
        lu_tile((tess_dtype_t)dt, M, N, LD, -1, 50u + (unsigned)dt, in);
        memcpy(ref, in, bytes);
        memcpy(other, in, bytes);
        memcpy(cgot, in, bytes);
        ref_laswp(fn[dt], N, ref, LD, K, piv);
        ref_laswp(fn[dt], N, other, LD, K, later);
        ASSERT(memcmp(ref, in, bytes) != 0);    /* the pivots move rows */
        ASSERT(memcmp(ref, other, bytes) != 0); /* the overwritten pivots would be seen */
        int ipiv[K];
        memcpy(ipiv, piv, sizeof ipiv);
        struct tess__kernel k;
        memset(&k, 0, sizeof k);
        k.kind = TESS__K_LASWP;
        k.dt = (tess_dtype_t)dt;
        k.m = M;
        k.n = N;
        k.k = K;
        k.ldc = LD;
        k.ipiv = ipiv;
        unsigned char *dC = a.base + 8192;
        k.C = dC;
        tess__event *slow;
        ASSERT_OK(emu->event_create(a.bd, &slow));
        ASSERT_OK(emu->copy2d(a.bd, 1, TESS__H2D, dC, 0, in, 0, bytes, 1, NULL));
        ASSERT_OK(
            emu->copy2d(a.bd, 1, TESS__H2D, a.base + 4 * MIB, 0, big, 0, sizeof big, 1, NULL));
        ASSERT_OK(emu->event_record(a.bd, 1, slow));
        ASSERT_OK(emu->kernel(a.bd, 1, &k));
        memcpy(ipiv, later, sizeof ipiv); /* the caller reuses its array at once */
        if (emu->event_query(a.bd, slow) == TESS_EAGAIN) conclusive++; /* LASWP not run yet */
        ASSERT_OK(emu->copy2d(a.bd, 1, TESS__D2H, got, 0, dC, 0, bytes, 1, NULL));
        ASSERT_OK(drain(emu, a.bd, 1));
        emu->event_destroy(a.bd, slow);
        ASSERT_MSG(memcmp(got, ref, bytes) == 0, "emulated %s: LASWP differs from LAPACK's",
                   tess__dtypes[dt].name);
        /* the CPU worker, in place */
        memcpy(ipiv, piv, sizeof ipiv);
        k.C = cgot;
        ASSERT_OK(cpu->kernel(cbd, 0, &k));
        memcpy(ipiv, later, sizeof ipiv);
        ASSERT_OK(drain(cpu, cbd, 0));
        ASSERT_MSG(memcmp(cgot, ref, bytes) == 0, "cpu %s: LASWP differs from LAPACK's",
                   tess__dtypes[dt].name);
        /* k = 0 (ipiv NULL): nothing moves */
        k.k = 0;
        k.ipiv = NULL;
        ASSERT_OK(cpu->kernel(cbd, 0, &k));
        ASSERT_OK(drain(cpu, cbd, 0));
        ASSERT(memcmp(cgot, ref, bytes) == 0);
        free(in);
        free(ref);
        free(other);
        free(got);
        free(cgot);
    }
    ASSERT_MSG(conclusive > 0, "4 tries, the slow copy always ended before the overwrite");
    /* bad arguments: refused at the call, the device stays healthy */
    double x[4] = {1, 2, 3, 4}, *dx = (double *)(a.base + 4096);
    int bad[2] = {1, 3};
    struct tess__kernel k;
    memset(&k, 0, sizeof k);
    k.kind = TESS__K_LASWP;
    k.dt = TESS_D;
    k.m = 2;
    k.n = 2;
    k.k = 2;
    k.ldc = 2;
    k.C = dx;
    k.ipiv = bad; /* 3 > m */
    ASSERT_EQ(emu->kernel(a.bd, 0, &k), TESS_EINVAL);
    ASSERT(strstr(tess_last_error(), "emulated:0") != NULL);
    bad[1] = 0;
    ASSERT_EQ(emu->kernel(a.bd, 0, &k), TESS_EINVAL);
    bad[1] = 2;
    k.k = 3;
    ASSERT_EQ(emu->kernel(a.bd, 0, &k), TESS_EINVAL);
    k.k = 2;
    k.ipiv = NULL;
    ASSERT_EQ(emu->kernel(a.bd, 0, &k), TESS_EINVAL);
    k.ipiv = bad; /* {1, 2}: every row stays */
    ASSERT_OK(emu->copy2d(a.bd, 0, TESS__H2D, dx, 0, x, 0, sizeof x, 1, NULL));
    ASSERT_OK(emu->kernel(a.bd, 0, &k));
    ASSERT_OK(drain(emu, a.bd, 0));
    ASSERT(memcmp(dx, x, sizeof x) == 0);
    emu->close(a.bd);
    cpu->close(cbd);

    /* fault_at = 2: the copy is op 1, the LASWP op 2: the rows stay */
    bad[0] = 2;
    bad[1] = 2; /* rows 0 and 1 swap */
    faults_as_op_2(&a, &k, x, sizeof x);
    emu->close(a.bd);
}

TEST_MAIN()
