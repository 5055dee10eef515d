/* src/tools/crossover_fit.c: tessera-crossover's fit of the drop-in's crossover model
 * (src/blas/crossover_model.h) to the measured points: cpu rate per precision = the best
 * measured (the model never overestimates a CPU time); device rates, half-rate dimension,
 * link and overhead by least squares on log time over every device point (Nelder-Mead on the
 * logs of the parameters); the margin, the smallest (>= 1.2) for which no measured shape the
 * devices did not win by 5% goes to them. Then the report: the table, each family's measured
 * crossover next to the fit's and the knobs', the export lines and the #define block of
 * src/base/dropin_defaults.h; and --selftest, the fit on a made-up machine. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_lib.h"
#include "crossover.h"
#include "crossover_model.h"
#include "dropin_defaults.h" /* TESS__BLAS_DEF_*: the knobs' built-in defaults */

/* The model of the TESSERA_BLAS_* knobs: this environment's values (each unset one its
 * built-in default), or with env 0 the built-in defaults alone. 0, or -1 with why. */
static int knob_model(struct tess__blas_model *md, int env, char *why, size_t len) {
    static const struct {
        const char *knob, *def;
    } k[6] = {{"TESSERA_BLAS_CPU_GFLOPS", TESS__BLAS_DEF_CPU_GFLOPS},
              {"TESSERA_BLAS_DEV_GFLOPS", TESS__BLAS_DEF_DEV_GFLOPS},
              {"TESSERA_BLAS_DEV_HALF", TESS__BLAS_DEF_DEV_HALF},
              {"TESSERA_BLAS_LINK_GBS", TESS__BLAS_DEF_LINK_GBS},
              {"TESSERA_BLAS_OVERHEAD_US", TESS__BLAS_DEF_OVERHEAD_US},
              {"TESSERA_BLAS_MARGIN", TESS__BLAS_DEF_MARGIN}};
    const char *v[6];
    for (int i = 0; i < 6; i++) {
        const char *e = env ? getenv(k[i].knob) : NULL;
        v[i] = e && *e ? e : k[i].def;
    }
    for (int i = 0; i < 2; i++)
        if (tess__blas_model_list(v[i], i ? md->dev_gflops : md->cpu_gflops))
            return snprintf(why, len, "%s=\"%s\" must be one positive number or four (s,d,c,z)",
                            k[i].knob, v[i]),
                   -1;
    double x[4];
    for (int i = 2; i < 6; i++) {
        char *end;
        errno = 0;
        x[i - 2] = strtod(v[i], &end);
        /* DEV_HALF and OVERHEAD_US may be 0, LINK_GBS and MARGIN must be positive */
        int pos = i == 3 || i == 5;
        if (end == v[i] || *end || errno || !isfinite(x[i - 2]) || x[i - 2] < 0 ||
            (pos && !(x[i - 2] > 0)))
            return snprintf(why, len, "%s=\"%s\" must be a number %s 0", k[i].knob, v[i],
                            pos ? ">" : ">="),
                   -1;
    }
    md->dev_half = x[0], md->link_gbs = x[1], md->overhead_us = x[2], md->margin = x[3];
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
            if (fe < fr)
                memcpy(sx[n], xe, sizeof(double) * (size_t)n), fv[n] = fe;
            else
                memcpy(sx[n], xr, sizeof(double) * (size_t)n), fv[n] = fr;
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
    for (int i = 0; i < npts; i++) { /* pts is sorted by flops: sizes ascend in a family */
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
        struct tess__blas_cost c = tess__blas_shape_cost(TESS__SHAPE_GEMM, dt, (double)m, (double)n,
                                                         (double)k, (double)k, 0);
        int d = tess__blas_model_to_dev(md, dt, &c);
        if (d && from < 0) from = z;
        if (!d) from = -1;
    }
    return from;
}

static void fmt_cross(char *buf, size_t n, int64_t v) {
    if (v == 0)
        snprintf(buf, n, "-");
    else if (v < 0)
        snprintf(buf, n, "none");
    else
        snprintf(buf, n, "%lld", (long long)v);
}

/* a knob value: integers above 100, three significant digits below */
static void fmt_num(char *buf, size_t n, double v) {
    if (v >= 100)
        snprintf(buf, n, "%.0f", v);
    else
        snprintf(buf, n, "%.3g", v);
}

/* The model fitted to pts (cpu rates, device parameters, margin) into *fit; what was not
 * measured keeps the built-in default (*def). rms: the device fit's rms log error. */
int fit_model(struct tess__blas_model *fit_out, struct tess__blas_model *def_out,
              struct tess__blas_model *now_out, double *rms_out, const char **margin_at_out) {
    struct tess__blas_model def, now_md, fit;
    char why[256];
    if (knob_model(&now_md, 1, why, sizeof why)) {
        fprintf(stderr,
                PROG ": the TESSERA_BLAS_* knobs of this environment: %s; using the "
                     "built-in defaults for the 'knobs' column\n",
                why);
        now_md.margin = 0;
    }
    /* the built-in defaults, for what this run did not measure */
    if (knob_model(&def, 0, why, sizeof why)) {
        fprintf(stderr, PROG ": built-in defaults: %s\n", why);
        return 1;
    }
    if (now_md.margin == 0) now_md = def;
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
            if (f - g < 1e-9 * (1 + g) && round >= 2) {
                f = g;
                break;
            }
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
void report(const struct tess__blas_model *fitp, const struct tess__blas_model *nowp, double rms,
            const char *margin_at) {
    const struct tess__blas_model fit = *fitp, now_md = *nowp;
    int have_cpu[4] = {0}, have_dev[4] = {0}, ndev_pts = 0;
    for (int i = 0; i < npts; i++) {
        if (pts[i].cpu > 0) have_cpu[pts[i].dt] = 1;
        if (pts[i].dev > 0) have_dev[pts[i].dt] = 1, ndev_pts++;
    }
    printf("\n# measured (seconds per call; ~ = CPU not run, the fitted rate's time; "
           "route: the fitted model's choice)\n");
    printf("%-4s %-7s %6s %6s %6s %10s %10s %2s %10s %2s %8s %10s %5s %s\n", "prec", "family", "m",
           "n", "k", "GFLOP", "cpu s", "n", "dev s", "n", "cpu/dev", "model dev", "route", "note");
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
                const char *note = p->skip       ? p->skip
                                   : p->mismatch ? "WRONG RESULT"
                                   : to_dev && won == 0
                                       ? "LOSS: routed to the devices, slower there"
                                   : !to_dev && p->dev > 0 && p->dev * 1.5 < c
                                       ? "missed (devices 1.5x faster)"
                                       : "";
                if (to_dev && won == 0) n_loss++;
                if (to_dev && i64max(i64max(p->m, p->n), p->k) <= 512) small_dev++;
                char cs[32], ds[32];
                if (p->skip && !(p->dev > 0))
                    snprintf(cs, sizeof cs, "-"), snprintf(ds, sizeof ds, "-");
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
                            *pc, fam_name[fam], (long long)p->m, (long long)p->n, (long long)p->k,
                            p->cost.flops / 1e9, p->cost.bytes, p->cpu, p->cpu_n, p->dev, p->dev_n,
                            tess__blas_model_cpu(&fit, p->dt, &p->cost), md, to_dev ? "dev" : "cpu",
                            note);
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
                if (pts[i].dt == dt && pts[i].fam == fam) top = i64max(top, pts[i].size);
            if (!top) continue;
            char fname[64], a[24], b[24], c[24];
            if (fam == FAM_SQUARE)
                snprintf(fname, sizeof fname, "m = n = k");
            else if (fam == FAM_K)
                snprintf(fname, sizeof fname, "m = n = %lld, k", (long long)o.skinny);
            else
                snprintf(fname, sizeof fname, "n = k = %lld, m", (long long)o.skinny);
            fmt_cross(a, sizeof a, measured_crossover(dt, fam, &fit));
            fmt_cross(b, sizeof b, model_crossover(dt, fam, top, &fit));
            fmt_cross(c, sizeof c, model_crossover(dt, fam, top, &now_md));
            printf("%-4c %-22s %9s %9s %9s\n", *pc, fname, a, b, c);
        }
    }

    printf(
        "\n# fit: cpu rate = the best measured; device parameters by least squares on log "
        "time over %d device points (rms log error %.3f, i.e. about %.0f%%); margin %.3g%s%s%s\n",
        ndev_pts, rms, 100 * (exp(rms) - 1), fit.margin, margin_at ? " (set by a " : "",
        margin_at ? margin_at : "", margin_at ? " shape the devices lost)" : " (the floor)");
    printf("# routed to the devices by the fit but slower there: %d point%s; calls with every "
           "dimension <= 512 routed to the devices: %d\n",
           n_loss, n_loss == 1 ? "" : "s", small_dev);
    for (int q = 0; q < 4; q++)
        if (strchr(o.precs, "sdcz"[q]) && (!have_cpu[q] || !have_dev[q]))
            printf("# %c: not measured (%s): its values are the built-in defaults\n", "sdcz"[q],
                   n_time ? "time limit" : "error");
    if (n_time)
        printf("# %d point%s left out by the time limit (%.0f s)\n", n_time, n_time == 1 ? "" : "s",
               o.time_limit);
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
    printf(
        "\n# C snippet: the built-in defaults, src/base/dropin_defaults.h (replace the six #define "
        "lines)\n");
    printf("#define TESS__BLAS_DEF_CPU_GFLOPS \"%s,%s,%s,%s\"\n", v[0][0], v[0][1], v[0][2],
           v[0][3]);
    printf("#define TESS__BLAS_DEF_DEV_GFLOPS \"%s,%s,%s,%s\"\n", v[1][0], v[1][1], v[1][2],
           v[1][3]);
    printf("#define TESS__BLAS_DEF_DEV_HALF \"%s\"\n", half);
    printf("#define TESS__BLAS_DEF_LINK_GBS \"%s\"\n", link);
    printf("#define TESS__BLAS_DEF_OVERHEAD_US \"%s\"\n", ovh);
    printf("#define TESS__BLAS_DEF_MARGIN \"%s\"\n", mg);
    printf("\n# %s: %.0f s (measuring %.0f s)\n", PROG, elapsed(), t_measured);
}

/* ---- --selftest: the fit on synthetic measurements ------------------------------------
 * A made-up machine: a CPU BLAS at 1400/700 GFLOP/s (s, d; complex the same) that is slower
 * on small operands (half its rate at min(m, n, k) = 48), and devices behind the model of
 * crossover_model.h with an H100-like rate, a pageable link of 8 GB/s, 300 us a call; every "measured"
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

int selftest(void) {
    const struct tess__blas_model truth = {.cpu_gflops = {1400, 700, 1400, 700},
                                           .dev_gflops = {50000, 45000, 55000, 50000},
                                           .dev_half = 300,
                                           .link_gbs = 8,
                                           .overhead_us = 300,
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
#define CHECK(cond, ...)                            \
    do {                                            \
        if (!(cond)) {                              \
            bad++;                                  \
            printf("selftest: FAIL: " __VA_ARGS__); \
            printf("\n");                           \
        }                                           \
    } while (0)
    CHECK(fabs(fit.link_gbs / truth.link_gbs - 1) < 0.3, "link %.3g GB/s, truth %.3g", fit.link_gbs,
          truth.link_gbs);
    CHECK(fabs(fit.overhead_us / truth.overhead_us - 1) < 0.3, "overhead %.3g us, truth %.3g",
          fit.overhead_us, truth.overhead_us);
    for (int i = 0; i < npts; i++) {
        const struct point *p = &pts[i];
        int to_dev = tess__blas_model_to_dev(&fit, p->dt, &p->cost);
        CHECK(!to_dev || i64max(i64max(p->m, p->n), p->k) > 512,
              "%c %lldx%lldx%lld (all <= 512) routed to the devices", "sdcz"[p->dt],
              (long long)p -> m, (long long)p -> n, (long long)p -> k);
        CHECK(!to_dev || true_dev[i] < true_cpu[i],
              "%c %lldx%lldx%lld routed to the devices, "
              "slower there (%.3g s vs %.3g s)",
              "sdcz"[p->dt], (long long)p -> m, (long long)p -> n, (long long)p -> k, true_dev[i],
              true_cpu[i]);
    }
    for (int q = 0; q < 4; q++) {
        /* the machine's own square crossover, from its true times (CPU slower when small) */
        int64_t from = -1;
        for (double x = 16; x <= (double)o.max_n; x *= 1.02) {
            double z = round(x);
            struct tess__blas_cost c = tess__blas_shape_cost(TESS__SHAPE_GEMM, (tess_dtype_t)q, z,
                                                             z, z, z, 0);
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
