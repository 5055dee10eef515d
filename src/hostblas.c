/* src/hostblas.c: the CPU BLAS table of hostblas.h, resolved once per process.
 *
 * Owns the dlopen handle and the function pointers; nothing else. The library is named by
 * TESSERA_CPU_BLAS (default libopenblas.so.0) and opened RTLD_NOW | RTLD_LOCAL: its symbols
 * do not join the global scope, and every pointer is taken from its handle with dlsym, so a
 * preloaded libtessera_blas.so (which exports cblas_dgemm, dgemm_, ...) can never be what
 * tessera's own CPU kernels call. The answer (table or error) is computed under
 * pthread_once and kept for the life of the process; the handle is never closed (the
 * library's threads may outlive every tessera call).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostblas.h"
#include "internal.h"

#define DEFAULT_LIB "libopenblas.so.0"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct tess__hostblas table;
static const struct tess__hostblas *loaded;  /* &table once every symbol resolved */
static char failure[512];                    /* why not, when loaded stays NULL */

/* Every required symbol: its name and where its pointer lands in the table. */
#define HB(f) {"cblas_" #f, offsetof(struct tess__hostblas, f)}
static const struct {
    const char *sym;
    size_t off;
} required[] = {
    HB(sgemm),  HB(dgemm),  HB(cgemm),  HB(zgemm),  HB(ssymm),  HB(dsymm),
    HB(csymm),  HB(zsymm),  HB(chemm),  HB(zhemm),  HB(ssyrk),  HB(dsyrk),
    HB(csyrk),  HB(zsyrk),  HB(cherk),  HB(zherk),  HB(ssyr2k), HB(dsyr2k),
    HB(csyr2k), HB(zsyr2k), HB(cher2k), HB(zher2k), HB(strmm),  HB(dtrmm),
    HB(ctrmm),  HB(ztrmm),  HB(strsm),  HB(dtrsm),  HB(ctrsm),  HB(ztrsm),
};
#undef HB

static void load_once(void) {
    const char *name = getenv("TESSERA_CPU_BLAS");
    if (!name || !*name) name = DEFAULT_LIB;
    snprintf(table.name, sizeof table.name, "%s", name);
    dlerror();
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure,
                 "CPU BLAS \"%s\" cannot be loaded (%s); set TESSERA_CPU_BLAS to a CBLAS "
                 "library such as libopenblas.so.0",
                 name, why ? why : "dlopen failed");
        return;
    }
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        void *f = dlsym(h, required[i].sym);
        if (!f) {
            snprintf(failure, sizeof failure,
                     "CPU BLAS \"%s\" has no %s; set TESSERA_CPU_BLAS to a library with the "
                     "CBLAS level-3 routines (e.g. libopenblas.so.0)",
                     name, required[i].sym);
            dlclose(h);
            return;
        }
        /* object pointer to function pointer: POSIX guarantees the representation */
        memcpy((char *)&table + required[i].off, &f, sizeof f);
    }
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
