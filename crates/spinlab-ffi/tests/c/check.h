/* What every C test program shares: a CHECK that names the failed expression and exits, and
 * the few time and thread helpers the tests need. Used by the spinlab-ffi and
 * spinlab-preload tests alike. */
#ifndef SPINLAB_TEST_CHECK_H
#define SPINLAB_TEST_CHECK_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(expr)                                                                    \
  do {                                                                                 \
    if (!(expr)) {                                                                     \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr);         \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

/* CHECK(a == b) for integers, printing both values. */
#define CHECK_EQ(a, b)                                                                 \
  do {                                                                                 \
    long long check_a_ = (long long)(a), check_b_ = (long long)(b);                    \
    if (check_a_ != check_b_) {                                                        \
      fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n", __FILE__,      \
              __LINE__, #a, #b, check_a_, check_b_);                                   \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)

static inline struct timespec now_on(clockid_t clock) {
  struct timespec t;
  CHECK(clock_gettime(clock, &t) == 0);
  return t;
}

/* `clock`'s time `ns` nanoseconds from now (negative: in the past). */
static inline struct timespec in_ns(clockid_t clock, long long ns) {
  struct timespec t = now_on(clock);
  long long total = (long long)t.tv_nsec + ns % 1000000000LL;
  t.tv_sec += (time_t)(ns / 1000000000LL + total / 1000000000LL);
  total %= 1000000000LL;
  if (total < 0) {
    total += 1000000000LL;
    t.tv_sec -= 1;
  }
  t.tv_nsec = (long)total;
  return t;
}

/* Whether `clock` has reached `t`. */
static inline int reached(clockid_t clock, struct timespec t) {
  struct timespec n = now_on(clock);
  return n.tv_sec > t.tv_sec || (n.tv_sec == t.tv_sec && n.tv_nsec >= t.tv_nsec);
}

/* How many threads can run at once here (at least 2, at most `most`). Tests of mutual
 * exclusion run no more threads than CPUs: a queue lock with a pure spin policy hands the
 * lock to a waiter that may be preempted, and then every waiter behind it spins away a time
 * slice (the collapse seeds 000 and 003 describe). That is a cost to measure in the lab,
 * not something a correctness test should wait through. */
static inline int cpus_at_most(int most) {
  cpu_set_t set;
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 2;
  return cpus < 2 ? 2 : cpus > most ? most : cpus;
}

static inline pthread_t start(void *(*body)(void *), void *arg) {
  pthread_t thread;
  CHECK(pthread_create(&thread, NULL, body, arg) == 0);
  return thread;
}

static inline void *join(pthread_t thread) {
  void *result;
  CHECK(pthread_join(thread, &result) == 0);
  return result;
}

#endif
