/* src/tools/bench_lib.h: what the benchmark tools share (tessera-bench's GEMM and level-3
 * tables, tessera-crossover): the clock, the run's failure record and counters, the CPU BLAS
 * opened by name (TESSERA_CPU_BLAS, as the runtime does), random operands, medians, and the
 * rows of a timing table: one warm-up and timed runs, each checked, the median, notes and the
 * cells every table prints. Public API only (tessera.h); no CUDA. */
#ifndef TESS_TOOLS_BENCH_LIB_H
#define TESS_TOOLS_BENCH_LIB_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tessera.h"

#define MAX_REPS 100
#define MAX_DEVSTATS 16 /* tessera devices reported per row */

/* ---- the run: clock, failures, counters ------------------------------------------------ */
extern const char *bench_prog; /* the tool's name, for messages */
extern double t_start;         /* now() at the start */
extern int n_wrong, n_errors, out_of_time;
extern char last_err[1024]; /* the failing call, copied into the row's note */

double now(void);
double elapsed(void); /* seconds since t_start */
size_t esize(tess_dtype_t dt);
int is_complex(tess_dtype_t dt);
char prec_char(tess_dtype_t dt);
double median_of(double *v, int n); /* sorts v */
double mem_available(void);         /* bytes of MemAvailable, 0 if unknown */

/* A failed call: remembered in last_err and printed with file:line; returns -1. */
int fail_msg(const char *what, const char *why, const char *file, int line);
int tess_check(int rc, const char *what, const char *file, int line);
#define TS(call) tess_check((call), #call, __FILE__, __LINE__)

/* The n x n matrix x (ld = n) uniform in [-1, 1] from seed (oracle_fill on chunks of columns,
 * each its own seed): the same whatever the thread count. */
void bench_fill(int threads, tess_dtype_t dt, void *x, int64_t n, uint64_t seed);

/* ---- the CPU BLAS: TESSERA_CPU_BLAS (default libopenblas.so.0), dlopen'ed -------------------- */
struct cpublas {
    void *lib;
    char name[256];               /* the knob's value */
    void *gemm[4];                /* cblas_?gemm */
    int (*get_num_threads)(void); /* openblas_get_num_threads, or NULL */
};
/* 0, or -1 (fail_msg "dlopen": the library or its gemm cannot be found) */
int cpublas_open(struct cpublas *c);
/* Column-major C = alpha A B + beta C (NN); alpha, beta point to scalars of dt. */
void cpublas_gemm(const struct cpublas *c, tess_dtype_t dt, int m, int n, int k, const void *alpha,
                  const void *A, int lda, const void *B, int ldb, const void *beta, void *C,
                  int ldc);

/* ---- rows of a timing table ------------------------------------------------------------------- */
enum verify_mode { V_ALL, V_ENDS, V_NONE };
enum row_status { ROW_OK, ROW_SKIPPED, ROW_FAILED };

struct devstat {
    char name[64];
    double h2d, d2h, p2p; /* bytes per timed run */
    double busy;          /* busy seconds / timed seconds */
    unsigned long long tasks, stolen, evictions;
    int failed;
};

struct row {
    char name[48];
    int kind, block; /* the table's kind of row; cuBLAS-XT block (0: none/default) */
    int64_t n;       /* size run */
    enum row_status status;
    int reps;                     /* timed runs done */
    double med, tmin, tmax, rate; /* seconds; TFLOP/s of the median */
    double worst;                 /* worst error/bound over the verified runs */
    int nver, wrong;              /* runs verified, runs that failed */
    int other_bad, diag_bad;      /* runs breaking the SYRK-like / Hermitian contract */
    int has_bytes, ndev;
    double h2d, d2h, p2p; /* all devices, bytes per run */
    struct devstat dev[MAX_DEVSTATS];
    char note[400];
};

void row_init(struct row *r, int kind, int block, int64_t n, const char *name);
void note(struct row *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void row_fail(struct row *r);                          /* failed: last_err into the note */
int row_out_of_time(struct row *r, double time_limit); /* 1 (row skipped) past the limit */
/* A row's verdict and a run's check result: worst, nver, wrong and the run counters. */
void row_verified(struct row *r, double w, int wrong);

/* What a row runs: run() resets the output, makes one timed call and leaves the result where
 * verify() reads it; verify() checks it (row_verified) and writes the verdict; the hooks
 * bracket the timed runs (after_timed sees row->reps). A tool's runner embeds this first. */
struct runner {
    int (*run)(struct runner *self, double *secs);
    void (*verify)(struct runner *self, struct row *row, char *verdict, size_t len);
    void (*before_timed)(struct runner *self, struct row *row);
    void (*after_timed)(struct runner *self, struct row *row, double timed_s);
    char label[96];    /* the progress lines' prefix */
    int secs_width;    /* of the seconds on them */
    int note_decimals; /* of the warm-up seconds in a "no timed run fits" note */
    double flops;
};
struct timing {
    int reps;
    double time_limit; /* seconds since t_start; 0: none */
    enum verify_mode verify;
};
/* One warm-up and tm->reps timed runs (fewer when the time limit says so), checked as
 * tm->verify says, the median into the row; progress on stderr. */
void drive(struct runner *rn, struct row *row, const struct timing *tm);

/* cells and lines of the tables */
void ratio(char *buf, size_t len, double num, double den); /* "%.3f" or "-" */
void row_check_cell(const struct row *r, char *buf, size_t len);
void row_bytes_cells(const struct row *r, char *h2d, char *d2h, char *p2p, size_t len);
void print_note(const struct row *r, int *first); /* "notes:" once, then "  name: note" */
void csv_str(FILE *f, const char *s);
/* A routine row's CSV cells for its host-link GB (h2d, d2h, p2p) and its check (worst error,
 * runs checked, wrong ones), each followed by a comma; empty cells where it has none. */
void csv_bytes_check(FILE *f, const struct row *r);

#endif
