/* pthread barriers as an unmodified program uses them: phases in order (nobody leaves a phase
 * before everyone arrived), exactly one PTHREAD_BARRIER_SERIAL_THREAD per phase, the serial
 * thread destroying the barrier while the others are still returning from their wait, a
 * re-initialised barrier, count 0 refused, and a PTHREAD_PROCESS_SHARED barrier between a
 * parent and its forked child (which stays glibc's). The same program runs without the
 * preload library, where glibc must pass it too. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <sys/mman.h>
#include <sys/wait.h>

enum { MOST_THREADS = 4, PHASES = 300 };

static pthread_barrier_t barrier;
static int threads;
static int arrived[PHASES + 1];
static int serial[PHASES + 1];

static void *phases(void *arg) {
  (void)arg;
  for (int p = 0; p < PHASES; p++) {
    __atomic_add_fetch(&arrived[p], 1, __ATOMIC_SEQ_CST);
    int status = pthread_barrier_wait(&barrier);
    CHECK(status == 0 || status == PTHREAD_BARRIER_SERIAL_THREAD);
    /* Everyone arrived before anyone left, and nobody has arrived at the next phase twice. */
    CHECK_EQ(__atomic_load_n(&arrived[p], __ATOMIC_SEQ_CST), threads);
    CHECK(__atomic_load_n(&arrived[p + 1], __ATOMIC_SEQ_CST) <= threads);
    if (status == PTHREAD_BARRIER_SERIAL_THREAD) __atomic_add_fetch(&serial[p], 1, __ATOMIC_SEQ_CST);
  }
  /* The last phase: its serial thread destroys the barrier at once. */
  if (pthread_barrier_wait(&barrier) == PTHREAD_BARRIER_SERIAL_THREAD) {
    CHECK_EQ(pthread_barrier_destroy(&barrier), 0);
  }
  return NULL;
}

int main(void) {
  say_preloaded();
  printf("barrier: %s\n", preloaded_name("spinlab_preload_barrier"));

  threads = cpus_at_most(MOST_THREADS);
  if (threads < 2) threads = 2;
  CHECK_EQ(pthread_barrier_init(&barrier, NULL, 0), EINVAL);
  for (int round = 0; round < 2; round++) { /* the second time on the destroyed object */
    memset(arrived, 0, sizeof arrived);
    memset(serial, 0, sizeof serial);
    CHECK_EQ(pthread_barrier_init(&barrier, NULL, threads), 0);
    pthread_t thread[MOST_THREADS];
    for (int i = 0; i < threads; i++) thread[i] = start(phases, NULL);
    for (int i = 0; i < threads; i++) join(thread[i]);
    for (int p = 0; p < PHASES; p++) CHECK_EQ(serial[p], 1);
  }
  /* For the statistics test: every thread waited PHASES + 1 times in each round, and all but
   * one per phase were not the serial thread. */
  printf("counted barrier %p waited %d times, %d not serial\n", (void *)&barrier, 2 * threads * (PHASES + 1),
         2 * (threads - 1) * (PHASES + 1));

  pthread_barrierattr_t attr;
  CHECK_EQ(pthread_barrierattr_init(&attr), 0);
  CHECK_EQ(pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED), 0);
  struct shared {
    pthread_barrier_t barrier;
    int serial;
  } *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(shared != MAP_FAILED);
  CHECK_EQ(pthread_barrier_init(&shared->barrier, &attr, 2), 0);
  pid_t child = fork();
  CHECK(child >= 0);
  for (int p = 0; p < 50; p++) {
    if (pthread_barrier_wait(&shared->barrier) == PTHREAD_BARRIER_SERIAL_THREAD)
      __atomic_add_fetch(&shared->serial, 1, __ATOMIC_SEQ_CST);
  }
  if (child == 0) _exit(0);
  int status;
  CHECK_EQ(waitpid(child, &status, 0), child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ(shared->serial, 50);
  CHECK_EQ(pthread_barrier_destroy(&shared->barrier), 0);
  CHECK_EQ(pthread_barrierattr_destroy(&attr), 0);

  printf("ok\n");
  return 0;
}
