// tests/e2e/delay_line.c: a one-way delay between two network namespaces, in user
// space, for kernels without netem (tests/e2e/launch_cluster.py, DelayLine).
//
// usage: delay_line NETNS_A NETNS_B TUN_NAME DELAY_US
//
// Opens a TUN device TUN_NAME in each namespace (/run/netns/NAME), prints
// "ready" and then copies every packet read from one device to the other
// DELAY_US microseconds after it was read, in order, in both directions (a
// reader and a writer thread per direction). Ends on SIGTERM/SIGINT, or when
// its standard input closes (its parent is gone). At most MAX_QUEUED packets
// wait per direction; more are dropped, as a full queue drops them.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

enum { MAX_QUEUED = 16384, MAX_PACKET = 65536 };

struct packet {
  struct packet* next;
  uint64_t due_ns;
  size_t len;
  unsigned char data[];
};

struct direction {
  int from, to;
  uint64_t delay_ns;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct packet *head, *tail;
  int queued;
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int open_tun_in(const char* netns, const char* name) {
  char path[256];
  snprintf(path, sizeof path, "/run/netns/%s", netns);
  int ns = open(path, O_RDONLY | O_CLOEXEC);
  if (ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
    fprintf(stderr, "delay_line: setns %s: %s\n", path, strerror(errno));
    exit(1);
  }
  close(ns);
  int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
  strncpy(ifr.ifr_name, name, IFNAMSIZ - 1);
  if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) {
    fprintf(stderr, "delay_line: tun %s in %s: %s\n", name, netns, strerror(errno));
    exit(1);
  }
  return fd;
}

static void* reader(void* arg) {
  struct direction* d = arg;
  unsigned char buf[MAX_PACKET];
  for (;;) {
    ssize_t n = read(d->from, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return NULL;
    }
    const uint64_t due = now_ns() + d->delay_ns;
    struct packet* p = malloc(sizeof *p + (size_t)n);
    if (!p) continue;
    p->next = NULL;
    p->due_ns = due;
    p->len = (size_t)n;
    memcpy(p->data, buf, (size_t)n);
    pthread_mutex_lock(&d->mu);
    if (d->queued >= MAX_QUEUED) {
      free(p);  // a full queue drops
    } else {
      if (d->tail) d->tail->next = p; else d->head = p;
      d->tail = p;
      d->queued++;
      pthread_cond_signal(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
  }
}

static void* writer(void* arg) {
  struct direction* d = arg;
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // wake at the packet's time, not up to 50 us later
  pthread_mutex_lock(&d->mu);
  for (;;) {
    while (!d->head) pthread_cond_wait(&d->cv, &d->mu);
    struct packet* p = d->head;
    const uint64_t t = now_ns();
    if (p->due_ns > t) {
      struct timespec until = {(time_t)(p->due_ns / 1000000000ull), (long)(p->due_ns % 1000000000ull)};
      pthread_cond_timedwait(&d->cv, &d->mu, &until);
      continue;
    }
    d->head = p->next;
    if (!d->head) d->tail = NULL;
    d->queued--;
    pthread_mutex_unlock(&d->mu);
    (void)!write(d->to, p->data, p->len);
    free(p);
    pthread_mutex_lock(&d->mu);
  }
  return NULL;
}

static void start(struct direction* d, int from, int to, uint64_t delay_ns) {
  d->from = from;
  d->to = to;
  d->delay_ns = delay_ns;
  d->head = d->tail = NULL;
  d->queued = 0;
  pthread_mutex_init(&d->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&d->cv, &ca);
  pthread_t t;
  pthread_create(&t, NULL, reader, d);
  pthread_create(&t, NULL, writer, d);
}

static void* watch_stdin(void* arg) {
  (void)arg;
  char c;
  while (read(0, &c, 1) > 0) {
  }
  kill(getpid(), SIGTERM);  // stdin closed: the parent is gone
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: delay_line NETNS_A NETNS_B TUN_NAME DELAY_US\n");
    return 2;
  }
  // Every thread inherits the blocked signals; main takes them with sigwait.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  const uint64_t delay_ns = strtoull(argv[4], NULL, 10) * 1000ull;
  const int a = open_tun_in(argv[1], argv[3]);
  const int b = open_tun_in(argv[2], argv[3]);
  static struct direction ab, ba;
  start(&ab, a, b, delay_ns);
  start(&ba, b, a, delay_ns);
  pthread_t w;
  pthread_create(&w, NULL, watch_stdin, NULL);
  printf("ready\n");
  fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  return 0;
}
