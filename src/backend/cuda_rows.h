/* src/backend/cuda_rows.h: the CUDA backend's own row kernel (cuda_rows.cu), for what
 * cuBLAS and cuSOLVER have no fast form of. Built only when nvcc is found
 * (TESS_HAVE_CUDA_KERNELS); the backend falls back to cuSOLVER's laswp without it. */
#ifndef TESS_CUDA_ROWS_H
#define TESS_CUDA_ROWS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* On stream s, for every column c < ncols of the column-major C (ld ldc, es = 4, 8 or 16
 * bytes an element): C[dst[i], c] := C[src[i], c] for i < np, all reads before any write
 * (a permutation of the rows src, which must be the same set as dst, distinct). src and dst
 * are device arrays. A block holds one column of the np rows in shared memory: np * es
 * bytes, at most the device's sharedMemPerBlockOptin. Returns cudaGetLastError() after the
 * launch. */
cudaError_t tess__cuda_permute_rows(cudaStream_t s, int es, void *C, int64_t ldc, int64_t ncols,
                                    const int *src, const int *dst, int np);

#ifdef __cplusplus
}
#endif

#endif
