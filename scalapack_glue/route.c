/* scalapack_glue/route.c: where a checked p?gemm_ call runs, and the glue's process-wide
 * state: the program's BLACS/PBLAS symbols, the reference routines, knobs, counters, the
 * node runtime's start and release, and one tessera grid per BLACS context.
 *
 * Policy for a call that passed PBLAS's checks and is not a quick return (the knobs must be
 * the same on every process of the context, as mpirun passes them):
 *   - a descriptor with RSRC_ or CSRC_ = -1 (replicated), or the knobs unreadable
 *                                       -> the reference routine;
 *   - TESSERA_SCALAPACK_FORCE=1         -> tessera, whatever the sizes;
 *   - otherwise                         -> tessera iff min(m, n, k) >= TESSERA_SCALAPACK_MIN_DIM
 *                                          and m n k >= TESSERA_SCALAPACK_MIN_VOLUME (global
 *                                          sizes, so every process decides alike); the
 *                                          defaults are placeholders until measured on GPUs.
 * Before tessera runs, one MPI_Allreduce over the context's processes agrees that every
 * process can take it (the runtime started and, unforced, has a device other than the CPU
 * worker; comm/ accepts the descriptors) and that every process passed the same global
 * arguments; if not, every process calls the reference routine instead. tessera's own
 * failures come back the same on every process (tess__pgemm_run agrees on them): with
 * beta = 0 the call runs again on the reference routine; otherwise part of sub(C) may be
 * overwritten and its input is lost, so the process stops with a message (Cblacs_abort)
 * rather than return a wrong result.
 *
 * The BLACS context: Cblacs_gridinfo gives its shape and this process's coordinates (as
 * PBLAS reads them), blacs_get(ctxt, 10) its communicator (the one the context's processes
 * talk over, not MPI_COMM_WORLD). The tessera grid of a context (tess__comm_grid_from_blacs,
 * collective, once) is cached as an MPI attribute of that communicator: when the program
 * frees the context (blacs_gridexit frees the communicator) MPI hands the grid to our
 * delete callback, which parks it; it is freed at this process's next grid lookup (outside
 * any MPI callback). A context handle reused later names a new communicator without the
 * attribute, so it gets a new grid: a stale grid is never used.
 *
 * Lock order: mu (counters, graveyard) and start_mu are leaves.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "tessera_scalapack.h"

const char *const glue_kind_name[GLUE_NKINDS] = {
    [GLUE_GEMM] = "gemm",   [GLUE_SYMM] = "symm",   [GLUE_HEMM] = "hemm",
    [GLUE_SYRK] = "syrk",   [GLUE_HERK] = "herk",   [GLUE_SYR2K] = "syr2k",
    [GLUE_HER2K] = "her2k", [GLUE_TRMM] = "trmm",   [GLUE_TRSM] = "trsm",
};

/* ---- the program's symbols and the reference routines --------------------------------- */

static struct glue_syms syms;
static pthread_once_t syms_once = PTHREAD_ONCE_INIT;

#define FIND(field, name) do { void *p_ = dlsym(RTLD_DEFAULT, name); memcpy(&syms.field, &p_, sizeof p_); } while (0)
static void syms_load(void) {
    FIND(gridinfo, "Cblacs_gridinfo");
    FIND(blacs_get, "blacs_get_");
    FIND(cabort, "PB_Cabort");
    FIND(cwarn, "PB_Cwarn");
    FIND(blacs_abort, "Cblacs_abort");
}
#undef FIND

const struct glue_syms *glue_syms(void) {
    pthread_once(&syms_once, syms_load);
    return &syms;
}

void *glue_reference(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    if (!f) {
        fprintf(stderr, "tessera-scalapack: no %s below libtessera_scalapack.so (%s): load it "
                "in front of a ScaLAPACK library (LD_PRELOAD, or link it before "
                "-lscalapack); stopping\n", name, dlerror());
        abort();
    }
    return f;
}

/* ---- knobs ---------------------------------------------------------------------------- */

static struct {
    int force;          /* TESSERA_SCALAPACK_FORCE */
    int64_t min_dim;    /* TESSERA_SCALAPACK_MIN_DIM */
    double min_volume;  /* TESSERA_SCALAPACK_MIN_VOLUME */
    int verbose;        /* TESSERA_SCALAPACK_VERBOSE */
    int ok;             /* all parsed; else every call goes to the reference */
} knob;

static int parse_int(const char *name, int64_t def, int64_t lo, int64_t hi, int64_t *out) {
    const char *v = getenv(name);
    *out = def;
    if (!v || !*v) return 1;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (*end || x < lo || x > hi) {
        fprintf(stderr, "tessera-scalapack: %s = '%s' must be an integer in [%lld, %lld]; every "
                "call goes to the reference ScaLAPACK\n", name, v, (long long)lo, (long long)hi);
        return 0;
    }
    *out = x;
    return 1;
}

/* ---- counters --------------------------------------------------------------------------- */

struct counter {
    uint64_t tess_calls, ref_calls, quick, errors, fallbacks;
    double tess_flops, ref_flops;
};
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct counter counts[GLUE_NKINDS][4];
static int world_rank = -1;

#define COUNT(k, dt, stmt)                     \
    do {                                       \
        pthread_mutex_lock(&mu);               \
        struct counter *c_ = &counts[k][dt];   \
        stmt;                                  \
        pthread_mutex_unlock(&mu);             \
    } while (0)

static void ensure_init(void);

void glue_count_reference(enum glue_kind k, tess_dtype_t dt, double flops) {
    ensure_init();
    COUNT(k, dt, (c_->ref_calls++, c_->ref_flops += flops));
}
void glue_count_quick(enum glue_kind k, tess_dtype_t dt) {
    ensure_init();
    COUNT(k, dt, c_->quick++);
}
void glue_count_error(enum glue_kind k, tess_dtype_t dt) {
    ensure_init();
    COUNT(k, dt, c_->errors++);
}
static void count_tessera(enum glue_kind k, tess_dtype_t dt, double flops) {
    COUNT(k, dt, (c_->tess_calls++, c_->tess_flops += flops));
}
static void count_fallback(enum glue_kind k, tess_dtype_t dt) { COUNT(k, dt, c_->fallbacks++); }

static void add(tess_scalapack_counters_t *o, const struct counter *c) {
    o->tessera_calls += c->tess_calls;
    o->tessera_flops += c->tess_flops;
    o->reference_calls += c->ref_calls;
    o->reference_flops += c->ref_flops;
    o->quick_returns += c->quick;
    o->arg_errors += c->errors;
    o->fallbacks += c->fallbacks;
}

static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

/* "pdgemm", "PDGEMM", "pdgemm_" -> (kind, precision); "gemm" -> (kind, -1 = every one) */
static int parse_routine(const char *r, int *kind, int *dt) {
    char s[16];
    size_t n = strlen(r);
    if (n && r[n - 1] == '_') n--;
    if (n == 0 || n >= sizeof s) return -1;
    for (size_t i = 0; i < n; i++) s[i] = lower(r[i]);
    s[n] = '\0';
    const char *base = s;
    *dt = -1;
    if (s[0] == 'p' && n > 2 && strchr("sdcz", s[1])) {
        *dt = (int)(strchr("sdcz", s[1]) - "sdcz");
        base = s + 2;
    }
    for (int k = 0; k < GLUE_NKINDS; k++)
        if (!strcmp(base, glue_kind_name[k])) {
            *kind = k;
            /* hemm/herk/her2k exist in c and z only */
            if ((k == GLUE_HEMM || k == GLUE_HERK || k == GLUE_HER2K) && (*dt == 0 || *dt == 1))
                return -1;
            return 0;
        }
    return -1;
}

GLUE_EXPORT int tess_scalapack_counters(const char *routine, tess_scalapack_counters_t *out) {
    if (!out) return -1;
    memset(out, 0, sizeof *out);
    int kind = -1, dt = -1;
    if (routine && *routine && parse_routine(routine, &kind, &dt)) return -1;
    pthread_mutex_lock(&mu);
    for (int k = 0; k < GLUE_NKINDS; k++)
        for (int d = 0; d < 4; d++)
            if ((kind < 0 || k == kind) && (dt < 0 || d == dt)) add(out, &counts[k][d]);
    pthread_mutex_unlock(&mu);
    return 0;
}

GLUE_EXPORT void tess_scalapack_reset_counters(void) {
    pthread_mutex_lock(&mu);
    memset(counts, 0, sizeof counts);
    pthread_mutex_unlock(&mu);
}

/* ---- the node runtime: started by the first call the policy sends to tessera ------------- */

enum { DEV_UNKNOWN, DEV_READY, DEV_OFF, DEV_RELEASED };
static _Atomic int dev_state = DEV_UNKNOWN;
static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *const dev_state_name[] = {"not started", "in use", "off", "released"};

static void release(void) {
    pthread_mutex_lock(&start_mu);
    if (atomic_load(&dev_state) == DEV_READY) {
        atomic_store(&dev_state, DEV_RELEASED);
        tess_finalize();
    }
    pthread_mutex_unlock(&start_mu);
}

/* The runtime is up and worth sending this call to (any device when forced; unforced, a
 * device other than the CPU worker: with the CPU worker only, the reference ScaLAPACK's own
 * BLAS is as good). */
static int devices_ready(void) {
    int st = atomic_load(&dev_state);
    if (st != DEV_UNKNOWN) return st == DEV_READY;
    pthread_mutex_lock(&start_mu);
    if ((st = atomic_load(&dev_state)) == DEV_UNKNOWN) {
        st = DEV_OFF;
        int rc = tess_init();
        if (rc) {
            if (knob.verbose)
                fprintf(stderr, "tessera-scalapack: rank %d: runtime does not start (%s: %s); "
                        "every call goes to the reference ScaLAPACK\n", world_rank,
                        tess_strerror(rc), tess_last_error());
        } else {
            int n = tess_device_count(), accel = 0;
            for (int i = 0; i < n; i++) {
                tess_dev_stats_t s;
                if (tess_device_stats(i, &s) == TESS_OK && s.kind != TESS_DEV_CPU) accel++;
            }
            if (accel || knob.force) {
                st = DEV_READY;
                atexit(release); /* registered after the runtime (and CUDA) started: runs first */
            } else {
                tess_finalize();
            }
        }
        atomic_store(&dev_state, st);
    }
    pthread_mutex_unlock(&start_mu);
    return st == DEV_READY;
}

/* ---- process-wide start and the exit summary ------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

/* TESSERA_SCALAPACK_VERBOSE=1: one line per process; 2: and one line per routine used. */
static void summary(void) {
    tess_scalapack_counters_t t;
    tess_scalapack_counters(NULL, &t);
    fprintf(stderr,
            "tessera-scalapack: rank %d: tessera %llu calls %.4g flops; reference %llu calls "
            "%.4g flops; %llu quick returns; %llu argument errors; %llu fallbacks; devices %s\n",
            world_rank, (unsigned long long)t.tessera_calls, t.tessera_flops,
            (unsigned long long)t.reference_calls, t.reference_flops,
            (unsigned long long)t.quick_returns, (unsigned long long)t.arg_errors,
            (unsigned long long)t.fallbacks, dev_state_name[atomic_load(&dev_state)]);
    if (knob.verbose < 2) return;
    pthread_mutex_lock(&mu);
    for (int k = 0; k < GLUE_NKINDS; k++)
        for (int d = 0; d < 4; d++) {
            const struct counter *c = &counts[k][d];
            if (!c->tess_calls && !c->ref_calls && !c->quick && !c->errors) continue;
            fprintf(stderr, "tessera-scalapack: rank %d: p%c%s tessera %llu %.4g reference %llu "
                    "%.4g quick %llu errors %llu fallbacks %llu\n", world_rank, "sdcz"[d],
                    glue_kind_name[k], (unsigned long long)c->tess_calls, c->tess_flops,
                    (unsigned long long)c->ref_calls, c->ref_flops, (unsigned long long)c->quick,
                    (unsigned long long)c->errors, (unsigned long long)c->fallbacks);
        }
    pthread_mutex_unlock(&mu);
}

static void init(void) {
    int64_t force, min_dim, min_vol, verbose;
    knob.ok = parse_int("TESSERA_SCALAPACK_FORCE", 0, 0, 1, &force);
    knob.ok &= parse_int("TESSERA_SCALAPACK_MIN_DIM", 256, 0, INT32_MAX, &min_dim);
    knob.ok &= parse_int("TESSERA_SCALAPACK_MIN_VOLUME", 1073741824, 0, INT64_MAX, &min_vol);
    knob.ok &= parse_int("TESSERA_SCALAPACK_VERBOSE", 0, 0, 2, &verbose);
    knob.force = (int)force;
    knob.min_dim = min_dim;
    knob.min_volume = (double)min_vol;
    knob.verbose = (int)verbose;
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited) MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (knob.verbose) atexit(summary);
}

/* Knobs, rank and the exit summary: at the first call of any entry point. */
static void ensure_init(void) { pthread_once(&init_once, init); }

/* ---- one tessera grid per BLACS context --------------------------------------------------- */

static int keyval = MPI_KEYVAL_INVALID;
static char unusable;  /* attribute value: building a grid failed on this context */
struct parked {
    tess_grid_t *g;
    struct parked *next;
};
static struct parked *graveyard;

/* MPI calls this while the context's communicator is freed (blacs_gridexit): park the grid,
 * no MPI call here. */
static int grid_attr_delete(MPI_Comm comm, int key, void *val, void *extra) {
    (void)comm, (void)key, (void)extra;
    if (val == &unusable) return MPI_SUCCESS;
    struct parked *p = malloc(sizeof *p);
    if (!p) return MPI_SUCCESS; /* leak the grid rather than fail the program's free */
    p->g = val;
    pthread_mutex_lock(&mu);
    p->next = graveyard;
    graveyard = p;
    pthread_mutex_unlock(&mu);
    return MPI_SUCCESS;
}

static void reap(void) {
    pthread_mutex_lock(&mu);
    struct parked *p = graveyard;
    graveyard = NULL;
    pthread_mutex_unlock(&mu);
    while (p) {
        struct parked *next = p->next;
        tess__log(TESS__LOG_INFO, "scalapack glue: rank %d: freeing the %d x %d grid of a freed "
                  "BLACS context", world_rank, p->g->at.nprow, p->g->at.npcol);
        tess_grid_free(p->g);
        free(p);
        p = next;
    }
}

/* The context's communicator, MPI_COMM_NULL if BLACS does not tell. */
static MPI_Comm context_comm(f_int ctxt) {
    const struct glue_syms *S = glue_syms();
    if (!S->blacs_get) return MPI_COMM_NULL;
    /* SGET_BLACSCONTXT: the context's communicator, as a Fortran handle (any int: MPICH's
     * are negative) */
    f_int what = 10, fcomm = (f_int)MPI_Comm_c2f(MPI_COMM_NULL);
    S->blacs_get(&ctxt, &what, &fcomm);
    return MPI_Comm_f2c((MPI_Fint)fcomm);
}

/* The grid of the call's context, built on first use (collective over the context's
 * processes); NULL when it cannot be had (the same answer on every process). */
static tess_grid_t *grid_for(const struct glue_gemm_call *c) {
    reap();
    MPI_Comm comm = context_comm(c->ctxt);
    if (comm == MPI_COMM_NULL) return NULL;
    if (keyval == MPI_KEYVAL_INVALID &&
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, grid_attr_delete, &keyval, NULL) != MPI_SUCCESS) {
        keyval = MPI_KEYVAL_INVALID;
        return NULL;
    }
    void *val = NULL;
    int flag = 0;
    if (MPI_Comm_get_attr(comm, keyval, &val, &flag) != MPI_SUCCESS) return NULL;
    if (flag) return val == &unusable ? NULL : val;

    tess_grid_t *g = calloc(1, sizeof *g);
    int st = g ? TESS_OK : tess__fail(TESS_ENOMEM, "tessera-scalapack: grid: out of host memory");
    int built = 0;
    if (!st) {
        /* collective over comm; a description problem makes every process fail alike */
        st = tess__comm_grid_from_blacs(comm, c->nprow, c->npcol, c->myrow, c->mycol, g);
        built = !st;
    }
    /* every process keeps a grid, or none does */
    st = tess__comm_agree_on(comm, st);
    if (st) {
        if (knob.verbose)
            fprintf(stderr, "tessera-scalapack: rank %d: no tessera grid for BLACS context %d "
                    "(%s); its calls go to the reference ScaLAPACK\n", world_rank, c->ctxt,
                    tess_last_error());
        if (built) tess_grid_free(g);
        else free(g);
        g = NULL;
    }
    else
        tess__log(TESS__LOG_INFO, "scalapack glue: rank %d: %d x %d grid built for BLACS "
                  "context %d", world_rank, c->nprow, c->npcol, c->ctxt);
    MPI_Comm_set_attr(comm, keyval, g ? (void *)g : (void *)&unusable);
    return g;
}

/* ---- one call ------------------------------------------------------------------------------ */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* What every process must pass alike: sizes, letters, scalars, offsets, descriptors but
 * CTXT_ (a local handle) and LLD_ (a local size). */
static uint64_t args_hash(const struct glue_gemm_call *c) {
    uint64_t h = 1469598103934665603ull;
    int v[8] = {(int)c->dt, c->ta, c->tb, c->m, c->n, c->k, 0, 0};
    h = fnv(h, v, sizeof v);
    size_t es = tess__dtypes[c->dt].size;
    h = fnv(h, c->alpha, es);
    h = fnv(h, c->beta, es);
    const f_int *d[3] = {c->da, c->db, c->dc};
    const f_int off[3][2] = {{c->ia, c->ja}, {c->ib, c->jb}, {c->ic, c->jc}};
    for (int i = 0; i < 3; i++) {
        h = fnv(h, off[i], sizeof off[i]);
        for (int e = 0; e < GLUE_DLEN_; e++)
            if (e != GLUE_CTXT_ && e != GLUE_LLD_) h = fnv(h, &d[i][e], sizeof d[i][e]);
    }
    return h;
}

static int replicated(const f_int *d) { return d[GLUE_RSRC_] < 0 || d[GLUE_CSRC_] < 0; }

/* comm/ takes this descriptor and submatrix as PBLAS does (it should, once PBLAS's checks
 * passed and no source is replicated). */
static int comm_takes(const f_int *d, const char *name, const struct tess__comm_coords *at,
                      f_int i, f_int j, f_int rows, f_int cols, struct tess__comm_desc *out) {
    return tess__comm_desc_from_scalapack(d, name, out) == TESS_OK &&
           tess__comm_desc_check(out, name, at, i, j, rows, cols, NULL, NULL) == TESS_OK;
}

void glue_gemm_route(const struct glue_gemm_call *c, void (*reference)(void *arg), void *arg) {
    ensure_init();
    double mnk = (double)c->m * (double)c->n * (double)c->k;
    tess__scalar_t al;
    tess__scalar_load(c->dt, &al, c->alpha);
    /* alpha = 0: sub(C) = beta sub(C), no multiply-adds */
    double flops = tess__scalar_is_zero(c->dt, &al) ? 0.0 : mnk * tess__dtypes[c->dt].flop_mul;

    /* global arguments and knobs: every process of the context decides alike */
    int want = knob.ok && !replicated(c->da) && !replicated(c->db) && !replicated(c->dc);
    if (want && !knob.force)
        want = TESS__MIN(TESS__MIN(c->m, c->n), c->k) >= knob.min_dim && mnk >= knob.min_volume;
    tess_grid_t *g = want ? grid_for(c) : NULL;
    if (!g) {
        glue_count_reference(GLUE_GEMM, c->dt, flops);
        reference(arg);
        return;
    }

    /* every process can take it, and passed the same arguments */
    struct tess__comm_desc da, db, dc;
    int na = c->ta == 'N', nb = c->tb == 'N';
    int ok = comm_takes(c->dc, "C", &g->at, c->ic, c->jc, c->m, c->n, &dc) &&
             comm_takes(c->da, "A", &g->at, c->ia, c->ja, na ? c->m : c->k, na ? c->k : c->m, &da) &&
             comm_takes(c->db, "B", &g->at, c->ib, c->jb, nb ? c->k : c->n, nb ? c->n : c->k, &db) &&
             devices_ready();
    uint64_t h = args_hash(c);
    unsigned long long mine[3] = {!ok, h, ~h}, all[3];
    if (MPI_Allreduce(mine, all, 3, MPI_UNSIGNED_LONG_LONG, MPI_MAX, g->comm) != MPI_SUCCESS ||
        all[0] || all[1] != ~all[2]) {
        if (knob.verbose && ok && all[1] != ~all[2])
            fprintf(stderr, "tessera-scalapack: rank %d: p%cgemm_: the processes passed different "
                    "arguments; the call goes to the reference ScaLAPACK\n", world_rank,
                    "sdcz"[c->dt]);
        glue_count_reference(GLUE_GEMM, c->dt, flops);
        reference(arg);
        return;
    }

    int st = tess__pgemm_run(g, c->dt, c->ta, c->tb, c->m, c->n, c->k, c->alpha, c->A, c->ia,
                             c->ja, &da, c->B, c->ib, c->jb, &db, c->beta, c->C, c->ic, c->jc, &dc);
    if (st == TESS_OK) {
        count_tessera(GLUE_GEMM, c->dt, flops);
        return;
    }
    if (st == TESS_ENODEV) atomic_store(&dev_state, DEV_OFF); /* no device left */
    tess__scalar_t be;
    tess__scalar_load(c->dt, &be, c->beta);
    if (tess__scalar_is_zero(c->dt, &be)) {
        /* C was not an input: the reference computes it again (every process: the status
         * is the same everywhere) */
        if (knob.verbose)
            fprintf(stderr, "tessera-scalapack: rank %d: p%cgemm_ failed in tessera (%s: %s); "
                    "beta = 0, so it runs again on the reference ScaLAPACK\n", world_rank,
                    "sdcz"[c->dt], tess_strerror(st), tess_last_error());
        count_fallback(GLUE_GEMM, c->dt);
        glue_count_reference(GLUE_GEMM, c->dt, flops);
        reference(arg);
        return;
    }
    fprintf(stderr, "tessera-scalapack: rank %d: p%cgemm_ failed in tessera (%s: %s) after "
            "writing part of sub(C); its input is lost, stopping\n", world_rank, "sdcz"[c->dt],
            tess_strerror(st), tess_last_error());
    const struct glue_syms *S = glue_syms();
    if (S->blacs_abort) S->blacs_abort(c->ctxt, -1);
    abort();
}
