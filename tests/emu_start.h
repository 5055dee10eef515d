/* tests/emu_start.h: a fresh runtime of emulated devices for the tests that start one many
 * times (test_potrf, test_getrf, test_hold): the knobs set before tess_init, the host link
 * bytes the devices counted, and the fault sweep that fails device 1 of 3 at each of its
 * operations in turn around a test's call.
 */
#ifndef TESS_TEST_EMU_START_H
#define TESS_TEST_EMU_START_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "ref.h"
#include "tessera.h"

/* Knobs for a fresh runtime of ndev emulated devices (0: the CPU worker alone), set before
 * tess_init; the caller may add more. Finalizes first whatever a failed test left running.
 * streams (TESSERA_EMULATE_STREAMS) and write_behind (TESSERA_WRITE_BEHIND): the value, or
 * NULL to leave that knob as it is (its default, the environment's or an earlier test's). */
static inline void emu_start(int ndev, const char *tile, const char *mem, const char *streams,
                             const char *write_behind) {
    for (int i = 0; i < 8; i++) tess_finalize();
    char n[8];
    snprintf(n, sizeof n, "%d", ndev);
    setenv("TESSERA_DEVICES", "none", 1);
    setenv("TESSERA_CPU_WORKER", ndev ? "0" : "1", 1);
    setenv("TESSERA_EMULATE", n, 1);
    setenv("TESSERA_EMULATE_MEM", mem, 1);
    setenv("TESSERA_EMULATE_GFLOPS", "0", 1);
    setenv("TESSERA_EMULATE_JITTER", "0", 1);
    if (streams) setenv("TESSERA_EMULATE_STREAMS", streams, 1);
    setenv("TESSERA_TILE", tile, 1);
    setenv("TESSERA_RECOVER", "0", 1);
    setenv("TESSERA_HOLD_CHECK", "0", 1);
    if (write_behind) setenv("TESSERA_WRITE_BEHIND", write_behind, 1);
    unsetenv("TESSERA_FAULT");
}

/* Bytes devices 0 .. ndev - 1 copied host to device since the last tess_reset_stats. */
static inline uint64_t emu_bytes_h2d(int ndev) {
    uint64_t s = 0;
    for (int d = 0; d < ndev; d++) {
        tess_dev_stats_t st;
        ASSERT_OK(tess_device_stats(d, &st));
        s += st.bytes_h2d;
    }
    return s;
}

/* A solve on a held factor (posv, gesv): since tess_reset_stats, devices 0 .. ndev - 1
 * copied at most the factor's bytes once (fbytes: the factorization) and B's twice (bbytes:
 * one read per triangular solve) host to device; solves reading the factor from the host
 * would copy it again. */
static inline void emu_check_solve_h2d(const char *fn, int ndev, uint64_t fbytes, uint64_t bbytes) {
    uint64_t h2d = emu_bytes_h2d(ndev), bound = fbytes + 2 * bbytes;
    fprintf(stderr, "  %s: h2d %llu (bound: the factor's %llu + 2 x B %llu)\n", fn,
            (unsigned long long)h2d, (unsigned long long)fbytes, (unsigned long long)bbytes);
    ASSERT_MSG(h2d <= bound,
               "%s: %llu bytes host to device, more than the factor once and B twice (%llu): "
               "the solves read the factor from the host",
               fn, (unsigned long long)h2d, (unsigned long long)bound);
}

/* ---- fault sweeps --------------------------------------------------------------------------
 * Fault point k: a runtime of 3 devices (tile 32, 4M each, started by the test's `start`)
 * whose device 1 fails at its k-th copy or kernel (TESSERA_FAULT=1:k), TESSERA_RECOVER as
 * given. A sweep runs k = 1, 2, ... up to kmax until device 1 no longer reaches k six times
 * in a row; the variable `env` set to k runs point k alone (reproducers). */

typedef void (*emu_start_fn)(int ndev, const char *tile, const char *mem);

/* The first and last fault point of a sweep. */
static inline void emu_fault_range(const char *env, int kmax, int *k0, int *k1) {
    *k0 = (int)ref_env_long(env, 1);
    *k1 = getenv(env) ? *k0 : kmax;
}

/* tess_init for fault point k. */
static inline void emu_fault_init(emu_start_fn start, int k, const char *recover) {
    char spec[32];
    snprintf(spec, sizeof spec, "1:%d", k);
    start(3, "32", "4M");
    setenv("TESSERA_FAULT", spec, 1);
    setenv("TESSERA_RECOVER", recover, 1);
    ASSERT_OK(tess_init());
}

/* tess_finalize after a fault point: whether device 1 failed (reached its point). */
static inline int emu_fault_end(void) {
    tess_dev_stats_t s1;
    ASSERT_OK(tess_device_stats(1, &s1));
    ASSERT_OK(tess_finalize());
    return s1.failed != 0;
}

/* A sweep around one call that returns TESS_OK or TESS_EDEVICE: at each point run(ctx, &info)
 * (operands restored first, then the call); after tess_finalize the call must have returned
 * TESS_OK, or TESS_EDEVICE with a message, and check(ctx, tag, rc, info) judges the result
 * (tag names the point). Fills in what ran: points k0..k - 1, hit of them reached, right
 * TESS_OK, edev TESS_EDEVICE. */
struct emu_sweep {
    const char *env, *recover, *desc; /* desc names the operands in messages */
    int kmax;
    emu_start_fn start;
    int (*run)(void *ctx, int64_t *info);
    void (*check)(void *ctx, const char *tag, int rc, int64_t info);
    void *ctx;
    int k0, k1, k, hit, right, edev; /* filled in */
};

static inline void emu_fault_sweep(struct emu_sweep *s) {
    int miss_run = 0;
    s->hit = s->right = s->edev = 0;
    emu_fault_range(s->env, s->kmax, &s->k0, &s->k1);
    for (s->k = s->k0; s->k <= s->k1 && miss_run < 6; s->k++) {
        emu_fault_init(s->start, s->k, s->recover);
        int64_t info = -77;
        int rc = s->run(s->ctx, &info);
        char msg[512], tag[96];
        snprintf(msg, sizeof msg, "%s", tess_last_error());
        int failed = emu_fault_end();
        s->hit += failed;
        miss_run = failed ? 0 : miss_run + 1;
        snprintf(tag, sizeof tag, "fault 1:%d (device 1 %s), TESSERA_RECOVER=%s:", s->k,
                 failed ? "failed" : "did not fail", s->recover);
        ASSERT_MSG(rc == TESS_OK || rc == TESS_EDEVICE, "%s %s: returned %d (%s)", tag, s->desc, rc,
                   msg);
        if (rc == TESS_EDEVICE)
            ASSERT_MSG(msg[0], "%s %s: TESS_EDEVICE without a message", tag, s->desc);
        s->check(s->ctx, tag, rc, info);
        if (rc == TESS_EDEVICE)
            s->edev++;
        else
            s->right++;
    }
}

#endif
