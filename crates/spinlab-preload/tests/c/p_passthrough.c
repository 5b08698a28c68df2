/* The mutexes the preload library leaves to glibc keep glibc's behaviour exactly: recursive
 * (statically initialised and by attribute), error-checking, robust, process-shared and
 * priority-inheriting ones; and a destroyed mutex is refused as glibc refuses it. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <sys/mman.h>
#include <sys/wait.h>

static pthread_mutex_t recursive_static = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t errorcheck_static = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;

/* Another thread's trylock, released again if it succeeded. */
static void *try_elsewhere(void *mutex) {
  int status = pthread_mutex_trylock(mutex);
  if (status == 0) CHECK_EQ(pthread_mutex_unlock(mutex), 0);
  return (void *)(long)status;
}

static void *unlock_elsewhere(void *mutex) {
  return (void *)(long)pthread_mutex_unlock(mutex);
}

static void recursive(pthread_mutex_t *mutex) {
  CHECK_EQ(pthread_mutex_lock(mutex), 0);
  CHECK(glibc_owns(mutex));
  CHECK_EQ(pthread_mutex_lock(mutex), 0);
  CHECK_EQ(pthread_mutex_trylock(mutex), 0);
  struct timespec past = {0, 0};
  CHECK_EQ(pthread_mutex_timedlock(mutex, &past), 0);
  CHECK_EQ(mutex->__data.__count, 4);
  CHECK_EQ((long)join(start(try_elsewhere, mutex)), EBUSY);
  CHECK_EQ((long)join(start(unlock_elsewhere, mutex)), EPERM);
  for (int i = 0; i < 4; i++) CHECK_EQ(pthread_mutex_unlock(mutex), 0);
  CHECK_EQ(pthread_mutex_unlock(mutex), EPERM);
  CHECK_EQ((long)join(start(try_elsewhere, mutex)), 0);
}

static void errorcheck(pthread_mutex_t *mutex) {
  CHECK_EQ(pthread_mutex_unlock(mutex), EPERM);
  CHECK_EQ(pthread_mutex_lock(mutex), 0);
  CHECK(glibc_owns(mutex));
  CHECK_EQ(pthread_mutex_lock(mutex), EDEADLK);
  struct timespec soon = in_ns(CLOCK_REALTIME, 1000000);
  CHECK_EQ(pthread_mutex_timedlock(mutex, &soon), EDEADLK);
  CHECK_EQ(pthread_mutex_trylock(mutex), EBUSY);
  CHECK_EQ((long)join(start(unlock_elsewhere, mutex)), EPERM);
  CHECK_EQ(pthread_mutex_unlock(mutex), 0);
}

static pthread_mutex_t robust_mutex;

static void *die_holding(void *unused) {
  (void)unused;
  CHECK_EQ(pthread_mutex_lock(&robust_mutex), 0);
  return NULL; /* exits holding it */
}

static void robust(void) {
  pthread_mutexattr_t attr;
  CHECK_EQ(pthread_mutexattr_init(&attr), 0);
  CHECK_EQ(pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST), 0);
  CHECK_EQ(pthread_mutex_init(&robust_mutex, &attr), 0);
  join(start(die_holding, NULL));
  CHECK_EQ(pthread_mutex_lock(&robust_mutex), EOWNERDEAD);
  CHECK_EQ(pthread_mutex_consistent(&robust_mutex), 0);
  CHECK_EQ(pthread_mutex_unlock(&robust_mutex), 0);
  CHECK_EQ(pthread_mutex_lock(&robust_mutex), 0);
  CHECK_EQ(pthread_mutex_unlock(&robust_mutex), 0);
  CHECK_EQ(pthread_mutex_destroy(&robust_mutex), 0);
  CHECK_EQ(pthread_mutexattr_destroy(&attr), 0);
}

/* A process-shared mutex and condition variable in shared memory, used by two processes. */
struct shared {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int stage;
};

static void process_shared(void) {
  struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(s != MAP_FAILED);
  pthread_mutexattr_t mattr;
  pthread_condattr_t cattr;
  CHECK_EQ(pthread_mutexattr_init(&mattr), 0);
  CHECK_EQ(pthread_mutexattr_setpshared(&mattr, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_condattr_init(&cattr), 0);
  CHECK_EQ(pthread_condattr_setpshared(&cattr, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_mutex_init(&s->mutex, &mattr), 0);
  CHECK_EQ(pthread_cond_init(&s->cond, &cattr), 0);
  s->stage = 0;
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    CHECK_EQ(pthread_mutex_lock(&s->mutex), 0);
    while (s->stage != 1) CHECK_EQ(pthread_cond_wait(&s->cond, &s->mutex), 0);
    s->stage = 2;
    CHECK_EQ(pthread_cond_broadcast(&s->cond), 0);
    CHECK_EQ(pthread_mutex_unlock(&s->mutex), 0);
    _exit(0);
  }
  CHECK_EQ(pthread_mutex_lock(&s->mutex), 0);
  s->stage = 1;
  CHECK_EQ(pthread_cond_broadcast(&s->cond), 0);
  while (s->stage != 2) CHECK_EQ(pthread_cond_wait(&s->cond, &s->mutex), 0);
  CHECK_EQ(pthread_mutex_unlock(&s->mutex), 0);
  int status;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ(pthread_cond_destroy(&s->cond), 0);
  CHECK_EQ(pthread_mutex_destroy(&s->mutex), 0);
  CHECK_EQ(munmap(s, sizeof *s), 0);
}

static void priority_inherit(void) {
  pthread_mutexattr_t attr;
  pthread_mutex_t mutex;
  CHECK_EQ(pthread_mutexattr_init(&attr), 0);
  CHECK_EQ(pthread_mutexattr_setprotocol(&attr, PTHREAD_PRIO_INHERIT), 0);
  CHECK_EQ(pthread_mutex_init(&mutex, &attr), 0);
  CHECK_EQ(pthread_mutex_lock(&mutex), 0);
  CHECK_EQ(mutex.__data.__lock & 0x3fffffff, (int)syscall(SYS_gettid)); /* the PI futex holds the tid */
  CHECK_EQ((long)join(start(try_elsewhere, &mutex)), EBUSY);
  CHECK_EQ(pthread_mutex_unlock(&mutex), 0);
  CHECK_EQ(pthread_mutex_destroy(&mutex), 0);
  CHECK_EQ(pthread_mutexattr_destroy(&attr), 0);
}

int main(void) {
  say_preloaded();
  recursive(&recursive_static);
  pthread_mutexattr_t attr;
  pthread_mutex_t by_attribute;
  CHECK_EQ(pthread_mutexattr_init(&attr), 0);
  CHECK_EQ(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE), 0);
  CHECK_EQ(pthread_mutex_init(&by_attribute, &attr), 0);
  recursive(&by_attribute);
  CHECK_EQ(pthread_mutex_destroy(&by_attribute), 0);
  CHECK_EQ(pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK), 0);
  CHECK_EQ(pthread_mutex_init(&by_attribute, &attr), 0);
  errorcheck(&by_attribute);
  CHECK_EQ(pthread_mutex_destroy(&by_attribute), 0);
  CHECK_EQ(pthread_mutexattr_destroy(&attr), 0);
  errorcheck(&errorcheck_static);
  robust();
  process_shared();
  priority_inherit();

  /* glibc refuses a destroyed mutex with EINVAL; so must a destroyed replaced one. */
  pthread_mutex_t destroyed;
  CHECK_EQ(pthread_mutex_init(&destroyed, NULL), 0);
  CHECK_EQ(pthread_mutex_destroy(&destroyed), 0);
  CHECK_EQ(pthread_mutex_lock(&destroyed), EINVAL);
  CHECK_EQ(pthread_mutex_trylock(&destroyed), EINVAL);
  printf("ok\n");
  return 0;
}
