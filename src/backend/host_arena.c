/* src/backend/host_arena.c: the emulated devices' memory. An arena is one private mapping
 * of the device's capacity that reads as 0xFF bytes until written (a NaN in every
 * precision, so a kernel reading device memory nobody wrote shows NaN in the tests): one
 * small 0xFF chunk of a memfd mapped copy-on-write at every chunk of the range, so opening
 * costs nothing per byte. Every live arena is in one registry: a copy's or kernel's device
 * operands must lie inside its device's arena (the peer's for a P2P source) and its host
 * operands outside every arena, else TESS_EINVAL, as mixing pointers would fail on a GPU.
 * An arena lives until its device closed and no queued P2P copy still reads it (refs).
 * Lock: arena_mu (a leaf) guards the registry, refs and each device's arena pointer.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "host_dev.h"

/* [p, p + len) lies inside a. */
static int inside(const struct arena *a, const void *p, size_t len) {
    if (!a || !len) return 0;
    uintptr_t u = (uintptr_t)p, b = (uintptr_t)a->base;
    return u >= b && len <= a->size && u - b <= a->size - len;
}

/* [p, p + len) overlaps an arena of any emulated device. Caller holds arena_mu. */
static int in_any_arena(const void *p, size_t len) {
    uintptr_t u = (uintptr_t)p;
    for (const struct arena *a = tess__hostdev.arenas; a; a = a->next) {
        uintptr_t b = (uintptr_t)a->base;
        if (u < b + a->size && b < u + len) return 1;
    }
    return 0;
}

void tess__hostdev_arena_unref(struct arena *a) {
    if (!a) return;
    pthread_mutex_lock(&tess__hostdev.arena_mu);
    int last = --a->refs == 0;
    if (last) {
        for (struct arena **pp = &tess__hostdev.arenas; *pp; pp = &(*pp)->next) {
            if (*pp == a) {
                *pp = a->next;
                break;
            }
        }
    }
    pthread_mutex_unlock(&tess__hostdev.arena_mu);
    if (last) {
        munmap(a->base, a->size);
        free(a);
    }
}

int tess__hostdev_cpu_arena(void *bd, size_t want, void **base, size_t *got) {
    (void)bd;
    (void)want;
    (void)base;
    (void)got;
    return TESS_ENOSYS;
}

/* size bytes that read as 0xFF until written: one chunk of a memfd is filled once and mapped
 * privately (copy-on-write) at every chunk of the range, so the cost is the chunk, not the
 * arena (filling 3 default arenas took most of a second per tess_init). Falls back to an
 * anonymous mapping filled by memset where memfd_create is refused. At most about 256
 * mappings per arena. MAP_FAILED on failure; munmap(p, size) releases it either way. */
static void *map_poisoned(size_t size) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE), chunk = size / 256;
    if (chunk < ((size_t)2 << 20)) chunk = (size_t)2 << 20;
    if (chunk > ((size_t)64 << 20)) chunk = (size_t)64 << 20;
    chunk = (chunk + pg - 1) / pg * pg;
    if (size <= SIZE_MAX - pg && chunk > (size + pg - 1) / pg * pg)
        chunk = (size + pg - 1) / pg * pg;
    void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return mem;
    int fd = memfd_create("tessera-arena", MFD_CLOEXEC);
    void *w = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)chunk) == 0)
        w = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int ok = w != MAP_FAILED;
    if (ok) {
        memset(w, 0xFF, chunk);
        munmap(w, chunk);
        for (size_t off = 0; ok && off < size; off += chunk) {
            size_t len = size - off < chunk ? size - off : chunk;
            ok = mmap((char *)mem + off, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd,
                      0) != MAP_FAILED;
        }
    }
    if (fd >= 0) close(fd);
    if (!ok) { /* no memfd (or a mapping refused): the plain way */
        munmap(mem, size);
        mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem != MAP_FAILED) memset(mem, 0xFF, size);
    }
    return mem;
}

int tess__hostdev_emu_arena(void *bd, size_t want, void **base, size_t *got) {
    struct dev *d = bd;
    if (!live(d)) return dead(d, "arena");
    if (!base || !got) return tess__fail(TESS_EINVAL, "%s: arena: NULL argument", d->name);
    size_t size = want ? want : d->mem_default;
    struct arena *a = calloc(1, sizeof *a);
    void *mem = a ? map_poisoned(size) : MAP_FAILED;
    if (mem == MAP_FAILED) {
        free(a);
        return tess__fail(TESS_ENOMEM, "%s: arena: cannot map %zu bytes", d->name, size);
    }
    a->base = mem;
    a->size = size;
    a->refs = 1;
    pthread_mutex_lock(&tess__hostdev.arena_mu);
    int twice = d->arena != NULL;
    if (!twice) {
        a->next = tess__hostdev.arenas;
        tess__hostdev.arenas = a;
        d->arena = a;
    }
    pthread_mutex_unlock(&tess__hostdev.arena_mu);
    if (twice) {
        munmap(mem, size);
        free(a);
        return tess__fail(TESS_EINVAL, "%s: arena: called twice", d->name);
    }
    *base = mem;
    *got = size;
    tess__log(TESS__LOG_DEBUG, "%s: arena %p, %zu bytes", d->name, mem, size);
    return TESS_OK;
}

/* Emulated devices: where each pointer of a copy must lie. Takes a reference on the peer's
 * arena for P2P (*pin). */
int tess__hostdev_check_copy(struct dev *d, enum tess__copy_kind kind, void *dst, size_t dext,
                             const void *src, size_t sext, struct dev *peer, struct arena **pin) {
    const char *bad = NULL;
    pthread_mutex_lock(&tess__hostdev.arena_mu);
    struct arena *own = d->arena;
    switch (kind) {
    case TESS__H2D:
        if (!inside(own, dst, dext))
            bad = "dst is not inside this device's arena";
        else if (in_any_arena(src, sext))
            bad = "src (host) overlaps a device arena";
        break;
    case TESS__D2H:
        if (!inside(own, src, sext))
            bad = "src is not inside this device's arena";
        else if (in_any_arena(dst, dext))
            bad = "dst (host) overlaps a device arena";
        break;
    case TESS__D2D:
        if (!inside(own, dst, dext))
            bad = "dst is not inside this device's arena";
        else if (!inside(own, src, sext))
            bad = "src is not inside this device's arena";
        break;
    case TESS__P2P:
        if (!inside(own, dst, dext))
            bad = "dst is not inside this device's arena";
        else if (!inside(peer->arena, src, sext))
            bad = "src is not inside the peer's arena";
        else {
            peer->arena->refs++;
            *pin = peer->arena;
        }
        break;
    }
    pthread_mutex_unlock(&tess__hostdev.arena_mu);
    if (bad)
        return tess__fail(TESS_EINVAL, "%s: copy2d %s: %s (dst %p + %zu, src %p + %zu)", d->name,
                          kind_name(kind), bad, dst, dext, src, sext);
    return TESS_OK;
}

/* Emulated devices: a stored rows x cols operand at p (leading dimension ld) must lie in
 * the arena. */
int tess__hostdev_check_operand(struct dev *d, const char *what, const void *p, int64_t rows,
                                int64_t cols, int64_t ld, size_t es) {
    size_t len = ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * es;
    pthread_mutex_lock(&tess__hostdev.arena_mu);
    int ok = inside(d->arena, p, len);
    pthread_mutex_unlock(&tess__hostdev.arena_mu);
    if (!ok)
        return tess__fail(TESS_EINVAL,
                          "%s: gemm: %s (%p, %lld x %lld, ld %lld) is not inside "
                          "this device's arena",
                          d->name, what, p, (long long)rows, (long long)cols, (long long)ld);
    return TESS_OK;
}
