/* src/tools/tessera_crossover.c: tessera-crossover measures, on the machine where it runs,
 * where the drop-in library (libtessera_blas.so) should send a GEMM: the CPU BLAS or
 * tessera. For a grid of shapes and precisions it times C = A B (NN, alpha = 1, beta = 0,
 * as numpy's a @ b) on pageable host operands (malloc, as numpy passes them), twice:
 *   cpu   the CPU BLAS tessera itself uses (TESSERA_CPU_BLAS, dlopen'ed by src/base/hostblas.c),
 *   dev   tess_gemm on the running runtime (warm: started once, before any timing),
 * each after a warm-up call as the median of up to --reps runs (a call shorter than 2 ms is
 * timed in batches). Then it prints the table of measured times, the measured crossover
 * shape of each family next to the model's, and fits the crossover model of
 * src/blas/model.h to the measurements:
 *   cpu rate per precision   the best rate the CPU BLAS reached (a bound: the model never
 *                            overestimates a CPU time, so it never sends a call to the
 *                            devices for lack of CPU speed it did not see);
 *   device rate per precision, half-rate dimension, link bandwidth, per-call overhead
 *                            least squares on log time over every device measurement
 *                            (Nelder-Mead on the logs of the parameters);
 *   margin                   the smallest factor (at least 1.2) for which no measured
 *                            shape the devices did not win by 5% is routed to them.
 * and prints them as `export TESSERA_BLAS_...=value` lines and as the #define block of
 * src/base/dropin_defaults.h (the built-in defaults).
 *
 * Shapes (each in s, d, c, z): squares n = 64 .. --max-n (16384), and the two thin families
 * m = n = S, k = 64 .. 2048 and n = k = S, m = 64 .. 2048 with S = --skinny (8192). They are
 * measured in order of flops, precisions interleaved, so a --time-limit (170 s) cuts the
 * largest ones; a CPU call predicted (from the best rate so far) to take longer than
 * --point-max seconds is not run: its CPU time is taken from the fitted rate (marked ~).
 * --quick: squares to 1024, S = 1024, k and m to 256, 60 s: a check of the tool itself, and
 * the run for a machine without a GPU (whatever devices the runtime has: emulated devices,
 * the CPU worker; the drop-in routes nothing to those unless told, see docs/dropin.md).
 *
 * Every result (CPU BLAS and tessera) is checked on 64 entries of C against sums taken here
 * from A and B (a wrong result is reported and makes the exit status 1). --selftest fits
 * synthetic measurements of a made-up machine instead (no device used) and checks the fit.
 * Exit status: 0, 1 a wrong result, an error or a failed self-test, 2 usage.
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blas/model.h"
#include "hostblas.h"
#include "internal.h"
#include "oracle.h"
#include "tessera.h"

#define PROG "tessera-crossover"
#define NSAMPLE 64          /* entries of C checked after every measured call */
#define MAXPTS 1024

/* ---- options ------------------------------------------------------------------------- */

static struct {
    int quick, reps, selftest;
    int64_t max_n, skinny;
    double time_limit, point_max;
    char precs[8];
    const char *csv;
} o = {.reps = 3, .max_n = 16384, .skinny = 8192, .time_limit = 170, .point_max = 4,
       .precs = "sdcz"};

static void usage(FILE *f) {
    fprintf(f,
            "usage: " PROG " [--quick] [-p PRECS] [--max-n N] [--skinny S] [--reps R]\n"
            "                         [--time-limit SEC] [--point-max SEC] [--csv FILE]\n"
            "  Times C = A B (beta 0, pageable operands) on the CPU BLAS and on tessera for\n"
            "  square and thin shapes, prints the crossovers and fits the drop-in's routing\n"
            "  model (src/blas/model.h): export TESSERA_BLAS_... lines and a C snippet.\n"
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

/* ---- clocks, threads, fill -------------------------------------------------------------- */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static double t_start;
static double elapsed(void) { return now() - t_start; }

/* Random 32-bit floats of magnitude in [0.5, 1) and random sign: read as any precision
 * (a double's high word is one of them) they are normal numbers, no NaN, Inf or denormal,
 * so one fill serves s, d, c and z. */
struct fill_arg { float *x; size_t n; uint64_t seed; };
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
        if (pthread_create(&th[started], NULL, fill_part, &a[t]) == 0) started++;
        else fill_part(&a[t]);
    }
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
}

/* ---- the grid ------------------------------------------------------------------------ */

enum { FAM_SQUARE, FAM_K, FAM_M, NFAM };
static const char *const fam_name[NFAM] = {"square", "thin k", "thin m"};

struct point {
    tess_dtype_t dt;
    int fam;
    int64_t m, n, k, size;     /* size: what varies in the family (n, k or m) */
    struct tess__blas_cost cost;
    double cpu, dev;           /* median seconds; NAN: not measured */
    int cpu_n, dev_n;          /* runs behind the median (0: not measured) */
    const char *skip;          /* why not measured, or NULL */
    int mismatch;
};
static struct point pts[MAXPTS];
static int npts;

static void add_point(tess_dtype_t dt, int fam, int64_t m, int64_t n, int64_t k, int64_t size) {
    if (npts == MAXPTS) return;
    struct point *p = &pts[npts++];
    *p = (struct point){.dt = dt, .fam = fam, .m = m, .n = n, .k = k, .size = size,
                        .cpu = NAN, .dev = NAN};
    p->cost = tess__blas_cost(TESS__BLAS_GEMM, dt, (double)m, (double)n, (double)k, (double)k, 0);
}

static int by_flops(const void *a, const void *b) {
    const struct point *x = a, *y = b;
    double fx = x->cost.flops / tess__dtypes[x->dt].flop_mul;
    double fy = y->cost.flops / tess__dtypes[y->dt].flop_mul;
    if (fx != fy) return fx < fy ? -1 : 1;
    static const int order[4] = {1, 0, 3, 2};  /* d, s, z, c: numpy's float64 first */
    return order[x->dt] - order[y->dt];
}

/* ---- the two calls --------------------------------------------------------------------- */

static const struct tess__hostblas *hb;
static void *bufA, *bufB, *bufC;

static void cpu_gemm(const struct point *p) {
    const int m = (int)p->m, n = (int)p->n, k = (int)p->k;
    static const float s1 = 1, s0 = 0;
    static const double d1 = 1, d0 = 0;
    static const float c1[2] = {1, 0}, c0[2] = {0, 0};
    static const double z1[2] = {1, 0}, z0[2] = {0, 0};
    const enum CBLAS_ORDER cm = CblasColMajor;
    const enum CBLAS_TRANSPOSE nt = CblasNoTrans;
    switch (p->dt) {
    case TESS_S: hb->sgemm(cm, nt, nt, m, n, k, s1, bufA, m, bufB, k, s0, bufC, m); break;
    case TESS_D: hb->dgemm(cm, nt, nt, m, n, k, d1, bufA, m, bufB, k, d0, bufC, m); break;
    case TESS_C: hb->cgemm(cm, nt, nt, m, n, k, c1, bufA, m, bufB, k, c0, bufC, m); break;
    case TESS_Z: hb->zgemm(cm, nt, nt, m, n, k, z1, bufA, m, bufB, k, z0, bufC, m); break;
    }
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
                (long long)p->m, (long long)p->n, (long long)p->k, tess_strerror(rc),
                tess_last_error());
    }
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
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
    qsort(v, (size_t)samples, sizeof v[0], cmp_d);
    *runs = samples;
    return samples % 2 ? v[samples / 2] : 0.5 * (v[samples / 2 - 1] + v[samples / 2]);
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
            size_t ia = (size_t)r + (size_t)l * (size_t)p->m, ib = (size_t)l + (size_t)c * (size_t)p->k;
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
        if (sp) y[0] = cplx ? ((float *)bufC)[2 * at] : ((float *)bufC)[at];
        else y[0] = cplx ? ((double *)bufC)[2 * at] : ((double *)bufC)[at];
        if (cplx) y[1] = sp ? ((float *)bufC)[2 * at + 1] : ((double *)bufC)[2 * at + 1];
        yabs = fabsl(y[0]) + fabsl(y[1]);
        if (!(oracle_rows(&b, 1, y, &yabs, e, &mag, 0, NULL) <= 1)) return 1;
    }
    return 0;
}

/* ---- the fit --------------------------------------------------------------------------- */


/* parameters in log: overhead (s), link (B/s), half, rate s, d, c, z (flop/s) */
enum { X_O, X_L, X_H, X_R0, NX = X_R0 + 4 };

static void model_from_x(const double *x, struct tess__blas_model *md) {
    md->overhead_us = exp(x[X_O]) * 1e6;
    md->link_gbs = exp(x[X_L]) / 1e9;
    md->dev_half = exp(x[X_H]);
    for (int p = 0; p < 4; p++) md->dev_gflops[p] = exp(x[X_R0 + p]) / 1e9;
}

static double bound_penalty(double v, double lo, double hi) {
    return v < lo ? 1e3 * (lo - v) * (lo - v) : v > hi ? 1e3 * (v - hi) * (v - hi) : 0;
}

static double loss(const double *x) {
    struct tess__blas_model md = {.margin = 1};
    model_from_x(x, &md);
    double s = 0;
    for (int i = 0; i < npts; i++) {
        if (!(pts[i].dev > 0)) continue;
        double r = log(tess__blas_model_dev(&md, pts[i].dt, &pts[i].cost)) - log(pts[i].dev);
        s += r * r;
    }
    /* keep the parameters where they mean something: half-rate dimension 1 .. 65536,
     * overhead 1 us .. 1 s, link 0.01 .. 10000 GB/s (a device without copies, such as the
     * CPU worker, has no link to fit) */
    s += bound_penalty(x[X_H], 0, log(65536.0));
    s += bound_penalty(x[X_O], log(1e-6), 0);
    s += bound_penalty(x[X_L], log(1e7), log(1e13));
    return s;
}

/* Nelder-Mead (reflection 1, expansion 2, contraction 0.5, shrink 0.5) from x, in place. */
static double nelder_mead(double *x, int n, double step, int iters) {
    double sx[NX + 1][NX], fv[NX + 1], c[NX], xr[NX], xe[NX];
    for (int i = 0; i <= n; i++) {
        memcpy(sx[i], x, sizeof(double) * (size_t)n);
        if (i) sx[i][i - 1] += step;
        fv[i] = loss(sx[i]);
    }
    for (int it = 0; it < iters; it++) {
        /* order: best first */
        for (int i = 1; i <= n; i++)
            for (int j = i; j > 0 && fv[j] < fv[j - 1]; j--) {
                double t = fv[j];
                fv[j] = fv[j - 1], fv[j - 1] = t;
                for (int q = 0; q < n; q++) t = sx[j][q], sx[j][q] = sx[j - 1][q], sx[j - 1][q] = t;
            }
        if (fv[n] - fv[0] < 1e-12 * (1 + fv[0])) break;
        for (int q = 0; q < n; q++) {
            c[q] = 0;
            for (int i = 0; i < n; i++) c[q] += sx[i][q] / n;
        }
        for (int q = 0; q < n; q++) xr[q] = c[q] + (c[q] - sx[n][q]);
        double fr = loss(xr);
        if (fr < fv[0]) {
            for (int q = 0; q < n; q++) xe[q] = c[q] + 2 * (c[q] - sx[n][q]);
            double fe = loss(xe);
            if (fe < fr) memcpy(sx[n], xe, sizeof(double) * (size_t)n), fv[n] = fe;
            else memcpy(sx[n], xr, sizeof(double) * (size_t)n), fv[n] = fr;
        } else if (fr < fv[n - 1]) {
            memcpy(sx[n], xr, sizeof(double) * (size_t)n), fv[n] = fr;
        } else {
            int outside = fr < fv[n];
            for (int q = 0; q < n; q++)
                xe[q] = outside ? c[q] + 0.5 * (xr[q] - c[q]) : c[q] + 0.5 * (sx[n][q] - c[q]);
            double fc = loss(xe);
            if (fc < (outside ? fr : fv[n])) {
                memcpy(sx[n], xe, sizeof(double) * (size_t)n), fv[n] = fc;
            } else {
                for (int i = 1; i <= n; i++) {
                    for (int q = 0; q < n; q++) sx[i][q] = sx[0][q] + 0.5 * (sx[i][q] - sx[0][q]);
                    fv[i] = loss(sx[i]);
                }
            }
        }
    }
    int best = 0;
    for (int i = 1; i <= n; i++)
        if (fv[i] < fv[best]) best = i;
    memcpy(x, sx[best], sizeof(double) * (size_t)n);
    return fv[best];
}

/* measured CPU time, or the model's (rate bound) where the CPU run was skipped */
static double cpu_time(const struct point *p, const struct tess__blas_model *md, int *est) {
    *est = !(p->cpu > 0);
    return *est ? tess__blas_model_cpu(md, p->dt, &p->cost) : p->cpu;
}

/* 1: the devices won this measured point by 5% or more; 0: lost; -1: not measured */
static int dev_won(const struct point *p, const struct tess__blas_model *md) {
    int est;
    if (!(p->dev > 0)) return -1;
    double c = cpu_time(p, md, &est);
    return p->dev * 1.05 < c;
}

/* The crossover of one family: the smallest size from which the devices win at every
 * larger size. Measured (over measured points): -1 none won, 0 nothing measured. Model:
 * scanned on a fine grid up to the family's largest size, -1 never. */
static int64_t measured_crossover(tess_dtype_t dt, int fam, const struct tess__blas_model *md) {
    int64_t from = -1;
    int any = 0;
    for (int i = 0; i < npts; i++) {  /* pts is sorted by flops: sizes ascend in a family */
        const struct point *p = &pts[i];
        if (p->dt != dt || p->fam != fam) continue;
        int w = dev_won(p, md);
        if (w < 0) continue;
        any = 1;
        if (w && from < 0) from = p->size;
        if (!w) from = -1;
    }
    return any ? from : 0;
}

static void family_shape(int fam, int64_t s, int64_t *m, int64_t *n, int64_t *k) {
    switch (fam) {
    case FAM_SQUARE: *m = *n = *k = s; break;
    case FAM_K: *m = *n = o.skinny, *k = s; break;
    default: *m = s, *n = *k = o.skinny; break;
    }
}

static int64_t model_crossover(tess_dtype_t dt, int fam, int64_t top,
                               const struct tess__blas_model *md) {
    int64_t from = -1;
    for (double s = 16; s <= (double)top * 1.0001; s *= 1.02) {
        int64_t m, n, k, z = (int64_t)llround(s);
        family_shape(fam, z, &m, &n, &k);
        struct tess__blas_cost c = tess__blas_cost(TESS__BLAS_GEMM, dt, (double)m, (double)n,
                                                   (double)k, (double)k, 0);
        int d = tess__blas_model_to_dev(md, dt, &c);
        if (d && from < 0) from = z;
        if (!d) from = -1;
    }
    return from;
}

static void fmt_cross(char *buf, size_t n, int64_t v) {
    if (v == 0) snprintf(buf, n, "-");
    else if (v < 0) snprintf(buf, n, "none");
    else snprintf(buf, n, "%lld", (long long)v);
}

/* a knob value: integers above 100, three significant digits below */
static void fmt_num(char *buf, size_t n, double v) {
    if (v >= 100) snprintf(buf, n, "%.0f", v);
    else snprintf(buf, n, "%.3g", v);
}

/* ---- main ------------------------------------------------------------------------------ */

static int parse_args(int argc, char **argv) {
    enum { O_QUICK = 256, O_MAXN, O_SKINNY, O_REPS, O_LIMIT, O_PMAX, O_CSV, O_SELFTEST };
    static const struct option lo[] = {
        {"quick", no_argument, 0, O_QUICK},        {"max-n", required_argument, 0, O_MAXN},
        {"skinny", required_argument, 0, O_SKINNY}, {"reps", required_argument, 0, O_REPS},
        {"time-limit", required_argument, 0, O_LIMIT},
        {"point-max", required_argument, 0, O_PMAX}, {"csv", required_argument, 0, O_CSV},
        {"selftest", no_argument, 0, O_SELFTEST}, {"help", no_argument, 0, 'h'},
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
        case O_MAXN: case O_SKINNY: {
            long long v = strtoll(optarg, &end, 10);
            if (errno || *end || v < 64 || v > 65536) {
                fprintf(stderr, PROG ": '%s' is not a size in 64..65536\n", optarg);
                return 2;
            }
            if (c == O_MAXN) o.max_n = v, set_maxn = 1;
            else o.skinny = v, set_skinny = 1;
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
        case O_LIMIT: case O_PMAX: {
            double v = strtod(optarg, &end);
            if (errno || *end || !(v > 0)) {
                fprintf(stderr, PROG ": '%s' is not a positive number of seconds\n", optarg);
                return 2;
            }
            if (c == O_LIMIT) o.time_limit = v, set_limit = 1;
            else o.point_max = v, set_pmax = 1;
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
static double best_cpu[4], best_dev[4], best_bw;  /* best flop/s per precision, bytes/s */
static int n_mismatch, n_time, ndev, ncuda;
static double t_measured;

static void build_grid(void) {
    /* the grid: squares (powers of two and 1.5 times them up to 6144, then powers of two),
     * and the thin families (64 .. 2048, at most a quarter of S; --quick: to 256) */
    int64_t thin_top = o.quick ? 256 : 2048;
    for (const char *pc = o.precs; *pc; pc++) {
        tess_dtype_t dt = (tess_dtype_t)(strchr("sdcz", *pc) - "sdcz");
        for (int64_t s = 64; s <= o.max_n; s *= 2) {
            add_point(dt, FAM_SQUARE, s, s, s, s);
            if (s * 3 / 2 <= o.max_n && s * 3 / 2 <= 6144) add_point(dt, FAM_SQUARE, s * 3 / 2, s * 3 / 2, s * 3 / 2, s * 3 / 2);
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
        size_t es = tess__dtypes[p->dt].size;
        size_t a = (size_t)(p->m * p->k) * es, b = (size_t)(p->k * p->n) * es,
               cc = (size_t)(p->m * p->n) * es;
        if (phys > 0 && (double)(TESS__MAX(a, szA) + TESS__MAX(b, szB) + TESS__MAX(cc, szC)) >
                            0.5 * phys) {
            p->skip = "memory";
            continue;
        }
        szA = TESS__MAX(a, szA), szB = TESS__MAX(b, szB), szC = TESS__MAX(cc, szC);
    }
    bufA = malloc(szA), bufB = malloc(szB), bufC = malloc(szC);
    if (!bufA || !bufB || !bufC) {
        fprintf(stderr, PROG ": cannot allocate %.3g GB of host memory\n",
                (double)(szA + szB + szC) / 1e9);
        return 1;
    }
    fill(bufA, szA, 1), fill(bufB, szB, 2);
    memset(bufC, 0, szC);  /* touch every page once, as a numpy array's would be */
    double t_fill = elapsed();

    if (tess__hostblas_load()) {
        fprintf(stderr, PROG ": %s\n", tess_last_error());
        return 1;
    }
    hb = tess__hostblas();
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
                 s.kind == TESS_DEV_CUDA ? "GPU" : s.kind == TESS_DEV_CPU ? "CPU worker" : "emulated");
    }
    int threads = hb->get_num_threads ? hb->get_num_threads() : 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    printf("# " PROG ": C = A B (NN, beta 0), pageable host operands, median of up to %d runs "
           "after a warm-up\n", o.reps);
    Dl_info dli;
    const char *blas_file = dladdr((void *)hb->dgemm, &dli) && dli.dli_fname ? dli.dli_fname : "?";
    printf("# cpu: %s (%s), %d threads, %ld cores\n", hb->name, blas_file, threads, cores);
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
        double pd = best_dev[dt] > 0 ? fmax(p->cost.flops / best_dev[dt], p->cost.bytes / best_bw) : 0;
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
                        "sdcz"[dt], (long long)p->m, (long long)p->n, (long long)p->k);
            }
        }
        memset(bufC, 0, (size_t)(p->m * p->n) * tess__dtypes[dt].size);
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
                    (long long)p->m, (long long)p->n, (long long)p->k);
        }
        char cs[32] = "skipped";
        if (do_cpu) snprintf(cs, sizeof cs, "%.4g s", p->cpu);
        fprintf(stderr, "  [%4.0f s] %c %-6s %6lld %6lld %6lld  cpu %-10s dev %.4g s\n",
                elapsed(), "sdcz"[dt], fam_name[p->fam], (long long)p->m, (long long)p->n,
                (long long)p->k, cs, p->dev);
    }
    t_measured = elapsed();
    tess_finalize();

    return 0;
}

/* The model fitted to pts (cpu rates, device parameters, margin) into *fit; what was not
 * measured keeps the built-in default (*def). rms: the device fit's rms log error. */
static int fit_model(struct tess__blas_model *fit_out, struct tess__blas_model *def_out,
                     struct tess__blas_model *now_out, double *rms_out, const char **margin_at_out) {
    struct tess__blas_model def, now_md, fit;
    {
        struct tess__config cfg;
        char why[256];
        if (tess__config_load(&cfg) == TESS_OK && tess__blas_model_load(&now_md, &cfg, why, sizeof why) == 0) {
        } else {
            fprintf(stderr, PROG ": the TESSERA_BLAS_* knobs of this environment: %s; using the "
                    "built-in defaults for the 'knobs' column\n",
                    tess__config_load(&cfg) ? tess_last_error() : why);
            now_md = (struct tess__blas_model){0};
        }
        /* the built-in defaults, for what this run did not measure */
        struct tess__config d0 = {0};
        snprintf(d0.blas_cpu_gflops, sizeof d0.blas_cpu_gflops, "%s", TESS__BLAS_DEF_CPU_GFLOPS);
        snprintf(d0.blas_dev_gflops, sizeof d0.blas_dev_gflops, "%s", TESS__BLAS_DEF_DEV_GFLOPS);
        d0.blas_dev_half = atof(TESS__BLAS_DEF_DEV_HALF);
        d0.blas_link_gbs = atof(TESS__BLAS_DEF_LINK_GBS);
        d0.blas_overhead_us = atof(TESS__BLAS_DEF_OVERHEAD_US);
        d0.blas_margin = atof(TESS__BLAS_DEF_MARGIN);
        if (tess__blas_model_load(&def, &d0, why, sizeof why)) {
            fprintf(stderr, PROG ": built-in defaults: %s\n", why);
            return 1;
        }
        if (now_md.margin == 0) now_md = def;
    }
    fit = def;
    int have_cpu[4] = {0}, have_dev[4] = {0}, ndev_pts = 0;
    double tmin = INFINITY;
    for (int i = 0; i < npts; i++) {
        const struct point *p = &pts[i];
        if (p->cpu > 0) {
            if (!have_cpu[p->dt] || p->cost.flops / p->cpu / 1e9 > fit.cpu_gflops[p->dt])
                fit.cpu_gflops[p->dt] = p->cost.flops / p->cpu / 1e9;
            have_cpu[p->dt] = 1;
        }
        if (p->dev > 0) have_dev[p->dt] = 1, ndev_pts++, tmin = fmin(tmin, p->dev);
    }
    double rms = 0;
    if (ndev_pts >= 3) {
        double x[NX];
        x[X_O] = log(fmax(tmin * 0.5, 1e-6));
        x[X_L] = log(fmin(fmax(best_bw, 1e7), 1e13));
        x[X_H] = log(256.0);
        for (int q = 0; q < 4; q++)
            x[X_R0 + q] = log(have_dev[q] ? best_dev[q] : def.dev_gflops[q] * 1e9);
        double f = INFINITY;
        for (int round = 0; round < 6; round++) {
            double g = nelder_mead(x, NX, round < 3 ? 1.0 : 0.3, 4000);
            if (f - g < 1e-9 * (1 + g) && round >= 2) { f = g; break; }
            f = g;
        }
        x[X_H] = fmin(fmax(x[X_H], 0), log(65536.0));
        x[X_O] = fmin(fmax(x[X_O], log(1e-6)), 0);
        x[X_L] = fmin(fmax(x[X_L], log(1e7)), log(1e13));
        model_from_x(x, &fit);
        for (int q = 0; q < 4; q++)
            if (!have_dev[q]) fit.dev_gflops[q] = def.dev_gflops[q];
        rms = sqrt(f / ndev_pts);
    } else {
        fprintf(stderr, PROG ": fewer than 3 device measurements: the device parameters are the "
                "built-in defaults\n");
    }
    /* the margin: no measured point the devices lost may go to them */
    fit.margin = 1.2;
    const char *margin_at = NULL;
    for (int i = 0; i < npts; i++) {
        const struct point *p = &pts[i];
        if (dev_won(p, &fit) != 0) continue;
        double r = tess__blas_model_cpu(&fit, p->dt, &p->cost) /
                   tess__blas_model_dev(&fit, p->dt, &p->cost) * 1.02;
        if (r > fit.margin) fit.margin = r, margin_at = fam_name[p->fam];
    }

    *fit_out = fit, *def_out = def, *now_out = now_md, *rms_out = rms;
    *margin_at_out = margin_at;
    return 0;
}

/* The tables, the crossovers and the fitted model (export lines, C snippet). */
static void report(const struct tess__blas_model *fitp, const struct tess__blas_model *nowp,
                   double rms, const char *margin_at) {
    const struct tess__blas_model fit = *fitp, now_md = *nowp;
    int have_cpu[4] = {0}, have_dev[4] = {0}, ndev_pts = 0;
    for (int i = 0; i < npts; i++) {
        if (pts[i].cpu > 0) have_cpu[pts[i].dt] = 1;
        if (pts[i].dev > 0) have_dev[pts[i].dt] = 1, ndev_pts++;
    }
    printf("\n# measured (seconds per call; ~ = CPU not run, the fitted rate's time; "
           "route: the fitted model's choice)\n");
    printf("%-4s %-7s %6s %6s %6s %10s %10s %2s %10s %2s %8s %10s %5s %s\n", "prec", "family",
           "m", "n", "k", "GFLOP", "cpu s", "n", "dev s", "n", "cpu/dev", "model dev", "route",
           "note");
    FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
    if (o.csv && !csv) fprintf(stderr, PROG ": cannot write %s\n", o.csv);
    if (csv)
        fprintf(csv, "prec,family,m,n,k,gflop,bytes,cpu_s,cpu_runs,dev_s,dev_runs,"
                     "model_cpu_s,model_dev_s,route,note\n");
    int n_loss = 0, small_dev = 0;
    for (const char *pc = "sdcz"; *pc; pc++)
        for (int fam = 0; fam < NFAM; fam++)
            for (int i = 0; i < npts; i++) {
                const struct point *p = &pts[i];
                if (p->dt != pc - "sdcz" || p->fam != fam) continue;
                int est;
                double c = cpu_time(p, &fit, &est);
                double md = tess__blas_model_dev(&fit, p->dt, &p->cost);
                int to_dev = tess__blas_model_to_dev(&fit, p->dt, &p->cost);
                int won = dev_won(p, &fit);
                const char *note = p->skip ? p->skip : p->mismatch ? "WRONG RESULT"
                                 : to_dev && won == 0 ? "LOSS: routed to the devices, slower there"
                                 : !to_dev && p->dev > 0 && p->dev * 1.5 < c ? "missed (devices 1.5x faster)"
                                 : "";
                if (to_dev && won == 0) n_loss++;
                if (to_dev && TESS__MAX(TESS__MAX(p->m, p->n), p->k) <= 512) small_dev++;
                char cs[32], ds[32];
                if (p->skip && !(p->dev > 0)) snprintf(cs, sizeof cs, "-"), snprintf(ds, sizeof ds, "-");
                else {
                    snprintf(cs, sizeof cs, "%s%.4g", est ? "~" : "", c);
                    snprintf(ds, sizeof ds, "%.4g", p->dev);
                }
                printf("%-4c %-7s %6lld %6lld %6lld %10.4g %10s %2d %10s %2d %8.3g %10.4g %5s %s\n",
                       *pc, fam_name[fam], (long long)p->m, (long long)p->n, (long long)p->k,
                       p->cost.flops / 1e9, cs, p->cpu_n, ds, p->dev_n,
                       p->dev > 0 ? c / p->dev : NAN, md, to_dev ? "dev" : "cpu", note);
                if (csv)
                    fprintf(csv, "%c,%s,%lld,%lld,%lld,%.6g,%.6g,%.6g,%d,%.6g,%d,%.6g,%.6g,%s,%s\n",
                            *pc, fam_name[fam], (long long)p->m, (long long)p->n,
                            (long long)p->k, p->cost.flops / 1e9, p->cost.bytes, p->cpu,
                            p->cpu_n, p->dev, p->dev_n, tess__blas_model_cpu(&fit, p->dt, &p->cost),
                            md, to_dev ? "dev" : "cpu", note);
            }
    if (csv) fclose(csv);

    printf("\n# crossovers: the smallest size from which the devices win at every larger size "
           "(measured: by 5%%, over the measured sizes; fit: the fitted model with its margin; "
           "knobs: the model of this environment's TESSERA_BLAS_* knobs or the built-in "
           "defaults)\n");
    printf("%-4s %-22s %9s %9s %9s\n", "prec", "family (size varies)", "measured", "fit", "knobs");
    for (const char *pc = o.precs; *pc; pc++) {
        tess_dtype_t dt = (tess_dtype_t)(strchr("sdcz", *pc) - "sdcz");
        for (int fam = 0; fam < NFAM; fam++) {
            int64_t top = 0;
            for (int i = 0; i < npts; i++)
                if (pts[i].dt == dt && pts[i].fam == fam) top = TESS__MAX(top, pts[i].size);
            if (!top) continue;
            char fname[64], a[24], b[24], c[24];
            if (fam == FAM_SQUARE) snprintf(fname, sizeof fname, "m = n = k");
            else if (fam == FAM_K) snprintf(fname, sizeof fname, "m = n = %lld, k", (long long)o.skinny);
            else snprintf(fname, sizeof fname, "n = k = %lld, m", (long long)o.skinny);
            fmt_cross(a, sizeof a, measured_crossover(dt, fam, &fit));
            fmt_cross(b, sizeof b, model_crossover(dt, fam, top, &fit));
            fmt_cross(c, sizeof c, model_crossover(dt, fam, top, &now_md));
            printf("%-4c %-22s %9s %9s %9s\n", *pc, fname, a, b, c);
        }
    }

    printf("\n# fit: cpu rate = the best measured; device parameters by least squares on log "
           "time over %d device points (rms log error %.3f, i.e. about %.0f%%); margin %.3g%s%s%s\n",
           ndev_pts, rms, 100 * (exp(rms) - 1), fit.margin, margin_at ? " (set by a " : "",
           margin_at ? margin_at : "", margin_at ? " shape the devices lost)" : " (the floor)");
    printf("# routed to the devices by the fit but slower there: %d point%s; calls with every "
           "dimension <= 512 routed to the devices: %d\n", n_loss, n_loss == 1 ? "" : "s",
           small_dev);
    for (int q = 0; q < 4; q++)
        if (strchr(o.precs, "sdcz"[q]) && (!have_cpu[q] || !have_dev[q]))
            printf("# %c: not measured (%s): its values are the built-in defaults\n", "sdcz"[q],
                   n_time ? "time limit" : "error");
    if (n_time)
        printf("# %d point%s left out by the time limit (%.0f s)\n", n_time,
               n_time == 1 ? "" : "s", o.time_limit);
    if (!ncuda)
        printf("# NO GPU here: these parameters describe %s, not a GPU\n",
               ndev ? "the runtime's host devices" : "nothing");

    char v[4][4][32], half[32], link[32], ovh[32], mg[32];
    for (int q = 0; q < 4; q++) {
        fmt_num(v[0][q], sizeof v[0][q], fit.cpu_gflops[q]);
        fmt_num(v[1][q], sizeof v[1][q], fit.dev_gflops[q]);
    }
    fmt_num(half, sizeof half, fit.dev_half);
    fmt_num(link, sizeof link, fit.link_gbs);
    fmt_num(ovh, sizeof ovh, fit.overhead_us);
    snprintf(mg, sizeof mg, "%.3g", fit.margin);
    printf("\n# fitted model: paste into the environment of a drop-in run\n");
    printf("export TESSERA_BLAS_CPU_GFLOPS=%s,%s,%s,%s\n", v[0][0], v[0][1], v[0][2], v[0][3]);
    printf("export TESSERA_BLAS_DEV_GFLOPS=%s,%s,%s,%s\n", v[1][0], v[1][1], v[1][2], v[1][3]);
    printf("export TESSERA_BLAS_DEV_HALF=%s\n", half);
    printf("export TESSERA_BLAS_LINK_GBS=%s\n", link);
    printf("export TESSERA_BLAS_OVERHEAD_US=%s\n", ovh);
    printf("export TESSERA_BLAS_MARGIN=%s\n", mg);
    printf("\n# C snippet: the built-in defaults, src/base/dropin_defaults.h (replace the six #define "
           "lines)\n");
    printf("#define TESS__BLAS_DEF_CPU_GFLOPS \"%s,%s,%s,%s\"\n", v[0][0], v[0][1], v[0][2], v[0][3]);
    printf("#define TESS__BLAS_DEF_DEV_GFLOPS \"%s,%s,%s,%s\"\n", v[1][0], v[1][1], v[1][2], v[1][3]);
    printf("#define TESS__BLAS_DEF_DEV_HALF \"%s\"\n", half);
    printf("#define TESS__BLAS_DEF_LINK_GBS \"%s\"\n", link);
    printf("#define TESS__BLAS_DEF_OVERHEAD_US \"%s\"\n", ovh);
    printf("#define TESS__BLAS_DEF_MARGIN \"%s\"\n", mg);
    printf("\n# %s: %.0f s (measuring %.0f s)\n", PROG, elapsed(), t_measured);
}
/* ---- --selftest: the fit on synthetic measurements ------------------------------------
 * A made-up machine: a CPU BLAS at 1400/700 GFLOP/s (s, d; complex the same) that is slower
 * on small operands (half its rate at min(m, n, k) = 48), and devices behind the model of
 * model.h with an H100-like rate, a pageable link of 8 GB/s, 300 us a call; every "measured"
 * time carries 10% log-normal noise, and CPU runs over --point-max are left out as a real
 * run leaves them out. The fit passes when it finds the link and the overhead within 30%,
 * sends no call with every dimension <= 512 to the devices, never sends a call to the
 * devices that the made-up machine runs slower there, and finds the square crossover of
 * each precision within a factor 1.5 of the machine's own. */
static double gauss(uint64_t *s) {
    double u[2];
    for (int i = 0; i < 2; i++) {
        *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
        u[i] = ((double)(*s >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2 * log(u[0])) * cos(2 * M_PI * u[1]);
}

static int selftest(void) {
    const struct tess__blas_model truth = {.cpu_gflops = {1400, 700, 1400, 700},
                                           .dev_gflops = {50000, 45000, 55000, 50000},
                                           .dev_half = 300, .link_gbs = 8, .overhead_us = 300,
                                           .margin = 1};
    build_grid();
    uint64_t seed = 0x5EED;
    double true_cpu[MAXPTS], true_dev[MAXPTS];
    for (int i = 0; i < npts; i++) {
        struct point *p = &pts[i];
        double d = p->cost.dmin;
        true_cpu[i] = tess__blas_model_cpu(&truth, p->dt, &p->cost) * (d + 48) / d;
        true_dev[i] = tess__blas_model_dev(&truth, p->dt, &p->cost);
        if (true_cpu[i] <= o.point_max) {
            p->cpu = true_cpu[i] * exp(0.1 * gauss(&seed)), p->cpu_n = o.reps;
            best_cpu[p->dt] = fmax(best_cpu[p->dt], p->cost.flops / p->cpu);
        }
        p->dev = true_dev[i] * exp(0.1 * gauss(&seed)), p->dev_n = o.reps;
        best_dev[p->dt] = fmax(best_dev[p->dt], p->cost.flops / p->dev);
        best_bw = fmax(best_bw, p->cost.bytes / p->dev);
    }
    ncuda = ndev = 1;
    printf("# " PROG " --selftest: synthetic measurements of a made-up machine (cpu 1400/700 "
           "GFLOP/s, devices 50000/45000/55000/50000 GFLOP/s, half at 300, link 8 GB/s, "
           "300 us a call, 10%% noise)\n");
    struct tess__blas_model fit, def, now_md;
    double rms;
    const char *margin_at;
    if (fit_model(&fit, &def, &now_md, &rms, &margin_at)) return 1;
    report(&fit, &now_md, rms, margin_at);

    int bad = 0;
#define CHECK(cond, ...) do { if (!(cond)) { bad++; printf("selftest: FAIL: " __VA_ARGS__); printf("\n"); } } while (0)
    CHECK(fabs(fit.link_gbs / truth.link_gbs - 1) < 0.3, "link %.3g GB/s, truth %.3g", fit.link_gbs, truth.link_gbs);
    CHECK(fabs(fit.overhead_us / truth.overhead_us - 1) < 0.3, "overhead %.3g us, truth %.3g",
          fit.overhead_us, truth.overhead_us);
    for (int i = 0; i < npts; i++) {
        const struct point *p = &pts[i];
        int to_dev = tess__blas_model_to_dev(&fit, p->dt, &p->cost);
        CHECK(!to_dev || TESS__MAX(TESS__MAX(p->m, p->n), p->k) > 512,
              "%c %lldx%lldx%lld (all <= 512) routed to the devices", "sdcz"[p->dt],
              (long long)p->m, (long long)p->n, (long long)p->k);
        CHECK(!to_dev || true_dev[i] < true_cpu[i], "%c %lldx%lldx%lld routed to the devices, "
              "slower there (%.3g s vs %.3g s)", "sdcz"[p->dt], (long long)p->m,
              (long long)p->n, (long long)p->k, true_dev[i], true_cpu[i]);
    }
    for (int q = 0; q < 4; q++) {
        /* the machine's own square crossover, from its true times (CPU slower when small) */
        int64_t from = -1;
        for (double x = 16; x <= (double)o.max_n; x *= 1.02) {
            double z = round(x);
            struct tess__blas_cost c = tess__blas_cost(TESS__BLAS_GEMM, (tess_dtype_t)q, z, z, z, z, 0);
            int win = tess__blas_model_dev(&truth, (tess_dtype_t)q, &c) <
                      tess__blas_model_cpu(&truth, (tess_dtype_t)q, &c) * (z + 48) / z;
            if (win && from < 0) from = (int64_t)z;
            if (!win) from = -1;
        }
        int64_t got = model_crossover((tess_dtype_t)q, FAM_SQUARE, o.max_n, &fit);
        printf("selftest: %c square crossover: machine %lld, fit %lld\n", "sdcz"[q],
               (long long)from, (long long)got);
        CHECK(from > 0 && got > 0 && got < 1.5 * (double)from && got > (double)from / 1.5,
              "%c square crossover %lld, the machine's %lld", "sdcz"[q], (long long)got,
              (long long)from);
    }
#undef CHECK
    printf("selftest: %s\n", bad ? "FAILED" : "ok");
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    int rc = parse_args(argc, argv);
    if (rc) return rc;
    t_start = now();
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
