/* src/tools/tessera_crossover.c: tessera-crossover measures where the drop-in
 * (libtessera_blas.so) should send a GEMM: for a grid of shapes and precisions it times C = A B
 * (NN, alpha 1, beta 0, as numpy's a @ b) on pageable host operands on the CPU BLAS the drop-in
 * uses (TESSERA_CPU_BLAS, dlopen'ed: bench_lib.h) and through tess_gemm on the running
 * runtime, each after a warm-up as the median of up to --reps runs (calls under 2 ms timed in
 * batches); crossover_fit.c then fits the drop-in's model and reports. Shapes (s, d, c, z):
 * squares n = 64 .. --max-n, and m = n = S, k = 64 .. 2048 and n = k = S, m = 64 .. 2048 (S =
 * --skinny), measured in order of flops, so --time-limit cuts the largest; a CPU call
 * predicted past --point-max seconds is not run. --quick: a small grid and 60 s, for a check
 * of the tool or a machine without a GPU. Every result is checked on 64 entries of C against
 * sums taken here, under the oracle's bound (oracle.h); --selftest fits a made-up machine.
 * Exit status: 0, 1 a wrong result, an error or a failed self-test, 2 usage. Public API
 * only, plus the model's formula and defaults (crossover_model.h, dropin_defaults.h). */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_lib.h"
#include "crossover.h"
#include "oracle.h"
#include "tessera.h"

#define NSAMPLE 64 /* entries of C checked after every measured call */

/* ---- options ------------------------------------------------------------------------- */

struct cross_opts o = {
    .reps = 3, .max_n = 16384, .skinny = 8192, .time_limit = 170, .point_max = 4, .precs = "sdcz"};

static void usage(FILE *f) {
    fprintf(f,
            "usage: " PROG " [--quick] [-p PRECS] [--max-n N] [--skinny S] [--reps R]\n"
            "                         [--time-limit SEC] [--point-max SEC] [--csv FILE]\n"
            "  Times C = A B (beta 0, pageable operands) on the CPU BLAS and on tessera for\n"
            "  square and thin shapes, prints the crossovers and fits the drop-in's routing\n"
            "  model (src/blas/crossover_model.h): export TESSERA_BLAS_... lines and a C snippet.\n"
            "  -p PRECS        precisions, a subset of sdcz (default sdcz)\n"
            "  --max-n N       largest square (default 16384)\n"
            "  --skinny S      the long side of the thin shapes m = n = S, k <= 2048 and\n"
            "                  n = k = S, m <= 2048 (default 8192)\n"
            "  --reps R        timed runs per point after the warm-up, median (default 3)\n"
            "  --time-limit T  stop measuring after T seconds, fit what was measured (170)\n"
            "  --point-max T   skip a CPU run predicted to take longer than T seconds (4)\n"
            "  --csv FILE      the measured table as CSV\n"
            "  --quick         squares to 1024, S = 1024, thin sides to 256, limit 60 s\n"
            "  --selftest      fit synthetic measurements of a made-up GPU machine (no device\n"
            "                  is used) and check that the fit routes them right\n"
            "  Devices, tiles, the CPU BLAS: the TESSERA_* knobs (docs/knobs.md).\n");
}

/* ---- threads, fill -------------------------------------------------------------- */

/* Random 32-bit floats of magnitude in [0.5, 1) and random sign: read as any precision
 * (a double's high word is one of them) they are normal numbers, no NaN, Inf or denormal,
 * so one fill serves s, d, c and z. */
struct fill_arg {
    float *x;
    size_t n;
    uint64_t seed;
};
static void *fill_part(void *p) {
    struct fill_arg *a = p;
    uint64_t s = a->seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < a->n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        float v = 0.5f + (float)(s >> 40) * (0.5f / 16777216.0f);
        a->x[i] = (s & 1) ? -v : v;
    }
    return NULL;
}
static void fill(void *x, size_t bytes, uint64_t seed) {
    long nt = sysconf(_SC_NPROCESSORS_ONLN);
    if (nt < 1) nt = 1;
    if (nt > 64) nt = 64;
    size_t n = bytes / sizeof(float), per = (n + (size_t)nt - 1) / (size_t)nt;
    pthread_t th[64];
    struct fill_arg a[64];
    int started = 0;
    for (long t = 0; t < nt; t++) {
        size_t lo = (size_t)t * per, hi = lo + per < n ? lo + per : n;
        if (lo >= hi) break;
        a[t] = (struct fill_arg){(float *)x + lo, hi - lo, seed * 1000 + (uint64_t)t};
        if (pthread_create(&th[started], NULL, fill_part, &a[t]) == 0)
            started++;
        else
            fill_part(&a[t]);
    }
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
}

/* ---- the grid ------------------------------------------------------------------------ */

const char *const fam_name[NFAM] = {"square", "thin k", "thin m"};

struct point pts[MAXPTS];
int npts;

static void add_point(tess_dtype_t dt, int fam, int64_t m, int64_t n, int64_t k, int64_t size) {
    if (npts == MAXPTS) return;
    struct point *p = &pts[npts++];
    *p = (struct point){
        .dt = dt, .fam = fam, .m = m, .n = n, .k = k, .size = size, .cpu = NAN, .dev = NAN};
    p->cost = tess__blas_shape_cost(TESS__SHAPE_GEMM, dt, (double)m, (double)n, (double)k,
                                    (double)k, 0);
}

static int by_flops(const void *a, const void *b) {
    const struct point *x = a, *y = b;
    double fx = x->cost.flops / (is_complex(x->dt) ? 8 : 2);
    double fy = y->cost.flops / (is_complex(y->dt) ? 8 : 2);
    if (fx != fy) return fx < fy ? -1 : 1;
    static const int order[4] = {1, 0, 3, 2}; /* d, s, z, c: numpy's float64 first */
    return order[x->dt] - order[y->dt];
}

static size_t zmax(size_t a, size_t b) { return a > b ? a : b; }

/* ---- the two calls --------------------------------------------------------------------- */

static struct cpublas cb; /* the CPU BLAS */
static void *bufA, *bufB, *bufC;

static void cpu_gemm(const struct point *p) {
    static const double one[2] = {1, 0}, zero[2] = {0, 0};
    static const float onef[2] = {1, 0}, zerof[2] = {0, 0};
    int sp = p->dt == TESS_S || p->dt == TESS_C;
    cpublas_gemm(&cb, p->dt, (int)p->m, (int)p->n, (int)p->k,
                 sp ? (const void *)onef : (const void *)one, bufA, (int)p->m, bufB, (int)p->k,
                 sp ? (const void *)zerof : (const void *)zero, bufC, (int)p->m);
}

static int dev_err;
static void dev_gemm(const struct point *p) {
    static const double one[2] = {1, 0}, zero[2] = {0, 0};
    static const float onef[2] = {1, 0}, zerof[2] = {0, 0};
    int sp = p->dt == TESS_S || p->dt == TESS_C;
    int rc = tess_gemm(p->dt, TESS_COL_MAJOR, TESS_NO_TRANS, TESS_NO_TRANS, p->m, p->n, p->k,
                       sp ? (const void *)onef : (const void *)one, bufA, p->m, bufB, p->k,
                       sp ? (const void *)zerof : (const void *)zero, bufC, p->m);
    if (rc && !dev_err) {
        dev_err = rc;
        fprintf(stderr, PROG ": tess_gemm %c %lldx%lldx%lld: %s: %s\n", "sdcz"[p->dt],
                (long long)p -> m, (long long)p -> n, (long long)p -> k, tess_strerror(rc),
                tess_last_error());
    }
}

/* One warm-up call (its time: t0), then samples of `inner` calls each (inner such that a
 * sample lasts >= 2 ms), as many as --reps and --point-max allow (at least one): the median
 * per call. */
static double measure(void (*call)(const struct point *), const struct point *p, int *runs) {
    double t = now();
    call(p);
    double t0 = now() - t;
    int inner = 1;
    if (t0 < 2e-3) inner = (int)fmin(1000, ceil(2e-3 / fmax(t0, 1e-7)));
    int samples = (int)fmin(o.reps, floor(o.point_max / fmax(t0 * inner, 1e-9)));
    if (samples < 1) samples = 1;
    double v[64];
    if (samples > 64) samples = 64;
    for (int s = 0; s < samples; s++) {
        t = now();
        for (int i = 0; i < inner; i++) call(p);
        v[s] = (now() - t) / inner;
    }
    *runs = samples;
    return median_of(v, samples);
}

/* Check NSAMPLE entries of C against sums taken here (long double) from A and B, under the
 * oracle's bound (oracle.h: one row of one entry); 1 fails. */
static int check_c(const struct point *p) {
    const int cplx = p->dt == TESS_C || p->dt == TESS_Z, sp = p->dt == TESS_S || p->dt == TESS_C;
    struct oracle_bound b;
    oracle_bound_init(&b, p->dt, p->k, 1, 1);
    for (int i = 0; i < NSAMPLE; i++) {
        int64_t r = (int64_t)((uint64_t)i * 7919u % (uint64_t)p->m);
        int64_t c = (int64_t)((uint64_t)i * 104729u % (uint64_t)p->n);
        long double e[2] = {0, 0}, mag = 0;
        for (int64_t l = 0; l < p->k; l++) {
            size_t ia = (size_t)r + (size_t)l * (size_t)p->m,
                   ib = (size_t)l + (size_t)c * (size_t)p->k;
            long double ar, ai = 0, br, bi = 0;
            if (sp) {
                const float *A = bufA, *B = bufB;
                ar = cplx ? A[2 * ia] : A[ia], br = cplx ? B[2 * ib] : B[ib];
                if (cplx) ai = A[2 * ia + 1], bi = B[2 * ib + 1];
            } else {
                const double *A = bufA, *B = bufB;
                ar = cplx ? A[2 * ia] : A[ia], br = cplx ? B[2 * ib] : B[ib];
                if (cplx) ai = A[2 * ia + 1], bi = B[2 * ib + 1];
            }
            e[0] += ar * br - ai * bi, e[1] += ar * bi + ai * br;
            mag += (fabsl(ar) + fabsl(ai)) * (fabsl(br) + fabsl(bi));
        }
        size_t at = (size_t)r + (size_t)c * (size_t)p->m;
        long double y[2] = {0, 0}, yabs;
        if (sp)
            y[0] = cplx ? ((float *)bufC)[2 * at] : ((float *)bufC)[at];
        else
            y[0] = cplx ? ((double *)bufC)[2 * at] : ((double *)bufC)[at];
        if (cplx) y[1] = sp ? ((float *)bufC)[2 * at + 1] : ((double *)bufC)[2 * at + 1];
        yabs = fabsl(y[0]) + fabsl(y[1]);
        if (!(oracle_rows(&b, 1, y, &yabs, e, &mag, 0, NULL) <= 1)) return 1;
    }
    return 0;
}

/* ---- main ------------------------------------------------------------------------------ */

static int parse_args(int argc, char **argv) {
    enum { O_QUICK = 256, O_MAXN, O_SKINNY, O_REPS, O_LIMIT, O_PMAX, O_CSV, O_SELFTEST };
    static const struct option lo[] = {{"quick", no_argument, 0, O_QUICK},
                                       {"max-n", required_argument, 0, O_MAXN},
                                       {"skinny", required_argument, 0, O_SKINNY},
                                       {"reps", required_argument, 0, O_REPS},
                                       {"time-limit", required_argument, 0, O_LIMIT},
                                       {"point-max", required_argument, 0, O_PMAX},
                                       {"csv", required_argument, 0, O_CSV},
                                       {"selftest", no_argument, 0, O_SELFTEST},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int c, set_maxn = 0, set_skinny = 0, set_limit = 0, set_pmax = 0;
    char *end;
    while ((c = getopt_long(argc, argv, "p:h", lo, NULL)) != -1) {
        errno = 0;
        switch (c) {
        case 'p':
            if (!*optarg || strlen(optarg) > 4 || strspn(optarg, "sdcz") != strlen(optarg)) {
                fprintf(stderr, PROG ": -p: '%s' is not a subset of sdcz\n", optarg);
                return 2;
            }
            snprintf(o.precs, sizeof o.precs, "%s", optarg);
            break;
        case O_QUICK: o.quick = 1; break;
        case O_MAXN:
        case O_SKINNY: {
            long long v = strtoll(optarg, &end, 10);
            if (errno || *end || v < 64 || v > 65536) {
                fprintf(stderr, PROG ": '%s' is not a size in 64..65536\n", optarg);
                return 2;
            }
            if (c == O_MAXN)
                o.max_n = v, set_maxn = 1;
            else
                o.skinny = v, set_skinny = 1;
            break;
        }
        case O_REPS: {
            long v = strtol(optarg, &end, 10);
            if (errno || *end || v < 1 || v > 64) {
                fprintf(stderr, PROG ": --reps: '%s' is not in 1..64\n", optarg);
                return 2;
            }
            o.reps = (int)v;
            break;
        }
        case O_LIMIT:
        case O_PMAX: {
            double v = strtod(optarg, &end);
            if (errno || *end || !(v > 0)) {
                fprintf(stderr, PROG ": '%s' is not a positive number of seconds\n", optarg);
                return 2;
            }
            if (c == O_LIMIT)
                o.time_limit = v, set_limit = 1;
            else
                o.point_max = v, set_pmax = 1;
            break;
        }
        case O_CSV: o.csv = optarg; break;
        case O_SELFTEST: o.selftest = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, PROG ": unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o.quick) {
        if (!set_maxn) o.max_n = 1024;
        if (!set_skinny) o.skinny = 1024;
        if (!set_limit) o.time_limit = 60;
        if (!set_pmax) o.point_max = 1;
    }
    return 0;
}

/* what the measurement found, for the fit and the report */
double best_cpu[4], best_dev[4], best_bw;
int n_mismatch, n_time, ndev, ncuda;
double t_measured;

void build_grid(void) {
    /* the grid: squares (powers of two and 1.5 times them up to 6144, then powers of two),
     * and the thin families (64 .. 2048, at most a quarter of S; --quick: to 256) */
    int64_t thin_top = o.quick ? 256 : 2048;
    for (const char *pc = o.precs; *pc; pc++) {
        tess_dtype_t dt = (tess_dtype_t)(strchr("sdcz", *pc) - "sdcz");
        for (int64_t s = 64; s <= o.max_n; s *= 2) {
            add_point(dt, FAM_SQUARE, s, s, s, s);
            if (s * 3 / 2 <= o.max_n && s * 3 / 2 <= 6144)
                add_point(dt, FAM_SQUARE, s * 3 / 2, s * 3 / 2, s * 3 / 2, s * 3 / 2);
        }
        for (int64_t s = 64; s <= thin_top && s * 4 <= o.skinny; s *= 2) {
            add_point(dt, FAM_K, o.skinny, o.skinny, s, s);
            add_point(dt, FAM_M, s, o.skinny, o.skinny, s);
        }
    }
    qsort(pts, (size_t)npts, sizeof pts[0], by_flops);
}

/* Allocate and fill the operands, start the runtime, print the header, measure every point
 * of the grid in order of flops. 0, or 1 when the machine cannot run it. */
static int measure_all(void) {
    int rc;
    /* host memory: one pageable buffer per operand, for the largest point; leave out the
     * points that would not fit in half of the physical memory */
    double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    size_t szA = 0, szB = 0, szC = 0;
    for (int i = 0; i < npts; i++) {
        struct point *p = &pts[i];
        size_t es = esize(p->dt);
        size_t a = (size_t)(p->m * p->k) * es, b = (size_t)(p->k * p->n) * es,
               cc = (size_t)(p->m * p->n) * es;
        if (phys > 0 && (double)(zmax(a, szA) + zmax(b, szB) + zmax(cc, szC)) > 0.5 * phys) {
            p->skip = "memory";
            continue;
        }
        szA = zmax(a, szA), szB = zmax(b, szB), szC = zmax(cc, szC);
    }
    bufA = malloc(szA), bufB = malloc(szB), bufC = malloc(szC);
    if (!bufA || !bufB || !bufC) {
        fprintf(stderr, PROG ": cannot allocate %.3g GB of host memory\n",
                (double)(szA + szB + szC) / 1e9);
        return 1;
    }
    fill(bufA, szA, 1), fill(bufB, szB, 2);
    memset(bufC, 0, szC); /* touch every page once, as a numpy array's would be */
    double t_fill = elapsed();

    if (cpublas_open(&cb)) return 1; /* the message is printed */
    double t = now();
    rc = tess_init();
    double t_init = now() - t;
    if (rc) {
        fprintf(stderr, PROG ": tess_init: %s: %s\n", tess_strerror(rc), tess_last_error());
        return 1;
    }

    /* the header: the two sides */
    ndev = tess_device_count();
    char devs[512] = "";
    for (int i = 0; i < ndev; i++) {
        tess_dev_stats_t s;
        if (tess_device_stats(i, &s)) continue;
        if (s.kind == TESS_DEV_CUDA) ncuda++;
        size_t l = strlen(devs);
        snprintf(devs + l, sizeof devs - l, "%s%s (%s)", i ? ", " : "", s.name,
                 s.kind == TESS_DEV_CUDA  ? "GPU"
                 : s.kind == TESS_DEV_CPU ? "CPU worker"
                                          : "emulated");
    }
    int threads = cb.get_num_threads ? cb.get_num_threads() : 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("# " PROG ": C = A B (NN, beta 0), pageable host operands, median of up to %d runs "
           "after a warm-up\n",
           o.reps);
    Dl_info dli;
    const char *blas_file = dladdr(cb.gemm[TESS_D], &dli) && dli.dli_fname ? dli.dli_fname : "?";
    printf("# cpu: %s (%s), %d threads, %ld cores\n", cb.name, blas_file, threads, cores);
    printf("# dev: tessera on %d device%s: %s\n", ndev, ndev == 1 ? "" : "s", devs);
    printf("# runtime start (tess_init): %.3f s; operands %.3g GB filled in %.1f s\n", t_init,
           (double)(szA + szB + szC) / 1e9, t_fill);
    if (!ncuda)
        printf("# NO GPU: the device side is %s; the drop-in does not route to it unless "
               "TESSERA_BLAS_EMULATED=1 (emulated devices) or TESSERA_BLAS_FORCE=1\n",
               ndev ? "what the runtime has" : "nothing");

    /* OpenBLAS's threads start at its first call: start them before timing */
    {
        struct point w = {.dt = TESS_D, .m = 256, .n = 256, .k = 256};
        if ((size_t)(256 * 256 * 8) <= szA && (size_t)(256 * 256 * 8) <= szB &&
            (size_t)(256 * 256 * 8) <= szC) {
            cpu_gemm(&w);
            dev_gemm(&w);
            if (dev_err) return 1;
        }
    }

    /* ---- measure, in order of flops ---- */
    for (int i = 0; i < npts; i++) {
        struct point *p = &pts[i];
        if (p->skip) continue;
        int dt = p->dt;
        /* predictions from the best rates so far (optimistic: a skipped point is surely long) */
        double pc = best_cpu[dt] > 0 ? p->cost.flops / best_cpu[dt] : 0;
        double pd = best_dev[dt] > 0 ? fmax(p->cost.flops / best_dev[dt], p->cost.bytes / best_bw)
                                     : 0;
        int do_cpu = pc <= o.point_max;
        double need = (do_cpu ? pc * (1 + fmin(o.reps, o.point_max / fmax(pc, 1e-9))) : 0) +
                      pd * (1 + fmin(o.reps, o.point_max / fmax(pd, 1e-9)));
        if (elapsed() + need > o.time_limit) {
            p->skip = "time";
            n_time++;
            continue;
        }
        if (do_cpu) {
            p->cpu = measure(cpu_gemm, p, &p->cpu_n);
            best_cpu[dt] = fmax(best_cpu[dt], p->cost.flops / p->cpu);
            if (check_c(p)) {
                p->mismatch = 1, n_mismatch++;
                fprintf(stderr, PROG ": %c %lldx%lldx%lld: the CPU BLAS's result is wrong\n",
                        "sdcz"[dt], (long long)p -> m, (long long)p -> n, (long long)p -> k);
            }
        }
        memset(bufC, 0, (size_t)(p->m * p->n) * esize(dt));
        p->dev = measure(dev_gemm, p, &p->dev_n);
        if (dev_err) {
            p->dev = NAN, p->dev_n = 0, p->skip = "error";
            break;
        }
        best_dev[dt] = fmax(best_dev[dt], p->cost.flops / p->dev);
        best_bw = fmax(best_bw, p->cost.bytes / p->dev);
        if (check_c(p)) {
            p->mismatch = 1, n_mismatch++;
            fprintf(stderr, PROG ": %c %lldx%lldx%lld: tessera's result is wrong\n", "sdcz"[dt],
                    (long long)p -> m, (long long)p -> n, (long long)p -> k);
        }
        char cs[32] = "skipped";
        if (do_cpu) snprintf(cs, sizeof cs, "%.4g s", p->cpu);
        fprintf(stderr, "  [%4.0f s] %c %-6s %6lld %6lld %6lld  cpu %-10s dev %.4g s\n", elapsed(),
                "sdcz"[dt], fam_name[p->fam], (long long)p -> m, (long long)p -> n,
                (long long)p -> k, cs, p -> dev);
    }
    t_measured = elapsed();
    tess_finalize();

    return 0;
}

int main(int argc, char **argv) {
    int rc = parse_args(argc, argv);
    if (rc) return rc;
    t_start = now();
    bench_prog = PROG;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (o.selftest) return selftest();
    build_grid();
    if (measure_all()) return 1;
    struct tess__blas_model fit, def, now_md;
    double rms;
    const char *margin_at;
    if (fit_model(&fit, &def, &now_md, &rms, &margin_at)) return 1;
    report(&fit, &now_md, rms, margin_at);
    return n_mismatch || dev_err ? 1 : 0;
}
