/* Every barrier the library names (or those named on the command line): phase after phase,
 * nobody leaves before everyone has arrived, exactly one leader per phase, and what each
 * thread wrote before a wait is what every thread reads after it. Then, with more threads
 * than CPUs, the serial thread of each phase destroys and frees the barrier as soon as its
 * wait returns, as POSIX allows, while the others of the phase are still returning. */
#define _GNU_SOURCE
#include "check.h"
#include <spinlab.h>

enum { MOST_THREADS = 4, PHASES = 200 };
enum { THREADS_PER_CPU = 4, MOST_CPUS = 16, ROUNDS = 50 };

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

/* One barrier per round, each used for a single phase and freed by its serial thread. */
static spinlab_barrier_t *round_barrier[ROUNDS];
static int round_threads;
static long serial_threads, waits_returned;

/* Allocates, fills and frees a block of every size up to 1 KiB. glibc hands a thread back
 * the block of a size that it freed last, so this overwrites what destroy just freed (the
 * barrier's box) and what the test freed (the object): a thread of the phase that still
 * touched the barrier would read the fill, and a sense-reversing waiter would then never
 * see its phase released. */
static void overwrite_freed_memory(void) {
  for (size_t size = 16; size <= 1024; size += 16) {
    unsigned char *block = malloc(size);
    CHECK(block != NULL);
    memset(block, 0xa5, size);
    /* The fill is not a dead store: keep the compiler from dropping it before free. */
    __asm__ volatile("" : : "r"(block) : "memory");
    free(block);
  }
}

static void *destroy_when_serial(void *arg) {
  (void)arg;
  for (int round = 0; round < ROUNDS; round++) {
    spinlab_barrier_t *barrier = round_barrier[round];
    /* The function itself, not the header's ThreadSanitizer wrapper (the parentheses stop the
     * macro): the wrapper acquires on the object's address after the wait returns, as
     * ThreadSanitizer's own pthread_barrier_wait does, and by then the serial thread may have
     * freed it, which crashes gcc's ThreadSanitizer runtime. This test's threads share only
     * atomics, so the sanitizer needs no word about the barrier here. */
    int status = (spinlab_barrier_wait)(barrier);
    if (status == SPINLAB_BARRIER_SERIAL_THREAD) {
      CHECK_EQ(spinlab_barrier_destroy(barrier), SPINLAB_OK);
      free(barrier);
      overwrite_freed_memory();
      __atomic_fetch_add(&serial_threads, 1, __ATOMIC_RELAXED);
    } else {
      CHECK_EQ(status, SPINLAB_OK);
    }
    __atomic_fetch_add(&waits_returned, 1, __ATOMIC_RELAXED);
  }
  return NULL;
}

/* A destroy that freed the barrier while threads of its phase were still inside their wait
 * leaves them reading freed memory: here they hang (until the watchdog) or crash. */
static void test_serial_thread_destroys_and_frees(const char *name) {
  round_threads = THREADS_PER_CPU * cpus_at_most(MOST_CPUS);
  serial_threads = waits_returned = 0;
  for (int round = 0; round < ROUNDS; round++) {
    round_barrier[round] = malloc(sizeof *round_barrier[round]);
    CHECK(round_barrier[round] != NULL);
    CHECK_EQ(spinlab_barrier_init(round_barrier[round], name, (unsigned)round_threads), SPINLAB_OK);
  }
  pthread_t thread[THREADS_PER_CPU * MOST_CPUS];
  for (int i = 0; i < round_threads; i++) thread[i] = start(destroy_when_serial, NULL);
  for (int i = 0; i < round_threads; i++) join(thread[i]);
  CHECK_EQ(serial_threads, ROUNDS);
  CHECK_EQ(waits_returned, (long)ROUNDS * round_threads);
}

int main(int argc, char **argv) {
  size_t tested = 0;
  if (argc > 1) {
    for (int i = 1; i < argc; i++, tested++) {
      test_barrier(argv[i]);
      test_serial_thread_destroys_and_frees(argv[i]);
    }
  } else {
    size_t count = spinlab_list(SPINLAB_KIND_BARRIER, NULL, 0);
    const char **names = calloc(count, sizeof *names);
    CHECK(names != NULL);
    CHECK_EQ(spinlab_list(SPINLAB_KIND_BARRIER, names, count), count);
    for (size_t i = 0; i < count; i++) {
      if (spinlab_check(SPINLAB_KIND_BARRIER, names[i]) == SPINLAB_UNAVAILABLE) continue;
      test_barrier(names[i]);
      test_serial_thread_destroys_and_frees(names[i]);
      tested++;
    }
    free(names);
  }
  CHECK_EQ(spinlab_barrier_init(&barrier, NULL, 0), SPINLAB_INVALID);
  CHECK_EQ(spinlab_barrier_init(&barrier, "mcs:futex", 2), SPINLAB_UNKNOWN_NAME);
  printf("tested %zu barriers\n", tested);
  return 0;
}
