/* src/tools/tessera_gemm.c: tessera-gemm, the main job: a timed, verified GEMM on random host
 * matrices. Built with MPI (TESS_HAVE_MPI) it is a distributed GEMM under mpirun or srun (or
 * an MPI singleton): the ranks form a P x Q grid (tess_grid_create), each fills its blocks of
 * A, B and C in the 2D block-cyclic layout (nb x nb, first block on process (0, 0)) and every
 * run is one tess_p?gemm; without MPI the same job through tess_gemm. Entries are a hash of
 * (matrix, global row, global column): the same matrices whatever the grid and block size.
 * Every run is checked by the probe-vector oracle (oracle.h, its bound), distributed: each
 * rank multiplies its local blocks by the probe entries they meet (long double, threads) into
 * vectors of global length that MPI_Allreduce sums; no matrix is gathered; "rel err" is the
 * worst error/bound times gamma_N, the "tolerance". Output: rank 0 alone prints the header,
 * one line per run, the median, the verdict ("verified: ok (rel err ...)"), each rank's
 * counters and tess_pgemm_last_stats; a progress line goes to stderr every few seconds.
 * Exit status, the same on every rank: 0 every run passed, 1 a failure, 2 bad usage. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef TESS_HAVE_MPI
#include <mpi.h>

#include "tessera_mpi.h"
#else
#include "tessera.h"
#endif

#include "oracle.h"

#define PROG "tessera-gemm"
#ifdef TESS_HAVE_MPI
#define MPI_BUILD 1
#else
#define MPI_BUILD 0
#endif

/* ---- the process: rank, size and the few collectives the job needs -------------------- */

static int g_rank = 0, g_size = 1, g_local = 1; /* g_local: ranks on this node */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* true on every rank when ok is true on every rank */
static bool agree(bool ok) {
#ifdef TESS_HAVE_MPI
    int v = ok, all = 0;
    MPI_Allreduce(&v, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    return all != 0;
#else
    return ok;
#endif
}

static double max_all(double v) {
#ifdef TESS_HAVE_MPI
    double m = v;
    MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
#else
    return v;
#endif
}

static void sum_all_ld(long double *x, int64_t n) {
#ifdef TESS_HAVE_MPI
    /* in pieces: counts are int */
    for (int64_t at = 0; at < n; at += 1 << 28) {
        int c = (int)(n - at < (1 << 28) ? n - at : (1 << 28));
        MPI_Allreduce(MPI_IN_PLACE, x + at, c, MPI_LONG_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
#else
    (void)x, (void)n;
#endif
}

/* ---- options -------------------------------------------------------------------------- */

struct opts {
    int64_t m, n, k, nb;
    int reps, P, Q;
    char prec, ta, tb;
    double alpha[2], beta[2];
    bool pinned, verify, warmup;
};

static void usage(FILE *f) {
    fprintf(f,
            "usage: " PROG " [-m M] [-n N] [-k K] [-p s|d|c|z] [--ta N|T|C] [--tb N|T|C]\n"
            "                    [--alpha A[,Ai]] [--beta B[,Bi]] [-r reps] [--no-warmup]\n"
            "                    [-P rows] [-Q cols] [--nb NB] [--pinned] [--no-verify]\n"
            "  C = alpha op(A) op(B) + beta C on random host matrices, C m x n, op(A) m x k,\n"
            "  op(B) k x n, timed and verified by the probe-vector oracle.\n"
#ifdef TESS_HAVE_MPI
            "  Distributed (launch with mpirun/srun, or run alone): the ranks form a P x Q\n"
            "  grid, the matrices are 2D block-cyclic in NB x NB blocks, each run is one\n"
            "  tess_p?gemm; verification never gathers a matrix.\n"
#else
            "  This build has no MPI: one process, tess_gemm (-P, -Q: 1 only; --nb: no effect).\n"
#endif
            "  -m, -n, -k      sizes (default m = 2048, n = m, k = m)\n"
            "  -p              precision (default d)\n"
            "  --ta, --tb      op(A), op(B): N, T or C (also -a, -b; default N)\n"
            "  --alpha, --beta scalars, re[,im] (default 1 and 0.5)\n"
            "  -r              timed runs (default 3), after one warm-up run unless --no-warmup\n"
            "  -P, -Q          grid shape (default: the squarest for the number of ranks; one of\n"
            "                  them alone: the other is ranks / it); ranks beyond P x Q idle\n"
            "  --nb            block size (default 1024 when a rank drives a GPU, else 64)\n"
            "  --pinned        allocate the local arrays with tess_malloc_host (page-locked)\n"
            "  --no-verify     skip the verification\n"
            "  Devices, tiles and memory come from the TESSERA_* knobs (docs/knobs.md,\n"
            "  tessera-info); one rank per GPU: TESSERA_DEVICES per rank (jobs/mpirun-gemm.sh).\n"
            "  Exit status: 0 every run verified, 1 a failure, 2 bad usage.\n");
}

static bool parse_i64(const char *s, int64_t lo, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo) return false;
    *out = v;
    return true;
}

static bool parse_scalar(const char *s, double v[2]) {
    char *end;
    errno = 0;
    v[0] = strtod(s, &end);
    v[1] = 0;
    if (errno || end == s) return false;
    if (*end == ',') {
        const char *s2 = end + 1;
        v[1] = strtod(s2, &end);
        if (errno || end == s2) return false;
    }
    return *end == 0 && isfinite(v[0]) && isfinite(v[1]);
}

/* 0: run, 1: --help, 2: bad usage (the message is in err) */
static int parse(int argc, char **argv, struct opts *o, char *err, size_t errsz) {
    *o = (struct opts){.m = 2048,
                       .n = -1,
                       .k = -1,
                       .nb = 0,
                       .reps = 3,
                       .prec = 'd',
                       .ta = 'N',
                       .tb = 'N',
                       .alpha = {1, 0},
                       .beta = {0.5, 0},
                       .verify = true,
                       .warmup = true};
    enum { O_TA = 256, O_TB, O_ALPHA, O_BETA, O_NB, O_PINNED, O_NOVERIFY, O_NOWARMUP };
    static const struct option lo[] = {{"ta", required_argument, 0, O_TA},
                                       {"tb", required_argument, 0, O_TB},
                                       {"alpha", required_argument, 0, O_ALPHA},
                                       {"beta", required_argument, 0, O_BETA},
                                       {"nb", required_argument, 0, O_NB},
                                       {"pinned", no_argument, 0, O_PINNED},
                                       {"no-verify", no_argument, 0, O_NOVERIFY},
                                       {"no-warmup", no_argument, 0, O_NOWARMUP},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    opterr = 0; /* every rank parses the same argv: rank 0 alone reports */
    optind = 1;
    int c;
    int64_t v;
#define BAD(...) return snprintf(err, errsz, __VA_ARGS__), 2
    while ((c = getopt_long(argc, argv, ":m:n:k:p:a:b:r:P:Q:h", lo, NULL)) != -1) {
        const char *name = optind > 1 && optind <= argc ? argv[optind - 1] : "?";
        switch (c) {
        case 'm':
        case 'n':
        case 'k':
            if (!parse_i64(optarg, 0, &v))
                BAD("-%c: '%s' is not a size (an integer >= 0)", c, optarg);
            *(c == 'm' ? &o->m : c == 'n' ? &o->n : &o->k) = v;
            break;
        case 'p':
            if (!optarg[0] || optarg[1] || !strchr("sdcz", optarg[0]))
                BAD("-p: '%s' is not a precision (s, d, c or z)", optarg);
            o->prec = optarg[0];
            break;
        case 'a':
        case O_TA:
        case 'b':
        case O_TB: {
            bool a = c == 'a' || c == O_TA;
            if (!optarg[0] || optarg[1] || !strchr("NTCntc", optarg[0]))
                BAD("%s: '%s' is not a transpose (N, T or C)", a ? "--ta" : "--tb", optarg);
            *(a ? &o->ta : &o->tb) = (char)(optarg[0] & ~0x20);
            break;
        }
        case 'r':
            if (!parse_i64(optarg, 1, &v) || v > 1000000)
                BAD("-r: '%s' is not a count >= 1", optarg);
            o->reps = (int)v;
            break;
        case 'P':
        case 'Q':
            if (!parse_i64(optarg, 1, &v) || v > 1 << 20)
                BAD("-%c: '%s' is not a count >= 1", c, optarg);
            *(c == 'P' ? &o->P : &o->Q) = (int)v;
            break;
        case O_NB:
            if (!parse_i64(optarg, 1, &v)) BAD("--nb: '%s' is not a block size >= 1", optarg);
            o->nb = v;
            break;
        case O_ALPHA:
        case O_BETA:
            if (!parse_scalar(optarg, c == O_ALPHA ? o->alpha : o->beta))
                BAD("--%s: '%s' is not a scalar (re or re,im)", c == O_ALPHA ? "alpha" : "beta",
                    optarg);
            break;
        case O_PINNED: o->pinned = true; break;
        case O_NOVERIFY: o->verify = false; break;
        case O_NOWARMUP: o->warmup = false; break;
        case 'h': return 1;
        case ':': BAD("option %s needs a value", name);
        default:
            if (optopt && optopt < 256) BAD("unknown option -%c", optopt);
            BAD("unknown option %s", name);
        }
    }
    if (optind < argc) BAD("unexpected argument '%s'", argv[optind]);
#ifndef TESS_HAVE_MPI
    if (o->P > 1 || o->Q > 1) BAD("-P, -Q: this build has no MPI (one process: a 1 x 1 grid)");
#endif
#undef BAD
    if (o->n < 0) o->n = o->m;
    if (o->k < 0) o->k = o->m;
    return 0;
}

/* ---- the block-cyclic map (first block on process 0, all blocks nb) -------------------- */

static int64_t numroc(int64_t n, int64_t nb, int p, int np) {
    int64_t nblocks = n / nb, r = (nblocks / np) * nb, extra = nblocks % np;
    if (p < extra)
        r += nb;
    else if (p == extra)
        r += n % nb;
    return r;
}

/* global index of each of the cnt local indices of process p of np */
static int64_t *l2g(int64_t cnt, int64_t nb, int p, int np) {
    int64_t *g = malloc(sizeof *g * (size_t)(cnt + 1));
    if (g)
        for (int64_t l = 0; l < cnt; l++) g[l] = ((l / nb) * np + p) * nb + l % nb;
    return g;
}

/* one rank's part of a global rows x cols matrix */
struct part {
    int64_t rows, cols;   /* global */
    int64_t lr, lc, ld;   /* local rows, columns, leading dimension */
    int64_t *grow, *gcol; /* global index of each local row / column */
    void *x;
};

/* ---- threads for the O(mn) loops (fill and oracle) -------------------------------------- */

static int g_threads = 1;

static void pick_threads(void) {
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : (int)online;
    if (n >= online && g_local > 1) n /= g_local; /* unbound ranks share the node */
    g_threads = n < 1 ? 1 : n > 64 ? 64 : n;
}

struct span {
    void (*fn)(void *arg, int64_t lo, int64_t hi);
    void *arg;
    int64_t lo, hi;
};

static void *span_main(void *p) {
    struct span *s = p;
    if (s->hi > s->lo) s->fn(s->arg, s->lo, s->hi);
    return NULL;
}

/* fn over [0, n) cut into g_threads contiguous ranges */
static void parallel_for(int64_t n, void (*fn)(void *, int64_t, int64_t), void *arg) {
    int nt = g_threads;
    if (n < 2 * nt) nt = 1;
    struct span s[64];
    pthread_t th[64];
    bool started[64] = {false};
    for (int i = 0; i < nt; i++) s[i] = (struct span){fn, arg, n * i / nt, n * (i + 1) / nt};
    for (int i = 1; i < nt; i++) started[i] = pthread_create(&th[i], NULL, span_main, &s[i]) == 0;
    span_main(&s[0]);
    for (int i = 1; i < nt; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            span_main(&s[i]); /* no thread: do it here */
    }
}

/* ---- filling ------------------------------------------------------------------------- */

static size_t esize(tess_dtype_t dt) { return dt == TESS_S ? 4 : dt == TESS_Z ? 16 : 8; }
static bool cplx(tess_dtype_t dt) { return dt == TESS_C || dt == TESS_Z; }

static uint64_t mix(uint64_t z) { /* splitmix64's finaliser */
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

struct fill {
    tess_dtype_t dt;
    const struct part *p;
    uint64_t seed;
};

/* entry (i, j) of matrix `seed`: uniform in [-1, 1] (real and imaginary parts) */
static void fill_cols(void *arg, int64_t lo, int64_t hi) {
    const struct fill *f = arg;
    const struct part *p = f->p;
    int parts = cplx(f->dt) ? 2 : 1;
    bool single = f->dt == TESS_S || f->dt == TESS_C;
    uint64_t key = mix(f->seed);
    for (int64_t j = lo; j < hi; j++)
        for (int64_t i = 0; i < p->lr; i++) {
            uint64_t e = ((uint64_t)p->gcol[j] * (uint64_t)p->rows + (uint64_t)p->grow[i]) * parts;
            for (int q = 0; q < parts; q++) {
                double v = (double)(mix(key ^ (e + q)) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
                size_t at = ((size_t)j * (size_t)p->ld + (size_t)i) * parts + q;
                if (single)
                    ((float *)p->x)[at] = (float)v;
                else
                    ((double *)p->x)[at] = v;
            }
        }
}

/* ---- the distributed oracle ---------------------------------------------------------------
 * y = op(X) v over this rank's local part of X, at global indices: y has one (re, im) pair
 * per global row of op(X), v one per global column; yabs = |op(X)| vabs. Entries this rank
 * does not touch stay 0, so the sum over the ranks is the product. */
struct mv {
    tess_dtype_t dt;
    char trans;
    const struct part *p;
    const long double *v, *vabs;
    long double *y, *yabs;
};

static inline void load(tess_dtype_t dt, const void *x, size_t i, long double *re,
                        long double *im) {
    switch (dt) {
    case TESS_S: *re = ((const float *)x)[i], *im = 0; break;
    case TESS_D: *re = ((const double *)x)[i], *im = 0; break;
    case TESS_C: *re = ((const float *)x)[2 * i], *im = ((const float *)x)[2 * i + 1]; break;
    default: *re = ((const double *)x)[2 * i], *im = ((const double *)x)[2 * i + 1]; break;
    }
}

/* trans 'N': local rows [lo, hi), in blocks of rows whose sums stay in cache (column-major:
 * each column is read in contiguous runs) */
static void mv_rows(void *arg, int64_t lo, int64_t hi) {
    enum { RB = 512 };
    const struct mv *w = arg;
    const struct part *p = w->p;
    long double acc[3 * RB];
    for (int64_t b = lo; b < hi; b += RB) {
        int64_t e = b + RB < hi ? b + RB : hi;
        memset(acc, 0, sizeof acc);
        for (int64_t j = 0; j < p->lc; j++) {
            int64_t gj = p->gcol[j];
            long double vr = w->v[2 * gj], vi = w->v[2 * gj + 1], va = w->vabs[gj];
            for (int64_t i = b; i < e; i++) {
                long double re, im;
                load(w->dt, p->x, (size_t)j * (size_t)p->ld + (size_t)i, &re, &im);
                long double *a = acc + 3 * (i - b);
                a[0] += re * vr - im * vi;
                a[1] += re * vi + im * vr;
                a[2] += (fabsl(re) + fabsl(im)) * va;
            }
        }
        for (int64_t i = b; i < e; i++) {
            int64_t gi = p->grow[i];
            w->y[2 * gi] = acc[3 * (i - b)];
            w->y[2 * gi + 1] = acc[3 * (i - b) + 1];
            w->yabs[gi] = acc[3 * (i - b) + 2];
        }
    }
}

/* trans 'T' / 'C': local columns [lo, hi) */
static void mv_cols(void *arg, int64_t lo, int64_t hi) {
    const struct mv *w = arg;
    const struct part *p = w->p;
    bool conj = w->trans == 'C';
    for (int64_t j = lo; j < hi; j++) {
        long double s0 = 0, s1 = 0, sa = 0;
        for (int64_t i = 0; i < p->lr; i++) {
            int64_t gi = p->grow[i];
            long double re, im;
            load(w->dt, p->x, (size_t)j * (size_t)p->ld + (size_t)i, &re, &im);
            if (conj) im = -im;
            long double vr = w->v[2 * gi], vi = w->v[2 * gi + 1];
            s0 += re * vr - im * vi;
            s1 += re * vi + im * vr;
            sa += (fabsl(re) + fabsl(im)) * w->vabs[gi];
        }
        int64_t gj = p->gcol[j];
        w->y[2 * gj] = s0, w->y[2 * gj + 1] = s1, w->yabs[gj] = sa;
    }
}

/* y (len out entries, re/im) and yabs = op(X) v, summed over the ranks (collective) */
static void mv(tess_dtype_t dt, char trans, const struct part *p, const long double *v,
               const long double *vabs, long double *y, long double *yabs, int64_t out) {
    memset(y, 0, sizeof *y * 2 * (size_t)out);
    memset(yabs, 0, sizeof *yabs * (size_t)out);
    struct mv w = {dt, trans, p, v, vabs, y, yabs};
    if (trans == 'N')
        parallel_for(p->lr, mv_rows, &w);
    else
        parallel_for(p->lc, mv_cols, &w);
    sum_all_ld(y, 2 * out);
    sum_all_ld(yabs, out);
}

struct dprobe {
    int64_t m, n, k;
    tess_dtype_t dt;
    long double *t, *tabs;     /* n: the probe */
    long double *bt, *btabs;   /* k: op(B) t */
    long double *abt, *abtabs; /* m: op(A) op(B) t */
    long double *c0t, *c0abs;  /* m: C0 t before the call */
    long double *ct, *ctabs;   /* m: C t after it */
    long double *e, *eabs;     /* m: alpha op(A) op(B) t + beta C0 t, its terms */
    struct oracle_bound bound; /* oracle.h */
};

static void dprobe_free(struct dprobe *o) {
    free(o->t), free(o->tabs), free(o->bt), free(o->btabs), free(o->abt), free(o->abtabs);
    free(o->c0t), free(o->c0abs), free(o->ct), free(o->ctabs), free(o->e), free(o->eabs);
}

static bool dprobe_alloc(struct dprobe *o, int64_t m, int64_t n, int64_t k, tess_dtype_t dt) {
    memset(o, 0, sizeof *o);
    o->m = m, o->n = n, o->k = k, o->dt = dt;
#define V(x, len) ((x) = calloc((size_t)(len) + 1, sizeof(long double)))
    bool ok = V(o->t, 2 * n) && V(o->tabs, n) && V(o->bt, 2 * k) && V(o->btabs, k) &&
              V(o->abt, 2 * m) && V(o->abtabs, m) && V(o->c0t, 2 * m) && V(o->c0abs, m) &&
              V(o->ct, 2 * m) && V(o->ctabs, m) && V(o->e, 2 * m) && V(o->eabs, m);
#undef V
    if (!ok) return false;
    oracle_bound_init(&o->bound, dt, k, n, oracle_probe(n, 0, 0, o->t, o->tabs));
    return true;
}

/* the worst error/bound of the run over the rows (oracle_rows; NaN: a NaN somewhere) */
static double dprobe_check(struct dprobe *o, const double al[2], const double be[2],
                           int64_t *worst_row) {
    memset(o->e, 0, sizeof *o->e * 2 * (size_t)o->m);
    memset(o->eabs, 0, sizeof *o->eabs * (size_t)o->m);
    oracle_axpy(o->e, o->eabs, al[0], al[1], o->abt, o->abtabs, o->m);
    oracle_axpy(o->e, o->eabs, be[0], be[1], o->c0t, o->c0abs, o->m);
    return oracle_rows(&o->bound, o->m, o->ct, o->ctabs, o->e, o->eabs, 0, worst_row);
}

/* ---- the job ---------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* what each rank reports to rank 0 at the end */
struct rank_report {
    double pgemm_s, comm_s, sent, recv;     /* sums over the timed runs */
    double d2d;                             /* of sent: packed from the own panel (GPU transport) */
    double passes, units, a_local, b_local; /* of the last run */
    double variant;                         /* of the last run: 'C', 'A', 'B' */
    double ndev;
};

static void print_tables(int ndev, const tess_dev_stats_t *devs, const struct rank_report *rep,
                         double wall, int reps) {
    /* gather everything to rank 0 */
    int size = g_size;
    struct rank_report *reps_all = NULL;
    tess_dev_stats_t *devs_all = NULL;
    int *cnt = NULL;
#ifdef TESS_HAVE_MPI
    if (g_rank == 0) {
        reps_all = calloc((size_t)size, sizeof *reps_all);
        cnt = calloc((size_t)size, sizeof *cnt);
    }
    MPI_Gather(rep, (int)sizeof *rep, MPI_BYTE, reps_all, (int)sizeof *rep, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    int bytes = ndev * (int)sizeof *devs;
    MPI_Gather(&bytes, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int *dsp = NULL, total = 0;
    if (g_rank == 0) {
        dsp = calloc((size_t)size, sizeof *dsp);
        for (int r = 0; r < size; r++) dsp[r] = total, total += cnt[r];
        devs_all = malloc((size_t)total + 1);
    }
    MPI_Gatherv(devs, bytes, MPI_BYTE, devs_all, cnt, dsp, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(dsp);
    if (g_rank == 0)
        for (int r = 0; r < size; r++) cnt[r] /= (int)sizeof *devs;
#else
    (void)rep, (void)reps_all;
    devs_all = (tess_dev_stats_t *)devs;
    static int one;
    one = ndev;
    cnt = &one;
#endif
    if (g_rank == 0) {
        printf("\nper device over the %d timed run%s (rank, device index on that rank):\n", reps,
               reps == 1 ? "" : "s");
        printf("  %-4s %-3s %-32s %6s %6s %8s %8s %8s %8s %8s %8s %8s %6s\n", "rank", "dev", "name",
               "tasks", "stolen", "H2D GB", "D2H GB", "P2P GB", "L1 hit", "L2 hit", "miss", "evict",
               "busy%");
        const tess_dev_stats_t *s = devs_all;
        for (int r = 0; r < size; r++)
            for (int d = 0; d < cnt[r]; d++, s++)
                printf("  %-4d %-3d %-32.32s %6llu %6llu %8.2f %8.2f %8.2f %8llu %8llu %8llu %8llu "
                       "%6.1f%s\n",
                       r, d, s->name, (unsigned long long)s->tasks, (unsigned long long)s->stolen,
                       s->bytes_h2d * 1e-9, s->bytes_d2h * 1e-9, s->bytes_p2p * 1e-9,
                       (unsigned long long)s->l1_hits, (unsigned long long)s->l2_hits,
                       (unsigned long long)s->misses, (unsigned long long)s->evictions,
                       wall > 0 ? 100.0 * s->busy_s / wall : 0.0, s->failed ? " FAILED" : "");
#ifdef TESS_HAVE_MPI
        printf("\nper rank, tess_pgemm_last_stats summed over the timed runs:\n");
        printf("  %-4s %9s %9s %9s %9s %9s %6s %6s %8s %10s\n", "rank", "pgemm s", "comm s",
               "sent GB", "D2D pack", "recv GB", "passes", "units", "in place", "stationary");
        for (int r = 0; r < size; r++) {
            const struct rank_report *q = &reps_all[r];
            printf("  %-4d %9.3f %9.3f %9.3f %9.3f %9.3f %6d %6d %8s %10c\n", r, q->pgemm_s,
                   q->comm_s, q->sent * 1e-9, q->d2d * 1e-9, q->recv * 1e-9, (int)q->passes,
                   (int)q->units,
                   q->a_local && q->b_local ? "A, B"
                   : q->a_local             ? "A"
                   : q->b_local             ? "B"
                                            : "-",
                   q->variant > 0 ? (char)q->variant : '-');
        }
#endif
    }
#ifdef TESS_HAVE_MPI
    free(reps_all), free(devs_all), free(cnt);
#endif
}

struct job {
    struct opts o;
    tess_dtype_t dt;
    struct part A, B, C;
    const void *al, *be;
#ifdef TESS_HAVE_MPI
    tess_grid_t *grid;
    tess_desc_t dA, dB, dC;
#endif
};

static int run_gemm(struct job *j) {
    tess_trans_t TA = j->o.ta == 'N'   ? TESS_NO_TRANS
                      : j->o.ta == 'T' ? TESS_TRANS
                                       : TESS_CONJ_TRANS;
    tess_trans_t TB = j->o.tb == 'N'   ? TESS_NO_TRANS
                      : j->o.tb == 'T' ? TESS_TRANS
                                       : TESS_CONJ_TRANS;
#ifdef TESS_HAVE_MPI
    return tess_pgemm(j->grid, j->dt, TA, TB, j->o.m, j->o.n, j->o.k, j->al, j->A.x, 0, 0, &j->dA,
                      j->B.x, 0, 0, &j->dB, j->be, j->C.x, 0, 0, &j->dC);
#else
    return tess_gemm(j->dt, TESS_COL_MAJOR, TA, TB, j->o.m, j->o.n, j->o.k, j->al, j->A.x, j->A.ld,
                     j->B.x, j->B.ld, j->be, j->C.x, j->C.ld);
#endif
}

static bool part_init(struct part *p, int64_t rows, int64_t cols, int64_t nb, int myrow, int mycol,
                      int P, int Q, size_t es, bool pinned) {
    memset(p, 0, sizeof *p);
    p->rows = rows, p->cols = cols;
    bool in = myrow >= 0 && mycol >= 0;
    p->lr = in ? numroc(rows, nb, myrow, P) : 0;
    p->lc = in ? numroc(cols, nb, mycol, Q) : 0;
    p->ld = p->lr > 0 ? p->lr : 1;
    p->grow = l2g(p->lr, nb, myrow, P);
    p->gcol = l2g(p->lc, nb, mycol, Q);
    size_t bytes = (size_t)p->lr * (size_t)p->lc * es + 64;
    p->x = pinned ? tess_malloc_host(bytes) : malloc(bytes);
    return p->grow && p->gcol && p->x;
}

static void part_free(struct part *p, bool pinned) {
    free(p->grow), free(p->gcol);
    if (pinned)
        tess_free_host(p->x);
    else
        free(p->x);
}

/* the job after MPI and the options: returns the exit status (the same on every rank) */
static int job_main(const struct opts *o) {
    int rc = tess_init();
    if (rc)
        fprintf(stderr, PROG ": rank %d: tess_init: %s: %s\n", g_rank, tess_strerror(rc),
                tess_last_error());
    if (!agree(rc == 0)) {
        if (!rc) tess_finalize();
        return 1;
    }
    struct job j = {.o = *o};
    j.dt = (tess_dtype_t)(strchr("sdcz", o->prec) - "sdcz");
    size_t es = esize(j.dt);

    /* the devices of this rank: GPUs anywhere pick the GPU block size */
    int ndev = tess_device_count();
    tess_dev_stats_t *devs = calloc((size_t)ndev + 1, sizeof *devs);
    int ncuda = 0, nemu = 0;
    for (int d = 0; d < ndev; d++)
        if (devs && !tess_device_stats(d, &devs[d]))
            ncuda += devs[d].kind == TESS_DEV_CUDA, nemu += devs[d].kind == TESS_DEV_EMULATED;
    int any_cuda = (int)max_all(ncuda);
#ifdef TESS_HAVE_MPI
    int max_dev = (int)max_all(ndev), min_dev = -(int)max_all(-ndev);
#endif
    if (!j.o.nb) j.o.nb = any_cuda ? 1024 : 64;
    const char *bind = getenv("TESSERA_DEVICES");
    if (g_local > 1 && ncuda > 0 && (!bind || !strcmp(bind, "all")) &&
        !getenv("CUDA_VISIBLE_DEVICES"))
        fprintf(stderr,
                PROG ": rank %d: warning: %d ranks on this node share its %d GPU%s; give "
                     "each rank its own (TESSERA_DEVICES, as jobs/mpirun-gemm.sh does)\n",
                g_rank, g_local, ncuda, ncuda == 1 ? "" : "s");

    /* the grid */
    int P = 1, Q = 1, myrow = 0, mycol = 0;
    bool ok = true;
#ifdef TESS_HAVE_MPI
    P = o->P, Q = o->Q;
    if (P && !Q) Q = g_size / P > 0 ? g_size / P : 1;
    if (Q && !P) P = g_size / Q > 0 ? g_size / Q : 1;
    rc = tess_grid_create(MPI_COMM_WORLD, P, Q, 'R', &j.grid);
    if (rc && g_rank == 0)
        fprintf(stderr, PROG ": tess_grid_create (%d x %d on %d ranks): %s: %s\n", P, Q, g_size,
                tess_strerror(rc), tess_last_error());
    ok = agree(rc == 0);
    if (ok) tess_grid_info(j.grid, &P, &Q, &myrow, &mycol);
#endif
    int64_t m = o->m, n = o->n, k = o->k;
    int64_t arows = o->ta == 'N' ? m : k, acols = o->ta == 'N' ? k : m;
    int64_t brows = o->tb == 'N' ? k : n, bcols = o->tb == 'N' ? n : k;
    bool parts = false;
    if (ok) {
        parts = true;
        ok = part_init(&j.A, arows, acols, j.o.nb, myrow, mycol, P, Q, es, o->pinned);
        ok = part_init(&j.B, brows, bcols, j.o.nb, myrow, mycol, P, Q, es, o->pinned) && ok;
        ok = part_init(&j.C, m, n, j.o.nb, myrow, mycol, P, Q, es, o->pinned) && ok;
        if (!ok)
            fprintf(stderr, PROG ": rank %d: cannot allocate the local arrays (%.2f GB)\n", g_rank,
                    ((double)j.A.lr * j.A.lc + (double)j.B.lr * j.B.lc + (double)j.C.lr * j.C.lc) *
                        es * 1e-9);
        ok = agree(ok);
    }
#ifdef TESS_HAVE_MPI
    if (ok) {
        tess_desc_init(&j.dA, arows, acols, j.o.nb, j.o.nb, 0, 0, j.A.ld);
        tess_desc_init(&j.dB, brows, bcols, j.o.nb, j.o.nb, 0, 0, j.B.ld);
        tess_desc_init(&j.dC, m, n, j.o.nb, j.o.nb, 0, 0, j.C.ld);
    }
#endif
    union {
        float f[2];
        double d[2];
    } alpha_u, beta_u; /* one scalar of the precision */
    for (int i = 0; i < 2; i++) { alpha_u.d[i] = o->alpha[i], beta_u.d[i] = o->beta[i]; }
    if (j.dt == TESS_S || j.dt == TESS_C)
        for (int i = 0; i < 2; i++)
            alpha_u.f[i] = (float)o->alpha[i], beta_u.f[i] = (float)o->beta[i];
    j.al = &alpha_u, j.be = &beta_u;
    /* the scalars as the call sees them (rounded to float in s and c), real parts only for s, d */
    double al[2] = {o->alpha[0], cplx(j.dt) ? o->alpha[1] : 0};
    double be[2] = {o->beta[0], cplx(j.dt) ? o->beta[1] : 0};
    if (j.dt == TESS_S || j.dt == TESS_C)
        for (int i = 0; i < 2; i++) al[i] = (float)al[i], be[i] = (float)be[i];

    double flops = (cplx(j.dt) ? 8.0 : 2.0) * (double)m * (double)n * (double)k;
    int status = 1;
    double *times = calloc((size_t)o->reps, sizeof *times);
    struct dprobe orc;
    bool verify = o->verify;
    memset(&orc, 0, sizeof orc);
    if (ok && g_rank == 0) {
        printf(PROG ": %s%cgemm %c%c m=%lld n=%lld k=%lld alpha=%g%+gi beta=%g%+gi, %s operands\n",
               MPI_BUILD ? "p" : "", o->prec, o->ta, o->tb, (long long)m, (long long)n,
               (long long)k, al[0], al[1], be[0], be[1], o->pinned ? "pinned" : "pageable");
#ifdef TESS_HAVE_MPI
        printf("  grid %d x %d of %d rank%s%s, %lld x %lld blocks; devices per rank %d..%d "
               "(rank 0: %d GPU, %d emulated, %d CPU)\n",
               P, Q, g_size, g_size == 1 ? "" : "s", P * Q < g_size ? " (the rest idle)" : "",
               (long long)j.o.nb, (long long)j.o.nb, min_dev, max_dev, ncuda, nemu,
               ndev - ncuda - nemu);
#else
        printf("  one process (built without MPI), %d devices (%d GPU, %d emulated, %d CPU)\n",
               ndev, ncuda, nemu, ndev - ncuda - nemu);
#endif
        printf("  build %s\n", tess_build_config());
        fflush(stdout);
    }
    double t_start = now(), t_note = t_start;
    if (ok) {
        struct fill f[3] = {{j.dt, &j.A, 1}, {j.dt, &j.B, 2}, {j.dt, &j.C, 3}};
        for (int i = 0; i < 3; i++) parallel_for(f[i].p->lc, fill_cols, &f[i]);
    }
    if (ok && verify) {
        bool mine = dprobe_alloc(&orc, m, n, k, j.dt);
        if (!mine) fprintf(stderr, PROG ": rank %d: no memory for the oracle's vectors\n", g_rank);
        ok = agree(mine);
        if (ok) {
            mv(j.dt, o->tb, &j.B, orc.t, orc.tabs, orc.bt, orc.btabs, k);
            mv(j.dt, o->ta, &j.A, orc.bt, orc.btabs, orc.abt, orc.abtabs, m);
            if (be[0] != 0 || be[1] != 0)
                mv(j.dt, 'N', &j.C, orc.t, orc.tabs, orc.c0t, orc.c0abs, m);
        }
    }
    if (ok && g_rank == 0 && now() - t_start > 5) {
        fprintf(stderr, PROG ": operands ready (%.1f s)\n", now() - t_start);
        t_note = now();
    }

    struct rank_report rep = {0};
    int bad = 0;
    double worst_all = 0;
    int64_t worst_row = -1;
    for (int r = o->warmup ? -1 : 0; ok && r < o->reps; r++) {
        if (r == 0) tess_reset_stats();
#ifdef TESS_HAVE_MPI
        MPI_Barrier(MPI_COMM_WORLD);
#endif
        double t0 = now();
        rc = run_gemm(&j);
        double t = max_all(now() - t0);
        if (rc && g_rank == 0)
            fprintf(stderr, PROG ": run %d: %s: %s\n", r + 1, tess_strerror(rc), tess_last_error());
        if (!agree(rc == 0)) { /* the library agrees; ranks outside the grid learn it here */
            ok = false;
            break;
        }
#ifdef TESS_HAVE_MPI
        tess_pgemm_stats_t ps = {0};
        tess_pgemm_last_stats(j.grid, &ps);
        if (r >= 0) {
            rep.pgemm_s += ps.seconds, rep.comm_s += ps.comm_seconds;
            rep.sent += (double)ps.bytes_sent, rep.recv += (double)ps.bytes_received;
            rep.d2d += (double)ps.bytes_packed_d2d;
            rep.passes = ps.passes, rep.units = ps.units, rep.a_local = ps.a_local,
            rep.b_local = ps.b_local;
            rep.variant = ps.variant;
        }
        double comm = max_all(ps.comm_seconds);
#endif
        char verdict[96] = "not verified";
        if (verify) {
            mv(j.dt, 'N', &j.C, orc.t, orc.tabs, orc.ct, orc.ctabs, m);
            int64_t row;
            /* rel err: error/bound in units of gamma_N, the bound's relative tolerance */
            double w = dprobe_check(&orc, al, be, &row) * (double)orc.bound.g;
            bool pass = w <= (double)orc.bound.g;
            if (!pass) bad++;
            if (!(w <= worst_all)) worst_all = w, worst_row = row; /* NaN sticks */
            snprintf(verdict, sizeof verdict, "%s (rel err %.1e)", pass ? "verified" : "WRONG", w);
            /* this C is the next call's C0 */
            long double *x = orc.c0t, *xa = orc.c0abs;
            orc.c0t = orc.ct, orc.c0abs = orc.ctabs, orc.ct = x, orc.ctabs = xa;
        }
        if (r >= 0) times[r] = t;
        if (g_rank == 0) {
            char lab[16];
            snprintf(lab, sizeof lab, r < 0 ? "warm-up" : "%d", r + 1);
#ifdef TESS_HAVE_MPI
            printf("  run %-7s %8.3f s  %9.3f TFLOP/s  comm %7.3f s  %s\n", lab, t,
                   t > 0 ? flops / t * 1e-12 : 0.0, comm, verdict);
#else
            printf("  run %-7s %8.3f s  %9.3f TFLOP/s  %s\n", lab, t,
                   t > 0 ? flops / t * 1e-12 : 0.0, verdict);
#endif
            fflush(stdout);
            if (now() - t_note >= 5) {
                if (r < 0)
                    fprintf(stderr, PROG ": warm-up done, %.0f s elapsed\n", now() - t_start);
                else
                    fprintf(stderr, PROG ": run %d/%d done, %.0f s elapsed\n", r + 1, o->reps,
                            now() - t_start);
                t_note = now();
            }
        }
    }
    if (ok) {
        qsort(times, (size_t)o->reps, sizeof *times, cmp_double);
        double med = times[o->reps / 2], wall = 0;
        for (int r = 0; r < o->reps; r++) wall += times[r];
        if (g_rank == 0) {
            printf("median of %d: %.3f s, %.3f TFLOP/s\n", o->reps, med,
                   med > 0 ? flops / med * 1e-12 : 0.0);
            if (!verify)
                printf("not verified (--no-verify)\n");
            else if (!bad)
                printf("verified: ok (rel err %.1e <= tolerance %.1e, every run)\n", worst_all,
                       (double)orc.bound.g);
            else
                printf("verified: FAILED in %d run%s (rel err %.1e at row %lld > tolerance %.1e)\n",
                       bad, bad == 1 ? "" : "s", worst_all, (long long)worst_row,
                       (double)orc.bound.g);
        }
        for (int d = 0; d < ndev; d++) tess_device_stats(d, &devs[d]);
        rep.ndev = ndev;
        print_tables(ndev, devs, &rep, wall, o->reps);
        status = bad ? 1 : 0;
    }
    fflush(stdout);
    dprobe_free(&orc);
    free(times);
    free(devs);
#ifdef TESS_HAVE_MPI
    tess_grid_free(j.grid); /* collective; NULL-safe */
#endif
    if (parts) {
        part_free(&j.A, o->pinned), part_free(&j.B, o->pinned), part_free(&j.C, o->pinned);
    }
    tess_finalize();
    return status;
}

int main(int argc, char **argv) {
#ifdef TESS_HAVE_MPI
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_size(node, &g_local);
        MPI_Comm_free(&node);
    }
#endif
    struct opts o;
    char err[256] = "";
    int st = parse(argc, argv, &o, err, sizeof err);
    if (st == 1 && g_rank == 0) usage(stdout);
    if (st == 2 && g_rank == 0)
        fprintf(stderr, PROG ": %s (" PROG " --help lists the options)\n", err);
    if (st == 0) {
        pick_threads();
        st = job_main(&o);
    } else if (st == 1) {
        st = 0;
    }
#ifdef TESS_HAVE_MPI
    MPI_Finalize();
#endif
    return st;
}
