/* src/backend/cuda_rows.cu: a row permutation of a column-major matrix on the GPU, the
 * form tessera gives LAPACK's row interchanges (cuda.c's LASWP composes the pivots into
 * it on the host). One block a column at a time: the np source rows read into shared
 * memory, then written to their destinations, so the permutation needs no workspace and
 * runs in one pass whatever its cycles; np bounded by the block's shared memory. */
#include "cuda_rows.h"

namespace {

struct e16 { /* a 16-byte element moved as two 8-byte words (8-byte aligned is enough) */
    unsigned long long a, b;
};

template <typename T>
__global__ void permute_rows(T *C, long long ldc, long long ncols, const int *src, const int *dst,
                             int np) {
    extern __shared__ unsigned long long smem[];
    T *buf = reinterpret_cast<T *>(smem);
    for (long long c = blockIdx.x; c < ncols; c += gridDim.x) {
        T *col = C + c * ldc;
        for (int i = threadIdx.x; i < np; i += blockDim.x) buf[i] = col[src[i]];
        __syncthreads();
        for (int i = threadIdx.x; i < np; i += blockDim.x) col[dst[i]] = buf[i];
        __syncthreads();
    }
}

template <typename T>
cudaError_t launch(cudaStream_t s, void *C, int64_t ldc, int64_t ncols, const int *src,
                   const int *dst, int np) {
    size_t smem = (size_t)np * sizeof(T);
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(
            permute_rows<T>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess) return e;
    }
    long long grid = ncols < 8192 ? ncols : 8192;
    permute_rows<T>
        <<<(unsigned)grid, 256, smem, s>>>(static_cast<T *>(C), ldc, ncols, src, dst, np);
    return cudaGetLastError();
}

} // namespace

extern "C" cudaError_t tess__cuda_permute_rows(cudaStream_t s, int es, void *C, int64_t ldc,
                                               int64_t ncols, const int *src, const int *dst,
                                               int np) {
    if (np <= 0 || ncols <= 0) return cudaSuccess;
    switch (es) {
    case 4: return launch<float>(s, C, ldc, ncols, src, dst, np);
    case 8: return launch<unsigned long long>(s, C, ldc, ncols, src, dst, np);
    case 16: return launch<e16>(s, C, ldc, ncols, src, dst, np);
    default: return cudaErrorInvalidValue;
    }
}
