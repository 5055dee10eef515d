/* src/tools/tessera_gemm.c: tessera-gemm, the single-node GEMM job: random operands in
 * host memory, one warm-up and several timed tess_gemm calls, every result verified by the
 * probe-vector oracle, then the rate and each device's counters. Exit status 0 only if
 * every run passed verification. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe.h"
#include "tessera.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(void) {
    fprintf(stderr,
            "usage: tessera-gemm [-m M] [-n N] [-k K] [-p s|d|c|z] [-a N|T|C] [-b N|T|C]\n"
            "                    [-r reps] [--pinned] [--no-verify]\n"
            "  C = alpha op(A) op(B) + beta C on host matrices through the tessera runtime;\n"
            "  defaults: m = n = k = 2048, precision d, 3 timed runs after one warm-up;\n"
            "  --pinned allocates the operands with tess_malloc_host (page-locked on GPUs).\n"
            "  Devices and tiles come from the TESSERA_* knobs (tessera-info lists them).\n");
}

int main(int argc, char **argv) {
    int64_t m = 2048, n = -1, k = -1;
    int reps = 3, verify = 1;
    char prec = 'd', ta = 'N', tb = 'N';
    int pinned = 0;
    static struct option longopts[] = {{"no-verify", no_argument, 0, 'V'},
                                       {"pinned", no_argument, 0, 'P'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "m:n:k:p:a:b:r:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': m = atoll(optarg); break;
        case 'n': n = atoll(optarg); break;
        case 'k': k = atoll(optarg); break;
        case 'p': prec = optarg[0]; break;
        case 'a': ta = optarg[0]; break;
        case 'b': tb = optarg[0]; break;
        case 'r': reps = atoi(optarg); break;
        case 'V': verify = 0; break;
        case 'P': pinned = 1; break;
        default: usage(); return c == 'h' ? 0 : 2;
        }
    }
    if (n < 0) n = m;
    if (k < 0) k = m;
    const char *precs = "sdcz";
    const char *pp = strchr(precs, prec);
    if (!pp || !strchr("NTC", ta) || !strchr("NTC", tb) || m < 0 || n < 0 || k < 0 || reps < 1) {
        usage();
        return 2;
    }
    tess_dtype_t dt = (tess_dtype_t)(pp - precs);
    size_t es = dt == TESS_S ? 4 : dt == TESS_Z ? 16 : 8;
    tess_trans_t TA = ta == 'N' ? TESS_NO_TRANS : ta == 'T' ? TESS_TRANS : TESS_CONJ_TRANS;
    tess_trans_t TB = tb == 'N' ? TESS_NO_TRANS : tb == 'T' ? TESS_TRANS : TESS_CONJ_TRANS;
    int64_t arows = ta == 'N' ? m : k, acols = ta == 'N' ? k : m;
    int64_t brows = tb == 'N' ? k : n, bcols = tb == 'N' ? n : k;

    int rc = tess_init();
    if (rc) {
        fprintf(stderr, "tessera-gemm: tess_init: %s: %s\n", tess_strerror(rc), tess_last_error());
        return 1;
    }
    void *(*alloc)(size_t) = pinned ? tess_malloc_host : malloc;
    void (*release)(void *) = pinned ? tess_free_host : free;
    void *A = alloc((size_t)arows * acols * es + 1), *B = alloc((size_t)brows * bcols * es + 1);
    void *C = alloc((size_t)m * n * es + 1);
    if (!A || !B || !C) {
        fprintf(stderr, "tessera-gemm: cannot allocate the host matrices\n");
        return 1;
    }
    probe_fill(dt, A, arows, acols, arows ? arows : 1, 1);
    probe_fill(dt, B, brows, bcols, brows ? brows : 1, 2);
    double alpha[2] = {1.0, 0.0}, beta[2] = {0.5, 0.0};
    float alphaf[2] = {1.0f, 0.0f}, betaf[2] = {0.5f, 0.0f};
    const void *al = (dt == TESS_S || dt == TESS_C) ? (const void *)alphaf : (const void *)alpha;
    const void *be = (dt == TESS_S || dt == TESS_C) ? (const void *)betaf : (const void *)beta;
    double flops = (dt == TESS_C || dt == TESS_Z ? 8.0 : 2.0) * m * n * k;

    printf("tessera-gemm: %cgemm %c%c m=%lld n=%lld k=%lld, %s operands, %d devices, build %s\n",
           prec, ta, tb, (long long)m, (long long)n, (long long)k, pinned ? "pinned" : "pageable",
           tess_device_count(), tess_build_config());
    double *times = calloc((size_t)reps, sizeof *times);
    int bad = 0;
    for (int r = -1; r < reps; r++) {
        probe_fill(dt, C, m, n, m ? m : 1, 3 + (uint64_t)r);
        struct probe p;
        if (verify && probe_begin(&p, dt, m, n, C, m ? m : 1)) verify = 0;
        if (r == 0) tess_reset_stats();
        double t0 = now();
        rc = tess_gemm(dt, TESS_COL_MAJOR, TA, TB, m, n, k, al, A, arows ? arows : 1, B,
                       brows ? brows : 1, be, C, m ? m : 1);
        double t = now() - t0;
        if (rc) {
            fprintf(stderr, "tessera-gemm: %s: %s\n", tess_strerror(rc), tess_last_error());
            return 1;
        }
        const char *verdict = "not verified";
        if (verify) {
            double w = probe_check(&p, ta, tb, k, al, A, arows ? arows : 1, B, brows ? brows : 1,
                                   be, C, m ? m : 1);
            probe_end(&p);
            verdict = w <= 1.0 ? "verified" : "WRONG";
            bad += !(w <= 1.0);
            printf("  run %-7s %8.3f s  %9.3f TFLOP/s  %s (error/bound %.2e)\n",
                   r < 0 ? "warm-up" : "", t, flops / t * 1e-12, verdict, w);
        } else {
            printf("  run %-7s %8.3f s  %9.3f TFLOP/s  %s\n", r < 0 ? "warm-up" : "", t,
                   flops / t * 1e-12, verdict);
        }
        if (r >= 0) times[r] = t;
    }
    qsort(times, (size_t)reps, sizeof *times, cmp_double);
    double med = times[reps / 2];
    printf("median of %d: %.3f s, %.3f TFLOP/s%s\n", reps, med, flops / med * 1e-12,
           bad ? ", VERIFICATION FAILED" : "");
    printf("\nper device over the timed runs:\n");
    printf("  %-3s %-40s %6s %6s %8s %8s %8s %8s %8s %8s %8s %6s\n", "id", "name", "tasks",
           "stolen", "H2D GB", "D2H GB", "P2P GB", "L1 hit", "L2 hit", "miss", "evict", "busy%");
    double wall = 0;
    for (int r = 0; r < reps; r++) wall += times[r];
    for (int d = 0; d < tess_device_count(); d++) {
        tess_dev_stats_t s;
        if (tess_device_stats(d, &s)) continue;
        printf("  %-3d %-40.40s %6llu %6llu %8.2f %8.2f %8.2f %8llu %8llu %8llu %8llu %6.1f%s\n", d,
               s.name, (unsigned long long)s.tasks, (unsigned long long)s.stolen, s.bytes_h2d * 1e-9,
               s.bytes_d2h * 1e-9, s.bytes_p2p * 1e-9, (unsigned long long)s.l1_hits,
               (unsigned long long)s.l2_hits, (unsigned long long)s.misses,
               (unsigned long long)s.evictions, wall > 0 ? 100.0 * s.busy_s / wall : 0.0,
               s.failed ? " FAILED" : "");
    }
    release(A), release(B), release(C);
    free(times);
    tess_finalize();
    return bad ? 1 : 0;
}
