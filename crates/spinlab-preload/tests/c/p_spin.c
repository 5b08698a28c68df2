/* pthread spin locks as an unmodified program uses them: mutual exclusion between threads
 * (exact count), trylock on a held lock, and a PTHREAD_PROCESS_SHARED lock in shared memory
 * that a parent and a forked child take in turn (exact count across the two processes). The
 * same program runs without the preload library, where glibc must pass it too. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <sys/mman.h>
#include <sys/wait.h>

enum { MOST_THREADS = 4, ROUNDS = 20000, SHARED_ROUNDS = 20000 };

static pthread_spinlock_t lock;
static long counter;

static void *hammer(void *arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; i++) {
    CHECK_EQ(pthread_spin_lock(&lock), 0);
    long seen = counter;
    if (i % 256 == 0) sched_yield(); /* a second thread inside would lose an update */
    counter = seen + 1;
    CHECK_EQ(pthread_spin_unlock(&lock), 0);
  }
  return NULL;
}

static void *try_held(void *arg) { /* while the main thread holds `lock` */
  (void)arg;
  CHECK_EQ(pthread_spin_trylock(&lock), EBUSY);
  return NULL;
}

struct shared {
  pthread_spinlock_t lock;
  long counter;
};

static void take_turns(struct shared *shared) {
  for (int i = 0; i < SHARED_ROUNDS; i++) {
    CHECK_EQ(pthread_spin_lock(&shared->lock), 0);
    long seen = shared->counter;
    if (i % 512 == 0) sched_yield();
    shared->counter = seen + 1;
    CHECK_EQ(pthread_spin_unlock(&shared->lock), 0);
  }
}

int main(void) {
  say_preloaded();
  printf("spin: %s\n", preloaded_name("spinlab_preload_spin"));

  CHECK_EQ(pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE), 0);
  int threads = cpus_at_most(MOST_THREADS);
  if (threads < 2) threads = 2;
  pthread_t thread[MOST_THREADS];
  for (int i = 0; i < threads; i++) thread[i] = start(hammer, NULL);
  for (int i = 0; i < threads; i++) join(thread[i]);
  CHECK_EQ(counter, (long)threads * ROUNDS);

  CHECK_EQ(pthread_spin_trylock(&lock), 0);
  join(start(try_held, NULL));
  CHECK_EQ(pthread_spin_unlock(&lock), 0);
  CHECK_EQ(pthread_spin_trylock(&lock), 0);
  CHECK_EQ(pthread_spin_unlock(&lock), 0);
  /* Every successful lock and trylock of `lock`, for the statistics test. */
  printf("counted spin lock %p acquired %ld times\n", (void *)&lock, counter + 2);
  CHECK_EQ(pthread_spin_destroy(&lock), 0);

  struct shared *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(shared != MAP_FAILED);
  CHECK_EQ(pthread_spin_init(&shared->lock, PTHREAD_PROCESS_SHARED), 0);
  shared->counter = 0;
  pid_t child = fork();
  CHECK(child >= 0);
  if (child == 0) {
    take_turns(shared);
    _exit(0);
  }
  take_turns(shared);
  int status;
  CHECK_EQ(waitpid(child, &status, 0), child);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ(shared->counter, 2L * SHARED_ROUNDS);
  CHECK_EQ(pthread_spin_destroy(&shared->lock), 0);

  printf("ok\n");
  return 0;
}
