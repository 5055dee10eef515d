/* src/hostmem.c: tess_malloc_host / tess_free_host, host memory for operands: pinned with
 * cudaHostAlloc when the CUDA backend is built and a GPU is visible, malloc otherwise. A
 * one-byte header before the block remembers which, so tess_free_host frees it right. */
#include <stdint.h>
#include <stdlib.h>

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
