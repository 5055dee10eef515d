/* src/base/hostblas.c: the CPU BLAS table of hostblas.h, resolved once per process.
 *
 * Owns the dlopen handle and the function pointers; nothing else. The library is named by
 * TESSERA_CPU_BLAS (default libopenblas.so.0) and opened RTLD_NOW | RTLD_LOCAL: its symbols
 * do not join the global scope, and every pointer is taken from its handle with dlsym, so a
 * preloaded libtessera_blas.so (which exports cblas_dgemm, dgemm_, ...) can never be what
 * tessera's own CPU kernels call. A library whose routines are tessera's own (it carries
 * the ELF note below: the drop-in, or anything linked with this file) is refused, as are
 * one that cannot be opened and one without every routine: the runtime then does not start
 * (TESS_ENOSYS, a message naming TESSERA_CPU_BLAS); nothing here prints or aborts. The
 * answer (table or error) is computed under pthread_once and kept for the life of the
 * process; the handle of a library taken is never closed (its threads may outlive every
 * tessera call). LAPACK's xPOTRF, xGETRF and xLASWP (Fortran symbols spotrf_, sgetrf_,
 * slaswp_ ...) are taken from the same handle when there, and are optional: a library
 * without LAPACK still loads, and only a call that needs a routine fails
 * (tess__hostblas_potrf/_getrf/_laswp: TESS_ENOSYS naming the symbol).
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostblas.h"
#include "internal.h"

/* The mark of a tessera library: an ELF note (name "tessera") in every object linked with
 * this file, found through the object's PT_NOTE segments. */
#define NOTE_NAME "tessera"
#define NOTE_TYPE 0x7e55u
__attribute__((section(".note.tessera"), aligned(4), used)) static const struct {
    uint32_t namesz, descsz, type;
    char name[sizeof NOTE_NAME];
} tessera_note = {sizeof NOTE_NAME, 0, NOTE_TYPE, NOTE_NAME};

#define DEFAULT_LIB "libopenblas.so.0"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct tess__hostblas table;
static const struct tess__hostblas *loaded; /* &table once every symbol resolved */
static char failure[512];                   /* why not, when loaded stays NULL */

/* Every required symbol: its name and where its pointer lands in the table. */
#define HB(f) \
    { "cblas_" #f, offsetof(struct tess__hostblas, f) }
static const struct {
    const char *sym;
    size_t off;
} required[] = {
    HB(sgemm),  HB(dgemm),  HB(cgemm),  HB(zgemm),  HB(ssymm),  HB(dsymm),  HB(csymm), HB(zsymm),
    HB(chemm),  HB(zhemm),  HB(ssyrk),  HB(dsyrk),  HB(csyrk),  HB(zsyrk),  HB(cherk), HB(zherk),
    HB(ssyr2k), HB(dsyr2k), HB(csyr2k), HB(zsyr2k), HB(cher2k), HB(zher2k), HB(strmm), HB(dtrmm),
    HB(ctrmm),  HB(ztrmm),  HB(strsm),  HB(dtrsm),  HB(ctrsm),  HB(ztrsm),
};
#undef HB

/* Optional LAPACK routines: NULL in the table when the library lacks them. */
#define LP(f) \
    { #f "_", offsetof(struct tess__hostblas, f) }
static const struct {
    const char *sym;
    size_t off;
} optional[] = {LP(spotrf), LP(dpotrf), LP(cpotrf), LP(zpotrf), LP(sgetrf), LP(dgetrf),
                LP(cgetrf), LP(zgetrf), LP(slaswp), LP(dlaswp), LP(claswp), LP(zlaswp)};
#undef LP

/* dl_iterate_phdr: is addr in this object, and does the object carry the note? */
struct note_probe {
    uintptr_t addr;
    int tessera;
};
static int probe_object(struct dl_phdr_info *info, size_t size, void *arg) {
    struct note_probe *pr = arg;
    int in = 0;
    for (int i = 0; i < info->dlpi_phnum && !in; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        in = ph->p_type == PT_LOAD && pr->addr >= lo && pr->addr - lo < ph->p_memsz;
    }
    if (!in) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        size_t al = ph->p_align == 8 ? 8 : 4, at = 0, n = ph->p_memsz;
        const char *seg = (const char *)(info->dlpi_addr + ph->p_vaddr);
        while (n - at >= sizeof(ElfW(Nhdr))) {
            ElfW(Nhdr) nh;
            memcpy(&nh, seg + at, sizeof nh);
            at += sizeof nh;
            size_t name = (nh.n_namesz + al - 1) / al * al, desc = (nh.n_descsz + al - 1) / al * al;
            if (name > n - at || desc > n - at - name) break;
            if (nh.n_type == NOTE_TYPE && nh.n_namesz == sizeof NOTE_NAME &&
                !memcmp(seg + at, NOTE_NAME, sizeof NOTE_NAME))
                pr->tessera = 1;
            at += name + desc;
        }
    }
    return 1;
}

/* Why the library cannot be the CPU BLAS (the knob named first), kept for every call. */
static void refuse(void *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(void *h, const char *fmt, ...) {
    va_list ap;
    int n = snprintf(failure, sizeof failure, "TESSERA_CPU_BLAS=\"%s\": ", table.name);
    va_start(ap, fmt);
    vsnprintf(failure + n, sizeof failure - (size_t)n, fmt, ap);
    va_end(ap);
    if (h) dlclose(h);
}

static void load_once(void) {
    const char *name = getenv("TESSERA_CPU_BLAS");
    if (!name || !*name) name = DEFAULT_LIB;
    snprintf(table.name, sizeof table.name, "%s", name);
    dlerror();
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        refuse(NULL,
               "cannot be loaded (%s); accepted: a CBLAS library (path or soname) such "
               "as libopenblas.so.0",
               why ? why : "dlopen failed");
        return;
    }
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        void *f = dlsym(h, required[i].sym);
        struct note_probe pr = {(uintptr_t)f, 0};
        if (f) dl_iterate_phdr(probe_object, &pr);
        if (!f || pr.tessera) {
            refuse(h,
                   !f ? "has no %s; accepted: a library with the CBLAS level-3 routines such "
                        "as libopenblas.so.0"
                      : "its %s is tessera's own (the drop-in libtessera_blas.so?), which "
                        "would call back into tessera; accepted: a self-contained CBLAS "
                        "library such as libopenblas.so.0",
                   required[i].sym);
            return;
        }
        /* object pointer to function pointer: POSIX guarantees the representation */
        memcpy((char *)&table + required[i].off, &f, sizeof f);
    }
    for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++) {
        void *f = dlsym(h, optional[i].sym);
        struct note_probe pr = {(uintptr_t)f, 0};
        if (f) dl_iterate_phdr(probe_object, &pr);
        if (f && !pr.tessera) memcpy((char *)&table + optional[i].off, &f, sizeof f);
    }
    (void)dlerror(); /* a missing optional symbol is no error to report later */
    void *f = dlsym(h, "openblas_get_num_threads");
    if (f) memcpy(&table.get_num_threads, &f, sizeof f);
    f = dlsym(h, "openblas_set_num_threads");
    if (f) memcpy(&table.set_num_threads, &f, sizeof f);
    table.handle = h;
    loaded = &table;
}

int tess__hostblas_load(void) {
    pthread_once(&once, load_once);
    if (loaded) return TESS_OK;
    return tess__fail(TESS_ENOSYS, "%s", failure);
}

const struct tess__hostblas *tess__hostblas(void) {
    /* Resolves on first use too, so host kernels called before the runtime started (unit
     * tests) find the table; once resolved this is one load. */
    pthread_once(&once, load_once);
    return loaded;
}

/* The checks every optional LAPACK routine shares: dt (routine: its name without the
 * precision) and the table, into *b; TESS_OK, or the error tess__hostblas_potrf documents. */
static int lapack_table(int dt, const char *who, const char *routine, const char *sym,
                        const struct tess__hostblas **b) {
    if (dt < 0 || dt > 3)
        return tess__fail(TESS_EINVAL, "%s: %s: bad precision %d", who, routine, dt);
    if (!(*b = tess__hostblas()))
        return tess__fail(TESS_ENOSYS, "%s: %s: no CPU BLAS: %s", who, sym, failure);
    return TESS_OK;
}

/* The answer for a routine the loaded library lacks (what: what it does). */
static int lapack_missing(const char *who, const struct tess__hostblas *b, const char *sym,
                          const char *what) {
    return tess__fail(TESS_ENOSYS,
                      "%s: TESSERA_CPU_BLAS=\"%s\" has no %s (LAPACK's %s); accepted: "
                      "a CBLAS library that carries LAPACK such as libopenblas.so.0",
                      who, b->name, sym, what);
}

int tess__hostblas_potrf(int dt, const char *who, tess__potrf_fn **fn) {
    static const char *const sym[4] = {"spotrf_", "dpotrf_", "cpotrf_", "zpotrf_"};
    const struct tess__hostblas *b;
    *fn = NULL;
    int rc = lapack_table(dt, who, "potrf", sym[dt & 3], &b);
    if (rc) return rc;
    tess__potrf_fn *const f[4] = {b->spotrf, b->dpotrf, b->cpotrf, b->zpotrf};
    if (!f[dt]) return lapack_missing(who, b, sym[dt], "Cholesky");
    *fn = f[dt];
    return TESS_OK;
}

int tess__hostblas_getrf(int dt, const char *who, tess__getrf_fn **fn) {
    static const char *const sym[4] = {"sgetrf_", "dgetrf_", "cgetrf_", "zgetrf_"};
    const struct tess__hostblas *b;
    *fn = NULL;
    int rc = lapack_table(dt, who, "getrf", sym[dt & 3], &b);
    if (rc) return rc;
    tess__getrf_fn *const f[4] = {b->sgetrf, b->dgetrf, b->cgetrf, b->zgetrf};
    if (!f[dt]) return lapack_missing(who, b, sym[dt], "LU factorization");
    *fn = f[dt];
    return TESS_OK;
}

int tess__hostblas_laswp(int dt, const char *who, tess__laswp_fn **fn) {
    static const char *const sym[4] = {"slaswp_", "dlaswp_", "claswp_", "zlaswp_"};
    const struct tess__hostblas *b;
    *fn = NULL;
    int rc = lapack_table(dt, who, "laswp", sym[dt & 3], &b);
    if (rc) return rc;
    tess__laswp_fn *const f[4] = {b->slaswp, b->dlaswp, b->claswp, b->zlaswp};
    if (!f[dt]) return lapack_missing(who, b, sym[dt], "row interchanges");
    *fn = f[dt];
    return TESS_OK;
}
