// One thread, one object, N lock/unlock pairs (or N notifications nobody waits for) with
// nothing between: what a program pays for each uncontended call, glibc's or the preload
// library's (docs/preload.md).
// gcc -O2 -Wall -Werror -pthread docs/examples/uncontended.c -o uncontended
// ./uncontended mutex; LD_PRELOAD=target/release/libspinlab_preload.so ./uncontended mutex
// cargo run --release -- app --locks default,pthread --reps 10 -- ./uncontended mutex
// The first argument is the kind: mutex, rdlock, wrlock, spin, signal or broadcast; the second
// the pairs (default 50 000 000). Prints the nanoseconds per pair of the fastest fifth.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

// The compiler barrier keeps the pair from being merged with the next one.
#define PAIRS(n, lock, unlock)                  \
  for (long i = 0; i < (n); i++) {              \
    lock;                                       \
    __asm__ volatile("" ::: "memory");          \
    unlock;                                     \
  }

static void run(const char *kind, long n) {
  if (strcmp(kind, "mutex") == 0) {
    PAIRS(n, pthread_mutex_lock(&mutex), pthread_mutex_unlock(&mutex));
  } else if (strcmp(kind, "rdlock") == 0) {
    PAIRS(n, pthread_rwlock_rdlock(&rwlock), pthread_rwlock_unlock(&rwlock));
  } else if (strcmp(kind, "wrlock") == 0) {
    PAIRS(n, pthread_rwlock_wrlock(&rwlock), pthread_rwlock_unlock(&rwlock));
  } else if (strcmp(kind, "spin") == 0) {
    PAIRS(n, pthread_spin_lock(&spin), pthread_spin_unlock(&spin));
  } else if (strcmp(kind, "signal") == 0) {
    PAIRS(n, pthread_cond_signal(&cond), (void)0);
  } else {
    PAIRS(n, pthread_cond_broadcast(&cond), (void)0);
  }
}

int main(int argc, char **argv) {
  const char *kind = argc > 1 ? argv[1] : "mutex";
  long pairs = argc > 2 ? atol(argv[2]) : 50000000;
  const char *kinds[] = {"mutex", "rdlock", "wrlock", "spin", "signal", "broadcast"};
  int known = 0;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) known |= strcmp(kind, kinds[i]) == 0;
  if (!known) {
    fprintf(stderr, "uncontended: unknown kind '%s'; accepted: mutex, rdlock, wrlock, spin, signal, broadcast\n", kind);
    return 2;
  }
  if (pairs < 5 || pairs > 100000000000L) {
    fprintf(stderr, "uncontended: pairs must be 5 to 100000000000, not '%s'\n", argv[2]);
    return 2;
  }
  pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
  double best = 1e300;
  for (int fifth = 0; fifth < 5; fifth++) {
    double start = now_ns();
    run(kind, pairs / 5);
    double per_pair = (now_ns() - start) / (double)(pairs / 5);
    if (per_pair < best) best = per_pair;
  }
  printf("%s: %.2f ns per pair\n", kind, best);
  return 0;
}
