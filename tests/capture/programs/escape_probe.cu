// A program that tries what a hostile rewrite would: write outside its scratch folder and reach
// the network, then launches a kernel (kblaster capture test program: run with --sandboxed, both
// attempts must fail while the capture still works).
// Usage: escape_probe FILE PORT  (FILE: a path to create; PORT: a TCP port on 127.0.0.1)
#include <arpa/inet.h>
#include <cstdio>
#include <cstdlib>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cuda_runtime.h>

__global__ void fill(int* x, int v, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  std::FILE* f = std::fopen(argv[1], "w");
  std::printf("write %s: %s\n", argv[1], f ? "WRITTEN" : "denied");
  if (f) std::fclose(f);
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<unsigned short>(std::atoi(argv[2])));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::printf("connect 127.0.0.1:%s: %s\n", argv[2], connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? "CONNECTED" : "refused");
  close(s);
  int* x = nullptr;
  cudaMalloc(&x, 1024 * sizeof(int));
  fill<<<4, 256>>>(x, 7, 1024);
  cudaDeviceSynchronize();
  cudaFree(x);
  return 0;
}
