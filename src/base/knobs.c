/* src/base/knobs.c: the one table of TESSERA_* environment knobs and their one parser: per knob
 * its name, kind, default, accepted range, meaning and where it lands in struct
 * tess__config. docs/knobs.md mirrors this table; tessera-info prints it with the live
 * values and what each knob accepts. Owns parsing only; nothing is opened here.
 *
 * Invariants: a value is taken whole or refused with TESS_EINVAL and a message naming the
 * knob, its value and what it accepts. Numbers are decimal (no hex, no blanks anywhere,
 * nothing before or after them); integers and byte counts are range-checked in 64 bits
 * before they are narrowed to their field, doubles must be finite and in range. The
 * defaults go through the same parser. An empty value is an unset knob. TESSERA_FAULT's
 * syntax is checked here, its device indexes against the opened devices by
 * tess__fault_check. A knob read outside the table (none today) uses the same syntax
 * through tess__knob_env_int.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "dropin_defaults.h" /* the drop-in model's defaults */

enum knob_type {
    K_INT,    /* integer in ilo..ihi, into an int or int64_t field */
    K_BYTES,  /* byte count in ilo..ihi (suffix K, M, G, T), into an int64_t field */
    K_DOUBLE, /* finite number in dlo..dhi (F_POS: > dlo) */
    K_LIST,   /* 1..nmax numbers (F_ONE_OR_ALL: 1 or nmax) as K_DOUBLE, kept as text */
    K_STR,    /* text shorter than the field */
    K_AUTO01, /* auto, 0/off, 1/on into an int: -1, 0, 1 */
    K_FAULT,  /* the fault spec (tess__fault_at), kept as text */
};
enum { F_POS = 1, F_ONE_OR_ALL = 2 };

struct knob {
    const char *name;
    enum knob_type type;
    const char *def;
    size_t off, size; /* the field in struct tess__config and its bytes */
    int64_t ilo, ihi; /* K_INT, K_BYTES */
    double dlo, dhi;  /* K_DOUBLE, K_LIST items */
    int flags, nmax;  /* F_*; K_LIST: most items */
    const char *help;
};

#define FIELD(f) offsetof(struct tess__config, f), sizeof(((struct tess__config *)0)->f)
#define INT(n, f, d, lo, hi, h) \
    { n, K_INT, d, FIELD(f), .ilo = lo, .ihi = hi, .help = h }
#define BYTES(n, f, d, lo, hi, h) \
    { n, K_BYTES, d, FIELD(f), .ilo = lo, .ihi = hi, .help = h }
#define DBL(n, f, d, lo, hi, fl, h) \
    { n, K_DOUBLE, d, FIELD(f), .dlo = lo, .dhi = hi, .flags = fl, .help = h }
#define LIST(n, f, d, lo, hi, fl, nm, h) \
    { n, K_LIST, d, FIELD(f), .dlo = lo, .dhi = hi, .flags = fl, .nmax = nm, .help = h }
#define STR(n, f, d, h) \
    { n, K_STR, d, FIELD(f), .help = h }
#define KIB(x) ((int64_t)(x) << 10)
#define TIB(x) ((int64_t)(x) << 40)
#define GFLOPS_MAX 1e9 /* an exaflop per device or per model rate */
#define GBS_MAX 1e6    /* a petabyte per second */

static const struct knob knobs[] = {
    STR("TESSERA_DEVICES", devices, "all", "GPUs to use: all, none, or CUDA ordinals such as 0,1"),
    INT("TESSERA_TILE", tile, "0", 0, 65536,
        "tile edge in elements; 0 = automatic from the devices and the problem"),
    INT("TESSERA_TUNE", tune, "1", 0, 2,
        "automatic GEMM tile on GPUs: 1 = model from tile-kernel rates measured once per machine (kept in TESSERA_TUNE_FILE), 2 = measure again (emulated devices too), 0 = fixed rule"),
    STR("TESSERA_TUNE_FILE", tune_file, "",
        "file of the measured rates; empty = $XDG_CACHE_HOME/tessera/tune or ~/.cache/tessera/tune"),
    INT("TESSERA_STREAMS", streams, "8", 1, TESS_MAX_STREAMS,
        "streams per GPU, each running one task"),
    BYTES("TESSERA_DEVICE_MEM", dev_mem, "0", 0, TIB(64),
          "heap bytes per GPU; 0 = all free memory but a margin"),
    BYTES("TESSERA_STAGING", staging, "2G", 0, TIB(64),
          "pinned staging bytes per GPU for pageable operands, taken on demand; 0 = copy directly"),
    INT("TESSERA_STAGING_THREADS", staging_threads, "0", 0, 256,
        "threads copying pageable operands to and from staging (all GPUs); 0 = min(8, cores/2)"),
    {"TESSERA_CPU_WORKER", K_AUTO01, "auto", FIELD(cpu_worker),
     .help = "CPU cores as a device: auto (only when no other device), 0, 1"},
    INT("TESSERA_RS", rs_size, "8", 1, 4096,
        "reservation-station slots per device (tasks pulled ahead and ranked)"),
    INT("TESSERA_BALANCE", balance, "1", 0, 1,
        "end game: with the queue empty a device leaves a station task to a peer that would finish it sooner (measured rates); 0 = every device starts what it holds"),
    INT("TESSERA_SPIN_US", spin_us, "200", 0, 100000,
        "GPUs: microseconds a worker polls the event it waits for before it blocks on it"),
    INT("TESSERA_WRITE_BEHIND", write_behind, "1", 0, 1,
        "1: a device writes its idle dirty held tiles back while its write-back stream idles, "
        "least recently used first (a later sync has less left); 0: only when synced or evicted"),
    INT("TESSERA_HOLD_CHECK", hold_check, "0", 0, 1,
        "1: check the contract of held data (checksums of held host tiles at each call that "
        "uses them and at each sync); 0: no check"),
    INT("TESSERA_DATAFLOW", dataflow, "0", 0, 1,
        "1 = TRSM's steps wait for the tiles they read (a task starts once its chain predecessor has started); 0 = a task waits for its whole predecessor"),
    INT("TESSERA_P2P", p2p, "1", 0, 1,
        "fetch tiles from peer devices (L2 cache hits); 0 = always from the host"),
    INT("TESSERA_RECOVER", recover, "0", 0, 1,
        "1 = whatever a failing device held can be redone: C tiles the call reads are written back through a host buffer, peers fetch only finished copies"),
    INT("TESSERA_PIN", pin_threads, "1", 0, 1,
        "pin each device worker thread to its own core, inside the process's binding (spread by node-local rank)"),
    INT("TESSERA_EMULATE", emulate, "0", 0, TESS_MAX_DEVICES - 1,
        "emulated host devices to add (separate capped arenas, stream threads)"),
    BYTES("TESSERA_EMULATE_MEM", emu_mem, "256M", KIB(4), TIB(1),
          "arena bytes per emulated device (its memory cap)"),
    DBL("TESSERA_EMULATE_LINK", emu_link_gbs, "0", 0, GBS_MAX, 0,
        "emulated link bandwidth in GB/s per copy; 0 = unthrottled"),
    LIST("TESSERA_EMULATE_GFLOPS", emu_gflops, "", 0, GFLOPS_MAX, 0, TESS_MAX_DEVICES,
         "emulated kernel rate in GFLOP/s, one value or a list per device; 0 = unthrottled"),
    {"TESSERA_FAULT", K_FAULT, "", FIELD(emu_fault),
     .help =
         "inject faults: dev:k[,dev:k] makes device index dev fail at its k-th copy or kernel; pin:N fails the N-th staging slab of each GPU (cudaHostAlloc); xport:U loses this rank's device at unit U of each pass of the GPU transport"},
    INT("TESSERA_EMULATE_JITTER", emu_jitter_us, "0", 0, 1000000,
        "random delay up to this many microseconds before each emulated op"),
    INT("TESSERA_EMULATE_STREAMS", emu_streams, "2", 1, TESS_MAX_STREAMS,
        "streams per emulated device"),
    INT("TESSERA_EMULATE_SHARED", emu_shared, "0", 0, 1,
        "1 = an emulated device's streams take turns on one compute engine of TESSERA_EMULATE_GFLOPS (a GPU's model); 0 = each stream computes at that rate"),
    INT("TESSERA_VERBOSE", verbose, "0", 0, 3,
        "0 silent, 1 warnings (device failures, ignored files), 2 info, 3 debug"),
    STR("TESSERA_TRACE", trace, "",
        "write a Chrome/Perfetto trace (one track per device stream and worker) to this file; %r in the name: the launcher's rank"),
    INT("TESSERA_SUMMARY", summary, "0", 0, 1,
        "1: print each device's counters (bytes, hits, steals, busy %) when the runtime stops"),
    STR("TESSERA_CPU_BLAS", cpu_blas, "libopenblas.so.0",
        "CPU BLAS library (CBLAS level 3) for host kernels and the drop-in's CPU path; not a tessera library"),
    INT("TESSERA_BLAS_FORCE", blas_force, "0", 0, 1,
        "drop-in: 1 = every level-3 call to the runtime, whatever its shape or devices (testing)"),
    /* the drop-in's crossover model (src/blas/model.h; defaults in src/base/dropin_defaults.h) */
    LIST("TESSERA_BLAS_CPU_GFLOPS", blas_cpu_gflops, TESS__BLAS_DEF_CPU_GFLOPS, 0, GFLOPS_MAX,
         F_POS | F_ONE_OR_ALL, 4,
         "drop-in model: CPU BLAS GFLOP/s, one value or s,d,c,z (tessera-crossover measures it)"),
    LIST("TESSERA_BLAS_DEV_GFLOPS", blas_dev_gflops, TESS__BLAS_DEF_DEV_GFLOPS, 0, GFLOPS_MAX,
         F_POS | F_ONE_OR_ALL, 4,
         "drop-in model: all GPUs' GFLOP/s on large operands, one value or s,d,c,z"),
    DBL("TESSERA_BLAS_DEV_HALF", blas_dev_half, TESS__BLAS_DEF_DEV_HALF, 0, 1e9, 0,
        "drop-in model: min(m, n, k) at which the GPUs reach half their rate"),
    DBL("TESSERA_BLAS_LINK_GBS", blas_link_gbs, TESS__BLAS_DEF_LINK_GBS, 0, GBS_MAX, F_POS,
        "drop-in model: host <-> GPUs GB/s for pageable operands"),
    DBL("TESSERA_BLAS_OVERHEAD_US", blas_overhead_us, TESS__BLAS_DEF_OVERHEAD_US, 0, 1e9, 0,
        "drop-in model: fixed cost of one tessera call, microseconds"),
    DBL("TESSERA_BLAS_MARGIN", blas_margin, TESS__BLAS_DEF_MARGIN, 0, 1e6, F_POS,
        "drop-in model: a call goes to the GPUs when margin * GPU time < CPU time"),
    INT("TESSERA_BLAS_EMULATED", blas_emulated, "0", 0, 1,
        "drop-in: 1 = emulated devices count as GPUs for the model (testing the routing)"),
    INT("TESSERA_BLAS_POTRF_N", blas_potrf_n, "2048", 0, INT64_C(1) << 40,
        "drop-in: ?potrf_ and ?posv_ of order n >= this go to the GPUs (smaller ones to the program's LAPACK)"),
    INT("TESSERA_BLAS_GETRF_N", blas_getrf_n, "2048", 0, INT64_C(1) << 40,
        "drop-in: ?getrf_ (min(m, n)) and ?gesv_ of order n >= this go to the GPUs (smaller ones to the program's LAPACK); provisional"),
    INT("TESSERA_BLAS_VERBOSE", blas_verbose, "0", 0, 2,
        "drop-in: 1 = one summary line on stderr at exit (calls, flops: runtime vs CPU), 2 = and the model and per routine"),
    BYTES(
        "TESSERA_PGEMM_MEM", pgemm_mem, "0", 0, TIB(64),
        "distributed GEMM: bytes per rank for gathered panels (host memory; with the GPU transport at most half the device heap); 0 = 40% of RAM / ranks per node"),
    BYTES("TESSERA_PGEMM_CHUNK", pgemm_chunk, "128M", 1, TIB(64),
          "distributed GEMM: bytes a rank receives per pipelined exchange step (look-ahead unit)"),
    INT("TESSERA_PGEMM_NCCL", pgemm_nccl, "1", 0, 2,
        "distributed GEMM: 1 = panels into device memory when every rank has a GPU (NCCL within a node, MPI then H2D across nodes); 2 = also on emulated devices (MPI in place of NCCL: tests); 0 = MPI through host memory"),
    INT("TESSERA_PGEMM_NCCL_STREAMS", pgemm_nccl_streams, "1", 1, 2,
        "distributed GEMM, NCCL: 2 = pack (H2D) on a second stream, overlapping the previous unit's transfer"),
    INT("TESSERA_PGEMM_PACK_D2D", pgemm_pack_d2d, "1", 0, 1,
        "distributed GEMM, GPU transport: 1 = what a peer needs and this rank holds in its own panel is packed D2D from there, not H2D again; 0 = always H2D"),
    INT("TESSERA_PGEMM_NODE_RANKS", pgemm_node_ranks, "0", 0, 65536,
        "distributed GEMM, GPU transport: NCCL among every r consecutive ranks, MPI between such groups (testing the multi-node path on one node); 0 = NCCL within each real node"),
    STR("TESSERA_PGEMM_VARIANT", pgemm_variant, "auto",
        "distributed GEMM: auto (by shape), c (stationary C), a / b (stationary A / B: k split, partial products summed into C)"),
    INT("TESSERA_SCALAPACK_FORCE", scalapack_force, "0", 0, 1,
        "ScaLAPACK glue: 1 = every level-3 call with work to tessera, whatever its sizes, even with the CPU worker only (testing)"),
    INT("TESSERA_SCALAPACK_MIN_DIM", scalapack_min_dim, "256", 0, INT32_MAX,
        "ScaLAPACK glue: a call goes to tessera only when min(m, n, k) of the GEMM it amounts to is at least this"),
    INT("TESSERA_SCALAPACK_MIN_VOLUME", scalapack_min_volume, "1073741824", 0, INT64_MAX,
        "ScaLAPACK glue: ... and m*n*k is at least this"),
    INT("TESSERA_SCALAPACK_TRSM_BLOCK", scalapack_trsm_block, "2048", 1, INT32_MAX,
        "ScaLAPACK glue: p?trsm_'s diagonal blocks of this order are inverted (p?trtri), the rest is GEMM; 1 = plain blocked substitution"),
    INT("TESSERA_SCALAPACK_VERBOSE", scalapack_verbose, "0", 0, 2,
        "ScaLAPACK glue: 1 = one line per process on stderr at exit (calls, flops: tessera vs the reference), 2 = and per routine"),
};
#define NKNOBS (sizeof knobs / sizeof knobs[0])

/* ---- the number syntax ------------------------------------------------------------------ */

/* Why a value is refused (the parsers return 0 or one of these). */
enum { BAD_SYNTAX = -1, BAD_RANGE = -2, BAD_COUNT = -3, BAD_LENGTH = -4 };
static const char *bad_what(int why) {
    switch (why) {
    case BAD_RANGE: return "out of range";
    case BAD_COUNT: return "wrong number of values";
    case BAD_LENGTH: return "too long";
    default: return "not a valid value";
    }
}

static int digit(char c) { return c >= '0' && c <= '9'; }

/* [+-]digits, the whole string, as int64 (BAD_RANGE beyond it). */
static int scan_int(const char *s, int64_t *v) {
    const char *p = s + (*s == '+' || *s == '-');
    if (!*p) return BAD_SYNTAX;
    for (; *p; p++)
        if (!digit(*p)) return BAD_SYNTAX;
    errno = 0;
    long long x = strtoll(s, NULL, 10);
    if (errno == ERANGE) return BAD_RANGE;
    *v = x;
    return 0;
}

/* A decimal number (digits, '.', exponent), the whole string, finite. */
static int scan_double(const char *s, double *v) {
    int digits = 0;
    for (const char *p = s; *p; p++) {
        if (!digit(*p) && !strchr(".eE+-", *p)) return BAD_SYNTAX;
        digits += digit(*p);
    }
    if (!digits) return BAD_SYNTAX;
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (*end) return BAD_SYNTAX;
    if (errno == ERANGE || !isfinite(x)) return BAD_RANGE;
    *v = x;
    return 0;
}

/* digits[.digits][K|M|G|T[i]][B], letters in either case, powers of 1024; a fraction is
 * rounded down to a whole byte. */
static int scan_bytes(const char *s, int64_t *v) {
    const char *p = s;
    int digits = 0, frac = 0;
    while (digit(*p)) p++, digits++;
    if (*p == '.')
        for (p++, frac = 1; digit(*p); p++) digits++;
    if (!digits) return BAD_SYNTAX;
    size_t len = (size_t)(p - s);
    int shift = 0;
    const char *u = strchr("KMGT", *p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
    if (*p && u) {
        shift = 10 * (int)(u - "KMGT" + 1);
        p++;
        if (*p == 'i' || *p == 'I') {
            p++;
            if (*p != 'B' && *p != 'b') return BAD_SYNTAX;
        }
    }
    if (*p == 'B' || *p == 'b') p++;
    if (*p) return BAD_SYNTAX;
    char num[64];
    if (len >= sizeof num) return BAD_RANGE;
    memcpy(num, s, len);
    num[len] = 0;
    if (!frac) {
        errno = 0;
        long long x = strtoll(num, NULL, 10);
        if (errno == ERANGE || x > (INT64_MAX >> shift)) return BAD_RANGE;
        *v = (int64_t)x << shift;
        return 0;
    }
    double x = ldexp(strtod(num, NULL), shift);
    if (!(x < 0x1p62)) return BAD_RANGE;
    *v = (int64_t)x;
    return 0;
}

static int in_range_double(double x, double lo, double hi, int flags) {
    return (flags & F_POS ? x > lo : x >= lo) && x <= hi;
}

/* The next comma-separated item of *p into buf: 1, 0 after the last one, BAD_LENGTH when
 * it does not fit. Empty items come out as "". */
static int next_item(const char **p, char *buf, size_t n) {
    if (!*p) return 0;
    const char *comma = strchr(*p, ',');
    size_t len = comma ? (size_t)(comma - *p) : strlen(*p);
    if (len >= n) return BAD_LENGTH;
    memcpy(buf, *p, len);
    buf[len] = 0;
    *p = comma ? comma + 1 : NULL;
    return 1;
}

int tess__parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    int64_t v;
    int rc = scan_int(s, &v);
    if (!rc && (v < lo || v > hi)) rc = BAD_RANGE;
    if (!rc) *out = v;
    return rc;
}

int tess__parse_list(const char *s, double lo, double hi, bool lo_open, double *out, int nmax) {
    const char *p = s && *s ? s : NULL;
    char item[64];
    int n = 0, rc;
    if (!p) return BAD_SYNTAX;
    while ((rc = next_item(&p, item, sizeof item)) == 1) {
        double x;
        if ((rc = scan_double(item, &x))) return rc;
        if (!in_range_double(x, lo, hi, lo_open ? F_POS : 0)) return BAD_RANGE;
        if (n == nmax) return BAD_COUNT;
        out[n++] = x;
    }
    return rc ? rc : n;
}

/* ---- the fault spec ----------------------------------------------------------------------- */

#define FAULT_MAX INT_MAX /* k, N and U land in ints (pin, xport) */
struct fault {
    int64_t dev[TESS_MAX_DEVICES], pin, xport; /* 0: none */
};

/* "key:N[,key:N]" into f; keys: a device index, pin, xport, each at most once. 0 or a
 * BAD_* reason. */
static int fault_parse(const char *spec, struct fault *f) {
    memset(f, 0, sizeof *f);
    const char *p = spec && *spec ? spec : NULL;
    char item[64];
    int rc;
    while ((rc = next_item(&p, item, sizeof item)) == 1) {
        char *colon = strchr(item, ':');
        if (!colon) return BAD_SYNTAX;
        *colon = 0;
        int64_t n, dev;
        if ((rc = scan_int(colon + 1, &n))) return rc;
        if (n < 1 || n > FAULT_MAX) return BAD_RANGE;
        int64_t *slot;
        if (!strcmp(item, "pin"))
            slot = &f->pin;
        else if (!strcmp(item, "xport"))
            slot = &f->xport;
        else if (!(rc = scan_int(item, &dev)) && item[0] != '+' && item[0] != '-') {
            if (dev >= TESS_MAX_DEVICES) return BAD_RANGE;
            slot = &f->dev[dev];
        } else
            return BAD_SYNTAX;
        if (*slot) return BAD_SYNTAX; /* the same key twice */
        *slot = n;
    }
    return rc;
}

long long tess__fault_at(const char *spec, const char *key) {
    struct fault f;
    int64_t dev;
    if (fault_parse(spec, &f)) return 0;
    if (!strcmp(key, "pin")) return f.pin;
    if (!strcmp(key, "xport")) return f.xport;
    if (scan_int(key, &dev) || dev < 0 || dev >= TESS_MAX_DEVICES) return 0;
    return f.dev[dev];
}

int tess__fault_check(const char *spec, int ndev) {
    struct fault f;
    if (fault_parse(spec, &f))
        return tess__fail(TESS_EINVAL, "TESSERA_FAULT=\"%.64s\": not a valid value", spec);
    for (int d = ndev; d < TESS_MAX_DEVICES; d++)
        if (f.dev[d])
            return tess__fail(TESS_EINVAL,
                              "TESSERA_FAULT=\"%.64s\": out of range: no device %d; "
                              "accepted: device indexes 0..%d (as tessera-info numbers them)",
                              spec, d, ndev - 1);
    return TESS_OK;
}

double tess__list_double(const char *list, int i, double def) {
    double v[TESS_MAX_DEVICES];
    int n = tess__parse_list(list, -INFINITY, INFINITY, false, v, TESS_MAX_DEVICES);
    if (n <= 0) return def;
    return n == 1 ? v[0] : i >= 0 && i < n ? v[i] : def;
}

/* ---- the table ---------------------------------------------------------------------------- */

/* A byte count in the largest unit that divides it. */
static void fmt_bytes(int64_t v, char *buf, size_t n) {
    static const char unit[] = "TGMK";
    for (int i = 0; i < 4; i++) {
        int shift = 10 * (4 - i);
        if (v && v % ((int64_t)1 << shift) == 0) {
            snprintf(buf, n, "%lld%c", (long long)(v >> shift), unit[i]);
            return;
        }
    }
    snprintf(buf, n, "%lld", (long long)v);
}

/* What knob k accepts, in a few words (messages and tessera-info). */
static void describe(const struct knob *k, char *buf, size_t n) {
    char lo[32], hi[32], items[48] = "";
    switch (k->type) {
    case K_INT:
        if (k->ihi - k->ilo == 1)
            snprintf(buf, n, "%lld or %lld", (long long)k->ilo, (long long)k->ihi);
        else
            snprintf(buf, n, "integer %lld..%lld", (long long)k->ilo, (long long)k->ihi);
        return;
    case K_BYTES:
        fmt_bytes(k->ilo, lo, sizeof lo);
        fmt_bytes(k->ihi, hi, sizeof hi);
        snprintf(buf, n, "bytes %s..%s (suffix K, M, G, T)", lo, hi);
        return;
    case K_LIST:
        if (k->flags & F_ONE_OR_ALL)
            snprintf(items, sizeof items, "list of 1 or %d ", k->nmax);
        else
            snprintf(items, sizeof items, "list of 1..%d ", k->nmax);
        /* fall through */
    case K_DOUBLE:
        if (k->flags & F_POS)
            snprintf(buf, n, "%snumber%s > %g, <= %g", items, *items ? "s" : "", k->dlo, k->dhi);
        else
            snprintf(buf, n, "%snumber%s %g..%g", items, *items ? "s" : "", k->dlo, k->dhi);
        return;
    case K_STR: snprintf(buf, n, "text, < %zu bytes", k->size); return;
    case K_AUTO01: snprintf(buf, n, "auto, 0 or off, 1 or on"); return;
    case K_FAULT:
        snprintf(buf, n, "dev:k[,dev:k], pin:N, xport:U (k, N, U in 1..%d)", FAULT_MAX);
        return;
    }
}

/* Parse val for knob k into cfg: 0 or a BAD_* reason. */
static int set_knob(struct tess__config *cfg, const struct knob *k, const char *val) {
    char *p = (char *)cfg + k->off;
    int64_t i;
    double d, list[TESS_MAX_DEVICES];
    struct fault f;
    int rc;
    switch (k->type) {
    case K_INT:
    case K_BYTES:
        rc = k->type == K_INT ? scan_int(val, &i) : scan_bytes(val, &i);
        if (!rc && (i < k->ilo || i > k->ihi)) rc = BAD_RANGE;
        if (rc) return rc;
        if (k->size == sizeof(int64_t))
            *(int64_t *)p = i;
        else
            *(int *)p = (int)i; /* the table's int ranges fit an int */
        return 0;
    case K_DOUBLE:
        if ((rc = scan_double(val, &d))) return rc;
        if (!in_range_double(d, k->dlo, k->dhi, k->flags)) return BAD_RANGE;
        *(double *)p = d;
        return 0;
    case K_LIST:
        if (*val) {
            rc = tess__parse_list(val, k->dlo, k->dhi, k->flags & F_POS, list, k->nmax);
            if (rc < 0) return rc;
            if ((k->flags & F_ONE_OR_ALL) && rc != 1 && rc != k->nmax) return BAD_COUNT;
        }
        break;
    case K_FAULT:
        if (*val && (rc = fault_parse(val, &f))) return rc;
        break;
    case K_STR: break;
    case K_AUTO01:
        if (!strcmp(val, "auto"))
            *(int *)p = -1;
        else if (!strcmp(val, "0") || !strcmp(val, "off"))
            *(int *)p = 0;
        else if (!strcmp(val, "1") || !strcmp(val, "on"))
            *(int *)p = 1;
        else
            return BAD_SYNTAX;
        return 0;
    }
    /* the kinds kept as text */
    if (strlen(val) >= k->size) return BAD_LENGTH;
    strcpy(p, val);
    return 0;
}

static int refuse(const struct knob *k, const char *val, int why) {
    char acc[128];
    describe(k, acc, sizeof acc);
    return tess__fail(TESS_EINVAL, "%s=\"%.64s%s\": %s; accepted: %s", k->name, val,
                      strlen(val) > 64 ? "..." : "", bad_what(why), acc);
}

int tess__config_load(struct tess__config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NKNOBS; i++)
        if (set_knob(cfg, &knobs[i], knobs[i].def))
            return tess__fail(TESS_EINTERNAL, "%s: built-in default \"%s\" refused", knobs[i].name,
                              knobs[i].def);
    for (size_t i = 0; i < NKNOBS; i++) {
        const char *v = getenv(knobs[i].name);
        int why;
        if (v && *v && (why = set_knob(cfg, &knobs[i], v))) return refuse(&knobs[i], v, why);
    }
    return TESS_OK;
}

int tess__knob_env_int(const char *name, int64_t def, int64_t lo, int64_t hi, int64_t *out) {
    const char *v = getenv(name);
    *out = def;
    if (!v || !*v) return TESS_OK;
    int why = tess__parse_int(v, lo, hi, out);
    if (!why) return TESS_OK;
    *out = def;
    return tess__fail(TESS_EINVAL, "%s=\"%.64s%s\": %s; accepted: integer %lld..%lld", name, v,
                      strlen(v) > 64 ? "..." : "", bad_what(why), (long long)lo, (long long)hi);
}

static void knob_value(const struct tess__config *cfg, const struct knob *k, char *buf, size_t n) {
    const char *p = (const char *)cfg + k->off;
    switch (k->type) {
    case K_INT:
    case K_BYTES:
        if (k->size == sizeof(int64_t))
            snprintf(buf, n, "%lld", (long long)*(const int64_t *)p);
        else
            snprintf(buf, n, "%d", *(const int *)p);
        break;
    case K_DOUBLE: snprintf(buf, n, "%g", *(const double *)p); break;
    case K_LIST:
    case K_FAULT:
    case K_STR: snprintf(buf, n, "%s", p); break;
    case K_AUTO01: {
        int v = *(const int *)p;
        snprintf(buf, n, "%s", v < 0 ? "auto" : v ? "1" : "0");
        break;
    }
    }
}

void tess_print_knobs(FILE *f) {
    struct tess__config cfg;
    int st = tess__config_load(&cfg);
    fprintf(f, "%-24s %-10s %-8s %-34s %s\n", "knob", "value", "default", "accepts", "meaning");
    for (size_t i = 0; i < NKNOBS; i++) {
        char val[160], acc[128];
        knob_value(&cfg, &knobs[i], val, sizeof val);
        describe(&knobs[i], acc, sizeof acc);
        fprintf(f, "%-24s %-10s %-8s %-34s %s\n", knobs[i].name, val[0] ? val : "\"\"",
                knobs[i].def[0] ? knobs[i].def : "\"\"", acc, knobs[i].help);
    }
    if (st) fprintf(f, "error: %s\n", tess_last_error());
}
