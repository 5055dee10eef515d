/* src/tools/bench_level3.c: tessera-bench --routine, the level-3 comparison (issue 4). For each
 * precision and size N (m = n = k = N) it fills pinned A, B, C0 once and, per routine asked,
 * times the rows in-core (cuBLAS on the first GPU, _64 API; TRMM out of place), xt default and
 * xt b=B (cuBLAS-XT on the host operands, per --xt-blocks) and tess: one warm-up and --reps
 * timed runs, the median; before each run C is reset (C0, B0 for TRMM/TRSM in place, zero for
 * an out-of-place TRMM, so a call that writes nothing fails), after it checked by the oracle
 * (oracle_l3.h). Order within a size: the in-core rows (with trmm, first the C == B check of
 * bench_l3calls.c), tess_init, the tessera rows, tess_finalize, then cuBLAS-XT, one handle per
 * block; --time-limit cuts what would pass it. Tables print per routine, then a summary of
 * every routine and size (ratios to in-core, to the best XT row, to tessera's own GEMM).
 * Results that break netlib's contract outside the numbers (SYRK-like: C's other triangle
 * changed; HERK/HER2K: an imaginary diagonal) are counted and noted, wrong for tessera. */
#include <cublasXt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "oracle.h"
#include "oracle_l3.h"
#include "tessera.h"

#define MAX_ROWS (2 + MAX_LIST)
#define MAX_SUMMARY (4 * MAX_LIST * R_N)

struct l3case {
    enum routine r;
    struct prob p;
    int begun; /* prob_begin done */
    struct row rows[MAX_ROWS];
    int nrows;
};

struct group {
    tess_dtype_t dt;
    int64_t n;
    size_t es, bytes;
    char *A, *B, *C, *At; /* pinned host operands; At: TRSM's A */
    struct l3case cases[R_N];
    int ncases;
};

/* one line of the summary: a routine at one precision and size */
struct summary {
    tess_dtype_t dt;
    enum routine r;
    int64_t n;
    char opts[48];
    double incore, xt_default, xt_best, tess, tess_gemm;
    int xt_best_block, has_xt_default;
    char check[96];
};
static struct summary summ[MAX_SUMMARY];
static int nsumm;
/* the TRMM C == B check, per precision: its line holds the failing option sets (up to 2048
 * bytes) or the failing call (last_err) after about 300 bytes of its own */
static char trmm_lines[4][2048 + 512];
static FILE *csv;

/* ---- rows -------------------------------------------------------------------------------------- */

static struct row *new_row(struct l3case *c, enum kind k, int block) {
    struct row *r = &c->rows[c->nrows++];
    char name[32];
    if (k == K_INCORE)
        snprintf(name, sizeof name, "in-core");
    else if (k == K_TESS)
        snprintf(name, sizeof name, "tess");
    else if (block)
        snprintf(name, sizeof name, "xt b=%d", block);
    else
        snprintf(name, sizeof name, "xt default");
    row_init(r, k, block, 0, name);
    return r;
}

static int out_of_time_row(struct row *r) { return row_out_of_time(r, o.time_limit); }

static char cname[16]; /* "dsyrk" */
static const char *case_name(const struct group *g, const struct l3case *c) {
    snprintf(cname, sizeof cname, "%c%s", prec_char(g->dt), routine_name[c->r]);
    return cname;
}

/* ---- host helpers: parallel copy / zero, TRSM's A ------------------------------------------- */

#define CHUNK_BYTES ((size_t)32 << 20)
struct pmem {
    char *dst;
    const char *src; /* NULL: zero */
    size_t bytes;
};
static void pmem_chunk(void *c, int i) {
    struct pmem *p = c;
    size_t at = (size_t)i * CHUNK_BYTES,
           len = p->bytes - at < CHUNK_BYTES ? p->bytes - at : CHUNK_BYTES;
    if (p->src)
        memcpy(p->dst + at, p->src + at, len);
    else
        memset(p->dst + at, 0, len);
}
static void pcopy(void *dst, const void *src, size_t bytes) {
    struct pmem p = {dst, src, bytes};
    par_for((int)((bytes + CHUNK_BYTES - 1) / CHUNK_BYTES), pmem_chunk, &p);
}
static void pzero(void *dst, size_t bytes) { pcopy(dst, NULL, bytes); }

struct trsm_a {
    tess_dtype_t dt;
    char *X;
    int64_t n;
};
#define TRSM_COLS 256
/* TRSM's A: the random A with its off-diagonal part / (2n) and its diagonal 1 + |re| (+ i im /
 * 2): diagonally dominant by rows and by columns, so X is well conditioned for every option;
 * the values do not change the work */
static void trsm_a_chunk(void *c, int q) {
    struct trsm_a *t = c;
    int64_t j0 = (int64_t)q * TRSM_COLS, j1 = j0 + TRSM_COLS < t->n ? j0 + TRSM_COLS : t->n;
    double s = 0.5 / (double)t->n;
    int cpx = is_complex(t->dt), single = t->dt == TESS_S || t->dt == TESS_C;
    for (int64_t j = j0; j < j1; j++)
        for (int64_t i = 0; i < t->n; i++) {
            size_t at = ((size_t)j * (size_t)t->n + (size_t)i) * (cpx ? 2 : 1);
            double re = single ? ((float *)t->X)[at] : ((double *)t->X)[at];
            double im = !cpx ? 0 : single ? ((float *)t->X)[at + 1] : ((double *)t->X)[at + 1];
            if (i == j)
                re = 1.0 + fabs(re), im *= 0.5;
            else
                re *= s, im *= s;
            if (single) {
                ((float *)t->X)[at] = (float)re;
                if (cpx) ((float *)t->X)[at + 1] = (float)im;
            } else {
                ((double *)t->X)[at] = re;
                if (cpx) ((double *)t->X)[at + 1] = im;
            }
        }
}

/* ---- one row: warm-up, timed runs, checks (drive, bench_lib.h) ---------------------------------- */

/* run(): reset C, one timed call, the result in host memory at R */
struct l3runner {
    struct runner r;
    struct group *g;
    struct l3case *c;
    const void *R; /* host result the check reads (ld = n) */
};

static void verify_run(struct runner *self, struct row *row, char *verdict, size_t vlen) {
    struct l3runner *rn = (struct l3runner *)self;
    double t0 = now();
    struct check_flags f;
    double w = prob_check(&rn->c->p, rn->R, rn->g->n, &f);
    double ver = now() - t0;
    int bad = !(w <= 1.0);
    if (f.other_changed) row->other_bad++;
    if (f.diag_imag) row->diag_bad++;
    if (row->kind == K_TESS && (f.other_changed || f.diag_imag)) bad = 1; /* our contract */
    row_verified(row, w, bad);
    snprintf(verdict, vlen, "%s %.1e%s%s (check %.2f s)", bad ? "WRONG" : "ok", w,
             f.other_changed ? ", other triangle CHANGED" : "",
             f.diag_imag ? ", diagonal imag != 0" : "", ver);
}

static void tess_before(struct runner *self, struct row *row) {
    if (row->kind == K_TESS) tess_reset_stats();
}

/* tessera: bytes per timed run, all devices */
static void tess_after(struct runner *self, struct row *row, double timed_s) {
    (void)timed_s;
    if (row->kind == K_TESS) tess_row_bytes(row);
}

static void l3_drive(struct l3runner *rn, struct row *row) {
    struct timing tm = bench_timing();
    rn->r.verify = verify_run, rn->r.before_timed = tess_before, rn->r.after_timed = tess_after;
    rn->r.secs_width = 8, rn->r.note_decimals = 3, rn->r.flops = rn->c->p.flops;
    snprintf(rn->r.label, sizeof rn->r.label, "  %-7s %-6lld %-12s", case_name(rn->g, rn->c),
             (long long)rn->g->n, row->name);
    drive(&rn->r, row, &tm);
    if (row->status != ROW_OK) return;
    if (row->other_bad) note(row, "the other triangle of C changed in %d run(s)", row->other_bad);
    if (row->diag_bad)
        note(row, "nonzero imaginary parts on C's diagonal in %d run(s) (netlib sets them to 0)",
             row->diag_bad);
}

/* C0 (fill), B0 (copy) or zero into host C before a run */
static void reset_host_c(struct group *g, struct l3case *c, int out_of_place_trmm) {
    if (c->r == R_TRMM && out_of_place_trmm)
        pzero(g->C, g->bytes);
    else if (c->r == R_TRMM || c->r == R_TRSM)
        pcopy(g->C, g->B, g->bytes);
    else
        fill(g->dt, g->C, g->n, SEED_C);
}

/* ---- in-core cuBLAS ------------------------------------------------------------------------------ */

struct incore {
    struct l3runner r;
    int dev;
    cublasHandle_t h;
    cudaEvent_t e0, e1;
    void *dA, *dB, *dC, *dC0; /* dC0: C0 kept on the device when it fits, else NULL */
    const void *dA_holds;     /* host matrix dA mirrors */
};

static int incore_run(struct runner *self, double *secs) {
    struct incore *ic = (struct incore *)self;
    struct group *g = ic->r.g;
    struct l3case *c = ic->r.c;
    float ms = 0;
    if (CU(cudaSetDevice(ic->dev))) return -1;
    if (c->r == R_TRMM) { /* out of place: C is not read; zero so a no-op fails */
        if (CU(cudaMemset(ic->dC, 0, g->bytes))) return -1;
    } else if (c->r == R_TRSM) {
        if (CU(cudaMemcpy(ic->dC, ic->dB, g->bytes, cudaMemcpyDeviceToDevice))) return -1;
    } else if (ic->dC0) {
        if (CU(cudaMemcpy(ic->dC, ic->dC0, g->bytes, cudaMemcpyDeviceToDevice))) return -1;
    } else {
        fill(g->dt, g->C, g->n, SEED_C);
        if (CU(cudaMemcpy(ic->dC, g->C, g->bytes, cudaMemcpyHostToDevice))) return -1;
    }
    if (CU(cudaDeviceSynchronize()) || CU(cudaEventRecord(ic->e0, 0)) ||
        CB(l3_incore_call(ic->h, &c->p, ic->dA, ic->dB, ic->dC, g->n)) ||
        CU(cudaEventRecord(ic->e1, 0)) || CU(cudaEventSynchronize(ic->e1)) ||
        CU(cudaEventElapsedTime(&ms, ic->e0, ic->e1)) ||
        CU(cudaMemcpy(g->C, ic->dC, g->bytes, cudaMemcpyDeviceToHost)))
        return -1;
    *secs = 1e-3 * ms;
    return 0;
}

/* The device buffers of the in-core rows: A, B, C and, when it fits too, C0. */
static int incore_open(struct incore *ic, struct group *g, char *why, size_t wlen) {
    size_t fr = 0, tot = 0;
    ic->dev = o.dev[0];
    if (CU(cudaSetDevice(ic->dev)) || CU(cudaMemGetInfo(&fr, &tot))) return -1;
    if (3.0 * (double)g->bytes > 0.9 * (double)fr) {
        snprintf(why, wlen, "does not fit: 3 x %.1f GB > 90%% of %.1f GB free on cuda:%d",
                 g->bytes * 1e-9, fr * 1e-9, ic->dev);
        return -2;
    }
    int keep_c0 = 4.0 * (double)g->bytes <= 0.9 * (double)fr;
    if (CU(cudaMalloc(&ic->dA, g->bytes)) || CU(cudaMalloc(&ic->dB, g->bytes)) ||
        CU(cudaMalloc(&ic->dC, g->bytes)) || (keep_c0 && CU(cudaMalloc(&ic->dC0, g->bytes))) ||
        CB(cublasCreate(&ic->h)) || CU(cudaEventCreate(&ic->e0)) || CU(cudaEventCreate(&ic->e1)) ||
        CU(cudaMemcpy(ic->dB, g->B, g->bytes, cudaMemcpyHostToDevice)))
        return -1;
    /* host C holds C0 until the first run */
    if (ic->dC0 && CU(cudaMemcpy(ic->dC0, g->C, g->bytes, cudaMemcpyHostToDevice))) return -1;
    return 0;
}

static void incore_close(struct incore *ic) {
    if (ic->e0) (void)CU(cudaEventDestroy(ic->e0));
    if (ic->e1) (void)CU(cudaEventDestroy(ic->e1));
    if (ic->h) (void)CB(cublasDestroy(ic->h));
    void *bufs[4] = {ic->dA, ic->dB, ic->dC, ic->dC0};
    for (int i = 0; i < 4; i++)
        if (bufs[i]) (void)CU(cudaFree(bufs[i]));
    memset(ic, 0, sizeof *ic);
}

static void row_incore(struct incore *ic, struct group *g, struct l3case *c, int open_rc,
                       const char *why) {
    struct row *row = new_row(c, K_INCORE, 0);
    if (out_of_time_row(row)) return;
    if (open_rc == -2) {
        row->status = ROW_SKIPPED;
        note(row, "skipped: %s", why);
        return;
    }
    if (open_rc) {
        row_fail(row);
        return;
    }
    last_err[0] = 0;
    if (ic->dA_holds != c->p.A) { /* A, or TRSM's A */
        if (CU(cudaSetDevice(ic->dev)) ||
            CU(cudaMemcpy(ic->dA, c->p.A, g->bytes, cudaMemcpyHostToDevice))) {
            row_fail(row);
            return;
        }
        ic->dA_holds = c->p.A;
    }
    ic->r.g = g, ic->r.c = c, ic->r.R = g->C, ic->r.r.run = incore_run;
    l3_drive(&ic->r, row);
    if (c->r == R_TRMM && row->status == ROW_OK) note(row, "cuBLAS TRMM out of place (C != B)");
}

/* ---- cuBLAS-XT ------------------------------------------------------------------------------------ */

struct xt {
    struct l3runner r;
    cublasXtHandle_t h;
};

static int xt_run(struct runner *self, double *secs) {
    struct xt *x = (struct xt *)self;
    struct group *g = x->r.g;
    struct l3case *c = x->r.c;
    reset_host_c(g, c, 1);
    double t0 = now();
    /* blocking: C is final on the host when it returns */
    if (CB(l3_xt_call(x->h, &c->p, g->C, (size_t)g->n))) return -1;
    *secs = now() - t0;
    return 0;
}

/* ---- tessera ---------------------------------------------------------------------------------------- */

static int tess_run(struct runner *self, double *secs) {
    struct l3runner *rn = (struct l3runner *)self;
    struct group *g = rn->g;
    struct l3case *c = rn->c;
    reset_host_c(g, c, 0);
    double t0 = now();
    if (TS(l3_tess_call(&c->p, g->C, g->n))) return -1;
    *secs = now() - t0;
    return 0;
}

/* ---- printing ------------------------------------------------------------------------------------- */

static const struct row *best_xt(const struct l3case *c) {
    const struct row *b = NULL;
    for (int i = 0; i < c->nrows; i++) {
        const struct row *r = &c->rows[i];
        if (r->kind == K_XT && r->status == ROW_OK && !r->wrong && (!b || r->rate > b->rate)) b = r;
    }
    return b;
}
static double rate_of(const struct l3case *c, enum kind k) {
    for (int i = 0; i < c->nrows; i++)
        if (c->rows[i].kind == (int)k && c->rows[i].status == ROW_OK) return c->rows[i].rate;
    return 0;
}

static void print_case(const struct group *g, const struct l3case *c) {
    char opts[64];
    const struct row *bx = best_xt(c);
    double incore = rate_of(c, K_INCORE), bxr = bx ? bx->rate : 0;
    char al[40], be[40];
    if (is_complex(g->dt) && c->p.ai != 0)
        snprintf(al, sizeof al, "%.3Lg%+.3Lgi", c->p.ar, c->p.ai);
    else
        snprintf(al, sizeof al, "%.3Lg", c->p.ar);
    if (is_complex(g->dt) && c->p.bi != 0)
        snprintf(be, sizeof be, "%.3Lg%+.3Lgi", c->p.br, c->p.bi);
    else
        snprintf(be, sizeof be, "%.3Lg", c->p.br);
    printf("\n%c%s %s  m = n = k = %lld  alpha %s%s%s  (%.2f GB per matrix)  %.3g flop  median "
           "of %d\n",
           prec_char(g->dt), routine_name[c->r], prob_opts(&c->p, opts, sizeof opts),
           (long long)g->n, al, c->r == R_TRMM || c->r == R_TRSM ? "" : " beta ",
           c->r == R_TRMM || c->r == R_TRSM ? "" : be, g->bytes * 1e-9, c->p.flops, o.reps);
    printf("%-12s %10s %9s %8s %8s %8s %8s %8s  %s\n", "row", "median s", "TFLOP/s", "/in-core",
           "/best XT", "H2D GB", "D2H GB", "P2P GB", "check (worst error/bound)");
    static const enum kind order[3] = {K_INCORE, K_XT, K_TESS};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < c->nrows; i++) {
            const struct row *r = &c->rows[i];
            if (r->kind != (int)order[k]) continue;
            if (r->status != ROW_OK) {
                printf("%-12s %s\n", r->name,
                       r->status == ROW_SKIPPED ? "skipped (see notes)" : "FAILED (see notes)");
                continue;
            }
            char ri[16], rx[16], h2d[16], d2h[16], p2p[16], chk[64];
            ratio(ri, sizeof ri, r->rate, incore);
            ratio(rx, sizeof rx, r->rate, bxr);
            row_bytes_cells(r, h2d, d2h, p2p, sizeof h2d);
            row_check_cell(r, chk, sizeof chk);
            printf("%-12s %10.3f %9.2f %8s %8s %8s %8s %8s  %s\n", r->name, r->med, r->rate, ri, rx,
                   h2d, d2h, p2p, chk);
        }
    int first = 1;
    for (int i = 0; i < c->nrows; i++) print_note(&c->rows[i], &first);
    fflush(stdout);
}

static const char csv_header[] =
    "precision,n,routine,side,uplo,trans,diag,row,kind,block,reps,median_s,min_s,max_s,tflops,"
    "ratio_incore,ratio_best_xt,gb_h2d,gb_d2h,gb_p2p,worst_ratio,runs_verified,runs_wrong,status,"
    "note\n";

static void csv_case(const struct group *g, const struct l3case *c) {
    const struct row *bx = best_xt(c);
    double incore = rate_of(c, K_INCORE);
    for (int i = 0; i < c->nrows; i++) {
        const struct row *r = &c->rows[i];
        const char *st = r->status == ROW_OK        ? "ok"
                         : r->status == ROW_SKIPPED ? "skipped"
                                                    : "failed";
        fprintf(csv, "%c,%lld,%s,%c,%c,%c,%c,", prec_char(g->dt), (long long)g->n,
                routine_name[c->r], c->p.side, c->p.uplo, c->p.trans, c->p.diag);
        csv_str(csv, r->name);
        fprintf(csv, ",%s,%d,%d,", kind_names[r->kind], r->block, r->reps);
        if (r->status == ROW_OK) {
            fprintf(csv, "%.6f,%.6f,%.6f,%.4f,", r->med, r->tmin, r->tmax, r->rate);
            if (incore > 0) fprintf(csv, "%.4f", r->rate / incore);
            fputc(',', csv);
            if (bx) fprintf(csv, "%.4f", r->rate / bx->rate);
            fputc(',', csv);
        } else {
            fprintf(csv, ",,,,,,");
        }
        csv_bytes_check(csv, r);
        fprintf(csv, "%s,", st);
        csv_str(csv, r->note);
        fputc('\n', csv);
    }
    fflush(csv);
}

static void add_summary(const struct group *g) {
    double tess_gemm = 0;
    for (int i = 0; i < g->ncases; i++)
        if (g->cases[i].r == R_GEMM) tess_gemm = rate_of(&g->cases[i], K_TESS);
    for (int i = 0; i < g->ncases && nsumm < MAX_SUMMARY; i++) {
        const struct l3case *c = &g->cases[i];
        struct summary *s = &summ[nsumm++];
        memset(s, 0, sizeof *s);
        s->dt = g->dt, s->r = c->r, s->n = g->n, s->tess_gemm = tess_gemm;
        prob_opts(&c->p, s->opts, sizeof s->opts);
        s->incore = rate_of(c, K_INCORE), s->tess = rate_of(c, K_TESS);
        const struct row *bx = best_xt(c);
        if (bx) s->xt_best = bx->rate, s->xt_best_block = bx->block;
        for (int k = 0; k < c->nrows; k++) {
            const struct row *r = &c->rows[k];
            if (r->kind == K_XT && r->block == 0 && r->status == ROW_OK)
                s->xt_default = r->rate, s->has_xt_default = 1;
        }
        int wrong = 0, failed = 0, skipped = 0, verified = 0;
        char who[64] = "";
        for (int k = 0; k < c->nrows; k++) {
            const struct row *r = &c->rows[k];
            if (r->status == ROW_FAILED) failed++;
            if (r->status == ROW_SKIPPED) skipped++;
            if (r->nver) verified++;
            if (r->wrong) {
                wrong++;
                size_t len = strlen(who);
                snprintf(who + len, sizeof who - len, "%s%s", len ? "," : "", r->name);
            }
        }
        if (wrong)
            snprintf(s->check, sizeof s->check, "WRONG: %s", who);
        else if (o.verify == V_NONE)
            snprintf(s->check, sizeof s->check, "not verified");
        else if (!verified)
            snprintf(s->check, sizeof s->check, "nothing verified (%d failed, %d skipped)", failed,
                     skipped);
        else
            snprintf(s->check, sizeof s->check, "ok (%d row(s)%s%s)", verified,
                     failed ? ", some failed" : "", skipped ? ", some skipped" : "");
    }
}

static void print_summary(void) {
    char cell[8][32];
    printf("\n== level-3 summary: TFLOP/s of the median run; / in-core cuBLAS (first GPU), / best "
           "cuBLAS-XT row, / tessera's own GEMM (same precision and size, same run) ==\n");
    printf("| routine | options | n | in-core | XT default | XT best (block) | tessera | tess / "
           "in-core | tess / best XT | tess / tess gemm | check |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nsumm; i++) {
        const struct summary *s = &summ[i];
        snprintf(cell[0], sizeof cell[0], s->incore > 0 ? "%.2f" : "-", s->incore);
        snprintf(cell[1], sizeof cell[1], s->has_xt_default ? "%.2f" : "-", s->xt_default);
        if (s->xt_best > 0)
            snprintf(cell[2], sizeof cell[2], s->xt_best_block ? "%.2f (%d)" : "%.2f (default)",
                     s->xt_best, s->xt_best_block);
        else
            snprintf(cell[2], sizeof cell[2], "-");
        snprintf(cell[3], sizeof cell[3], s->tess > 0 ? "**%.2f**" : "-", s->tess);
        ratio(cell[4], sizeof cell[4], s->tess, s->incore);
        ratio(cell[5], sizeof cell[5], s->tess, s->xt_best);
        ratio(cell[6], sizeof cell[6], s->tess, s->tess_gemm);
        printf("| %c%s | %s | %lld | %s | %s | %s | %s | %s | %s | %s | %s |\n", prec_char(s->dt),
               routine_name[s->r], s->opts, (long long)s->n, cell[0], cell[1], cell[2], cell[3],
               cell[4], cell[5], cell[6], s->check);
    }
    for (int d = 0; d < 4; d++)
        if (trmm_lines[d][0]) printf("%s\n", trmm_lines[d]);
    fflush(stdout);
}

/* ---- one precision and size ---------------------------------------------------------------------- */

static struct {
    char *A, *B, *C, *At;
    size_t cap;
    int pinned;
} hb;

static void free_host(void) {
    tess_free_host(hb.A), tess_free_host(hb.B), tess_free_host(hb.C), tess_free_host(hb.At);
    memset(&hb, 0, sizeof hb);
}

/* Pinned A, B, C (and TRSM's A) of `bytes` each; `want` (>= bytes) when it fits, so later,
 * larger sizes need no second allocation. */
static int ensure_host(size_t bytes, size_t want, int with_at) {
    if (hb.cap >= bytes && (!with_at || hb.At)) return 0;
    int nmat = with_at ? 4 : 3;
    double avail = mem_available() + (double)(hb.cap * (hb.At ? 4 : 3));
    if (avail > 0 && nmat * (double)bytes > 0.9 * avail) {
        char why[200];
        snprintf(why, sizeof why, "needs %d x %.1f GB of host memory, %.1f GB available", nmat,
                 bytes * 1e-9, avail * 1e-9);
        return fail_msg("host operands", why, __FILE__, __LINE__);
    }
    if (avail <= 0 || nmat * (double)want > 0.9 * avail) want = bytes;
    free_host();
    double t0 = now();
    hb.A = tess_malloc_host(want), hb.B = tess_malloc_host(want), hb.C = tess_malloc_host(want);
    if (with_at) hb.At = tess_malloc_host(want);
    if (!hb.A || !hb.B || !hb.C || (with_at && !hb.At)) {
        free_host();
        return fail_msg("tess_malloc_host", "out of host memory", __FILE__, __LINE__);
    }
    hb.cap = want;
    hb.pinned = is_pinned(hb.A) && is_pinned(hb.B) && is_pinned(hb.C);
    fprintf(stderr, "  tess_malloc_host: %d x %.2f GB in %.1f s%s\n", nmat, want * 1e-9, now() - t0,
            hb.pinned ? " (pinned)" : ", NOT page-locked");
    return 0;
}

static void run_group(tess_dtype_t dt, int64_t n, size_t want, int trmm_check) {
    struct group *g = calloc(1, sizeof *g);
    if (!g) {
        fprintf(stderr, "tessera-bench: out of host memory\n");
        n_errors++;
        return;
    }
    g->dt = dt, g->n = n, g->es = esize(dt), g->bytes = (size_t)n * (size_t)n * g->es;
    for (int r = 0; r < R_N; r++)
        if ((o.routines >> r & 1u) && (is_complex(dt) || !routine_complex_only((enum routine)r)))
            g->cases[g->ncases++].r = (enum routine)r;
    if (!g->ncases) {
        free(g);
        return;
    }
    int with_trsm = g->cases[g->ncases - 1].r == R_TRSM;
    fprintf(stderr, "%c, n = %lld: %d routine(s) (%.0f s elapsed)\n", prec_char(dt), (long long)n,
            g->ncases, elapsed());
    if (o.time_limit > 0 && elapsed() > o.time_limit) {
        printf("\n%c n = %lld: skipped, --time-limit %.0f s reached\n", prec_char(dt), (long long)n,
               o.time_limit);
        out_of_time = 1;
        free(g);
        return;
    }
    last_err[0] = 0;
    if (ensure_host(g->bytes, want, with_trsm)) {
        printf("\n%c n = %lld: not run: %s\n", prec_char(dt), (long long)n, last_err);
        n_errors++;
        free(g);
        return;
    }
    g->A = hb.A, g->B = hb.B, g->C = hb.C, g->At = hb.At;
    double t0 = now();
    fill(dt, g->A, n, SEED_A), fill(dt, g->B, n, SEED_B), fill(dt, g->C, n, SEED_C);
    if (with_trsm) {
        struct trsm_a ta = {dt, g->At, n};
        fill(dt, g->At, n, SEED_A);
        par_for((int)((n + TRSM_COLS - 1) / TRSM_COLS), trsm_a_chunk, &ta);
    }
    for (int i = 0; i < g->ncases; i++) { /* host C holds C0 */
        struct l3case *c = &g->cases[i];
        prob_init(&c->p, c->r, dt, o.side, o.uplo, o.trans, o.diag, n, n, n,
                  c->r == R_TRSM ? g->At : g->A, n, g->B, n);
        c->p.threads = o.threads;
        if (o.verify == V_NONE) continue;
        if (prob_begin(&c->p, c->r == R_TRMM || c->r == R_TRSM ? NULL : g->C, n)) {
            printf("\n%c n = %lld: not run: out of host memory for the oracle\n", prec_char(dt),
                   (long long)n);
            n_errors++;
            for (int j = 0; j < i; j++) prob_end(&g->cases[j].p);
            free(g);
            return;
        }
        c->begun = 1;
    }
    fprintf(stderr, "  operands filled%s in %.1f s\n",
            o.verify != V_NONE ? ", the oracle's products taken" : "", now() - t0);

    /* in-core: the ceiling (and the TRMM C == B check) */
    if (!o.skip[K_INCORE] && o.ndev > 0) {
        if (trmm_check && !(o.time_limit > 0 && elapsed() > o.time_limit))
            for (int i = 0; i < g->ncases; i++)
                if (g->cases[i].r == R_TRMM)
                    trmm_inplace_check(dt, trmm_lines[dt], sizeof trmm_lines[dt], csv);
        struct incore ic;
        memset(&ic, 0, sizeof ic);
        char why[200] = "";
        last_err[0] = 0;
        int orc = incore_open(&ic, g, why, sizeof why);
        if (orc == -2) fprintf(stderr, "  in-core: %s\n", why);
        for (int i = 0; i < g->ncases; i++) row_incore(&ic, g, &g->cases[i], orc, why);
        incore_close(&ic);
    } else if (!o.skip[K_INCORE]) {
        for (int i = 0; i < g->ncases; i++) {
            struct row *row = new_row(&g->cases[i], K_INCORE, 0);
            row->status = ROW_SKIPPED;
            note(row, "skipped: no GPU");
        }
    }
    /* tessera */
    if (!o.skip[K_TESS]) {
        int trc = 0, inited = 0;
        if (!(o.time_limit > 0 && elapsed() > o.time_limit)) {
            last_err[0] = 0;
            double ti = now();
            trc = TS(tess_init());
            inited = !trc;
            if (inited)
                fprintf(stderr, "  tess_init: %d devices in %.1f s\n", tess_device_count(),
                        now() - ti);
        }
        char init_err[sizeof last_err];
        snprintf(init_err, sizeof init_err, "%s", last_err);
        for (int i = 0; i < g->ncases; i++) {
            struct l3case *c = &g->cases[i];
            struct row *row = new_row(c, K_TESS, 0);
            if (out_of_time_row(row)) continue;
            if (trc) {
                snprintf(last_err, sizeof last_err, "%s", init_err);
                row_fail(row);
                continue;
            }
            struct l3runner rn = {.r = {.run = tess_run}, .g = g, .c = c, .R = g->C};
            l3_drive(&rn, row);
        }
        if (inited) tess_finalize();
    }
    /* cuBLAS-XT, one handle per block */
    for (int b = 0; !o.skip[K_XT] && b < o.nblocks; b++) {
        struct xt x;
        memset(&x, 0, sizeof x);
        int hrc = 0;
        int any = !(o.time_limit > 0 && elapsed() > o.time_limit) && o.ndev > 0;
        last_err[0] = 0;
        if (any)
            hrc = CB(cublasXtCreate(&x.h)) || CB(cublasXtDeviceSelect(x.h, o.ndev, o.dev)) ||
                  (o.blocks[b] && CB(cublasXtSetBlockDim(x.h, o.blocks[b])));
        char herr[sizeof last_err];
        snprintf(herr, sizeof herr, "%s", last_err);
        for (int i = 0; i < g->ncases; i++) {
            struct l3case *c = &g->cases[i];
            struct row *row = new_row(c, K_XT, o.blocks[b]);
            if (o.ndev < 1) {
                row->status = ROW_SKIPPED;
                note(row, "skipped: no GPU");
                continue;
            }
            if (out_of_time_row(row)) continue;
            if (hrc) {
                snprintf(last_err, sizeof last_err, "%s", herr);
                row_fail(row);
                continue;
            }
            x.r.r.run = xt_run, x.r.g = g, x.r.c = c, x.r.R = g->C;
            l3_drive(&x.r, row);
        }
        if (x.h) (void)CB(cublasXtDestroy(x.h));
    }
    if (!hb.pinned)
        for (int i = 0; i < g->ncases; i++)
            for (int k = 0; k < g->cases[i].nrows; k++)
                if (g->cases[i].rows[k].kind != K_INCORE)
                    note(&g->cases[i].rows[k], "host operands are NOT page-locked");
    for (int i = 0; i < g->ncases; i++) {
        print_case(g, &g->cases[i]);
        if (csv) csv_case(g, &g->cases[i]);
        if (g->cases[i].begun) prob_end(&g->cases[i].p);
    }
    add_summary(g);
    free(g);
}

int bench_level3(void) {
    char opts[8];
    snprintf(opts, sizeof opts, "%c%c%c%c", o.side, o.uplo, o.trans, o.diag);
    printf("level 3: routines");
    for (int r = 0; r < R_N; r++)
        if (o.routines >> r & 1u) printf(" %s", routine_name[r]);
    printf("; side %c uplo %c trans %c diag %c; cuBLAS-XT blocks", o.side, o.uplo, o.trans, o.diag);
    for (int b = 0; b < o.nblocks; b++)
        if (o.blocks[b])
            printf(" %d", o.blocks[b]);
        else
            printf(" default");
    printf("; rows:%s%s%s\n", o.skip[K_INCORE] ? "" : " in-core", o.skip[K_XT] ? "" : " xt",
           o.skip[K_TESS] ? "" : " tess");
    fflush(stdout);
    if (o.csv) {
        csv = fopen(o.csv, "w");
        if (!csv) {
            perror(o.csv);
            return 2;
        }
        fputs(csv_header, csv);
    }
    size_t want = 0; /* the largest matrix of the run, allocated once when it fits */
    for (int p = 0; p < o.nprecs; p++)
        for (int i = 0; i < o.nsizes; i++) {
            size_t b = (size_t)o.sizes[i] * (size_t)o.sizes[i] * esize(o.precs[p]);
            if (b > want) want = b;
        }
    for (int p = 0; p < o.nprecs; p++)
        for (int i = 0; i < o.nsizes; i++)
            run_group(o.precs[p], o.sizes[i], want, i == 0 && (o.routines >> R_TRMM & 1u));
    free_host();
    print_summary();
    if (csv) fclose(csv);
    printf("\n%.0f s in all; %d wrong result(s), %d row(s) failed%s\n", elapsed(), n_wrong,
           n_errors, out_of_time ? ", some rows skipped by --time-limit" : "");
    return n_wrong ? 1 : n_errors ? 3 : 0;
}
