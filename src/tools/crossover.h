/* src/tools/crossover.h: what tessera-crossover's two files share: the options, the grid of
 * measured points and what the measurement found. tessera_crossover.c owns the options, the
 * grid and the measurement; crossover_fit.c the fit of the drop-in's model
 * (src/blas/crossover_model.h), the report and --selftest. */
#ifndef TESS_TOOLS_CROSSOVER_H
#define TESS_TOOLS_CROSSOVER_H

#include <stdint.h>

#include "crossover_model.h"
#include "tessera.h"

#define PROG "tessera-crossover"
#define MAXPTS 1024

struct cross_opts {
    int quick, reps, selftest;
    int64_t max_n, skinny;
    double time_limit, point_max;
    char precs[8];
    const char *csv;
};
extern struct cross_opts o;

enum { FAM_SQUARE, FAM_K, FAM_M, NFAM };
extern const char *const fam_name[NFAM];

struct point {
    tess_dtype_t dt;
    int fam;
    int64_t m, n, k, size; /* size: what varies in the family (n, k or m) */
    struct tess__blas_cost cost;
    double cpu, dev;  /* median seconds; NAN: not measured */
    int cpu_n, dev_n; /* runs behind the median (0: not measured) */
    const char *skip; /* why not measured, or NULL */
    int mismatch;
};
extern struct point pts[MAXPTS];
extern int npts;

/* what the measurement found, for the fit and the report */
extern double best_cpu[4], best_dev[4], best_bw; /* best flop/s per precision, bytes/s */
extern int n_mismatch, n_time, ndev, ncuda;
extern double t_measured;

static inline int64_t i64max(int64_t a, int64_t b) { return a > b ? a : b; }

/* tessera_crossover.c: the grid of points (pts, sorted by flops) */
void build_grid(void);
/* crossover_fit.c */
int fit_model(struct tess__blas_model *fit, struct tess__blas_model *def,
              struct tess__blas_model *now_md, double *rms, const char **margin_at);
void report(const struct tess__blas_model *fit, const struct tess__blas_model *now_md, double rms,
            const char *margin_at);
int selftest(void);

#endif
