/* scalapack_glue/state.c: the glue's process-wide state: the program's BLACS/PBLAS symbols,
 * the reference routines and ScaLAPACK's auxiliary routines (dlsym), the knobs (the
 * TESSERA_SCALAPACK_* rows of the one knob table, src/base/knobs.c), the counters and the
 * exit summary. The runtime's lazy start, release and fork rule: src/autostart.c.
 *
 * Lock order: mu (counters) is a leaf.
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
    [GLUE_GEMM] = "gemm",   [GLUE_SYMM] = "symm",   [GLUE_HEMM] = "hemm",   [GLUE_SYRK] = "syrk",
    [GLUE_HERK] = "herk",   [GLUE_SYR2K] = "syr2k", [GLUE_HER2K] = "her2k", [GLUE_TRMM] = "trmm",
    [GLUE_TRSM] = "trsm",   [GLUE_POTRF] = "potrf", [GLUE_POTRS] = "potrs", [GLUE_POSV] = "posv",
    [GLUE_GETRF] = "getrf", [GLUE_GETRS] = "getrs", [GLUE_GESV] = "gesv",
};

/* ---- the program's symbols, the reference and auxiliary routines ----------------------- */

static struct glue_syms syms;
static pthread_once_t syms_once = PTHREAD_ONCE_INIT;

#define FIND(field, name)                     \
    do {                                      \
        void *p_ = dlsym(RTLD_DEFAULT, name); \
        memcpy(&syms.field, &p_, sizeof p_);  \
    } while (0)
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
        fprintf(stderr,
                "tessera-scalapack: no %s below libtessera_scalapack.so (%s): load it "
                "in front of a ScaLAPACK library (LD_PRELOAD, or link it before "
                "-lscalapack); stopping\n",
                name, dlerror());
        abort();
    }
    return f;
}

static struct glue_aux aux[4];
static pthread_once_t aux_once = PTHREAD_ONCE_INIT;

/* The library underneath first (as the reference routines), then anything in sight. */
static void *aux_find(const char *name) {
    void *f = dlsym(RTLD_NEXT, name);
    return f ? f : dlsym(RTLD_DEFAULT, name);
}

static void aux_load(void) {
    for (int d = 0; d < 4; d++) {
        char name[16];
        void *p;
        snprintf(name, sizeof name, "p%ctradd_", "sdcz"[d]);
        p = aux_find(name);
        memcpy(&aux[d].tradd, &p, sizeof p);
        snprintf(name, sizeof name, "p%cgeadd_", "sdcz"[d]);
        p = aux_find(name);
        memcpy(&aux[d].geadd, &p, sizeof p);
        snprintf(name, sizeof name, "p%ctrtri_", "sdcz"[d]);
        p = aux_find(name);
        memcpy(&aux[d].trtri, &p, sizeof p);
    }
}

const struct glue_aux *glue_aux(tess_dtype_t dt) {
    pthread_once(&aux_once, aux_load);
    return &aux[dt];
}

/* ---- knobs ---------------------------------------------------------------------------- */

static struct glue_knobs knob;
static int world_rank = -1;
static char who[64] = "tessera-scalapack"; /* with the rank once known */

/* ---- counters --------------------------------------------------------------------------- */

struct counter {
    uint64_t tess_calls, ref_calls, quick, errors, fallbacks, device;
    double tess_flops, ref_flops;
};
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct counter counts[GLUE_NKINDS][4];

#define COUNT(k, dt, stmt)                   \
    do {                                     \
        pthread_mutex_lock(&mu);             \
        struct counter *c_ = &counts[k][dt]; \
        stmt;                                \
        pthread_mutex_unlock(&mu);           \
    } while (0)

void glue_count_reference(enum glue_kind k, tess_dtype_t dt, double flops) {
    glue_knobs();
    COUNT(k, dt, (c_->ref_calls++, c_->ref_flops += flops));
}
void glue_count_tessera(enum glue_kind k, tess_dtype_t dt, double flops) {
    COUNT(k, dt, (c_->tess_calls++, c_->tess_flops += flops));
}
void glue_count_quick(enum glue_kind k, tess_dtype_t dt) {
    glue_knobs();
    COUNT(k, dt, c_->quick++);
}
void glue_count_error(enum glue_kind k, tess_dtype_t dt) {
    glue_knobs();
    COUNT(k, dt, c_->errors++);
}
void glue_count_fallback(enum glue_kind k, tess_dtype_t dt) { COUNT(k, dt, c_->fallbacks++); }
void glue_count_device(enum glue_kind k, tess_dtype_t dt) { COUNT(k, dt, c_->device++); }

static void add(tess_scalapack_counters_t *o, const struct counter *c) {
    o->tessera_calls += c->tess_calls;
    o->tessera_flops += c->tess_flops;
    o->reference_calls += c->ref_calls;
    o->reference_flops += c->ref_flops;
    o->quick_returns += c->quick;
    o->arg_errors += c->errors;
    o->fallbacks += c->fallbacks;
    o->device_calls += c->device;
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

bool glue_devices_ready(void) {
    /* unforced, a device other than the CPU worker: with the CPU worker only, the
     * reference ScaLAPACK's own BLAS is as good */
    struct tess__autostart a = {.who = who,
                                .fallback = "the reference ScaLAPACK",
                                .emulated = true,
                                .force = knob.force,
                                .verbose = knob.verbose};
    return tess__autostart_ready(&a);
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
            (unsigned long long)t.fallbacks, tess__autostart_state());
    if (knob.verbose < 2) return;
    pthread_mutex_lock(&mu);
    for (int k = 0; k < GLUE_NKINDS; k++)
        for (int d = 0; d < 4; d++) {
            const struct counter *c = &counts[k][d];
            if (!c->tess_calls && !c->ref_calls && !c->quick && !c->errors) continue;
            fprintf(stderr,
                    "tessera-scalapack: rank %d: p%c%s tessera %llu %.4g reference %llu "
                    "%.4g quick %llu errors %llu fallbacks %llu\n",
                    world_rank, "sdcz"[d], glue_kind_name[k], (unsigned long long)c -> tess_calls,
                    c -> tess_flops, (unsigned long long)c -> ref_calls, c -> ref_flops,
                    (unsigned long long)c -> quick, (unsigned long long)c -> errors,
                    (unsigned long long)c -> fallbacks);
        }
    pthread_mutex_unlock(&mu);
}

static void init(void) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited) MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    snprintf(who, sizeof who, "tessera-scalapack: rank %d", world_rank);
    struct tess__config cfg;
    knob.ok = tess__config_load(&cfg) == TESS_OK;
    if (knob.ok) {
        knob.force = cfg.scalapack_force;
        knob.min_dim = cfg.scalapack_min_dim;
        knob.min_volume = (double)cfg.scalapack_min_volume;
        knob.verbose = cfg.scalapack_verbose;
        knob.trsm_block = cfg.scalapack_trsm_block;
    } else {
        fprintf(stderr, "%s: %s; every call goes to the reference ScaLAPACK\n", who,
                tess_last_error());
    }
    tess__autostart_init();
    if (knob.verbose) atexit(summary);
}

/* Knobs, rank and the exit summary: at the first call of any entry point. */
const struct glue_knobs *glue_knobs(void) {
    pthread_once(&init_once, init);
    return &knob;
}

int glue_world_rank(void) {
    glue_knobs();
    return world_rank;
}
