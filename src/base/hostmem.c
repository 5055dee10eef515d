/* src/base/hostmem.c: tess_malloc_host / tess_free_host, host memory for operands: pinned with
 * cudaHostAlloc when the CUDA backend is built and a GPU is visible, malloc otherwise. A
 * one-byte header before the block remembers which, so tess_free_host frees it right.
 * Also the copy with non-temporal stores that the staging threads and the recovery
 * write-back use for large host-to-host copies. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define TESS_NT 1
#else
#define TESS_NT 0
#endif

#include "internal.h"

#ifdef TESS_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define HDR 64 /* keeps the user pointer 64-byte aligned */

void *tess_malloc_host(size_t bytes) {
    unsigned char *p = NULL;
    if (bytes > SIZE_MAX - HDR) return NULL; /* bytes + HDR would wrap */
#ifdef TESS_HAVE_CUDA
    int n = 0;
    if (cudaGetDeviceCount(&n) == cudaSuccess && n > 0 &&
        cudaHostAlloc((void **)&p, bytes + HDR, cudaHostAllocPortable) == cudaSuccess) {
        p[0] = 1;
        return p + HDR;
    }
    p = NULL;
#endif
    if (posix_memalign((void **)&p, HDR, bytes + HDR)) return NULL;
    p[0] = 0;
    return p + HDR;
}

bool tess__hostmem_pins(void) {
#ifdef TESS_HAVE_CUDA
    return true;
#else
    return false;
#endif
}

void tess_free_host(void *ptr) {
    if (!ptr) return;
    unsigned char *p = (unsigned char *)ptr - HDR;
#ifdef TESS_HAVE_CUDA
    if (p[0] == 1) {
        cudaFreeHost(p);
        return;
    }
#endif
    free(p);
}

/* memcpy with non-temporal stores on x86-64: the destination (a staging page the DMA engine
 * reads next, or the user's C) is not read by this thread again, so the stores skip the
 * cache and the read-for-ownership: a third less host memory traffic than memcpy below
 * glibc's own non-temporal threshold. Call tess__copy_nt_fence before publishing. */
void tess__copy_nt(void *dst, const void *src, size_t n) {
#if TESS_NT
    char *d = dst;
    const char *s = src;
    if (n >= 1024) {
        size_t head = (16 - ((uintptr_t)d & 15)) & 15;
        memcpy(d, s, head);
        d += head, s += head, n -= head;
        for (; n >= 64; n -= 64, d += 64, s += 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)s);
            __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
            __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
            _mm_stream_si128((__m128i *)d, a);
            _mm_stream_si128((__m128i *)(d + 16), b);
            _mm_stream_si128((__m128i *)(d + 32), c);
            _mm_stream_si128((__m128i *)(d + 48), e);
        }
    }
    memcpy(d, s, n);
#else
    memcpy(dst, src, n);
#endif
}

void tess__copy_nt_fence(void) {
#if TESS_NT
    _mm_sfence();
#endif
}
