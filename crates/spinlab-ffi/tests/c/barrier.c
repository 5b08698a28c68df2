/* Every barrier the library names (or those named on the command line): phase after phase,
 * nobody leaves before everyone has arrived, exactly one leader per phase, and what each
 * thread wrote before a wait is what every thread reads after it. */
#define _GNU_SOURCE
#include "check.h"
#include <spinlab.h>

enum { MOST_THREADS = 4, PHASES = 200 };

static spinlab_barrier_t barrier;
static int threads;
static long arrived, leaders;
/* Double-buffered: phase p writes and reads slots[p % 2], so a thread already in phase p + 1
 * never writes what a slower one still reads for phase p. */
static long slots[2][MOST_THREADS];

static void *run_phases(void *arg) {
  long me = (long)arg;
  for (long phase = 0; phase < PHASES; phase++) {
    slots[phase % 2][me] = phase;
    __atomic_fetch_add(&arrived, 1, __ATOMIC_RELAXED);
    int status = spinlab_barrier_wait(&barrier);
    if (status == SPINLAB_BARRIER_SERIAL_THREAD) {
      __atomic_fetch_add(&leaders, 1, __ATOMIC_RELAXED);
    } else {
      CHECK_EQ(status, SPINLAB_OK);
    }
    CHECK(__atomic_load_n(&arrived, __ATOMIC_RELAXED) >= threads * (phase + 1));
    for (int other = 0; other < threads; other++) CHECK_EQ(slots[phase % 2][other], phase);
  }
  return NULL;
}

static void test_barrier(const char *name) {
  threads = cpus_at_most(MOST_THREADS);
  arrived = leaders = 0;
  CHECK_EQ(spinlab_barrier_init(&barrier, name, (unsigned)threads), SPINLAB_OK);
  CHECK(strcmp(spinlab_barrier_name(&barrier), name) == 0);
  pthread_t thread[MOST_THREADS];
  for (long i = 0; i < threads; i++) thread[i] = start(run_phases, (void *)i);
  for (int i = 0; i < threads; i++) join(thread[i]);
  CHECK_EQ(leaders, PHASES);
  CHECK_EQ(spinlab_barrier_destroy(&barrier), SPINLAB_OK);
}

int main(int argc, char **argv) {
  size_t tested = 0;
  if (argc > 1) {
    for (int i = 1; i < argc; i++, tested++) test_barrier(argv[i]);
  } else {
    size_t count = spinlab_list(SPINLAB_KIND_BARRIER, NULL, 0);
    const char **names = calloc(count, sizeof *names);
    CHECK(names != NULL);
    CHECK_EQ(spinlab_list(SPINLAB_KIND_BARRIER, names, count), count);
    for (size_t i = 0; i < count; i++) {
      if (spinlab_check(SPINLAB_KIND_BARRIER, names[i]) == SPINLAB_UNAVAILABLE) continue;
      test_barrier(names[i]);
      tested++;
    }
    free(names);
  }
  CHECK_EQ(spinlab_barrier_init(&barrier, NULL, 0), SPINLAB_INVALID);
  CHECK_EQ(spinlab_barrier_init(&barrier, "mcs:futex", 2), SPINLAB_UNKNOWN_NAME);
  printf("tested %zu barriers\n", tested);
  return 0;
}
