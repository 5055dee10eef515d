/* src/tools/bench_lib.c: the benchmark tools' shared helpers of bench_lib.h. The globals are
 * the run's (one tool per process): its name, start time, counters and last failure. */
#include "bench_lib.h"

#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oracle.h"
#include "par.h"

const char *bench_prog = "tessera-bench";
double t_start;
int n_wrong, n_errors, out_of_time;
char last_err[1024];

double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
double elapsed(void) { return now() - t_start; }

size_t esize(tess_dtype_t dt) { return dt == TESS_S ? 4 : dt == TESS_Z ? 16 : 8; }
int is_complex(tess_dtype_t dt) { return dt == TESS_C || dt == TESS_Z; }
char prec_char(tess_dtype_t dt) { return "sdcz"[dt]; }

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double median_of(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    double kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024.0;
}

int fail_msg(const char *what, const char *why, const char *file, int line) {
    snprintf(last_err, sizeof last_err, "%s: %s", what, why);
    fprintf(stderr, "%s: %s:%d: %s: %s\n", bench_prog, file, line, what, why);
    return -1;
}

int tess_check(int rc, const char *what, const char *file, int line) {
    if (rc == TESS_OK) return 0;
    char why[400];
    snprintf(why, sizeof why, "%s (%s)", tess_strerror(rc), tess_last_error());
    return fail_msg(what, why, file, line);
}

/* ---- random operands --------------------------------------------------------------------- */

#define FILL_COLS 256 /* columns per chunk: the data do not depend on the thread count */

struct fill_ctx {
    tess_dtype_t dt;
    char *x;
    int64_t n;
    uint64_t seed;
};

static void fill_chunk(void *c, int i) {
    const struct fill_ctx *f = c;
    int64_t j0 = (int64_t)i * FILL_COLS, w = f->n - j0 < FILL_COLS ? f->n - j0 : FILL_COLS;
    oracle_fill(f->dt, f->x + (size_t)j0 * (size_t)f->n * esize(f->dt), f->n, w, f->n,
                f->seed * 1000003u + (uint64_t)i);
}

void bench_fill(int threads, tess_dtype_t dt, void *x, int64_t n, uint64_t seed) {
    struct fill_ctx f = {dt, x, n, seed};
    tess__par_run(threads, (int)((n + FILL_COLS - 1) / FILL_COLS), fill_chunk, &f);
}

/* ---- the CPU BLAS ---------------------------------------------------------------------------- */

/* CBLAS gemm of one precision: real scalars by value (s, d), complex ones by pointer (c, z). */
typedef void cblas_sgemm_t(int, int, int, int, int, int, float, const void *, int, const void *,
                           int, float, void *, int);
typedef void cblas_dgemm_t(int, int, int, int, int, int, double, const void *, int, const void *,
                           int, double, void *, int);
typedef void cblas_zgemm_t(int, int, int, int, int, int, const void *, const void *, int,
                           const void *, int, const void *, void *, int);
enum { CBLAS_COL = 102, CBLAS_NOTRANS = 111 };

int cpublas_open(struct cpublas *c) {
    static const char *const sym[4] = {"cblas_sgemm", "cblas_dgemm", "cblas_cgemm", "cblas_zgemm"};
    memset(c, 0, sizeof *c);
    const char *e = getenv("TESSERA_CPU_BLAS");
    snprintf(c->name, sizeof c->name, "%s", e && *e ? e : "libopenblas.so.0");
    c->lib = dlopen(c->name, RTLD_NOW | RTLD_LOCAL);
    for (int i = 0; c->lib && i < 4; i++) c->gemm[i] = dlsym(c->lib, sym[i]);
    if (!c->lib || !c->gemm[0] || !c->gemm[1] || !c->gemm[2] || !c->gemm[3]) {
        char why[512];
        snprintf(why, sizeof why, "%s: %s", c->name, c->lib ? "no gemm symbol" : dlerror());
        return fail_msg("dlopen", why, __FILE__, __LINE__);
    }
    void *f = dlsym(c->lib, "openblas_get_num_threads");
    if (f) memcpy(&c->get_num_threads, &f, sizeof f);
    return 0;
}

void cpublas_gemm(const struct cpublas *c, tess_dtype_t dt, int m, int n, int k, const void *alpha,
                  const void *A, int lda, const void *B, int ldb, const void *beta, void *C,
                  int ldc) {
    const int o = CBLAS_COL, N = CBLAS_NOTRANS;
    void *fn = c->gemm[dt];
    switch (dt) {
    case TESS_S: {
        cblas_sgemm_t *g;
        memcpy(&g, &fn, sizeof fn);
        g(o, N, N, m, n, k, *(const float *)alpha, A, lda, B, ldb, *(const float *)beta, C, ldc);
        break;
    }
    case TESS_D: {
        cblas_dgemm_t *g;
        memcpy(&g, &fn, sizeof fn);
        g(o, N, N, m, n, k, *(const double *)alpha, A, lda, B, ldb, *(const double *)beta, C, ldc);
        break;
    }
    default: {
        cblas_zgemm_t *g;
        memcpy(&g, &fn, sizeof fn);
        g(o, N, N, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
        break;
    }
    }
}

/* ---- rows ------------------------------------------------------------------------------------ */

void row_init(struct row *r, int kind, int block, int64_t n, const char *name) {
    memset(r, 0, sizeof *r);
    r->kind = kind, r->block = block, r->n = n, r->worst = NAN;
    snprintf(r->name, sizeof r->name, "%s", name);
}

void note(struct row *r, const char *fmt, ...) {
    size_t len = strlen(r->note);
    if (len + 3 >= sizeof r->note) return;
    if (len) strcpy(r->note + len, "; "), len += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note + len, sizeof r->note - len, fmt, ap);
    va_end(ap);
}

void row_fail(struct row *r) {
    r->status = ROW_FAILED;
    note(r, "%s", last_err[0] ? last_err : "failed");
    n_errors++;
}

int row_out_of_time(struct row *r, double time_limit) {
    if (time_limit <= 0 || elapsed() <= time_limit) return 0;
    if (!out_of_time)
        fprintf(stderr,
                "%s: --time-limit %.0f s reached after %.0f s: skipping the remaining "
                "rows\n",
                bench_prog, time_limit, elapsed());
    out_of_time = 1;
    r->status = ROW_SKIPPED;
    note(r, "skipped: --time-limit %.0f s reached at %.0f s", time_limit, elapsed());
    return 1;
}

void row_verified(struct row *r, double w, int wrong) {
    r->nver++;
    if (r->nver == 1 || isnan(w) || w > r->worst) r->worst = w;
    if (wrong) r->wrong++, n_wrong++;
}

void drive(struct runner *rn, struct row *row, const struct timing *tm) {
    double times[MAX_REPS], secs, t_ver = 0;
    char verdict[160] = "not verified";
    last_err[0] = 0;
    double t_it = now();
    if (rn->run(rn, &secs)) {
        row_fail(row);
        return;
    }
    double t_run = now() - t_it;
    if (tm->verify != V_NONE) {
        double t0 = now();
        rn->verify(rn, row, verdict, sizeof verdict);
        t_ver = now() - t0;
    }
    fprintf(stderr, "%s warm-up %*.3f s %8.2f TFLOP/s  %s\n", rn->label, rn->secs_width, secs,
            rn->flops / secs * 1e-12, verdict);
    int reps = tm->reps;
    if (tm->time_limit > 0) { /* project the timed runs from the warm-up */
        double per = t_run + (tm->verify == V_ALL ? t_ver : 0);
        double left = tm->time_limit - elapsed() - (tm->verify == V_ENDS ? t_ver : 0);
        int fit = left <= 0 ? 0 : (int)(left / per);
        if (fit < reps) {
            if (fit < 1) {
                row->status = ROW_SKIPPED;
                note(row,
                     "warm-up %.*f s = %.2f TFLOP/s (%s), but no timed run fits in "
                     "--time-limit %.0f s",
                     rn->note_decimals, secs, rn->flops / secs * 1e-12, verdict, tm->time_limit);
                return;
            }
            note(row, "%d timed runs instead of %d: --time-limit", fit, reps);
            reps = fit;
        }
    }
    if (rn->before_timed) rn->before_timed(rn, row);
    double timed = 0;
    for (int i = 0; i < reps; i++) {
        if (rn->run(rn, &secs)) {
            row_fail(row);
            return;
        }
        times[i] = secs, timed += secs;
        snprintf(verdict, sizeof verdict, "not verified");
        if (tm->verify == V_ALL || (tm->verify == V_ENDS && i == reps - 1))
            rn->verify(rn, row, verdict, sizeof verdict);
        fprintf(stderr, "%s run %-3d %*.3f s %8.2f TFLOP/s  %s\n", rn->label, i + 1, rn->secs_width,
                secs, rn->flops / secs * 1e-12, verdict);
    }
    row->reps = reps;
    if (rn->after_timed) rn->after_timed(rn, row, timed);
    row->med = median_of(times, reps);
    row->tmin = times[0], row->tmax = times[reps - 1];
    row->rate = rn->flops / row->med * 1e-12;
    row->status = ROW_OK;
}

/* ---- cells -------------------------------------------------------------------------------------- */

void ratio(char *buf, size_t len, double num, double den) {
    if (num > 0 && den > 0)
        snprintf(buf, len, "%.3f", num / den);
    else
        snprintf(buf, len, "-");
}

void row_check_cell(const struct row *r, char *buf, size_t len) {
    if (!r->nver)
        snprintf(buf, len, "not verified");
    else if (r->wrong)
        snprintf(buf, len, "WRONG %d/%d %.1e", r->wrong, r->nver, r->worst);
    else
        snprintf(buf, len, "ok %.1e (%d runs)", r->worst, r->nver);
}

void row_bytes_cells(const struct row *r, char *h2d, char *d2h, char *p2p, size_t len) {
    snprintf(h2d, len, "-"), snprintf(d2h, len, "-"), snprintf(p2p, len, "-");
    if (!r->has_bytes) return;
    snprintf(h2d, len, "%.2f", r->h2d * 1e-9);
    snprintf(d2h, len, "%.2f", r->d2h * 1e-9);
    snprintf(p2p, len, "%.2f", r->p2p * 1e-9);
}

void print_note(const struct row *r, int *first) {
    if (!r->note[0]) return;
    if (*first) printf("notes:\n"), *first = 0;
    printf("  %s: %s\n", r->name, r->note);
}

void csv_bytes_check(FILE *f, const struct row *r) {
    if (r->has_bytes && r->status == ROW_OK)
        fprintf(f, "%.6f,%.6f,%.6f,", r->h2d * 1e-9, r->d2h * 1e-9, r->p2p * 1e-9);
    else
        fprintf(f, ",,,");
    if (r->nver)
        fprintf(f, "%.3e,%d,%d,", r->worst, r->nver, r->wrong);
    else
        fprintf(f, ",0,0,");
}

void csv_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}
