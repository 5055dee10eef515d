// cudaHostRegister throughput on malloc'd, touched memory: chunk sizes, threads; and the
// H2D rate from registered pages.
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static char *buf; static size_t total, chunk; static int nthr;
static void *worker(void *a){ long id=(long)a; for(size_t off=id*chunk; off<total; off+=nthr*chunk){ cudaError_t e=cudaHostRegister(buf+off, chunk, cudaHostRegisterDefault); if(e){printf("err %s\n",cudaGetErrorString(e));} } return NULL;}
static void *unworker(void *a){ long id=(long)a; for(size_t off=id*chunk; off<total; off+=nthr*chunk) cudaHostUnregister(buf+off); return NULL;}
int main(void){
  total = (size_t)8 << 30; buf = aligned_alloc(4096, total); memset(buf, 1, total);
  cudaFree(0);
  void *d; cudaMalloc(&d, (size_t)1<<30);
  size_t chunks[] = {64<<20, 256<<20, 1024<<20}; int thr[] = {1, 4};
  for (int c=0;c<3;c++) for(int t=0;t<2;t++){
    chunk=chunks[c]; nthr=thr[t]; pthread_t th[8];
    double t0=now(); for(long i=0;i<nthr;i++) pthread_create(&th[i],0,worker,(void*)i); for(int i=0;i<nthr;i++) pthread_join(th[i],0);
    double t1=now();
    // H2D from registered pages: 8 GB in 1 GB copies
    cudaStream_t s; cudaStreamCreate(&s);
    double t2=now(); for(size_t off=0; off<total; off+=(size_t)1<<30) cudaMemcpyAsync(d, buf+off, (size_t)1<<30, cudaMemcpyHostToDevice, s); cudaStreamSynchronize(s); double t3=now();
    cudaStreamDestroy(s);
    double t4=now(); for(long i=0;i<nthr;i++) pthread_create(&th[i],0,unworker,(void*)i); for(int i=0;i<nthr;i++) pthread_join(th[i],0); double t5=now();
    printf("chunk %4zu MiB threads %d: register %.1f GB/s, H2D %.1f GB/s, unregister %.1f GB/s\n", chunk>>20, nthr, total/(t1-t0)*1e-9, total/(t3-t2)*1e-9, total/(t5-t4)*1e-9);
  }
  // pageable H2D directly (driver staging) for reference
  double t6=now(); for(size_t off=0; off<total; off+=(size_t)1<<30) cudaMemcpy(d, buf+off, (size_t)1<<30, cudaMemcpyHostToDevice); double t7=now();
  printf("pageable cudaMemcpy: %.1f GB/s\n", total/(t7-t6)*1e-9);
  return 0;
}
