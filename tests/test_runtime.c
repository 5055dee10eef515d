/* tests/test_runtime.c: the node runtime seen through the public statistics API
 * (tess_device_count, tess_device_stats, tess_reset_stats) on emulated devices: DGEMMs with
 * many tasks are checked for correctness and their counters for what must have happened
 * (tasks spread over the devices, peer fetches, evictions under a memory cap, stealing from
 * a throttled device, C written back once), and injected device faults end in a clean
 * status, never a wrong result with TESS_OK and never a hang.
 * Run under each setup of the table `configs` below (`test_runtime CONFIG`, CTest's
 * test_runtime:CONFIG): its knobs, the counters runtime_counters_dgemm must see, which fault
 * test runs (with TESSERA_FAULT set the other tests return at once: their calls would fail
 * by design). The tests read the knobs back from the environment (cfg_read). Every test
 * opens the runtime with tess_init and closes it with tess_finalize, so each starts from
 * fresh devices and counters; assertions that need given devices to take part are checked
 * on a runtime slowed down (tests/slowdown.h).
 */
#include <ctype.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "ref.h"
#include "slowdown.h"
#include "tessera.h"

/* ---- the setups ------------------------------------------------------------------------ */

/* which fault test a setup runs (its TESSERA_FAULT names the device) */
enum fault_test {
    NO_FAULT,
    FAULT,   /* runtime_fault_injection, runtime_fault_concurrent_calls */
    RECOVER, /* runtime_fault_recovers */
    SWEEP,   /* runtime_fault_sweep_redone */
};

#define EMU "TESSERA_DEVICES=none TESSERA_CPU_WORKER=0 "
#define EMU16 EMU "TESSERA_EMULATE_MEM=16M "

static const struct rt_config {
    const char *name, *knobs;
    /* what runtime_counters_dgemm must see: every device computed a task; an operand tile
     * came from a peer; a cached tile was evicted; a task was stolen from another device's
     * reservation station */
    bool tasks, l2, evict, steal;
    enum fault_test fault;
} configs[] = {
    {"emu1", EMU16 "TESSERA_EMULATE=1 TESSERA_TILE=32", .tasks = true},
    {"emu2", EMU16 "TESSERA_EMULATE=2 TESSERA_TILE=32", .tasks = true, .l2 = true},
    /* 4 devices capped at 256 KiB (32 double tiles of 32^2, working set ~190) */
    {"emu4_cap", EMU "TESSERA_EMULATE=4 TESSERA_TILE=32 TESSERA_EMULATE_MEM=262144", .tasks = true,
     .l2 = true, .evict = true},
    /* device 0 ten times slower than the others (a 32^3 kernel in 10 ms, theirs in 1 ms:
     * calls long enough for every device to take part) holds 8 reserved tasks: the others
     * steal them */
    {"emu3_steal",
     EMU16 "TESSERA_EMULATE=3 TESSERA_TILE=32 TESSERA_EMULATE_GFLOPS=0.0065,0.065,0.065 "
           "TESSERA_RS=8",
     .tasks = true, .steal = true, .l2 = true},
    /* a cap of 4 complex-double tiles of 16^2 (16 KiB): still correct in every precision */
    {"emu2_tinycap", EMU "TESSERA_EMULATE=2 TESSERA_TILE=16 TESSERA_EMULATE_MEM=16384",
     .evict = true},
    {"emu2_tinycap_s8",
     EMU "TESSERA_EMULATE=2 TESSERA_TILE=16 TESSERA_EMULATE_MEM=16384 TESSERA_EMULATE_STREAMS=8",
     .evict = true},
    {"emu3_jitter",
     EMU16 "TESSERA_EMULATE=3 TESSERA_TILE=16 TESSERA_EMULATE_JITTER=200 "
           "TESSERA_EMULATE_STREAMS=4",
     .tasks = true, .l2 = true},
    {"emu2_cpu",
     "TESSERA_DEVICES=none TESSERA_EMULATE_MEM=16M TESSERA_EMULATE=2 TESSERA_CPU_WORKER=1 "
     "TESSERA_TILE=32",
     .tasks = true},
    /* injected faults: device 1 fails at its 5th op (or its 2nd: while the first tiles are
     * still being fetched); device 0 of 3 fails at its 40th */
    {"emu2_fault", EMU16 "TESSERA_EMULATE=2 TESSERA_TILE=32 TESSERA_FAULT=1:5", .fault = FAULT},
    {"emu2_fault_early", EMU16 "TESSERA_EMULATE=2 TESSERA_TILE=16 TESSERA_FAULT=1:2",
     .fault = FAULT},
    {"emu3_fault", EMU16 "TESSERA_EMULATE=3 TESSERA_TILE=16 TESSERA_FAULT=0:40", .fault = FAULT},
    {"emu3_fault_recover",
     EMU16 "TESSERA_EMULATE=3 TESSERA_TILE=32 TESSERA_P2P=0 TESSERA_FAULT=1:7", .fault = RECOVER},
    /* every fault point 2..60 of device 1, beta != 0, TESSERA_RECOVER=1 (write-back through
     * a host buffer, peers fetch only finished copies): every call redone */
    {"emu3_fault_sweep",
     EMU16 "TESSERA_EMULATE=3 TESSERA_TILE=32 TESSERA_EMULATE_JITTER=50 TESSERA_FAULT=1:2 "
           "TESSERA_RECOVER=1",
     .fault = SWEEP},
};

/* the setup this run is under; NULL: the environment as it is, nothing expected */
static const struct rt_config *cfg;

struct rt_cfg {
    int emulate;   /* TESSERA_EMULATE */
    int cpu;       /* TESSERA_CPU_WORKER == 1 */
    int no_gpu;    /* TESSERA_DEVICES == none */
    int64_t tile;  /* TESSERA_TILE, 32 when unset */
    int64_t cap;   /* TESSERA_EMULATE_MEM in bytes, 0 when unset */
    int fault_dev; /* device of TESSERA_FAULT "dev:k", -1 when none */
};

static int64_t parse_bytes(const char *s) {
    char *end;
    double v = strtod(s, &end);
    switch (toupper((unsigned char)*end)) {
    case 'K': v *= 1024.0; break;
    case 'M': v *= 1024.0 * 1024.0; break;
    case 'G': v *= 1024.0 * 1024.0 * 1024.0; break;
    default: break;
    }
    return (int64_t)v;
}

static struct rt_cfg cfg_read(void) {
    struct rt_cfg c;
    memset(&c, 0, sizeof c);
    c.emulate = (int)ref_env_long("TESSERA_EMULATE", 0);
    c.cpu = ref_env_long("TESSERA_CPU_WORKER", -1) == 1;
    const char *dv = getenv("TESSERA_DEVICES");
    c.no_gpu = dv && !strcmp(dv, "none");
    c.tile = ref_env_long("TESSERA_TILE", 0);
    if (c.tile <= 0) c.tile = 32;
    const char *mem = getenv("TESSERA_EMULATE_MEM");
    c.cap = mem && *mem ? parse_bytes(mem) : 0;
    const char *f = getenv("TESSERA_FAULT");
    c.fault_dev = f && *f ? atoi(f) : -1;
    return c;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_stats(const char *title) {
    int n = tess_device_count();
    fprintf(stderr,
            "  %s\n  %-3s %-18s %4s %6s %6s %6s %10s %10s %10s %7s %7s %7s %6s %5s %9s %9s\n",
            title, "dev", "name", "fail", "tasks", "stolen", "steps", "h2d", "d2h", "p2p", "l1",
            "l2", "miss", "evict", "busy", "cap", "peak");
    for (int i = 0; i < n; i++) {
        tess_dev_stats_t s;
        if (tess_device_stats(i, &s)) continue;
        fprintf(stderr,
                "  %-3d %-18.18s %4d %6llu %6llu %6llu %10llu %10llu %10llu %7llu %7llu %7llu "
                "%6llu %5.2f %9zu %9zu\n",
                i, s.name, s.failed, (unsigned long long)s.tasks, (unsigned long long)s.stolen,
                (unsigned long long)s.steps, (unsigned long long)s.bytes_h2d,
                (unsigned long long)s.bytes_d2h, (unsigned long long)s.bytes_p2p,
                (unsigned long long)s.l1_hits, (unsigned long long)s.l2_hits,
                (unsigned long long)s.misses, (unsigned long long)s.evictions, s.busy_s,
                s.mem_capacity, s.mem_peak);
    }
}

/* A DGEMM case of about 8 x 8 tiles (more tasks than any configuration has slots). */
static struct ref_gemm_case dgemm_case(const struct rt_cfg *c, uint64_t seed) {
    struct ref_gemm_case g;
    memset(&g, 0, sizeof g);
    g.dt = TESS_D;
    g.layout = TESS_COL_MAJOR;
    g.ta = TESS_NO_TRANS;
    g.tb = TESS_NO_TRANS;
    g.m = 8 * c->tile + 5;
    g.n = 7 * c->tile + 3;
    g.k = 6 * c->tile + 1;
    g.alpha[0] = 0.5;
    g.beta[0] = -1.0;
    g.flags = REF_TYPED;
    g.seed = seed;
    return g;
}

static int64_t ceildiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

#define RUN_OK(d)                                                                              \
    do {                                                                                       \
        char msg_[1024] = "", what_[512];                                                      \
        int st_ = ref_gemm_call(d);                                                            \
        ref_gemm_describe(&(d)->c, what_, sizeof what_);                                       \
        ASSERT_MSG(st_ == TESS_OK, "%s: returned %d (%s): %s", what_, st_, tess_strerror(st_), \
                   tess_last_error());                                                         \
        ASSERT_MSG(ref_gemm_verify(d, msg_, sizeof msg_) == 0, "%s: %s", what_, msg_);         \
    } while (0)

/* tess_init / tess_finalize are reference counted and the runtime can be started again
 * after the last finalize; every cycle computes correctly. */
TEST(runtime_init_finalize_cycles) {
    struct rt_cfg c = cfg_read();
    if (c.fault_dev >= 0) return; /* a fault would make these calls fail by design */
    for (int cycle = 0; cycle < 3; cycle++) {
        ASSERT_OK(tess_init());
        ASSERT_OK(tess_init());
        struct ref_gemm_case g = dgemm_case(&c, 10 + (uint64_t)cycle);
        g.m = g.n = g.k = 2 * c.tile + 1;
        struct ref_gemm_data d;
        ref_gemm_setup(&g, &d);
        RUN_OK(&d);
        ASSERT_OK(tess_finalize()); /* one reference left: still running */
        ASSERT_GT(tess_device_count(), 0);
        ref_gemm_free(&d);
        ref_gemm_setup(&g, &d);
        RUN_OK(&d);
        ref_gemm_free(&d);
        ASSERT_OK(tess_finalize());
    }
}

/* The devices are the ones configured: TESSERA_EMULATE emulated ones (then the CPU worker
 * if enabled), with names, kinds, memory capacities within the cap and fresh counters. */
TEST(runtime_device_list) {
    struct rt_cfg c = cfg_read();
    ASSERT_OK(tess_init());
    int n = tess_device_count();
    if (c.no_gpu) ASSERT_EQ(n, c.emulate + c.cpu);
    int nemu = 0, ncpu = 0;
    for (int i = 0; i < n; i++) {
        tess_dev_stats_t s;
        ASSERT_OK(tess_device_stats(i, &s));
        ASSERT_MSG(s.name[0] != '\0', "device %d has no name", i);
        ASSERT_EQ(s.failed, 0);
        ASSERT_EQ(s.tasks, 0);
        ASSERT_EQ(s.bytes_h2d, 0);
        if (s.kind == TESS_DEV_EMULATED) {
            nemu++;
            ASSERT_GT(s.mem_capacity, 0);
            if (c.cap > 0)
                ASSERT_MSG(s.mem_capacity <= (size_t)c.cap,
                           "device %d: capacity %zu above TESSERA_EMULATE_MEM %lld", i,
                           s.mem_capacity, (long long)c.cap);
        } else if (s.kind == TESS_DEV_CPU) {
            ncpu++;
        } else {
            ASSERT_MSG(!c.no_gpu, "device %d kind %d with TESSERA_DEVICES=none", i, (int)s.kind);
        }
    }
    ASSERT_EQ(nemu, c.emulate);
    ASSERT_EQ(ncpu, c.cpu);
    ASSERT_OK(tess_finalize());
}

/* 1 if the accumulated counters show what the setup expects; else 0 and why. */
static int expectations_met(int n, const struct rt_cfg *c, char *why, size_t len) {
    uint64_t l2 = 0, p2p = 0, evict = 0, stolen = 0;
    for (int i = 0; i < n; i++) {
        tess_dev_stats_t s;
        if (tess_device_stats(i, &s)) {
            snprintf(why, len, "tess_device_stats(%d) failed", i);
            return 0;
        }
        if (cfg && cfg->tasks && s.tasks == 0) {
            snprintf(why, len, "device %d (%s) got no task", i, s.name);
            return 0;
        }
        l2 += s.l2_hits, p2p += s.bytes_p2p, evict += s.evictions, stolen += s.stolen;
    }
    if (cfg && cfg->l2 && (l2 == 0 || p2p == 0)) {
        snprintf(why, len, "no L2 hit (peer fetch) with %d devices: l2_hits %llu, bytes_p2p %llu",
                 n, (unsigned long long)l2, (unsigned long long)p2p);
        return 0;
    }
    if (cfg && cfg->evict && evict == 0) {
        snprintf(why, len, "no eviction under cap %lld", (long long)c->cap);
        return 0;
    }
    if (cfg && cfg->steal && stolen == 0) {
        snprintf(why, len, "no task was stolen");
        return 0;
    }
    return 1;
}

/* One DGEMM of many tiles is correct and its counters add up: every task counted once,
 * kernels = tasks x k steps, flops = 2mnk, C written back exactly once (m n 8 bytes), at
 * least A, B and C moved from the host, every operand lookup of a device with a cache
 * classified (L1, L2 or miss), peaks within capacity; and the configuration's expectations
 * (tasks, l2, evict, steal) hold within 5 calls. */
TEST(runtime_counters_dgemm) {
    struct rt_cfg c = cfg_read();
    if (c.fault_dev >= 0) return;
    ASSERT_OK(tess_init());
    int n = tess_device_count();
    ASSERT_GT(n, 0);
    tess_reset_stats();
    struct ref_gemm_case g = dgemm_case(&c, 42);
    struct ref_gemm_data d;
    ref_gemm_setup(&g, &d);
    double t0 = now_s();
    RUN_OK(&d);
    double wall = now_s() - t0;
    print_stats("after one DGEMM");

    int64_t T = c.tile;
    uint64_t ntasks = (uint64_t)(ceildiv(g.m, T) * ceildiv(g.n, T));
    uint64_t nsteps = ntasks * (uint64_t)ceildiv(g.k, T);
    uint64_t tasks = 0, steps = 0, cached_steps = 0, h2d = 0, d2h = 0, p2p = 0, l1 = 0, l2 = 0,
             miss = 0;
    double flops = 0;
    int unified = 0;
    for (int i = 0; i < n; i++) {
        tess_dev_stats_t s;
        ASSERT_OK(tess_device_stats(i, &s));
        ASSERT_EQ(s.failed, 0);
        tasks += s.tasks, steps += s.steps;
        if (s.kind != TESS_DEV_CPU) cached_steps += s.steps; /* the CPU worker has no cache */
        h2d += s.bytes_h2d, d2h += s.bytes_d2h, p2p += s.bytes_p2p;
        l1 += s.l1_hits, l2 += s.l2_hits, miss += s.misses;
        flops += s.flops;
        if (s.kind == TESS_DEV_CPU) unified = 1;
        ASSERT_MSG(s.stolen <= s.tasks, "device %d: stolen %llu > tasks %llu", i,
                   (unsigned long long)s.stolen, (unsigned long long)s.tasks);
        if (s.kind == TESS_DEV_EMULATED) {
            ASSERT_MSG(s.mem_peak <= s.mem_capacity, "device %d: peak %zu > capacity %zu", i,
                       s.mem_peak, s.mem_capacity);
            if (s.tasks) ASSERT_GT(s.mem_peak, 0);
        }
        if (s.tasks) {
            ASSERT_MSG(s.busy_s > 0, "device %d: %llu tasks but busy_s = 0", i,
                       (unsigned long long)s.tasks);
            ASSERT_MSG(s.steps >= s.tasks, "device %d: steps %llu < tasks %llu", i,
                       (unsigned long long)s.steps, (unsigned long long)s.tasks);
        }
        ASSERT_MSG(s.busy_s <= wall + 0.05, "device %d: busy %.3f s > call %.3f s", i, s.busy_s,
                   wall);
    }
    ASSERT_EQ(tasks, ntasks);
    ASSERT_EQ(steps, nsteps);
    double want = 2.0 * (double)g.m * (double)g.n * (double)g.k;
    ASSERT_MSG(flops > 0.95 * want && flops < 1.05 * want, "flops %.6g, expected %.6g", flops,
               want);
    ASSERT_MSG(l1 + l2 + miss >= 2 * cached_steps,
               "l1 %llu + l2 %llu + misses %llu < 2 x %llu operand lookups", (unsigned long long)l1,
               (unsigned long long)l2, (unsigned long long)miss, (unsigned long long)cached_steps);
    if (!unified) {
        uint64_t cbytes = (uint64_t)(g.m * g.n) * 8;
        uint64_t abytes = (uint64_t)(g.m * g.k) * 8, bbytes = (uint64_t)(g.k * g.n) * 8;
        ASSERT_MSG(d2h == cbytes, "bytes_d2h %llu, expected C once = %llu", (unsigned long long)d2h,
                   (unsigned long long)cbytes);
        ASSERT_MSG(h2d >= abytes + bbytes + cbytes, "bytes_h2d %llu < A + B + C = %llu",
                   (unsigned long long)h2d, (unsigned long long)(abytes + bbytes + cbytes));
        ASSERT_GT(miss, 0);
    }
    if (l2 > 0) ASSERT_MSG(p2p > 0, "l2_hits %llu but bytes_p2p = 0", (unsigned long long)l2);

    /* the setup's expectations, met by this call or not */
    char why[256] = "";
    int met = expectations_met(n, &c, why, sizeof why);

    /* reset: every counter back to zero */
    tess_reset_stats();
    for (int i = 0; i < n; i++) {
        tess_dev_stats_t s;
        ASSERT_OK(tess_device_stats(i, &s));
        ASSERT_EQ(s.tasks + s.stolen + s.steps + s.bytes_h2d + s.bytes_d2h + s.bytes_p2p, 0);
        ASSERT_EQ(s.l1_hits + s.l2_hits + s.misses + s.evictions, 0);
        ASSERT_MSG(s.flops == 0 && s.busy_s == 0, "device %d: flops/busy not reset", i);
    }
    ref_gemm_free(&d);
    ASSERT_OK(tess_finalize());
    if (met) return;

    /* Not met: they need every device (tasks), two (l2) or the throttled one (steal) to
     * take part in a call, which a short call does not guarantee (tests/slowdown.h). On a
     * runtime slowed down, within 5 calls, counters accumulating. */
    fprintf(stderr, "  after one call: %s; again slowed down\n", why);
    struct knobs_saved sv;
    slow_down(c.emulate, c.tile, 0, &sv);
    int rc = tess_init();
    slow_restore(&sv); /* the knobs are read at tess_init */
    ASSERT_OK(rc);
    ASSERT_EQ(tess_device_count(), n);
    int calls = 0;
    do {
        struct ref_gemm_data e;
        struct ref_gemm_case ge = dgemm_case(&c, 42 + (uint64_t)calls);
        ref_gemm_setup(&ge, &e);
        RUN_OK(&e);
        ref_gemm_free(&e);
        calls++;
        met = expectations_met(n, &c, why, sizeof why);
    } while (!met && calls < 5);
    print_stats("after the calls slowed down");
    ASSERT_OK(tess_finalize());
    ASSERT_MSG(met, "after %d calls slowed down: %s (setup %s)", calls, why,
               cfg ? cfg->name : "(none)");
}

/* Every precision and transpose, both layouts, beta = 0 and not, computes correctly under
 * this configuration (memory caps of a few tiles included); beta = 0 writes C without
 * loading it (d2h still m n esize). */
TEST(runtime_all_precisions_correct) {
    struct rt_cfg c = cfg_read();
    if (c.fault_dev >= 0) return;
    ASSERT_OK(tess_init());
    static const tess_trans_t tr[3] = {TESS_NO_TRANS, TESS_TRANS, TESS_CONJ_TRANS};
    int64_t T = c.tile;
    for (int dt = 0; dt < 4; dt++)
        for (int v = 0; v < 3; v++) {
            struct ref_gemm_case g;
            memset(&g, 0, sizeof g);
            g.dt = (tess_dtype_t)dt;
            g.layout = v == 2 ? TESS_ROW_MAJOR : TESS_COL_MAJOR;
            g.ta = tr[(dt + v) % 3];
            g.tb = tr[(dt + 2 * v) % 3];
            g.m = 4 * T + 3;
            g.n = 3 * T + 1;
            g.k = 5 * T + 2;
            g.pad_c = v;
            g.alpha[0] = 1.25, g.alpha[1] = -0.5;
            g.beta[0] = v == 1 ? 0 : 0.5, g.beta[1] = v == 1 ? 0 : 0.5;
            g.flags = v == 1 ? REF_NAN_C : 0;
            g.seed = 500 + (uint64_t)(dt * 3 + v);
            struct ref_gemm_data d;
            ref_gemm_setup(&g, &d);
            tess_reset_stats();
            RUN_OK(&d);
            if (!c.cpu && c.no_gpu) {
                uint64_t d2h = 0;
                for (int i = 0; i < tess_device_count(); i++) {
                    tess_dev_stats_t s;
                    ASSERT_OK(tess_device_stats(i, &s));
                    d2h += s.bytes_d2h;
                }
                ASSERT_MSG(d2h == (uint64_t)(g.m * g.n) * ref_esize(g.dt),
                           "%s: bytes_d2h %llu, expected %llu", ref_dtype_name(g.dt),
                           (unsigned long long)d2h,
                           (unsigned long long)((uint64_t)(g.m * g.n) * ref_esize(g.dt)));
            }
            ref_gemm_free(&d);
        }
    ASSERT_OK(tess_finalize());
}

struct conc_arg {
    int id;
    struct rt_cfg c;
    int failed;
    char msg[1024];
};

static void *conc_worker(void *p) {
    struct conc_arg *a = p;
    for (int it = 0; it < 2 && !a->failed; it++) {
        struct ref_gemm_case g = dgemm_case(&a->c, 700 + (uint64_t)(a->id * 10 + it));
        g.m = 3 * a->c.tile + 1 + a->id;
        g.n = 4 * a->c.tile + 2;
        g.k = 3 * a->c.tile + 3;
        if (ref_gemm_run(&g, a->msg, sizeof a->msg)) a->failed = 1;
    }
    return NULL;
}

/* Calls from 4 host threads at once share the devices: all results are correct and the
 * task counter is the sum of the tiles of all calls. */
TEST(runtime_concurrent_jobs) {
    struct rt_cfg c = cfg_read();
    if (c.fault_dev >= 0) return;
    enum { NT = 4 };
    ASSERT_OK(tess_init());
    tess_reset_stats();
    pthread_t th[NT];
    struct conc_arg a[NT];
    uint64_t want = 0;
    for (int i = 0; i < NT; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].id = i;
        a[i].c = c;
        want += 2 *
                (uint64_t)(ceildiv(3 * c.tile + 1 + i, c.tile) * ceildiv(4 * c.tile + 2, c.tile));
        ASSERT_EQ(pthread_create(&th[i], NULL, conc_worker, &a[i]), 0);
    }
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NT; i++) ASSERT_MSG(!a[i].failed, "thread %d: %s", i, a[i].msg);
    uint64_t tasks = 0;
    for (int i = 0; i < tess_device_count(); i++) {
        tess_dev_stats_t s;
        ASSERT_OK(tess_device_stats(i, &s));
        tasks += s.tasks;
    }
    ASSERT_EQ(tasks, want);
    ASSERT_OK(tess_finalize());
}

/* A device fault injected (TESSERA_FAULT=dev:k) during a DGEMM ends in TESS_OK with
 * a correct result (recovered) or TESS_EDEVICE, never a wrong result with TESS_OK; the
 * device reports failed = 1 (kept across tess_reset_stats), and later calls run correctly
 * on the devices left. */
TEST(runtime_fault_injection) {
    struct rt_cfg c = cfg_read();
    if (!cfg || cfg->fault != FAULT) return;
    ASSERT_MSG(c.fault_dev >= 0, "setup %s: fault test but TESSERA_FAULT is unset", cfg->name);
    /* the fault device must take part: the others slowed down (tests/slowdown.h) */
    struct knobs_saved sv;
    slow_down(c.emulate, c.tile, 1u << c.fault_dev, &sv);
    int rc = tess_init();
    slow_restore(&sv);
    ASSERT_OK(rc);
    int n = tess_device_count();
    ASSERT_MSG(c.fault_dev < n, "fault device %d of %d", c.fault_dev, n);
    /* The device fails at its k-th op: the others slow, it takes most of the tasks of
     * each call, so it gets there within the first calls. Every call: correct with
     * TESS_OK, or TESS_EDEVICE. */
    struct ref_gemm_case g;
    struct ref_gemm_data d;
    tess_dev_stats_t s;
    int call;
    for (call = 0; call < 5; call++) {
        g = dgemm_case(&c, 900 + (uint64_t)call);
        ref_gemm_setup(&g, &d);
        int st = ref_gemm_call(&d);
        char err[512];
        snprintf(err, sizeof err, "%s", tess_last_error()); /* before any other public call */
        fprintf(stderr, "  call %d: status %d (%s): %s\n", call, st, tess_strerror(st), err);
        print_stats("after it");
        if (st == TESS_OK) {
            char msg[1024] = "";
            ASSERT_MSG(ref_gemm_verify(&d, msg, sizeof msg) == 0,
                       "WRONG RESULT WITH TESS_OK after a device fault: %s", msg);
        } else {
            ASSERT_MSG(st == TESS_EDEVICE,
                       "status %d (%s), expected TESS_OK or TESS_EDEVICE; message \"%s\"", st,
                       tess_strerror(st), err);
            ASSERT_MSG(err[0] != '\0', "TESS_EDEVICE without a message");
        }
        ref_gemm_free(&d);
        ASSERT_OK(tess_device_stats(c.fault_dev, &s));
        if (s.failed) break;
    }
    ASSERT_MSG(s.failed == 1, "device %d did not fail in %d calls (failed = %d)", c.fault_dev, call,
               s.failed);
    for (int i = 0; i < n; i++) {
        tess_dev_stats_t o;
        ASSERT_OK(tess_device_stats(i, &o));
        if (i != c.fault_dev) ASSERT_MSG(o.failed == 0, "device %d failed too", i);
    }
    tess_reset_stats();
    ASSERT_OK(tess_device_stats(c.fault_dev, &s));
    ASSERT_MSG(s.failed == 1, "tess_reset_stats cleared the failed flag");

    /* the devices left carry on: later calls are correct, nothing lands on the failed one */
    for (int it = 0; it < 2; it++) {
        g = dgemm_case(&c, 901 + (uint64_t)it);
        ref_gemm_setup(&g, &d);
        RUN_OK(&d);
        ref_gemm_free(&d);
    }
    ASSERT_OK(tess_device_stats(c.fault_dev, &s));
    ASSERT_EQ(s.tasks, 0);
    print_stats("after two more calls");
    ASSERT_OK(tess_finalize());
}

struct fault_call {
    struct ref_gemm_data d;
    int st;
};

static void *fault_call_main(void *p) {
    struct fault_call *f = p;
    f->st = ref_gemm_call(&f->d);
    return NULL;
}

/* Faults hit from several host threads at once still end cleanly for each call. */
TEST(runtime_fault_concurrent_calls) {
    struct rt_cfg c = cfg_read();
    if (!cfg || cfg->fault != FAULT) return;
    ASSERT_OK(tess_init()); /* fresh runtime: the device fails again at its k-th op */
    enum { NT = 3 };
    struct fault_call w[NT];
    pthread_t th[NT];
    for (int i = 0; i < NT; i++) {
        struct ref_gemm_case g = dgemm_case(&c, 950 + (uint64_t)i);
        ref_gemm_setup(&g, &w[i].d);
        w[i].st = -100;
    }
    for (int i = 0; i < NT; i++) ASSERT_EQ(pthread_create(&th[i], NULL, fault_call_main, &w[i]), 0);
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NT; i++) {
        char msg[1024] = "";
        fprintf(stderr, "  thread %d: status %d\n", i, w[i].st);
        ASSERT_MSG(w[i].st == TESS_OK || w[i].st == TESS_EDEVICE, "thread %d: status %d", i,
                   w[i].st);
        if (w[i].st == TESS_OK)
            ASSERT_MSG(ref_gemm_verify(&w[i].d, msg, sizeof msg) == 0,
                       "thread %d: WRONG RESULT WITH TESS_OK: %s", i, msg);
        ref_gemm_free(&w[i].d);
    }
    ASSERT_OK(tess_finalize());
}

/* One DGEMM that must come back TESS_OK with the right result although a device fails
 * (what: the call, for the message); then the fault device's counters in *s. */
static void call_redone(const struct rt_cfg *c, struct ref_gemm_case *g, const char *what,
                        tess_dev_stats_t *s) {
    struct ref_gemm_data d;
    ref_gemm_setup(g, &d);
    int st = ref_gemm_call(&d);
    ASSERT_MSG(st == TESS_OK, "%s: status %d (%s): %s", what, st, tess_strerror(st),
               tess_last_error());
    char msg[1024] = "";
    ASSERT_MSG(ref_gemm_verify(&d, msg, sizeof msg) == 0, "%s: %s", what, msg);
    ref_gemm_free(&d);
    ASSERT_OK(tess_device_stats(c->fault_dev, s));
}

/* With peer fetches off and beta = 0 (C only written), a device that fails mid-call cannot
 * leave anything half done that the call needs: its tasks are redone on the other devices
 * and the call returns TESS_OK with the right result; the device reports failed = 1 and
 * gets no work afterwards. Setups with .fault = RECOVER. */
TEST(runtime_fault_recovers) {
    struct rt_cfg c = cfg_read();
    if (!cfg || cfg->fault != RECOVER) return;
    ASSERT_MSG(c.fault_dev >= 0, "setup %s: recover test but TESSERA_FAULT is unset", cfg->name);
    /* the fault device must take part: the others slowed down (tests/slowdown.h) */
    struct knobs_saved sv;
    slow_down(c.emulate, c.tile, 1u << c.fault_dev, &sv);
    int rc = tess_init();
    slow_restore(&sv);
    ASSERT_OK(rc);
    int failed_seen = 0;
    for (int call = 0; call < 5; call++) {
        struct ref_gemm_case g = dgemm_case(&c, 1900 + (uint64_t)call);
        g.beta[0] = 0.0;
        g.flags |= REF_NAN_C;
        char what[32];
        snprintf(what, sizeof what, "call %d", call);
        tess_dev_stats_t s;
        call_redone(&c, &g, what, &s);
        failed_seen |= s.failed;
    }
    ASSERT_MSG(failed_seen, "device %d never failed", c.fault_dev);
    ASSERT_OK(tess_finalize());
}

/* TESSERA_RECOVER=1, beta != 0, peer fetches on: a device failing at ANY of its first
 * operations (TEST_FAULT_SWEEP "from:to", default 2:60; the runtime restarted for each with
 * TESSERA_FAULT=dev:k, dev from the registration's TESSERA_FAULT) is redone: every call
 * TESS_OK with the right result, even when the fault lands on a write-back of a C tile whose
 * old values the call reads, or on a tile a peer wanted; the peers still fetch from each
 * other (L2 hits). Setups with .fault = SWEEP. Without the knob some of these calls
 * end in TESS_EDEVICE (a half-written C tile, a peer copy filled from an unfinished one),
 * and the test fails. */
TEST(runtime_fault_sweep_redone) {
    struct rt_cfg c = cfg_read();
    if (!cfg || cfg->fault != SWEEP) return;
    ASSERT_MSG(c.fault_dev >= 0, "setup %s: sweep test but TESSERA_FAULT is unset", cfg->name);
    int from = 2, to = 60, failed = 0, wb_faults = 0;
    uint64_t l2 = 0;
    const char *sw = getenv("TEST_FAULT_SWEEP");
    if (sw && *sw) ASSERT_MSG(sscanf(sw, "%d:%d", &from, &to) == 2, "TEST_FAULT_SWEEP=%s", sw);
    for (int k = from; k <= to; k++) {
        char f[32];
        snprintf(f, sizeof f, "%d:%d", c.fault_dev, k);
        setenv("TESSERA_FAULT", f, 1);
        ASSERT_OK(tess_init());
        struct ref_gemm_case g = dgemm_case(&c, 3000 + (uint64_t)k);
        char what[32];
        snprintf(what, sizeof what, "fault at op %d", k);
        tess_dev_stats_t s;
        call_redone(&c, &g, what, &s);
        failed += s.failed;
        wb_faults += s.failed && s.bytes_d2h > 0;
        for (int i = 0; i < tess_device_count(); i++) {
            tess_dev_stats_t o;
            ASSERT_OK(tess_device_stats(i, &o));
            l2 += o.l2_hits;
        }
        ASSERT_OK(tess_finalize());
    }
    fprintf(stderr,
            "  faults at ops %d..%d: the device failed in %d calls (%d after it had "
            "written back), every call right; %llu L2 hits\n",
            from, to, failed, wb_faults, (unsigned long long)l2);
    ASSERT_MSG(failed > 0, "device %d never failed", c.fault_dev);
    if (ref_env_long("TESSERA_P2P", 1)) ASSERT_MSG(l2 > 0, "no peer fetches under TESSERA_RECOVER");
}

TEST_CONFIG_MAIN(configs, cfg)
