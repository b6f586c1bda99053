// netcost: per-message kernel cost of loopback TCP, UDP and a pipe, and of
// write() vs sendfile() for TCP sends, on the host it runs on. One thread,
// no scheduling: each iteration is send(a, n) then recv(b, n). It is where
// two numbers of schedlab's netperf shapes come from (docs/simulator.md):
// the profile's datagram_syscall_ns = 0.48 x syscall_ns (the median
// "udp/tcp" ratio below) and the TCP_SENDFILE caveat (a 16 KiB sendfile()
// costs the sender about what write() does on a loopback socket).
//
//   gcc -O2 -o netcost docs/probes/netcost.c && taskset -c 1 ./netcost 300000
//
// Measured on 2026-12-01 (Linux 6.18, AMD EPYC VM, 2 vCPUs, another job's
// QEMU running beside it, so noisy), 18 runs: udp/tcp 0.41-0.55 (median
// 0.48); sendfile/write at 16 KiB 0.77-1.59 (median 1.0), at 64 KiB
// (second argument "64k") 0.75-1.54 (median 0.84).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static char buf[1 << 20];

static void tcp_pair(int *a, int *b) {
  int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in s = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof s;
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  bind(l, (void *)&s, sizeof s); listen(l, 1); getsockname(l, (void *)&s, &len);
  *a = socket(AF_INET, SOCK_STREAM, 0);
  connect(*a, (void *)&s, sizeof s);
  *b = accept(l, 0, 0); close(l);
  setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}
static void udp_pair(int *a, int *b) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)}, sb = sa;
  socklen_t len = sizeof sa;
  *a = socket(AF_INET, SOCK_DGRAM, 0); *b = socket(AF_INET, SOCK_DGRAM, 0);
  bind(*a, (void *)&sa, sizeof sa); getsockname(*a, (void *)&sa, &len);
  bind(*b, (void *)&sb, sizeof sb); getsockname(*b, (void *)&sb, &len);
  connect(*a, (void *)&sb, sizeof sb); connect(*b, (void *)&sa, sizeof sa);
}
static double rr(int a, int b, int n, long iters) {  // ns per send+recv
  double t = now();
  for (long i = 0; i < iters; i++) {
    if (write(a, buf, n) != n) { perror("write"); exit(1); }
    int got = 0; while (got < n) { int k = read(b, buf, n - got); if (k <= 0) { perror("read"); exit(1); } got += k; }
  }
  return (now() - t) * 1e9 / iters;
}
static double send_only(int a, int b, int n, long iters, int file) { // ns per send(-file) alone
  double ts = 0;
  for (long i = 0; i < iters; i++) {
    double t = now();
    if (file >= 0) { off_t o = 0; if (sendfile(a, file, &o, n) != n) { perror("sendfile"); exit(1); } }
    else if (write(a, buf, n) != n) { perror("write"); exit(1); }
    ts += now() - t;
    int got = 0; while (got < n) { int k = read(b, buf, n - got); if (k <= 0) { perror("read"); exit(1); } got += k; }
  }
  return ts * 1e9 / iters;
}
int main(int argc, char **argv) {
  long it = argc > 1 ? atol(argv[1]) : 200000;
  int big = argc > 2 && argv[2][0] == '6';  // "64k": 64 KiB sends
  int a, b, p[2];
  for (int rep = 0; rep < 3; rep++) {
    tcp_pair(&a, &b); double tcp1 = rr(a, b, 1, it); close(a); close(b);
    udp_pair(&a, &b); double udp1 = rr(a, b, 1, it); close(a); close(b);
    pipe(p); double pipe1 = rr(p[1], p[0], 1, it); close(p[0]); close(p[1]);
    int f = open("netcost.tmp", O_RDWR | O_CREAT | O_TRUNC, 0600); write(f, buf, big ? 65536 : 16384);
    tcp_pair(&a, &b);
    int n = big ? 65536 : 16384;
    double st = send_only(a, b, n, it / 4, -1), sf = send_only(a, b, n, it / 4, f);
    close(a); close(b); close(f); unlink("netcost.tmp");
    printf("1-byte send+recv ns: tcp %.0f udp %.0f pipe %.0f | udp/tcp %.3f | %d-byte send ns: write %.0f sendfile %.0f ratio %.3f\n",
           tcp1, udp1, pipe1, udp1 / tcp1, n, st, sf, sf / st);
  }
}
