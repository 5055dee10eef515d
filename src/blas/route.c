/* src/blas/route.c: where a checked drop-in call runs, and the drop-in's process-wide
 * state: knobs, the crossover model, counters and the exit summary. Owns the routing table
 * (per routine kind its tessera entry point, NULL while the runtime has none), the policy,
 * the CPU forwarding through the CPU BLAS table (hostblas.h: pointers from dlopen, never a
 * lookup that could find this library's own exports), the lookup of a door's next
 * definition (tess__blas_next), the counters and the TESSERA_BLAS_VERBOSE summary; not the
 * checks (check.c), the doors, nor the runtime's start, release and fork rule
 * (src/autostart.c).
 * Policy, for a kind with a tessera entry point: TESSERA_BLAS_FORCE=1 -> the runtime; else
 * the runtime iff the crossover model (model.h) says the devices win by the margin and it
 * has a GPU (TESSERA_BLAS_EMULATED=1: or an emulated device); everything else the CPU BLAS.
 * A failed tessera call with beta = 0 runs again on the CPU BLAS; otherwise its input is
 * lost and the process stops with a message rather than return a wrong result.
 * LAPACK (?potrf, ?posv, ?potrs; ?getrf, ?gesv, ?getrs): the same policy with the
 * factorizations by their order (?potrf, ?posv: n >= TESSERA_BLAS_POTRF_N; ?getrf: min(m, n),
 * ?gesv: n >= TESSERA_BLAS_GETRF_N) and the solves (?potrs, ?getrs) by the model of their two
 * TRSMs; to tess_potrf ... tess_gesv (IPIV widened to int64_t and back for an LP64 door;
 * ?getrs with a pivot outside 1..n stays on the CPU), else the program's own LAPACK (the
 * door's next definition) or, without one, tessera's CPU LAPACK. A failed tessera call has
 * overwritten its input: stop.
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostblas.h"
#include "blas.h"
#include "model.h"
#include "backend.h"
#include "autostart.h"

const char *const tess__blas_kind_name[TESS__BLAS_NKINDS] = {
    [TESS__BLAS_GEMM] = "gemm",   [TESS__BLAS_SYMM] = "symm", [TESS__BLAS_HEMM] = "hemm",
    [TESS__BLAS_SYRK] = "syrk",   [TESS__BLAS_HERK] = "herk", [TESS__BLAS_SYR2K] = "syr2k",
    [TESS__BLAS_HER2K] = "her2k", [TESS__BLAS_TRMM] = "trmm", [TESS__BLAS_TRSM] = "trsm",
};

const char *const tess__lapack_kind_name[TESS__LAPACK_NKINDS] = {
    [TESS__LAPACK_POTRF] = "potrf", [TESS__LAPACK_POTRS] = "potrs", [TESS__LAPACK_POSV] = "posv",
    [TESS__LAPACK_GETRF] = "getrf", [TESS__LAPACK_GETRS] = "getrs", [TESS__LAPACK_GESV] = "gesv"};

/* ---- the routing table ----------------------------------------------------------------
 * Each row names the generic tessera entry point of its routine (precision as the first
 * argument, as tess_gemm), column-major calls only. side, uplo and diag are the CBLAS
 * values (141/142, 121/122, 131/132) until tessera.h has types for them. A HERK/HER2K
 * entry point takes its real scalars by pointer too. To route a routine to the runtime,
 * put its entry point in its row: one line. */
typedef int (*gemm_fn)(tess_dtype_t, tess_layout_t, tess_trans_t transa, tess_trans_t transb,
                       int64_t m, int64_t n, int64_t k, const void *alpha, const void *A,
                       int64_t lda, const void *B, int64_t ldb, const void *beta, void *C,
                       int64_t ldc);
typedef int (*symm_fn)(tess_dtype_t, tess_layout_t, tess_side_t side, tess_uplo_t uplo, int64_t m,
                       int64_t n, const void *alpha, const void *A, int64_t lda, const void *B,
                       int64_t ldb, const void *beta, void *C, int64_t ldc);
typedef int (*syrk_fn)(tess_dtype_t, tess_layout_t, tess_uplo_t uplo, tess_trans_t trans, int64_t n,
                       int64_t k, const void *alpha, const void *A, int64_t lda, const void *beta,
                       void *C, int64_t ldc);
typedef int (*syr2k_fn)(tess_dtype_t, tess_layout_t, tess_uplo_t uplo, tess_trans_t trans,
                        int64_t n, int64_t k, const void *alpha, const void *A, int64_t lda,
                        const void *B, int64_t ldb, const void *beta, void *C, int64_t ldc);
typedef int (*trmm_fn)(tess_dtype_t, tess_layout_t, tess_side_t side, tess_uplo_t uplo,
                       tess_trans_t transa, tess_diag_t diag, int64_t m, int64_t n,
                       const void *alpha, const void *A, int64_t lda, void *B, int64_t ldb);

struct route {
    union {
        gemm_fn gemm;
        symm_fn symm;   /* SYMM, HEMM */
        syrk_fn syrk;   /* SYRK, HERK */
        syr2k_fn syr2k; /* SYR2K, HER2K */
        trmm_fn trmm;   /* TRMM, TRSM */
    } dev;              /* NULL: CPU BLAS only */
};

static const struct route routes[TESS__BLAS_NKINDS] = {
    [TESS__BLAS_GEMM] = {.dev.gemm = tess_gemm},    [TESS__BLAS_SYMM] = {.dev.symm = tess_symm},
    [TESS__BLAS_HEMM] = {.dev.symm = tess_hemm},    [TESS__BLAS_SYRK] = {.dev.syrk = tess_syrk},
    [TESS__BLAS_HERK] = {.dev.syrk = tess_herk},    [TESS__BLAS_SYR2K] = {.dev.syr2k = tess_syr2k},
    [TESS__BLAS_HER2K] = {.dev.syr2k = tess_her2k}, [TESS__BLAS_TRMM] = {.dev.trmm = tess_trmm},
    [TESS__BLAS_TRSM] = {.dev.trmm = tess_trsm},
};

static int has_dev(enum tess__blas_kind k) {
    const struct route *r = &routes[k];
    switch (k) {
    case TESS__BLAS_GEMM: return r->dev.gemm != NULL;
    case TESS__BLAS_SYMM:
    case TESS__BLAS_HEMM: return r->dev.symm != NULL;
    case TESS__BLAS_SYRK:
    case TESS__BLAS_HERK: return r->dev.syrk != NULL;
    case TESS__BLAS_SYR2K:
    case TESS__BLAS_HER2K: return r->dev.syr2k != NULL;
    case TESS__BLAS_TRMM:
    case TESS__BLAS_TRSM: return r->dev.trmm != NULL;
    case TESS__BLAS_NKINDS: break;
    }
    return 0;
}

static tess_trans_t tess_trans(char t) {
    return t == 'N' ? TESS_NO_TRANS : t == 'T' ? TESS_TRANS : TESS_CONJ_TRANS;
}
static int cblas_side(char s) { return s == 'L' ? CblasLeft : CblasRight; }
static int cblas_uplo(char u) { return u == 'U' ? CblasUpper : CblasLower; }
static int cblas_diag(char d) { return d == 'U' ? CblasUnit : CblasNonUnit; }

static int dev_call(const struct tess__blas_call *c) {
    const struct route *r = &routes[c->kind];
    const tess_layout_t col = TESS_COL_MAJOR;
    switch (c->kind) {
    case TESS__BLAS_GEMM:
        return r->dev.gemm(c->dt, col, tess_trans(c->ta), tess_trans(c->tb), c->m, c->n, c->k,
                           c->alpha, c->A, c->lda, c->B, c->ldb, c->beta, c->C, c->ldc);
    case TESS__BLAS_SYMM:
    case TESS__BLAS_HEMM:
        return r->dev.symm(c->dt, col, cblas_side(c->side), cblas_uplo(c->uplo), c->m, c->n,
                           c->alpha, c->A, c->lda, c->B, c->ldb, c->beta, c->C, c->ldc);
    case TESS__BLAS_SYRK:
    case TESS__BLAS_HERK:
        return r->dev.syrk(c->dt, col, cblas_uplo(c->uplo), tess_trans(c->ta), c->n, c->k, c->alpha,
                           c->A, c->lda, c->beta, c->C, c->ldc);
    case TESS__BLAS_SYR2K:
    case TESS__BLAS_HER2K:
        return r->dev.syr2k(c->dt, col, cblas_uplo(c->uplo), tess_trans(c->ta), c->n, c->k,
                            c->alpha, c->A, c->lda, c->B, c->ldb, c->beta, c->C, c->ldc);
    case TESS__BLAS_TRMM:
    case TESS__BLAS_TRSM:
        return r->dev.trmm(c->dt, col, cblas_side(c->side), cblas_uplo(c->uplo), tess_trans(c->ta),
                           cblas_diag(c->diag), c->m, c->n, c->alpha, c->A, c->lda, c->C, c->ldc);
    case TESS__BLAS_NKINDS: break;
    }
    return TESS_EINTERNAL;
}

/* ---- the CPU BLAS ------------------------------------------------------------------------ */

static const struct tess__hostblas *cpu_blas(void) {
    const struct tess__hostblas *hb = tess__hostblas();
    if (!hb) {
        /* nothing can compute this call: say why and stop */
        tess__hostblas_load();
        fprintf(stderr, "tessera-blas: %s\n", tess_last_error());
        abort();
    }
    return hb;
}

/* On the CPU BLAS, through the one kernel dispatch tessera already has (src/backend/hostkernel.c):
 * the call kinds are the tile kernel kinds, in the same order. */
_Static_assert((int)TESS__BLAS_TRSM == (int)TESS__K_TRSM &&
                   (int)TESS__BLAS_HERK == (int)TESS__K_HERK,
               "drop-in call kinds must match the tile kernel kinds");

static void cpu_call(const struct tess__blas_call *c) {
    (void)cpu_blas(); /* loaded, or stop with the reason */
    int cplx = tess__dtypes[c->dt].complex_;
    struct tess__kernel k = {
        .kind = (enum tess__kernel_kind)c->kind,
        .dt = c->dt,
        .side = c->side,
        .uplo = c->uplo,
        /* real routines take 'C' as 'T' */
        .ta = c->ta == 'C' && !cplx ? 'T' : c->ta,
        .tb = c->tb == 'C' && !cplx ? 'T' : c->tb,
        .diag = c->diag,
        .m = c->m,
        .n = c->n,
        .k = c->k,
        .alpha = c->alpha,
        .beta = c->beta,
        .A = c->A,
        .lda = c->lda,
        .B = c->B,
        .ldb = c->ldb,
        .C = c->C,
        .ldc = c->ldc,
    };
    tess__host_kernel(&k);
}

/* ---- process-wide state: knobs, counters, runtime, fork, exit ---------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static struct tess__config cfg;
static int cfg_ok;                    /* the knobs parsed; else everything on the CPU */
static struct tess__blas_model model; /* the crossover model (model.h), from the knobs */

/* A thread inside a CPU BLAS call: a call arriving here again came back from the CPU BLAS
 * through our exported symbols (a TESSERA_CPU_BLAS that resolves dgemm_ globally). */
static _Thread_local int in_cpu;

struct counter {
    _Atomic uint64_t dev_calls, cpu_calls, quick;
    _Atomic uint64_t dev_flops, cpu_flops;
};
static struct counter counts[TESS__BLAS_NKINDS][4];
static struct counter lcounts[TESS__LAPACK_NKINDS][4]; /* the LAPACK routines */
static _Atomic uint64_t fwd_calls; /* CPU calls that ran on a door's next definition */

static void child_after_fork(void) {
    memset(counts, 0, sizeof counts); /* the child reports its own calls */
    memset(lcounts, 0, sizeof lcounts);
    atomic_store(&fwd_calls, 0);
}

/* TESSERA_BLAS_VERBOSE=1: one line; 2: and one line per routine used. A forked child
 * prints its own (its counters start at the fork) under another prefix. */
static void summary(void) {
    uint64_t dc = 0, cc = 0, q = 0;
    double df = 0, cf = 0;
    for (int k = 0; k < TESS__BLAS_NKINDS + TESS__LAPACK_NKINDS; k++)
        for (int d = 0; d < 4; d++) {
            struct counter *x = k < TESS__BLAS_NKINDS ? &counts[k][d]
                                                      : &lcounts[k - TESS__BLAS_NKINDS][d];
            dc += atomic_load(&x->dev_calls), cc += atomic_load(&x->cpu_calls);
            q += atomic_load(&x->quick);
            df += (double)atomic_load(&x->dev_flops), cf += (double)atomic_load(&x->cpu_flops);
        }
    int child = tess__autostart_forked();
    if (dc + cc + q == 0 && child) return;
    const char *who = child ? "tessera-blas (forked child)" : "tessera-blas";
    const struct tess__hostblas *hb = tess__hostblas();
    char where[320];
    uint64_t fw = atomic_load(&fwd_calls);
    if (fw)
        snprintf(where, sizeof where, "%s; %llu on the program's own BLAS or LAPACK",
                 hb ? hb->name : "no CPU BLAS", (unsigned long long)fw);
    else
        snprintf(where, sizeof where, "%s", hb ? hb->name : "no CPU BLAS");
    fprintf(stderr,
            "%s: tessera %llu calls %.4g flops; cpu %llu calls %.4g flops (%s); "
            "%llu quick returns; devices %s\n",
            who, (unsigned long long)dc, df, (unsigned long long)cc, cf, where,
            (unsigned long long)q, tess__autostart_state());
    if (cfg.blas_verbose < 2) return;
    if (cfg_ok)
        fprintf(stderr,
                "%s: model cpu %g,%g,%g,%g GFLOP/s; devices %g,%g,%g,%g GFLOP/s, half "
                "at %g, link %g GB/s, overhead %g us, margin %g; potrf from n = %lld; getrf "
                "from n = %lld%s\n",
                who, model.cpu_gflops[0], model.cpu_gflops[1], model.cpu_gflops[2],
                model.cpu_gflops[3], model.dev_gflops[0], model.dev_gflops[1], model.dev_gflops[2],
                model.dev_gflops[3], model.dev_half, model.link_gbs, model.overhead_us,
                model.margin, (long long)cfg.blas_potrf_n, (long long)cfg.blas_getrf_n,
                cfg.blas_force ? " (TESSERA_BLAS_FORCE=1)" : "");
    for (int k = 0; k < TESS__BLAS_NKINDS + TESS__LAPACK_NKINDS; k++)
        for (int d = 0; d < 4; d++) {
            int l3 = k < TESS__BLAS_NKINDS;
            struct counter *x = l3 ? &counts[k][d] : &lcounts[k - TESS__BLAS_NKINDS][d];
            uint64_t a = atomic_load(&x->dev_calls), b = atomic_load(&x->cpu_calls),
                     qq = atomic_load(&x->quick);
            if (a + b + qq == 0) continue;
            fprintf(stderr, "%s: %c%s tessera %llu %.4g cpu %llu %.4g quick %llu route %s\n", who,
                    tess__blas_prefix((tess_dtype_t)d),
                    l3 ? tess__blas_kind_name[k] : tess__lapack_kind_name[k - TESS__BLAS_NKINDS],
                    (unsigned long long)a, (double)atomic_load(&x->dev_flops),
                    (unsigned long long)b, (double)atomic_load(&x->cpu_flops),
                    (unsigned long long)qq,
                    !l3 || has_dev((enum tess__blas_kind)k) ? "tessera" : "cpu");
        }
}

static void init(void) {
    cfg_ok = tess__config_load(&cfg) == TESS_OK;
    char why[256];
    if (cfg_ok && tess__blas_model_load(&model, &cfg, why, sizeof why)) {
        cfg_ok = 0;
        fprintf(stderr, "tessera-blas: %s; every call goes to the CPU BLAS\n", why);
        int verbose = cfg.blas_verbose;
        memset(&cfg, 0, sizeof cfg);
        cfg.blas_verbose = verbose;
    } else if (!cfg_ok) {
        memset(&cfg, 0, sizeof cfg);
        cfg.verbose = 1; /* a bad knob is worth a word on stderr */
        fprintf(stderr, "tessera-blas: %s; every call goes to the CPU BLAS\n", tess_last_error());
    }
    pthread_atfork(NULL, NULL, child_after_fork);
    tess__autostart_init();
    if (cfg.blas_verbose) atexit(summary);
}

/* The runtime started once, if it has something worth sending calls to. */
static bool devices_ready(void) {
    struct tess__autostart a = {
        .who = "tessera-blas",
        .fallback = "the CPU BLAS",
        .emulated = cfg.blas_emulated,
        .force = cfg.blas_force,
        .verbose = cfg.blas_verbose >= 2 ? 2 : cfg.verbose || cfg.blas_verbose,
    };
    return tess__autostart_ready(&a);
}

/* ---- one call ------------------------------------------------------------------------------ */

void tess__blas_run(const struct tess__blas_call *c) {
    pthread_once(&init_once, init);
    if (in_cpu) {
        fprintf(stderr,
                "tessera-blas: the CPU BLAS (%s) called %c%s back through this "
                "library; set TESSERA_CPU_BLAS to a self-contained BLAS such as "
                "libopenblas.so.0\n",
                tess__hostblas() ? tess__hostblas()->name : "?", tess__blas_prefix(c->dt),
                tess__blas_kind_name[c->kind]);
        abort();
    }
    struct counter *ctr = &counts[c->kind][c->dt];
    enum tess__blas_kind k = c->kind;
    int herm = tess__blas_herm(k), rank = tess__blas_rank(k);
    int tri = k == TESS__BLAS_TRMM || k == TESS__BLAS_TRSM;

    /* netlib's quick returns: nothing to compute, nothing read or written (check.c) */
    if (!tess__blas_touches(c)) {
        TESS__COUNT(ctr, quick, 1);
        return;
    }
    int64_t inner = k == TESS__BLAS_GEMM || rank ? c->k : c->side == 'L' ? c->m : c->n;
    int64_t m = rank ? c->n : c->m, n = c->n;
    int beta0 = 0; /* C not read */
    if (!tri) {
        tess_dtype_t bdt = !herm ? c->dt : c->dt == TESS_C ? TESS_S : TESS_D;
        tess__scalar_t b;
        tess__scalar_load(bdt, &b, c->beta);
        beta0 = tess__scalar_is_zero(bdt, &b);
    }

    /* multiply-adds: GEMM m n k, SYMM m n inner, SYRK n(n+1)/2 k, SYR2K n(n+1) k,
     * TRMM/TRSM m n inner / 2; a complex one is 8 flops, a real one 2 */
    double madds = (double)m * (double)n * (double)inner;
    if (rank) madds = 0.5 * (double)n * (double)(n + 1) * (double)c->k;
    if (tess__blas_rank2(k)) madds *= 2.0;
    if (tri) madds *= 0.5;
    uint64_t flops = (uint64_t)(madds * tess__dtypes[c->dt].flop_mul);

    int dev = cfg_ok && has_dev(k) && !tess__autostart_forked();
    if (dev && !cfg.blas_force) {
        /* the crossover model: operands once over the link, C out (and in unless beta = 0) */
        struct tess__blas_cost cost = tess__blas_cost(k, c->dt, (double)c->m, (double)c->n,
                                                      (double)c->k, (double)inner, !beta0);
        dev = tess__blas_model_to_dev(&model, c->dt, &cost);
    }
    if (dev && devices_ready()) {
        tess__autostart_enter();
        int rc = dev_call(c);
        tess__autostart_leave();
        if (rc == TESS_OK) {
            TESS__COUNT(ctr, dev_calls, 1);
            TESS__COUNT(ctr, dev_flops, flops);
            return;
        }
        if (rc == TESS_ENODEV) tess__autostart_off(); /* no device left */
        if (tri || !beta0) {
            fprintf(stderr,
                    "tessera-blas: %c%s failed in tessera (%s: %s) after writing part "
                    "of its output; its input is lost, stopping\n",
                    tess__blas_prefix(c->dt), tess__blas_kind_name[k], tess_strerror(rc),
                    tess_last_error());
            abort();
        }
        if (cfg.verbose || cfg.blas_verbose)
            fprintf(stderr,
                    "tessera-blas: %c%s failed in tessera (%s: %s); beta = 0, so it "
                    "runs again on the CPU BLAS\n",
                    tess__blas_prefix(c->dt), tess__blas_kind_name[k], tess_strerror(rc),
                    tess_last_error());
    }
    in_cpu = 1;
    if (c->fwd) {
        c->fwd(c); /* the door's own CPU library (scipy64.c) */
        atomic_fetch_add_explicit(&fwd_calls, 1, memory_order_relaxed);
    } else {
        cpu_call(c);
    }
    in_cpu = 0;
    TESS__COUNT(ctr, cpu_calls, 1);
    TESS__COUNT(ctr, cpu_flops, flops);
}

/* ---- a door's next definition ------------------------------------------------------------ */

struct find {
    const char *name;
    const char *self; /* this library's path */
    void *self_base;  /* and where it is loaded */
    void *found;
};

static int find_in(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    struct find *f = arg;
    if (!info->dlpi_name || !info->dlpi_name[0] || strcmp(info->dlpi_name, f->self) == 0) return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_LOCAL);
    if (!h) return 0;
    void *p = dlsym(h, f->name);
    dlclose(h); /* RTLD_NOLOAD: drops only the reference just taken */
    Dl_info where;
    if (!p || (dladdr(p, &where) && where.dli_fbase == f->self_base)) return 0;
    f->found = p;
    return 1;
}

void *tess__blas_next(const char *name) {
    void *p = dlsym(RTLD_NEXT, name);
    if (p) return p;
    Dl_info me;
    int known = dladdr((void *)tess__blas_next, &me) != 0;
    struct find f = {name, known && me.dli_fname ? me.dli_fname : "", known ? me.dli_fbase : NULL,
                     NULL};
    dl_iterate_phdr(find_in, &f);
    return f.found;
}

/* ---- one LAPACK call ----------------------------------------------------------------------- */

static tess_uplo_t tess_uplo(char u) { return u == 'U' ? TESS_UPPER : TESS_LOWER; }

/* GETRS's TRANS: a real routine takes 'C' as 'T', as LAPACK's ?GETRS does */
static tess_trans_t lu_trans(const struct tess__lapack_call *c) {
    if (c->trans == 'C' && !tess__dtypes[c->dt].complex_) return TESS_TRANS;
    return tess_trans(c->trans);
}

/* IPIV(i), 0-based i, in the door's width */
static int64_t piv_get(const struct tess__lapack_call *c, int64_t i) {
    return c->info64 ? ((const int64_t *)c->ipiv)[i] : ((const int *)c->ipiv)[i];
}

/* The pivots as tessera takes them (int64_t, min(m, n) of them): an ILP64 door's own IPIV,
 * else a new array (*own = 1), holding the door's pivots for GETRS. NULL: the call stays on
 * the CPU (no memory; GETRS with a pivot outside 1..n, which tess_getrs refuses and
 * LAPACK's ?GETRS does not check). */
static int64_t *lu_pivots(const struct tess__lapack_call *c, int *own) {
    int64_t d = TESS__MIN(c->m, c->n);
    int getrs = c->kind == TESS__LAPACK_GETRS;
    *own = 0;
    for (int64_t i = 0; getrs && i < d; i++)
        if (piv_get(c, i) < 1 || piv_get(c, i) > c->n) return NULL;
    if (c->info64) return c->ipiv;
    int64_t *p = malloc((size_t)d * sizeof *p);
    if (!p) return NULL;
    for (int64_t i = 0; getrs && i < d; i++) p[i] = piv_get(c, i);
    *own = 1;
    return p;
}

static int lapack_dev(const struct tess__lapack_call *c, int64_t *piv, int64_t *info) {
    const tess_layout_t col = TESS_COL_MAJOR;
    switch (c->kind) {
    case TESS__LAPACK_POTRF:
        return tess_potrf(c->dt, col, tess_uplo(c->uplo), c->n, c->A, c->lda, info);
    case TESS__LAPACK_POTRS:
        return tess_potrs(c->dt, col, tess_uplo(c->uplo), c->n, c->nrhs, c->A, c->lda, c->B, c->ldb,
                          info);
    case TESS__LAPACK_POSV:
        return tess_posv(c->dt, col, tess_uplo(c->uplo), c->n, c->nrhs, c->A, c->lda, c->B, c->ldb,
                         info);
    case TESS__LAPACK_GETRF: return tess_getrf(c->dt, col, c->m, c->n, c->A, c->lda, piv, info);
    case TESS__LAPACK_GETRS:
        return tess_getrs(c->dt, col, lu_trans(c), c->n, c->nrhs, c->A, c->lda, piv, c->B, c->ldb,
                          info);
    case TESS__LAPACK_GESV:
        return tess_gesv(c->dt, col, c->n, c->nrhs, c->A, c->lda, piv, c->B, c->ldb, info);
    case TESS__LAPACK_NKINDS: break;
    }
    return TESS_EINTERNAL;
}

/* A call tessera's CPU LAPACK cannot take: say why and stop (nothing written yet). */
static _Noreturn void lapack_cpu_fail(const struct tess__lapack_call *c, const char *why) {
    fprintf(stderr, "tessera-blas: %c%s: %s\n", tess__blas_prefix(c->dt),
            tess__lapack_kind_name[c->kind], why);
    abort();
}

/* tessera's CPU LAPACK for the LU routines: ?getrf_ of the CPU BLAS library, the solve as
 * reference LAPACK's ?GETRS does it, ?laswp_ of that library and two TRSMs on the CPU BLAS
 * (N: P^T B, L Y = B, U X = Y; T/C: U^T Y = B, L^T Z = Y, X = P Z). An ILP64 door's pivots
 * go through a 32-bit copy. Returns INFO. */
static int64_t lu_cpu(const struct tess__lapack_call *c) {
    if (c->m > INT_MAX || c->n > INT_MAX || c->nrhs > INT_MAX || c->lda > INT_MAX ||
        c->ldb > INT_MAX)
        lapack_cpu_fail(c, "past the CPU LAPACK's 32-bit integers and no device takes it");
    int64_t d = TESS__MIN(c->m, c->n);
    int *p = c->ipiv;
    if (c->info64) {
        if (!(p = malloc((size_t)d * sizeof *p))) lapack_cpu_fail(c, "out of host memory");
        for (int64_t i = 0; c->kind == TESS__LAPACK_GETRS && i < d; i++) p[i] = (int)piv_get(c, i);
    }
    int64_t info = 0;
    if (c->kind != TESS__LAPACK_GETRS) {
        tess__getrf_fn *f;
        if (tess__hostblas_getrf((int)c->dt, "tessera-blas", &f))
            lapack_cpu_fail(c, tess_last_error());
        int m = (int)c->m, n = (int)c->n, lda = (int)c->lda, inf = 0;
        f(&m, &n, c->A, &lda, p, &inf);
        info = inf;
        for (int64_t i = 0; c->info64 && i < d; i++) ((int64_t *)c->ipiv)[i] = p[i];
    }
    if (c->kind != TESS__LAPACK_GETRF && info == 0 && c->nrhs > 0) {
        tess__laswp_fn *sw;
        if (tess__hostblas_laswp((int)c->dt, "tessera-blas", &sw))
            lapack_cpu_fail(c, tess_last_error());
        int nrhs = (int)c->nrhs, ldb = (int)c->ldb, k1 = 1, k2 = (int)c->n, up = 1, down = -1;
        /* B in and out, also named C (blas.h); cpu_call takes a real routine's 'C' as 'T' */
        struct tess__blas_call t = tess__blas_operands(TESS__BLAS_TRSM, c->dt, c->n, c->nrhs, 0,
                                                       tess__scalar_one(c->dt), c->A, c->lda, c->B,
                                                       c->ldb, NULL, c->B, c->ldb);
        t.side = 'L', t.ta = c->trans;
        if (c->trans == 'N') {
            sw(&nrhs, c->B, &ldb, &k1, &k2, p, &up);
            t.uplo = 'L', t.diag = 'U';
            cpu_call(&t);
            t.uplo = 'U', t.diag = 'N';
            cpu_call(&t);
        } else {
            t.uplo = 'U', t.diag = 'N';
            cpu_call(&t);
            t.uplo = 'L', t.diag = 'U';
            cpu_call(&t);
            sw(&nrhs, c->B, &ldb, &k1, &k2, p, &down);
        }
    }
    if (c->info64) free(p);
    return info;
}

/* tessera's CPU LAPACK: ?potrf_ of the CPU BLAS library (hostblas.h), and the solves as
 * LAPACK's ?POTRS does them, two TRSMs on the CPU BLAS (L: L Y = B, L^H X = Y; U: U^H Y = B,
 * U X = Y); the LU routines by lu_cpu. Returns INFO. */
static int64_t lapack_cpu(const struct tess__lapack_call *c) {
    (void)cpu_blas(); /* loaded, or stop with the reason */
    if (tess__lapack_lu(c->kind)) return lu_cpu(c);
    int64_t info = 0;
    if (c->kind != TESS__LAPACK_POTRS) {
        tess__potrf_fn *f;
        if (tess__hostblas_potrf((int)c->dt, "tessera-blas", &f) || c->n > INT_MAX ||
            c->lda > INT_MAX)
            lapack_cpu_fail(c, c->n > INT_MAX || c->lda > INT_MAX
                                   ? "past the CPU LAPACK's 32-bit integers and no device takes it"
                                   : tess_last_error());
        int n = (int)c->n, lda = (int)c->lda, inf = 0;
        char uplo = c->uplo;
        f(&uplo, &n, c->A, &lda, &inf, 1);
        info = inf;
        if (info || c->kind == TESS__LAPACK_POTRF) return info;
    }
    if (c->nrhs == 0) return 0;
    int low = c->uplo == 'L';
    /* B in and out, also named C (blas.h) */
    struct tess__blas_call t = tess__blas_operands(TESS__BLAS_TRSM, c->dt, c->n, c->nrhs, 0,
                                                   tess__scalar_one(c->dt), c->A, c->lda, c->B,
                                                   c->ldb, NULL, c->B, c->ldb);
    t.side = 'L', t.uplo = c->uplo, t.diag = 'N';
    t.ta = low ? 'N' : 'C';
    cpu_call(&t);
    t.ta = low ? 'C' : 'N';
    cpu_call(&t);
    return 0;
}

void tess__lapack_run(const struct tess__lapack_call *c) {
    pthread_once(&init_once, init);
    struct counter *ctr = &lcounts[c->kind][c->dt];
    enum tess__lapack_kind k = c->kind;
    int lu = tess__lapack_lu(k);
    int factor = k != TESS__LAPACK_POTRS && k != TESS__LAPACK_GETRS;
    int solve = k != TESS__LAPACK_POTRF && k != TESS__LAPACK_GETRF;
    int64_t n = c->n, d = TESS__MIN(c->m, c->n);
    /* LAPACK's quick returns: M = 0 or N = 0 (the solves: or NRHS = 0; POSV and GESV still
     * factor A without a right-hand side); nothing read or written */
    if (d == 0 || (!factor && c->nrhs == 0)) {
        tess__lapack_set_info(c, 0);
        TESS__COUNT(ctr, quick, 1);
        return;
    }
    /* multiply-adds: Cholesky n^3 / 6; LU max(m, n) d^2 / 2 - d^3 / 6 (n^3 / 3 square); the
     * two solves n^2 nrhs */
    double nn = (double)n, dd = (double)d, big = (double)TESS__MAX(c->m, c->n);
    double madds = !factor ? 0
                   : lu    ? (big * dd * dd - dd * dd * dd / 3.0) / 2.0
                           : nn * nn * nn / 6.0;
    if (solve) madds += nn * nn * (double)c->nrhs;
    uint64_t flops = (uint64_t)(madds * tess__dtypes[c->dt].flop_mul);

    int dev = cfg_ok && !tess__autostart_forked();
    if (dev && !cfg.blas_force) {
        if (factor) {
            dev = d >= (lu ? cfg.blas_getrf_n : cfg.blas_potrf_n);
        } else {
            /* two TRSMs with the factor (the same cost each): the level-3 model of one */
            struct tess__blas_cost cost = tess__blas_cost(TESS__BLAS_TRSM, c->dt, nn,
                                                          (double)c->nrhs, 0, nn, 1);
            dev = tess__blas_model_to_dev(&model, c->dt, &cost);
        }
    }
    int64_t *piv = NULL;
    int own = 0;
    if (dev && lu && !(piv = lu_pivots(c, &own))) dev = 0;
    if (dev && devices_ready()) {
        int64_t info = 0;
        tess__autostart_enter();
        int rc = lapack_dev(c, piv, &info);
        tess__autostart_leave();
        if (rc != TESS_OK) {
            /* the factor or the solution is written in place: the input is lost */
            fprintf(stderr,
                    "tessera-blas: %c%s failed in tessera (%s: %s) after writing part of its "
                    "operands; its input is lost, stopping\n",
                    tess__blas_prefix(c->dt), tess__lapack_kind_name[k], tess_strerror(rc),
                    tess_last_error());
            abort();
        }
        /* the pivots back into an LP64 door's IPIV (GETRS only read them) */
        for (int64_t i = 0; own && k != TESS__LAPACK_GETRS && i < d; i++)
            ((int *)c->ipiv)[i] = (int)piv[i];
        if (own) free(piv);
        tess__lapack_set_info(c, info);
        TESS__COUNT(ctr, dev_calls, 1);
        TESS__COUNT(ctr, dev_flops, flops);
        return;
    }
    if (own) free(piv);
    int64_t info;
    if (c->fwd) {
        /* the program's own LAPACK; it may call level-3 routines back through this library,
         * as any caller does, so this is no CPU BLAS call (in_cpu stays clear) */
        info = c->fwd(c);
        atomic_fetch_add_explicit(&fwd_calls, 1, memory_order_relaxed);
    } else {
        in_cpu = 1;
        info = lapack_cpu(c);
        in_cpu = 0;
    }
    tess__lapack_set_info(c, info);
    TESS__COUNT(ctr, cpu_calls, 1);
    TESS__COUNT(ctr, cpu_flops, flops);
}
