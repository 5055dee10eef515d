/* node/tune.c: the tile edge a GEMM gets when TESSERA_TILE is 0. Owns the model of a call's
 * time per candidate edge (tess__tile_model), the measurements it needs (each device kind's
 * tile-kernel rate per edge and precision, and its host link) and the file that keeps them
 * per machine, so that they are measured once, not per process (docs/design.md, "Tile
 * edge"). Measured by tess__tune_start before the workers start, on the first device that
 * is not unified, for each precision the file lacks; never on a device with injected
 * faults (the measurement would spend its fault count).
 * The file (TESSERA_TUNE_FILE): the version line TUNE_HEADER, then per device kind and
 * precision "<kind> <s|d|c|z> <link bytes/s> <edge>:<flop/s> ...", rewritten whole
 * (temporary file, then rename). Reading is bounded and never blocks: a file that is not
 * regular is ignored and never replaced; one over TUNE_MAX_BYTES, with NUL bytes or another
 * version is ignored and replaced after a measurement; malformed or truncated lines are
 * dropped; each a warning only under TESSERA_VERBOSE.
 * Invariants: the runtime's tune record is written here only, before the workers start.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node.h"

const int64_t tess__tune_gpu_edges[TESS__TUNE_NCAND] = {1024, 2048, 3072, 4096, 6144, 8192};
const int64_t tess__tune_emu_edges[TESS__TUNE_NCAND] = {64, 128, 192, 256, 384, 512};

static const char prec[] = "sdcz";

/* ---- the model ------------------------------------------------------------------------ */

/* Rate of a kernel whose cube root of m n k is `edge`: the largest measured candidate not
 * above it, or the smallest one scaled down in proportion. */
static double rate_at(const struct tess__tile_in *in, double edge) {
    double r = 0;
    int lo = -1;
    for (int i = 0; i < TESS__TUNE_NCAND; i++) {
        if (!(in->rate[i] > 0)) continue;
        if (lo < 0) lo = i;
        if ((double)in->edges[i] <= edge) r = in->rate[i];
    }
    if (r > 0 || lo < 0) return r;
    return in->rate[lo] * edge / (double)in->edges[lo];
}

/* Candidate i is measured and twelve of its tiles fit in the smallest heap. */
static int usable(const struct tess__tile_in *in, int i) {
    double t = (double)in->edges[i];
    return in->rate[i] > 0 && 12.0 * t * t * (double)in->es <= (double)in->heap;
}

/* Candidate i's kernels run below 80% of the best usable rate while a faster, larger edge
 * still gives every stream of every device a task (the "slow edges" rule above). */
static int slow_edge(const struct tess__tile_in *in, int i, double rmax) {
    if (!(in->rate[i] < 0.8 * rmax)) return 0;
    double m = (double)in->m, n = (double)in->n, nd = in->ndev > 0 ? in->ndev : 1;
    double slots = nd * (in->nstreams > 0 ? in->nstreams : 1);
    for (int j = i + 1; j < TESS__TUNE_NCAND; j++) {
        double u = (double)in->edges[j];
        if (usable(in, j) && in->rate[j] >= 0.8 * rmax && ceil(m / u) * ceil(n / u) >= slots)
            return 1;
    }
    return 0;
}

int64_t tess__tile_model(const struct tess__tile_in *in, double *pred) {
    int64_t best = 0;
    double bt = INFINITY;
    double m = (double)in->m, n = (double)in->n, k = (double)in->k, es = (double)in->es;
    double nd = in->ndev > 0 ? in->ndev : 1, L = in->link > 0 ? in->link : 1e9;
    if (in->m <= 0 || in->n <= 0 || in->k <= 0) return 0;
    double rmax = 0;
    for (int i = 0; i < TESS__TUNE_NCAND; i++)
        if (usable(in, i)) rmax = fmax(rmax, in->rate[i]);
    for (int i = TESS__TUNE_NCAND - 1; i >= 0; i--) { /* largest first */
        if (!usable(in, i) || slow_edge(in, i, rmax)) continue;
        double t = (double)in->edges[i];
        double em = fmin(t, m), en = fmin(t, n), ek = fmin(t, k);
        double R = rate_at(in, cbrt(em * en * ek));
        if (!(R > 0)) continue;
        double tm = ceil(m / t), tn = ceil(n / t), tasks = tm * tn;
        double W = in->flop_mul * m * n * k;
        double compute = W / (nd * R);
        int fits = es * (m * k + k * n + m * n / nd) <= 0.8 * (double)in->heap;
        double bytes = fits ? es * (m * k + k * n + m * n) / nd
                            : es * (m * k * tn + k * n * tm + m * n) / nd;
        double X = bytes / L;
        double body = tasks / nd >= 2 ? fmax(compute, X) : compute + X;
        double fill = es * (em * ek + ek * en + em * en) / L;
        double tail = (ceil(tasks / nd) - tasks / nd) * W / tasks / R;
        double T = fill + body + tail;
        if (T < bt * 0.98) bt = T, best = in->edges[i];
    }
    if (pred) *pred = best ? bt : 0;
    return best;
}

/* ---- the file ------------------------------------------------------------------------- */

static void tune_path(const struct tess__config *cfg, char *out, size_t len) {
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (cfg->tune_file[0])
        snprintf(out, len, "%s", cfg->tune_file);
    else if (x && *x)
        snprintf(out, len, "%s/tessera/tune", x);
    else if (h && *h)
        snprintf(out, len, "%s/.cache/tessera/tune", h);
    else
        out[0] = 0;
}

/* The first line of the file this version writes; a file that opens with another comment
 * line is another version's. Files without a comment line first (written by hand, tests)
 * are read line by line. */
#define TUNE_MAGIC "# tessera tune file, format 2:"
#define TUNE_HEADER                                                      \
    TUNE_MAGIC " <kind> <precision> <link bytes/s> <edge>:<flop/s>...; " \
               "delete to measure again\n"
#define TUNE_MAX_BYTES ((size_t)64 << 10) /* hundreds of kinds' lines */
#define TUNE_MAX_TEXT "64 KiB"
#define TUNE_MAX_LINES 2048
#define TUNE_MAX_LINE 1024

enum tune_scan_rc {
    TUNE_READ,    /* read (lines past a limit or a truncated last one dropped) */
    TUNE_ABSENT,  /* no such file: the first start on this machine */
    TUNE_IGNORED, /* a regular file whose content is refused: replaced after measuring */
    TUNE_KEEP,    /* not a regular file, or unreadable: ignored and never replaced */
};

static void tune_warn(int quiet, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void tune_warn(int quiet, const char *path, const char *fmt, ...) {
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (!quiet)
        tess__log(TESS__LOG_WARN, "tile tuning: tune file %s (TESSERA_TUNE_FILE) %s", path, why);
}

/* Call each(line, arg) for every complete line of the file (NUL-terminated, newline
 * removed), within the limits above; quiet: no warnings (the file was read already). */
static enum tune_scan_rc tune_scan(const char *path, int quiet, void (*each)(char *, void *),
                                   void *arg) {
    int fd = path[0] ? open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) : -1;
    if (fd < 0) {
        if (!path[0] || errno == ENOENT) return TUNE_ABSENT;
        tune_warn(quiet, path, "ignored: %s", strerror(errno));
        return TUNE_KEEP;
    }
    struct stat st;
    char *buf = NULL;
    const char *why = NULL, *big = "larger than " TUNE_MAX_TEXT;
    enum tune_scan_rc rc = TUNE_IGNORED;
    size_t n = 0;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode))
        why = "not a regular file", rc = TUNE_KEEP;
    else if ((size_t)st.st_size > TUNE_MAX_BYTES)
        why = big;
    else if (!(buf = malloc(TUNE_MAX_BYTES + 1)))
        why = "out of memory", rc = TUNE_KEEP;
    while (!why && n <= TUNE_MAX_BYTES) { /* one byte more: a file that grew */
        ssize_t got = read(fd, buf + n, TUNE_MAX_BYTES + 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) why = strerror(errno), rc = TUNE_KEEP;
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(fd);
    if (!why && n > TUNE_MAX_BYTES) why = big;
    if (!why && memchr(buf, 0, n)) why = "it holds NUL bytes (not a text file)";
    if (!why && n && buf[0] == '#' &&
        (n < strlen(TUNE_MAGIC) || memcmp(buf, TUNE_MAGIC, strlen(TUNE_MAGIC))))
        why = "written by another version of tessera (its first line is not \"" TUNE_MAGIC "\")";
    if (why) {
        tune_warn(quiet, path, "ignored: %s", why);
        free(buf);
        return rc;
    }
    int lines = 0;
    for (size_t at = 0; at < n;) {
        char *nl = memchr(buf + at, '\n', n - at);
        if (!nl) {
            tune_warn(quiet, path, "truncated: its last line has no newline and is ignored");
            break;
        }
        if (++lines > TUNE_MAX_LINES) {
            tune_warn(quiet, path, "too long: lines past the %dth ignored", TUNE_MAX_LINES);
            break;
        }
        *nl = 0;
        if ((size_t)(nl - (buf + at)) < TUNE_MAX_LINE) each(buf + at, arg);
        at = (size_t)(nl + 1 - buf);
    }
    free(buf);
    return TUNE_READ;
}

/* A well-formed line's kind, precision and link: 1, and *used the characters they took. */
static int line_head(const char *line, char kind[128], int *dt, double *link, int *used) {
    char p;
    if (line[0] == '#' || sscanf(line, "%127s %c %lf%n", kind, &p, link, used) != 3) return 0;
    const char *q = strchr(prec, p);
    if (!p || !q || !(*link > 0) || !isfinite(*link)) return 0;
    *dt = (int)(q - prec);
    return 1;
}

/* tune_scan: a line of our kind into tu */
static void read_line(char *line, void *arg) {
    struct tess__tune *tu = arg;
    char kind[128];
    int dt, used = 0;
    double link;
    if (!line_head(line, kind, &dt, &link, &used) || strcmp(kind, tu->key)) return;
    double rate[TESS__TUNE_NCAND] = {0};
    char *s = line + used;
    for (;;) {
        char *end;
        long long e = strtoll(s, &end, 10);
        if (end == s || *end != ':') break;
        double r = strtod(end + 1, &s);
        for (int i = 0; i < TESS__TUNE_NCAND; i++)
            if (tu->edges[i] == e && r > 0 && isfinite(r)) rate[i] = r;
    }
    int any = 0;
    for (int i = 0; i < TESS__TUNE_NCAND; i++) any |= rate[i] > 0;
    if (!any) return;
    memcpy(tu->rate[dt], rate, sizeof rate);
    tu->link[dt] = link;
    tu->have[dt] = 1;
}

/* mkdir -p of the file's folder */
static void make_dirs(const char *path) {
    char d[512];
    snprintf(d, sizeof d, "%s", path);
    for (char *s = d + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(d, 0755);
            *s = '/';
        }
}

/* tune_scan: another kind's well-formed line, copied */
struct keep_lines {
    const struct tess__tune *tu;
    FILE *out;
};
static void keep_line(char *line, void *arg) {
    struct keep_lines *k = arg;
    char kind[128];
    int dt, used;
    double link;
    if (line_head(line, kind, &dt, &link, &used) && strcmp(kind, k->tu->key))
        fprintf(k->out, "%s\n", line);
}

/* Keep the other kinds' lines, put ours (every precision we have) after them: NULL, or why
 * the file was not written. A path that is not a regular file is never replaced. quiet:
 * the file was read (and warned about) already. */
static const char *tune_write(const struct tess__tune *tu, const char *path, int quiet) {
    struct stat st;
    if (!path[0]) return "no path";
    if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
        tune_warn(quiet, path, "ignored: not a regular file (not replaced)");
        return "not a regular file";
    }
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    make_dirs(path);
    FILE *out = fopen(tmp, "w");
    if (!out) return strerror(errno);
    fputs(TUNE_HEADER, out);
    struct keep_lines k = {tu, out};
    int keep = tune_scan(path, quiet, keep_line, &k) == TUNE_KEEP;
    for (int dt = 0; dt < 4; dt++) {
        if (!tu->have[dt]) continue;
        fprintf(out, "%s %c %.6g", tu->key, prec[dt], tu->link[dt]);
        for (int i = 0; i < TESS__TUNE_NCAND; i++)
            if (tu->rate[dt][i] > 0)
                fprintf(out, " %lld:%.6g", (long long)tu->edges[i], tu->rate[dt][i]);
        fputc('\n', out);
    }
    int bad = ferror(out);
    const char *why = fclose(out) || bad  ? "write error"
                      : keep              ? "unreadable, not replaced"
                      : rename(tmp, path) ? strerror(errno)
                                          : NULL;
    if (why) unlink(tmp);
    return why;
}

/* ---- measuring ------------------------------------------------------------------------ */

/* Wait for everything queued on the device's streams. */
static int drain(struct tess__dev *d, tess__event *ev) {
    for (int s = 0; s < d->nstreams; s++) {
        int rc = d->ops->event_record(d->bd, s, ev);
        if (!rc) rc = d->ops->event_sync(d->bd, ev);
        if (rc) return rc;
    }
    return TESS_OK;
}

/* Copy `bytes` from the host buffer (hb bytes, repeated) to dst on stream 0. */
static int fill(struct tess__dev *d, void *dst, size_t bytes, const void *hbuf, size_t hb) {
    for (size_t off = 0; off < bytes; off += hb) {
        size_t w = bytes - off < hb ? bytes - off : hb;
        int rc = d->ops->copy2d(d->bd, 0, TESS__H2D, (char *)dst + off, w, hbuf, w, w, 1, NULL);
        if (rc) return rc;
    }
    return TESS_OK;
}

static int measure(struct tess__rt *rt, struct tess__dev *d, tess_dtype_t dt) {
    struct tess__tune *tu = &rt->tune;
    struct tess__heap *heap = rt->cache.dev[d->id].heap;
    size_t es = tess__dtypes[dt].size;
    int S = d->nstreams;
    /* the largest candidate whose A, B and one C per stream fit in the heap */
    int top = -1;
    for (int i = 0; i < TESS__TUNE_NCAND; i++) {
        size_t t = (size_t)tu->edges[i];
        if ((double)(2 + S) * t * t * es <= 0.9 * (double)tess__heap_largest_free(heap)) top = i;
    }
    if (top < 0) return TESS_ENOMEM;
    size_t T = (size_t)tu->edges[top], tb = T * T * es;
    void *A = tess__heap_alloc(heap, tb), *B = tess__heap_alloc(heap, tb),
         *C[TESS_MAX_STREAMS] = {0};
    int rc = A && B ? TESS_OK : TESS_ENOMEM;
    for (int s = 0; s < S && !rc; s++)
        if (!(C[s] = tess__heap_alloc(heap, tb))) rc = TESS_ENOMEM;
    size_t hb = tb < ((size_t)64 << 20) ? tb : ((size_t)64 << 20);
    double *h = rc ? NULL : tess_malloc_host(hb);
    tess__event *ev = NULL;
    if (!rc && (!h || d->ops->event_create(d->bd, &ev))) rc = TESS_ENOMEM;
    if (!rc) {
        uint64_t x = 0x9e3779b97f4a7c15ull;
        int sgl = dt == TESS_S || dt == TESS_C;
        for (size_t i = 0; i < hb / (sgl ? 4 : 8); i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            double v = (double)(x >> 11) * 0x1p-52 - 1.0; /* [-1, 1) */
            if (sgl)
                ((float *)h)[i] = (float)v;
            else
                h[i] = v;
        }
        rc = fill(d, A, hb, h, hb); /* first touch, untimed */
        if (!rc) rc = drain(d, ev);
        double t0 = tess__now();
        if (!rc) rc = fill(d, A, tb, h, hb);
        if (!rc) rc = drain(d, ev);
        double t1 = tess__now();
        if (!rc && t1 > t0) tu->link[dt] = (double)tb / (t1 - t0);
        if (!rc) rc = fill(d, B, tb, h, hb);
        for (int s = 0; s < S && !rc; s++) rc = fill(d, C[s], tb, h, hb);
        if (!rc) rc = drain(d, ev);
    }
    for (int i = top; i >= 0 && !rc; i--) {
        int64_t t = tu->edges[i];
        struct tess__kernel kn = {.kind = TESS__K_GEMM,
                                  .dt = dt,
                                  .ta = 'N',
                                  .tb = 'N',
                                  .m = t,
                                  .n = t,
                                  .k = t,
                                  .alpha = tess__scalar_one(dt),
                                  .A = A,
                                  .lda = t,
                                  .B = B,
                                  .ldb = t,
                                  .beta = tess__scalar_one(dt),
                                  .ldc = t};
        double t0 = 0;
        for (int round = 0; round < 3 && !rc; round++) {
            if (round == 1) t0 = tess__now();
            for (int s = 0; s < S && !rc; s++) {
                kn.C = C[s];
                rc = d->ops->kernel(d->bd, s, &kn);
            }
            if (!rc) rc = drain(d, ev);
        }
        double el = tess__now() - t0;
        if (!rc && el > 0)
            tu->rate[dt][i] = 2.0 * S * tess__dtypes[dt].flop_mul * (double)t * t * t / el;
    }
    if (ev) d->ops->event_destroy(d->bd, ev);
    tess_free_host(h);
    for (int s = 0; s < S; s++)
        if (C[s]) tess__heap_free(heap, C[s]);
    if (B) tess__heap_free(heap, B);
    if (A) tess__heap_free(heap, A);
    if (!rc) {
        tu->have[dt] = 1;
        tu->measured++;
    }
    return rc;
}

int tess__tune_start(struct tess__rt *rt) {
    struct tess__tune *tu = &rt->tune;
    memset(tu, 0, sizeof *tu);
    if (rt->cfg.tune == 0) return TESS_OK;
    struct tess__dev *d = NULL;
    for (int i = 0; i < rt->ndev && !d; i++)
        if (!(rt->dev[i]->desc.caps & TESS__CAP_UNIFIED)) d = rt->dev[i];
    if (!d) return TESS_OK;
    int gpu = d->desc.kind == TESS_DEV_CUDA;
    /* emulated devices: measured under TESSERA_TUNE=2 only, read back only from a file
     * named by TESSERA_TUNE_FILE (tests), so the default emulated runs keep the fixed rule */
    if (!gpu && rt->cfg.tune != 2 && !rt->cfg.tune_file[0]) return TESS_OK;
    memcpy(tu->edges, gpu ? tess__tune_gpu_edges : tess__tune_emu_edges, sizeof tu->edges);
    /* the kind: the device's name without its " (cuda:N)" and with '_' for blanks */
    snprintf(tu->key, sizeof tu->key, "%s", gpu ? d->desc.name : "emulated");
    char *paren = strstr(tu->key, " (");
    if (paren) *paren = 0;
    for (char *s = tu->key; *s; s++)
        if (isspace((unsigned char)*s)) *s = '_';
    char path[512];
    tune_path(&rt->cfg, path, sizeof path);
    if (rt->cfg.tune == 1) tune_scan(path, 0, read_line, tu);
    /* measuring would spend an injected fault's count */
    if ((!gpu && rt->cfg.tune != 2) || rt->cfg.emu_fault[0]) return TESS_OK;
    int missing = 0;
    for (int dt = 0; dt < 4; dt++)
        if (!tu->have[dt]) {
            int rc = measure(rt, d, (tess_dtype_t)dt);
            if (rc) {
                tess__log(TESS__LOG_INFO, "tile tuning: %c on %s not measured (%s)", prec[dt],
                          d->desc.name, tess_strerror(rc));
                continue;
            }
            missing++;
        }
    for (int dt = 0; dt < 4; dt++)
        if (tu->have[dt])
            tess__log(TESS__LOG_INFO,
                      "tile tuning: %s %c: link %.1f GB/s; TFLOP/s at edges "
                      "%lld ... %lld: %.1f %.1f %.1f %.1f %.1f %.1f (%d precision(s) measured now)",
                      tu->key, prec[dt], tu->link[dt] * 1e-9, (long long)tu->edges[0],
                      (long long)tu->edges[TESS__TUNE_NCAND - 1], tu->rate[dt][0] * 1e-12,
                      tu->rate[dt][1] * 1e-12, tu->rate[dt][2] * 1e-12, tu->rate[dt][3] * 1e-12,
                      tu->rate[dt][4] * 1e-12, tu->rate[dt][5] * 1e-12, missing);
    const char *why = missing ? tune_write(tu, path, rt->cfg.tune == 1) : NULL;
    if (why) tess__log(TESS__LOG_INFO, "tile tuning: cannot write %s (%s)", path, why);
    return TESS_OK;
}

int64_t tess__tune_tile(const struct tess__rt *rt, tess_dtype_t dt, int64_t m, int64_t n, int64_t k,
                        double heap_share) {
    const struct tess__tune *tu = &rt->tune;
    if (!tu->have[dt]) return 0;
    struct tess__rt_devsum ds;
    tess__rt_devsum(rt, &ds);
    if (ds.cpu || !ds.live) return 0; /* the CPU worker runs: the fixed rule */
    const int nd = ds.live, streams = ds.streams;
    const size_t heap = heap_share < 1 ? (size_t)((double)ds.min_heap * heap_share) : ds.min_heap;
    struct tess__tile_in in = {.m = m,
                               .n = n,
                               .k = k,
                               .es = tess__dtypes[dt].size,
                               .flop_mul = tess__dtypes[dt].flop_mul,
                               .ndev = nd,
                               .nstreams = streams,
                               .heap = heap,
                               .link = tu->link[dt],
                               .edges = tu->edges,
                               .rate = tu->rate[dt]};
    return tess__tile_model(&in, NULL);
}
