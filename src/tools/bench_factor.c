/* src/tools/bench_factor.c: tessera-bench --routine potrf,getrf (potrf: issue 24), the one
 * generic factorization bench (bench_factor.h): for each routine asked, precision and size, a
 * group of three rows on the same operand A0 (pinned host memory, made by the routine's hook):
 * in-core cuSOLVER on the first GPU (the matrix copied there before each run, the call timed),
 * tessera on the pinned host copy W (reset from A0 before each run, the whole call timed) and,
 * for n <= 8192 or with --cpu-lapack, the CPU LAPACK of the dlopen'ed CPU BLAS (on W); one
 * warm-up and --reps timed runs each (drive()), the median. Every checked run needs info 0 and
 * the routine's ratio ||A0 - F||_F / (||A0||_F n u) within its bound (on the GPU by column
 * blocks, on the host without one), plus the routine's own contract; pivots are compared with
 * the reference row's (in-core's; the CPU's without a GPU), for information. Owns the rows, the
 * GPU check's handles and helpers, the tables, summary and CSV. The in-core row runs before
 * tess_init (the runtime takes nearly all device memory), tessera last. */
#include "bench_factor.h"

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VER_SLACK ((size_t)512 << 20) /* device bytes the GPU check leaves free */
#define MAX_FSUMM (FR_N * 4 * MAX_LIST)

static const struct factor *const routines[FR_N] = {&factor_potrf, &factor_getrf};

struct gcheck gv;

/* the CPU LAPACK: the CPU BLAS library (its routines looked up per group) */
static struct {
    int tried, ok;
    struct cpublas cb;
    char why[300];
} cpu;

static struct fsumm {
    const struct factor *f;
    tess_dtype_t dt;
    char uplo;
    int64_t n;
    double rate[F_NROWS];
    char check[160];
} summ[MAX_FSUMM];
static int nsumm;
static FILE *csv;

double unit_roundoff(tess_dtype_t dt) { return dt == TESS_S || dt == TESS_C ? 0x1p-24 : 0x1p-53; }

static const char *cs_str(cusolverStatus_t s) {
    static char buf[48];
    switch (s) {
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    default: snprintf(buf, sizeof buf, "cuSOLVER status %d", (int)s); return buf;
    }
}
int cs_check(cusolverStatus_t s, const char *what, const char *file, int line) {
    if (s == CUSOLVER_STATUS_SUCCESS) return 0;
    return fail_msg(what, cs_str(s), file, line);
}

cudaDataType cuda_type(tess_dtype_t dt) {
    return dt == TESS_S   ? CUDA_R_32F
           : dt == TESS_D ? CUDA_R_64F
           : dt == TESS_C ? CUDA_C_32F
                          : CUDA_C_64F;
}

/* ---- elements, host copies ------------------------------------------------------------------- */

void get_el(tess_dtype_t dt, const char *X, size_t i, double *re, double *im) {
    *re = *im = 0;
    switch (dt) {
    case TESS_S: *re = ((const float *)X)[i], *im = 0; break;
    case TESS_D: *re = ((const double *)X)[i], *im = 0; break;
    case TESS_C: *re = ((const float *)X)[2 * i], *im = ((const float *)X)[2 * i + 1]; break;
    case TESS_Z: *re = ((const double *)X)[2 * i], *im = ((const double *)X)[2 * i + 1]; break;
    }
}
void put_el(tess_dtype_t dt, char *X, size_t i, double re, double im) {
    switch (dt) {
    case TESS_S: ((float *)X)[i] = (float)re; break;
    case TESS_D: ((double *)X)[i] = re; break;
    case TESS_C: ((float *)X)[2 * i] = (float)re, ((float *)X)[2 * i + 1] = (float)im; break;
    case TESS_Z: ((double *)X)[2 * i] = re, ((double *)X)[2 * i + 1] = im; break;
    }
}

uint64_t mix64(uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define CHUNK_BYTES ((size_t)32 << 20)
struct pmem {
    char *dst;
    const char *src;
    size_t bytes;
};
static void pmem_chunk(void *c, int i) {
    struct pmem *p = c;
    size_t at = (size_t)i * CHUNK_BYTES;
    memcpy(p->dst + at, p->src + at, p->bytes - at < CHUNK_BYTES ? p->bytes - at : CHUNK_BYTES);
}
static void pcopy(void *dst, const void *src, size_t bytes) {
    struct pmem p = {dst, src, bytes};
    par_for((int)((bytes + CHUNK_BYTES - 1) / CHUNK_BYTES), pmem_chunk, &p);
}

/* A0's columns of one item, entry by entry from the routine */
static void fill_item(void *c, int q) {
    const struct colctx *x = c;
    const struct fgroup *g = x->g;
    int64_t n = g->n, j0 = (int64_t)q * COLS_PER_ITEM, j1 = min64(n, j0 + COLS_PER_ITEM);
    for (int64_t j = j0; j < j1; j++)
        for (int64_t i = 0; i < n; i++) {
            double re, im;
            g->f->entry(g, i, j, &re, &im);
            put_el(g->dt, g->A0, (size_t)i + (size_t)j * (size_t)n, re, im);
        }
}

/* ---- the check's helpers --------------------------------------------------------------------- */

/* host_ratio's columns of one item, each with the scratch acc */
static void host_item(void *c, int q) {
    const struct colctx *x = c;
    int64_t n = x->g->n, j0 = (int64_t)q * COLS_PER_ITEM, j1 = min64(n, j0 + COLS_PER_ITEM);
    double *acc = malloc(2 * (size_t)n * sizeof *acc);
    for (int64_t j = j0; j < j1; j++)
        if (acc)
            x->col(x, j, acc);
        else
            x->r2[j] = NAN;
    free(acc);
}

int host_ratio(const struct fgroup *g, const char *F, const int64_t *perm, host_col_fn *col,
               struct fcheck *c) {
    double *r2 = calloc((size_t)g->n, sizeof *r2), *a2 = calloc((size_t)g->n, sizeof *a2);
    int rc = 0;
    if (!r2 || !a2) {
        rc = fail_msg("host_ratio", "out of host memory", __FILE__, __LINE__);
    } else {
        struct colctx x = {.g = g, .F = F, .perm = perm, .r2 = r2, .a2 = a2, .col = col};
        double rs = 0, as = 0;
        par_for(col_items(g->n), host_item, &x);
        for (int64_t j = 0; j < g->n; j++) rs += r2[j], as += a2[j];
        c->ratio = sqrt(rs) / (sqrt(as) * (double)g->n * unit_roundoff(g->dt));
        snprintf(c->how, sizeof c->how, "host");
    }
    free(r2), free(a2);
    return rc;
}

int gcheck_width(const struct fgroup *g, int nbuf, int64_t *w) {
    int64_t n = g->n;
    size_t fr = 0, tot = 0;
    if (CU(cudaSetDevice(o.dev[0])) || CU(cudaMemGetInfo(&fr, &tot))) return -1;
    double cols = (fr > VER_SLACK ? (double)(fr - VER_SLACK) : 0) / ((double)nbuf * n * g->es);
    *w = cols >= (double)n ? n : cols >= 256 ? (int64_t)cols / 256 * 256 : (int64_t)cols / 32 * 32;
    /* about 8 blocks from n = 16384 (GEMMs of 1.2x to 1.4x the factorization's flops rather
     * than the 3x to 6x of one block, zeroed triangles included; a few passes over the factor
     * when streamed), one up to n = 4096 */
    int64_t want = n <= 4096 ? n : ((n + 7) / 8 + 255) / 256 * 256;
    if (want < 2048) want = 2048;
    if (*w > want) *w = want;
    if (*w >= 1) return 0;
    char why[160];
    snprintf(why, sizeof why, "%.2f GB free on cuda:%d, the check needs %d x %.3f GB at least",
             fr * 1e-9, o.dev[0], nbuf, (double)(32 * n * g->es) * 1e-9);
    return fail_msg("gcheck_width", why, __FILE__, __LINE__);
}

int gcheck_done(const struct fgroup *g, double a2, double r2, int64_t w, int in_place,
                struct fcheck *c) {
    if (CU(cudaStreamSynchronize(gv.st))) return -1;
    c->ratio = sqrt(r2) / (sqrt(a2) * (double)g->n * unit_roundoff(g->dt));
    snprintf(c->how, sizeof c->how, "GPU, %lld block(s) of %lld%s", (long long)((g->n + w - 1) / w),
             (long long)w, in_place ? ", factor in place" : "");
    return 0;
}

int zero_tri(char *X, int64_t ld, int64_t k, char part, size_t es) {
    for (int64_t c = 0; c < k; c++) {
        size_t off = part == 'U' ? (size_t)c * (size_t)ld : (size_t)c * (size_t)ld + (size_t)c + 1;
        size_t len = part == 'U' ? (size_t)c : (size_t)(k - c - 1);
        if (len && CU(cudaMemsetAsync(X + off * es, 0, len * es, gv.st))) return -1;
    }
    return 0;
}

int nrm2sq(tess_dtype_t dt, const char *x, int64_t len, double *acc) {
    const int64_t chunk = (int64_t)1 << 30;
    for (int64_t at = 0; at < len; at += chunk) {
        int c = (int)min64(chunk, len - at);
        const char *p = x + (size_t)at * esize(dt);
        float f = 0;
        double d = 0;
        switch (dt) {
        case TESS_S:
            if (CB(cublasSnrm2(gv.h, c, (const float *)p, 1, &f))) return -1;
            d = f;
            break;
        case TESS_D:
            if (CB(cublasDnrm2(gv.h, c, (const double *)p, 1, &d))) return -1;
            break;
        case TESS_C:
            if (CB(cublasScnrm2(gv.h, c, (const cuComplex *)p, 1, &f))) return -1;
            d = f;
            break;
        case TESS_Z:
            if (CB(cublasDznrm2(gv.h, c, (const cuDoubleComplex *)p, 1, &d))) return -1;
            break;
        }
        *acc += d * d;
    }
    return 0;
}

cublasStatus_t gemm_sub(tess_dtype_t dt, cublasOperation_t ta, cublasOperation_t tb, int64_t m,
                        int64_t n, int64_t k, const void *A, int64_t lda, const void *B,
                        int64_t ldb, void *C, int64_t ldc) {
    static const float sm = -1, s1 = 1;
    static const double dm = -1, d1 = 1;
    static const cuComplex cm = {-1, 0}, c1 = {1, 0};
    static const cuDoubleComplex zm = {-1, 0}, z1 = {1, 0};
    cublasHandle_t h = gv.h;
#if CUBLAS_VER_MAJOR >= 12 /* 64-bit dimensions and leading dimensions */
    switch (dt) {
    case TESS_S: return cublasSgemm_64(h, ta, tb, m, n, k, &sm, A, lda, B, ldb, &s1, C, ldc);
    case TESS_D: return cublasDgemm_64(h, ta, tb, m, n, k, &dm, A, lda, B, ldb, &d1, C, ldc);
    case TESS_C: return cublasCgemm_64(h, ta, tb, m, n, k, &cm, A, lda, B, ldb, &c1, C, ldc);
    case TESS_Z: return cublasZgemm_64(h, ta, tb, m, n, k, &zm, A, lda, B, ldb, &z1, C, ldc);
    }
#else
    int im = (int)m, in = (int)n, ik = (int)k, ia = (int)lda, ib = (int)ldb, ic = (int)ldc;
    switch (dt) {
    case TESS_S: return cublasSgemm(h, ta, tb, im, in, ik, &sm, A, ia, B, ib, &s1, C, ic);
    case TESS_D: return cublasDgemm(h, ta, tb, im, in, ik, &dm, A, ia, B, ib, &d1, C, ic);
    case TESS_C: return cublasCgemm(h, ta, tb, im, in, ik, &cm, A, ia, B, ib, &c1, C, ic);
    case TESS_Z: return cublasZgemm(h, ta, tb, im, in, ik, &zm, A, ia, B, ib, &z1, C, ic);
    }
#endif
    return CUBLAS_STATUS_INVALID_VALUE;
}

/* ---- rows: each one warm-up and --reps timed runs (drive), the median ------------------------ */

static void fverify(struct runner *self, struct row *row, char *verdict, size_t vlen) {
    struct frunner *p = (struct frunner *)self;
    const struct fgroup *g = p->g;
    double t0 = now();
    struct fcheck c = {.ratio = NAN};
    if (p->info != 0) {
        p->info_bad++;
        row_verified(row, NAN, 1);
        snprintf(verdict, vlen, "FAIL: info = %lld", (long long)p->info);
        return;
    }
    char *dF = p->which == F_INCORE ? p->dA : NULL;
    last_err[0] = 0;
    if (g->f->check(p, dF, dF ? NULL : g->W, &c)) {
        if (!p->check_failed++) {
            note(row, "the check failed: %s", last_err[0] ? last_err : "?");
            n_errors++;
        }
        snprintf(verdict, vlen, "check FAILED: %s", last_err[0] ? last_err : "?");
        return;
    }
    int bad = !(c.ratio <= g->f->bound) || c.bad;
    row_verified(row, c.ratio, bad);
    snprintf(verdict, vlen, "%s %.1e%s (check %.2f s, %s)", bad ? "FAIL" : "ok", c.ratio, c.extra,
             now() - t0, c.how);
}

static void tess_before(struct runner *self, struct row *row) {
    (void)row;
    if (((struct frunner *)self)->which == F_TESS) tess_reset_stats();
}
static void tess_after(struct runner *self, struct row *row, double timed_s) {
    (void)timed_s;
    if (((struct frunner *)self)->which == F_TESS) tess_row_bytes(row);
}

static void fdrive(struct frunner *p, struct row *row) {
    struct timing tm = bench_timing();
    p->r.verify = fverify, p->r.before_timed = tess_before, p->r.after_timed = tess_after;
    p->r.secs_width = 8, p->r.note_decimals = 3, p->r.flops = p->g->flops;
    snprintf(p->r.label, sizeof p->r.label, "  %c%s %-6lld %-9s", prec_char(p->g->dt),
             p->g->f->name, (long long)p->g->n, row->name);
    drive(&p->r, row, &tm);
    if (p->info_bad) note(row, "info != 0 in %d run(s)", p->info_bad);
    p->g->f->notes(p, row);
}

/* A row's host pivots (f->pivots), n of them, and with lp64 the CPU LAPACK's: 0, or -1
 * (fail_msg) */
static int piv_alloc(struct frunner *p, int lp64) {
    size_t n = (size_t)p->g->n;
    if (!p->g->f->pivots) return 0;
    if ((p->piv = calloc(n, sizeof *p->piv)) && (!lp64 || (p->cpiv = calloc(n, sizeof *p->cpiv))))
        return 0;
    return fail_msg("calloc", "the pivots: out of host memory", __FILE__, __LINE__);
}

/* in-core cuSOLVER on o.dev[0]: the matrix uploaded before each run, the call timed; the pivots
 * downloaded after the clock */
static int incore_run(struct runner *self, double *secs) {
    struct frunner *p = (struct frunner *)self;
    const struct fgroup *g = p->g;
    float ms = 0;
    int info = -1;
    if (CU(cudaSetDevice(p->dev)) ||
        CU(cudaMemcpy(p->dA, g->A0, g->bytes, cudaMemcpyHostToDevice)) ||
        CU(cudaDeviceSynchronize()) || CU(cudaEventRecord(p->e0, 0)) ||
        g->f->incore_call(p, cuda_type(g->dt)) || CU(cudaEventRecord(p->e1, 0)) ||
        CU(cudaEventSynchronize(p->e1)) || CU(cudaEventElapsedTime(&ms, p->e0, p->e1)) ||
        CU(cudaMemcpy(&info, p->dinfo, sizeof info, cudaMemcpyDeviceToHost)) ||
        (p->dpiv &&
         CU(cudaMemcpy(p->piv, p->dpiv, (size_t)g->n * sizeof *p->piv, cudaMemcpyDeviceToHost))))
        return -1;
    *secs = 1e-3 * ms, p->info = info;
    return 0;
}

static void incore_close(struct frunner *p) {
    if (p->e0) (void)CU(cudaEventDestroy(p->e0));
    if (p->e1) (void)CU(cudaEventDestroy(p->e1));
    if (p->sp) (void)CS(cusolverDnDestroyParams(p->sp));
    if (p->sh) (void)CS(cusolverDnDestroy(p->sh));
    if (p->dA) (void)CU(cudaFree(p->dA));
    if (p->dpiv) (void)CU(cudaFree(p->dpiv));
    if (p->dwork) (void)CU(cudaFree(p->dwork));
    if (p->dinfo) (void)CU(cudaFree(p->dinfo));
    free(p->hwork), free(p->piv);
}

static void row_incore(struct fgroup *g) {
    struct row *row = &g->rows[F_INCORE];
    struct frunner p = {.r = {.run = incore_run}, .g = g, .which = F_INCORE, .dev = o.dev[0]};
    size_t fr = 0, tot = 0, pbytes = g->f->pivots ? (size_t)g->n * sizeof *p.dpiv : 0;
    last_err[0] = 0;
    if (o.ndev < 1 || o.skip[K_INCORE]) {
        row->status = ROW_SKIPPED;
        note(row, o.ndev < 1 ? "skipped: no GPU" : "skipped: --skip incore");
        return;
    }
    if (row_out_of_time(row, o.time_limit)) return;
    if (CU(cudaSetDevice(p.dev)) || CU(cudaMemGetInfo(&fr, &tot))) goto fail;
    if ((double)(g->bytes + pbytes) > 0.9 * (double)fr) {
        row->status = ROW_SKIPPED;
        note(row, "skipped: does not fit: %.2f GB > 90%% of %.2f GB free on cuda:%d",
             (g->bytes + pbytes) * 1e-9, fr * 1e-9, p.dev);
        return;
    }
    if (piv_alloc(&p, 0) || CU(cudaMalloc((void **)&p.dA, g->bytes)) ||
        (pbytes && CU(cudaMalloc((void **)&p.dpiv, pbytes))) ||
        CU(cudaMalloc((void **)&p.dinfo, sizeof *p.dinfo)) || CS(cusolverDnCreate(&p.sh)) ||
        CS(cusolverDnCreateParams(&p.sp)) || CU(cudaEventCreate(&p.e0)) ||
        CU(cudaEventCreate(&p.e1)) || g->f->incore_size(&p, cuda_type(g->dt)) ||
        (p.dws && CU(cudaMalloc(&p.dwork, p.dws))))
        goto fail;
    if (p.hws && !(p.hwork = malloc(p.hws))) {
        fail_msg("malloc", "cuSOLVER's host workspace", __FILE__, __LINE__);
        goto fail;
    }
    fdrive(&p, row);
    if (row->status == ROW_OK)
        note(row, "%s on cuda:%d, workspace %.1f MB device, %.1f MB host", g->f->incore, p.dev,
             p.dws * 1e-6, p.hws * 1e-6);
    incore_close(&p);
    return;
fail:
    row_fail(row);
    incore_close(&p);
}

/* the CPU LAPACK: the library once, the routine's entry per group */
static void *cpu_open(const struct fgroup *g) {
    if (!cpu.tried) {
        cpu.tried = 1;
        if (cpublas_open(&cpu.cb))
            snprintf(cpu.why, sizeof cpu.why, "%.290s", last_err);
        else
            cpu.ok = 1;
    }
    if (!cpu.ok) return NULL;
    const char *sym = g->f->cpu_sym[g->dt];
    void *fn = dlsym(cpu.cb.lib, sym);
    if (!fn) snprintf(cpu.why, sizeof cpu.why, "%s has no %s", cpu.cb.name, sym);
    return fn;
}

struct cpurunner {
    struct frunner p; /* first */
    void *fn;
};

static int cpu_run(struct runner *self, double *secs) {
    struct cpurunner *c = (struct cpurunner *)self;
    struct frunner *p = &c->p;
    const struct fgroup *g = p->g;
    int info = -1;
    pcopy(g->W, g->A0, g->bytes);
    double t0 = now();
    g->f->cpu_call(p, c->fn, &info);
    *secs = now() - t0, p->info = info;
    if (p->cpiv)
        for (int64_t i = 0; i < g->n; i++) p->piv[i] = p->cpiv[i];
    return 0;
}

static void row_cpu(struct fgroup *g) {
    struct row *row = &g->rows[F_CPU];
    struct cpurunner c = {.p = {.r = {.run = cpu_run}, .g = g, .which = F_CPU}};
    if (o.skip[K_CPU] || (g->n > CPU_ROW_MAX_N && !o.cpu_lapack)) {
        row->status = ROW_SKIPPED;
        note(row, o.skip[K_CPU] ? "skipped: --skip cpu-blas"
                                : "skipped: n > 8192 (--cpu-lapack runs it at every size)");
        return;
    }
    if (row_out_of_time(row, o.time_limit)) return;
    if (!(c.fn = cpu_open(g))) {
        row->status = ROW_SKIPPED;
        note(row, "skipped: %s", cpu.why);
        return;
    }
    last_err[0] = 0;
    if (piv_alloc(&c.p, 1)) {
        row_fail(row);
    } else {
        fdrive(&c.p, row);
        if (row->status == ROW_OK) {
            if (cpu.cb.get_num_threads)
                note(row, "%s, %d threads", cpu.cb.name, cpu.cb.get_num_threads());
            else
                note(row, "%s", cpu.cb.name);
        }
    }
    free(c.p.piv), free(c.p.cpiv);
}

/* tessera on the pinned host copy, reset from A0 before each run */
static int tess_run(struct runner *self, double *secs) {
    struct frunner *p = (struct frunner *)self;
    int64_t info = -1;
    pcopy(p->g->W, p->g->A0, p->g->bytes);
    double t0 = now();
    if (p->g->f->tess_call(p, &info)) return -1;
    *secs = now() - t0, p->info = info;
    return 0;
}

static void row_tess(struct fgroup *g) {
    struct row *row = &g->rows[F_TESS];
    struct frunner p = {.r = {.run = tess_run}, .g = g, .which = F_TESS};
    if (o.skip[K_TESS]) {
        row->status = ROW_SKIPPED;
        note(row, "skipped: --skip tess");
        return;
    }
    if (row_out_of_time(row, o.time_limit)) return;
    last_err[0] = 0;
    if (piv_alloc(&p, 0)) {
        row_fail(row);
        return;
    }
    double ti = now();
    if (TS(tess_init())) {
        row_fail(row);
        free(p.piv);
        return;
    }
    fprintf(stderr, "  tess_init: %d devices in %.1f s\n", tess_device_count(), now() - ti);
    fdrive(&p, row);
    tess_finalize();
    free(p.piv);
}

/* ---- printing -------------------------------------------------------------------------------- */

static const char *gpu_name(void) { /* in-core's and the check's GPU */
    static char buf[32];
    if (o.ndev < 1) return "no GPU";
    snprintf(buf, sizeof buf, "cuda:%d", o.dev[0]);
    return buf;
}

static double rate_of(const struct fgroup *g, int k) {
    return g->rows[k].status == ROW_OK ? g->rows[k].rate : 0;
}

static void check_cell(const struct row *r, char *buf, size_t len) {
    if (!r->nver)
        snprintf(buf, len, "not verified");
    else if (r->wrong)
        snprintf(buf, len, "FAIL %d/%d runs, worst %.1e", r->wrong, r->nver, r->worst);
    else
        snprintf(buf, len, "ok %.1e (%d runs)", r->worst, r->nver);
}

static const char *resid_of(const struct fgroup *g) { return g->f->resid[g->uplo == 'U']; }

static void print_group(const struct fgroup *g) {
    double incore = rate_of(g, F_INCORE);
    char rat[16], uplo[16] = "";
    if (g->uplo) snprintf(uplo, sizeof uplo, " uplo %c", g->uplo);
    printf("\n%c%s%s  n = %lld  (%.2f GB)  %.4g flop  median of %d  host matrix %s\n",
           prec_char(g->dt), g->f->name, uplo, (long long)g->n, g->bytes * 1e-9, g->flops, o.reps,
           g->pinned ? "pinned" : "NOT page-locked");
    printf("  %-9s %10s %10s %10s %9s %9s %8s %8s  check: worst %s / (||A0||_F n u), pass <= %g\n",
           "row", "median s", "min s", "max s", "TFLOP/s", "/in-core", "H2D GB", "D2H GB",
           resid_of(g), g->f->bound);
    for (int k = 0; k < F_NROWS; k++) {
        const struct row *r = &g->rows[k];
        if (!r->name[0]) continue;
        if (r->status != ROW_OK) {
            printf("  %-9s %s\n", r->name,
                   r->status == ROW_SKIPPED ? "skipped (see notes)" : "FAILED (see notes)");
            continue;
        }
        char h2d[16], d2h[16], p2p[16], chk[80];
        ratio(rat, sizeof rat, r->rate, incore);
        row_bytes_cells(r, h2d, d2h, p2p, sizeof h2d);
        check_cell(r, chk, sizeof chk);
        printf("  %-9s %10.4f %10.4f %10.4f %9.2f %9s %8s %8s  %s\n", r->name, r->med, r->tmin,
               r->tmax, r->rate, rat, h2d, d2h, chk);
    }
    for (int k = 0; k < F_NROWS; k++)
        if (g->rows[k].note[0]) printf("  note: %s: %s\n", g->rows[k].name, g->rows[k].note);
    ratio(rat, sizeof rat, rate_of(g, F_TESS), incore);
    printf("%c%s n = %lld%s: tessera / in-core = %s\n", prec_char(g->dt), g->f->name,
           (long long)g->n, uplo, rat);
    fflush(stdout);
}

static const char csv_header[] =
    "precision,n,routine,uplo,row,reps,median_s,min_s,max_s,tflops,ratio_incore,gb_h2d,gb_d2h,"
    "gb_p2p,worst_ratio,runs_verified,runs_wrong,status,note\n";

static void csv_group(const struct fgroup *g) {
    double incore = rate_of(g, F_INCORE);
    for (int k = 0; k < F_NROWS; k++) {
        const struct row *r = &g->rows[k];
        fprintf(csv, "%c,%lld,%s,%s,%s,%d,", prec_char(g->dt), (long long)g->n, g->f->name,
                g->uplo == 'U' ? "U"
                : g->uplo      ? "L"
                               : "",
                r->name, r->reps);
        if (r->status == ROW_OK) {
            fprintf(csv, "%.6f,%.6f,%.6f,%.4f,", r->med, r->tmin, r->tmax, r->rate);
            if (incore > 0) fprintf(csv, "%.4f", r->rate / incore);
            fputc(',', csv);
        } else {
            fprintf(csv, ",,,,,");
        }
        csv_bytes_check(csv, r);
        fprintf(csv, "%s,",
                r->status == ROW_OK        ? "ok"
                : r->status == ROW_SKIPPED ? "skipped"
                                           : "failed");
        csv_str(csv, r->note);
        fputc('\n', csv);
    }
    fflush(csv);
}

static void add_summary(const struct fgroup *g) {
    if (nsumm == MAX_FSUMM) return;
    struct fsumm *s = &summ[nsumm++];
    int wrong = 0, verified = 0, failed = 0;
    char who[48] = "";
    s->f = g->f, s->dt = g->dt, s->uplo = g->uplo, s->n = g->n;
    for (int k = 0; k < F_NROWS; k++) {
        const struct row *r = &g->rows[k];
        s->rate[k] = rate_of(g, k);
        verified += r->nver > 0, failed += r->status == ROW_FAILED;
        if (r->wrong) {
            size_t len = strlen(who);
            snprintf(who + len, sizeof who - len, "%s%s", len ? "," : "", r->name);
            wrong++;
        }
    }
    if (wrong)
        snprintf(s->check, sizeof s->check, "FAIL: %s", who);
    else if (o.verify == V_NONE)
        snprintf(s->check, sizeof s->check, "not verified");
    else
        snprintf(s->check, sizeof s->check, "ok (%d row(s) verified%s)", verified,
                 failed ? ", some failed" : "");
    if (g->f->pivots && g->ref_row >= 0 && g->piv_diff[F_TESS] >= 0) {
        size_t len = strlen(s->check);
        snprintf(s->check + len, sizeof s->check - len, "; tessera's pivots: %lld differ from %s's",
                 (long long)g->piv_diff[F_TESS], g->rows[g->ref_row].name);
    }
}

static void print_summary(void) {
    char c[4][32];
    printf("\n== factorization summary: TFLOP/s of the median run; tessera / in-core cuSOLVER (%s) "
           "==\n",
           gpu_name());
    printf("| routine | uplo | n | in-core | tessera | CPU LAPACK | tessera / in-core | check |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nsumm; i++) {
        const struct fsumm *s = &summ[i];
        for (int k = 0; k < F_NROWS; k++)
            snprintf(c[k], sizeof c[k], s->rate[k] > 0 ? "%.2f" : "-", s->rate[k]);
        ratio(c[3], sizeof c[3], s->rate[F_TESS], s->rate[F_INCORE]);
        printf("| %c%s | %c | %lld | %s | **%s** | %s | %s | %s |\n", prec_char(s->dt), s->f->name,
               s->uplo ? s->uplo : '-', (long long)s->n, c[F_INCORE], c[F_TESS], c[F_CPU], c[3],
               s->check);
    }
    fflush(stdout);
}

/* ---- one routine, precision and size --------------------------------------------------------- */

static void run_group(const struct factor *f, tess_dtype_t dt, int64_t n) {
    struct fgroup *g = calloc(1, sizeof *g);
    if (!g) {
        fail_msg("calloc", "out of host memory", __FILE__, __LINE__);
        n_errors++;
        return;
    }
    char name[16];
    snprintf(name, sizeof name, "%c%s", prec_char(dt), f->name);
    g->f = f, g->dt = dt, g->uplo = f->uplo ? o.uplo : 0, g->n = n, g->es = esize(dt);
    g->bytes = (size_t)n * (size_t)n * g->es, g->ref_row = -1;
    g->flops = (is_complex(dt) ? 4.0 : 1.0) * f->flop_coef * (double)n * (double)n * (double)n;
    for (int k = 0; k < F_NROWS; k++) g->piv_diff[k] = -1;
    row_init(&g->rows[F_INCORE], K_INCORE, 0, n, "in-core");
    row_init(&g->rows[F_TESS], K_TESS, 0, n, "tessera");
    row_init(
        &g->rows[F_CPU], K_CPU, 0, n,
        strstr(getenv("TESSERA_CPU_BLAS") ? getenv("TESSERA_CPU_BLAS") : "openblas", "openblas")
            ? "openblas"
            : "cpu");
    fprintf(stderr, "%s n = %lld (%.0f s elapsed)\n", name, (long long)n, elapsed());
    double avail = mem_available();
    if (avail > 0 && 2.0 * (double)g->bytes > 0.9 * avail) {
        printf("\n%s n = %lld: not run: needs 2 x %.1f GB of host memory, %.1f GB available\n",
               name, (long long)n, g->bytes * 1e-9, avail * 1e-9);
        n_errors++;
        free(g);
        return;
    }
    double t0 = now();
    g->A0 = tess_malloc_host(g->bytes), g->W = tess_malloc_host(g->bytes);
    if (!g->A0 || !g->W || (f->pivots && !(g->piv_ref = calloc((size_t)n, sizeof *g->piv_ref)))) {
        printf("\n%s n = %lld: not run: tess_malloc_host of 2 x %.1f GB failed\n", name,
               (long long)n, g->bytes * 1e-9);
        n_errors++;
        goto out;
    }
    g->pinned = is_pinned(g->A0) && is_pinned(g->W);
    struct colctx x = {.g = g};
    par_for(col_items(n), fill_item, &x);
    fprintf(stderr, "  A0: 2 x %.2f GB (%s), filled in %.1f s\n", g->bytes * 1e-9,
            g->pinned ? "pinned" : "NOT page-locked", now() - t0);
    row_incore(g); /* before tess_init: the runtime takes nearly all device memory */
    row_cpu(g);
    row_tess(g);
    if (!g->pinned)
        for (int k = F_TESS; k < F_NROWS; k++) note(&g->rows[k], "host matrix NOT page-locked");
    print_group(g);
    if (csv) csv_group(g);
    add_summary(g);
out:
    tess_free_host(g->A0), tess_free_host(g->W);
    free(g->piv_ref);
    free(g);
}

/* one routine: its line, its groups; with level-3 routines too its CSV beside theirs */
static int run_routine(const struct factor *f) {
    int vers = 0;
    char uplo[16] = "";
    (void)cusolverGetVersion(&vers);
    if (f->uplo) snprintf(uplo, sizeof uplo, " uplo %c;", o.uplo);
    printf("\n%s:%s in-core: %s (cuSOLVER %d.%d.%d, runtime %d) on %s; tessera: tess_?%s on "
           "pinned host memory; CPU LAPACK (%s ?%s_) for n <= %d%s; check on %s%s\n",
           f->name, uplo, f->incore, CUSOLVER_VER_MAJOR, CUSOLVER_VER_MINOR, CUSOLVER_VER_PATCH,
           vers, gpu_name(), f->name,
           getenv("TESSERA_CPU_BLAS") ? getenv("TESSERA_CPU_BLAS") : "libopenblas.so.0", f->name,
           CPU_ROW_MAX_N, o.cpu_lapack ? " (and above: --cpu-lapack)" : "",
           o.ndev > 0 ? "the GPU" : "the host (no GPU)",
           f->pivots ? "; pivots compared with in-core's (the CPU's without it)" : "");
    fflush(stdout);
    if (o.csv && o.routines) {
        char path[1024];
        snprintf(path, sizeof path, "%s.%s.csv", o.csv, f->name);
        if (!(csv = fopen(path, "w"))) {
            perror(path);
            return 2;
        }
        fprintf(stderr, "tessera-bench: %s rows go to %s\n", f->name, path);
        fputs(csv_header, csv);
    }
    for (int p = 0; p < o.nprecs; p++)
        for (int i = 0; i < o.nsizes; i++) run_group(f, o.precs[p], o.sizes[i]);
    if (csv && o.routines) fclose(csv), csv = NULL;
    return 0;
}

int bench_factor(void) {
    int rc = 0;
    if (o.csv && !o.routines) { /* alone: every routine's rows in o.csv (the routine column) */
        if (!(csv = fopen(o.csv, "w"))) {
            perror(o.csv);
            return 2;
        }
        fputs(csv_header, csv);
    }
    if (o.ndev > 0 && o.verify != V_NONE) {
        last_err[0] = 0;
        if (CU(cudaSetDevice(o.dev[0])) || CB(cublasCreate(&gv.h)) ||
            CU(cudaStreamCreateWithFlags(&gv.st, cudaStreamNonBlocking)) ||
            CB(cublasSetStream(gv.h, gv.st)) || CS(cusolverDnCreate(&gv.sh)) ||
            CS(cusolverDnSetStream(gv.sh, gv.st))) {
            fprintf(stderr, "tessera-bench: the GPU check cannot start: %s\n", last_err);
            n_errors++;
            if (csv) fclose(csv);
            return 3;
        }
        gv.on = 1;
    }
    for (int r = 0; r < FR_N && !rc; r++)
        if (o.factors & 1u << r) rc = run_routine(routines[r]);
    if (gv.on) {
        (void)CB(cublasDestroy(gv.h));
        (void)CS(cusolverDnDestroy(gv.sh));
        (void)CU(cudaStreamDestroy(gv.st));
        gv.on = 0;
    }
    if (csv) fclose(csv), csv = NULL;
    if (rc) return rc;
    print_summary();
    printf("\n%.0f s in all; %d wrong result(s), %d row(s) failed%s\n", elapsed(), n_wrong,
           n_errors, out_of_time ? ", some rows skipped by --time-limit" : "");
    /* the last lines: the ratio of each case, a line per routine */
    for (int r = 0; r < FR_N; r++) {
        const struct factor *f = routines[r];
        int any = 0;
        if (!(o.factors & 1u << r)) continue;
        printf("%s tessera / in-core:", f->name);
        for (int i = 0; i < nsumm; i++) {
            char rat[16];
            if (summ[i].f != f) continue;
            ratio(rat, sizeof rat, summ[i].rate[F_TESS], summ[i].rate[F_INCORE]);
            printf("%s %c%s n = %lld %s", any++ ? ";" : "", prec_char(summ[i].dt), f->name,
                   (long long)summ[i].n, rat);
        }
        printf("%s\n", any ? "" : " -");
    }
    return n_wrong ? 1 : n_errors ? 3 : 0;
}
