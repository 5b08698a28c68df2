/* pthread reader-writer locks as an unmodified program uses them: writers exclude each other
 * and readers (exact count, for a statically initialised rwlock and a writer-preferring one),
 * two readers inside at once, a second read lock while a writer waits (glibc's default kind
 * prefers readers), new readers kept out while a writer waits (the writer-preferring kind, by
 * attribute and by static initialiser), trylocks and EDEADLK, timed locks on both clocks,
 * destroy and re-init, and a PTHREAD_PROCESS_SHARED rwlock that a parent and a forked child
 * write in turn (exact count across the two). The same program runs without the preload
 * library, where glibc must pass it too. */
#define _GNU_SOURCE
#include "preloaded.h"
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>

enum { MOST_WRITERS = 4, READERS = 2, ROUNDS = 20000, READS = 20000, SHARED_ROUNDS = 20000 };
/* How long a thread waits for something a correct rwlock makes happen (never reached then). */
static const long long PATIENCE_NS = 20LL * 1000000000LL;

static pthread_rwlock_t counted = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t *hammered;
/* Written only under the write lock, in two steps a second writer inside would tear. */
static long first_half, second_half;
static atomic_long reads_done;

static void *write_hammer(void *arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; i++) {
    CHECK_EQ(pthread_rwlock_wrlock(hammered), 0);
    long seen = first_half;
    if (i % 256 == 0) sched_yield(); /* a second writer inside would lose an update */
    first_half = seen + 1;
    second_half = seen + 1;
    CHECK_EQ(pthread_rwlock_unlock(hammered), 0);
  }
  return NULL;
}

static void *read_hammer(void *arg) {
  (void)arg;
  for (int i = 0; i < READS; i++) {
    CHECK_EQ(pthread_rwlock_rdlock(hammered), 0);
    long a = first_half;
    if (i % 512 == 0) sched_yield();
    CHECK_EQ(second_half, a); /* a writer inside with a reader would show half a write */
    CHECK_EQ(pthread_rwlock_unlock(hammered), 0);
  }
  atomic_fetch_add(&reads_done, READS);
  return NULL;
}

/* Writers and readers on `lock` at once; returns how many acquisitions they made. */
static long hammer(pthread_rwlock_t *lock) {
  hammered = lock;
  first_half = second_half = 0;
  atomic_store(&reads_done, 0);
  int writers = cpus_at_most(MOST_WRITERS);
  pthread_t thread[MOST_WRITERS + READERS];
  for (int i = 0; i < writers; i++) thread[i] = start(write_hammer, NULL);
  for (int i = 0; i < READERS; i++) thread[writers + i] = start(read_hammer, NULL);
  for (int i = 0; i < writers + READERS; i++) join(thread[i]);
  CHECK_EQ(first_half, (long)writers * ROUNDS);
  CHECK_EQ(atomic_load(&reads_done), (long)READERS * READS);
  return (long)writers * ROUNDS + (long)READERS * READS;
}

/* Two readers meet inside: each waits, bounded, until it sees the other holding the lock. */
static pthread_rwlock_t meeting = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int inside;

static void *meet(void *arg) {
  (void)arg;
  CHECK_EQ(pthread_rwlock_rdlock(&meeting), 0);
  atomic_fetch_add(&inside, 1);
  struct timespec give_up = in_ns(CLOCK_MONOTONIC, PATIENCE_NS);
  while (atomic_load(&inside) < 2) {
    CHECK(!reached(CLOCK_MONOTONIC, give_up)); /* the other reader never got in beside us */
    sched_yield();
  }
  CHECK_EQ(pthread_rwlock_unlock(&meeting), 0);
  return NULL;
}

/* A writer that announces itself with its thread id, then waits for the lock. */
struct writer {
  pthread_rwlock_t *lock;
  atomic_int tid, done; /* tid: 0 until the writer has started */
};

static void *wait_to_write(void *arg) {
  struct writer *writer = arg;
  atomic_store(&writer->tid, (int)syscall(SYS_gettid));
  CHECK_EQ(pthread_rwlock_wrlock(writer->lock), 0);
  atomic_store(&writer->done, 1);
  CHECK_EQ(pthread_rwlock_unlock(writer->lock), 0);
  return NULL;
}

static void sleep_ns(long ns) {
  struct timespec nap = {0, ns};
  nanosleep(&nap, NULL);
}

/* The scheduler state of this process's thread `tid`: field 3 of /proc/self/task/TID/stat
 * ('S': asleep in the kernel). Plain system calls, so that the asking thread takes no lock
 * (stdio's, malloc's) that the thread it asks about might be waiting for. */
static char thread_state(int tid) {
  char path[64], stat[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  ssize_t got = read(fd, stat, sizeof stat - 1);
  CHECK(got > 0);
  CHECK_EQ(close(fd), 0);
  stat[got] = '\0';
  const char *name_end = strrchr(stat, ')'); /* "tid (name) S …"; a name may hold ')' */
  CHECK(name_end != NULL && name_end[1] == ' ');
  return name_end[2];
}

/* Waits until `writer`, which announced itself and then called wrlock on `lock`, which this
 * thread holds for reading, is waiting in the lock. A spinlab rwlock shows it in its state
 * word (its first 8 bytes: readers in __readers, and the writers counted, waiting or
 * holding, in __writers), under every policy, spinning or sleeping. glibc's writer sleeps in
 * the kernel, and after announcing it does nothing but wrlock. */
static void until_the_writer_waits(pthread_rwlock_t *lock, int replaced, struct writer *writer) {
  struct timespec give_up = in_ns(CLOCK_MONOTONIC, PATIENCE_NS);
  while (!atomic_load(&writer->tid)) sched_yield();
  for (;;) {
    int waiting = replaced ? __atomic_load_n(&lock->__data.__writers, __ATOMIC_RELAXED) != 0
                           : thread_state(atomic_load(&writer->tid)) == 'S';
    if (waiting) return;
    CHECK(!reached(CLOCK_MONOTONIC, give_up)); /* the writer never got to its wait */
    sched_yield();
  }
}

/* Default kind: this thread reads; a writer comes and waits; this thread reads again, and so
 * does another: reader preference lets both in (writer preference would deadlock here). */
static void *try_read_once(void *arg) {
  pthread_rwlock_t *lock = arg;
  int status = pthread_rwlock_tryrdlock(lock);
  if (status == 0) CHECK_EQ(pthread_rwlock_unlock(lock), 0);
  return (void *)(long)status;
}

static void read_again_while_a_writer_waits(void) {
  pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
  struct writer writer = {.lock = &lock};
  CHECK_EQ(pthread_rwlock_rdlock(&lock), 0);
  /* One reader: glibc counts it as 8 in __readers, spinlab as 1 (see main). */
  unsigned readers_word = lock.__data.__readers;
  CHECK(readers_word == 1 || readers_word == 8);
  pthread_t thread = start(wait_to_write, &writer);
  until_the_writer_waits(&lock, readers_word == 1, &writer);
  sleep_ns(20 * 1000 * 1000); /* a chance to get to sleep too; a correct lock passes however long */
  alarm(60);                  /* a lock that keeps this reader out deadlocks: fail, not hang */
  CHECK_EQ(pthread_rwlock_rdlock(&lock), 0);
  alarm(0);
  CHECK_EQ((long)join(start(try_read_once, &lock)), 0);
  CHECK_EQ(atomic_load(&writer.done), 0);
  CHECK_EQ(pthread_rwlock_unlock(&lock), 0);
  CHECK_EQ(pthread_rwlock_unlock(&lock), 0);
  join(thread);
  CHECK_EQ(atomic_load(&writer.done), 1);
  CHECK_EQ(pthread_rwlock_destroy(&lock), 0);
}

/* Writer-preferring kind: once a writer waits, a new reader is turned away (tryrdlock EBUSY),
 * until the writer has been. */
static void writer_goes_first(pthread_rwlock_t *lock) {
  struct writer writer = {.lock = lock};
  CHECK_EQ(pthread_rwlock_rdlock(lock), 0);
  pthread_t thread = start(wait_to_write, &writer);
  struct timespec give_up = in_ns(CLOCK_MONOTONIC, PATIENCE_NS);
  for (;;) {
    long status = (long)join(start(try_read_once, lock));
    if (status == EBUSY) break;
    CHECK_EQ(status, 0);
    CHECK(!reached(CLOCK_MONOTONIC, give_up)); /* readers still get past the waiting writer */
    sleep_ns(1000 * 1000);
  }
  CHECK_EQ(atomic_load(&writer.done), 0);
  CHECK_EQ(pthread_rwlock_unlock(lock), 0);
  join(thread);
  CHECK_EQ(atomic_load(&writer.done), 1);
  CHECK_EQ((long)join(start(try_read_once, lock)), 0);
}

/* From another thread while the main thread holds `tried` for writing. */
static pthread_rwlock_t tried = PTHREAD_RWLOCK_INITIALIZER;

static void *try_while_written(void *arg) {
  (void)arg;
  CHECK_EQ(pthread_rwlock_tryrdlock(&tried), EBUSY);
  CHECK_EQ(pthread_rwlock_trywrlock(&tried), EBUSY);
  clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
  for (int c = 0; c < 2; c++) {
    struct timespec soon = in_ns(clocks[c], 30 * 1000 * 1000);
    CHECK_EQ(pthread_rwlock_clockrdlock(&tried, clocks[c], &soon), ETIMEDOUT);
    CHECK(reached(clocks[c], soon));
    soon = in_ns(clocks[c], 30 * 1000 * 1000);
    CHECK_EQ(pthread_rwlock_clockwrlock(&tried, clocks[c], &soon), ETIMEDOUT);
    CHECK(reached(clocks[c], soon));
  }
  struct timespec soon = in_ns(CLOCK_REALTIME, 30 * 1000 * 1000);
  CHECK_EQ(pthread_rwlock_timedrdlock(&tried, &soon), ETIMEDOUT);
  CHECK(reached(CLOCK_REALTIME, soon));
  soon = in_ns(CLOCK_REALTIME, 30 * 1000 * 1000);
  CHECK_EQ(pthread_rwlock_timedwrlock(&tried, &soon), ETIMEDOUT);
  CHECK(reached(CLOCK_REALTIME, soon));
  return NULL;
}

static void *timed_write_while_read(void *arg) {
  (void)arg;
  CHECK_EQ(pthread_rwlock_trywrlock(&tried), EBUSY);
  CHECK_EQ(pthread_rwlock_tryrdlock(&tried), 0);
  CHECK_EQ(pthread_rwlock_unlock(&tried), 0);
  clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC};
  for (int c = 0; c < 2; c++) {
    struct timespec soon = in_ns(clocks[c], 30 * 1000 * 1000);
    CHECK_EQ(pthread_rwlock_clockwrlock(&tried, clocks[c], &soon), ETIMEDOUT);
    CHECK(reached(clocks[c], soon));
    soon = in_ns(clocks[c], 1000LL * 1000 * 1000);
    CHECK_EQ(pthread_rwlock_clockrdlock(&tried, clocks[c], &soon), 0); /* readers share */
    CHECK_EQ(pthread_rwlock_unlock(&tried), 0);
  }
  struct timespec soon = in_ns(CLOCK_REALTIME, 30 * 1000 * 1000);
  CHECK_EQ(pthread_rwlock_timedwrlock(&tried, &soon), ETIMEDOUT);
  CHECK(reached(CLOCK_REALTIME, soon));
  return NULL;
}

static void trylocks_timed_locks_and_errors(void) {
  /* A bad tv_nsec is EINVAL from every timed call, free lock or not (glibc checks first);
   * so is a clock other than the two. */
  struct timespec bad = in_ns(CLOCK_REALTIME, 1000LL * 1000 * 1000);
  bad.tv_nsec = 1000000000L;
  CHECK_EQ(pthread_rwlock_timedrdlock(&tried, &bad), EINVAL);
  CHECK_EQ(pthread_rwlock_timedwrlock(&tried, &bad), EINVAL);
  CHECK_EQ(pthread_rwlock_clockrdlock(&tried, CLOCK_MONOTONIC, &bad), EINVAL);
  CHECK_EQ(pthread_rwlock_clockwrlock(&tried, CLOCK_MONOTONIC, &bad), EINVAL);
  bad.tv_nsec = -1;
  CHECK_EQ(pthread_rwlock_timedwrlock(&tried, &bad), EINVAL);
  struct timespec later = in_ns(CLOCK_MONOTONIC, 1000LL * 1000 * 1000);
  CHECK_EQ(pthread_rwlock_clockrdlock(&tried, CLOCK_PROCESS_CPUTIME_ID, &later), EINVAL);

  /* Free: every call takes it at once, whatever the deadline (past ones too). */
  struct timespec past = in_ns(CLOCK_REALTIME, -1000LL * 1000 * 1000);
  CHECK_EQ(pthread_rwlock_timedwrlock(&tried, &past), 0);
  CHECK_EQ(pthread_rwlock_unlock(&tried), 0);
  CHECK_EQ(pthread_rwlock_clockrdlock(&tried, CLOCK_MONOTONIC, &later), 0);
  CHECK_EQ(pthread_rwlock_unlock(&tried), 0);

  /* Held for writing by this thread: others are refused or time out; asking again is EDEADLK. */
  CHECK_EQ(pthread_rwlock_wrlock(&tried), 0);
  CHECK_EQ(pthread_rwlock_rdlock(&tried), EDEADLK);
  CHECK_EQ(pthread_rwlock_wrlock(&tried), EDEADLK);
  later = in_ns(CLOCK_MONOTONIC, 1000LL * 1000 * 1000);
  CHECK_EQ(pthread_rwlock_clockwrlock(&tried, CLOCK_MONOTONIC, &later), EDEADLK);
  CHECK_EQ(pthread_rwlock_clockrdlock(&tried, CLOCK_MONOTONIC, &later), EDEADLK);
  CHECK_EQ(pthread_rwlock_trywrlock(&tried), EBUSY);
  join(start(try_while_written, NULL));
  CHECK_EQ(pthread_rwlock_unlock(&tried), 0);

  /* Held for reading by this thread: a writer is refused or times out, readers share. */
  CHECK_EQ(pthread_rwlock_rdlock(&tried), 0);
  CHECK_EQ(pthread_rwlock_trywrlock(&tried), EBUSY);
  join(start(timed_write_while_read, NULL));
  CHECK_EQ(pthread_rwlock_unlock(&tried), 0);
  CHECK_EQ(pthread_rwlock_trywrlock(&tried), 0);
  CHECK_EQ(pthread_rwlock_unlock(&tried), 0);
}

struct shared {
  pthread_rwlock_t lock;
  long counter;
};

static void take_turns(struct shared *shared) {
  for (int i = 0; i < SHARED_ROUNDS; i++) {
    CHECK_EQ(pthread_rwlock_wrlock(&shared->lock), 0);
    long seen = shared->counter;
    if (i % 512 == 0) sched_yield();
    shared->counter = seen + 1;
    CHECK_EQ(pthread_rwlock_unlock(&shared->lock), 0);
    if (i % 64 == 0) {
      CHECK_EQ(pthread_rwlock_rdlock(&shared->lock), 0);
      CHECK(shared->counter > 0);
      CHECK_EQ(pthread_rwlock_unlock(&shared->lock), 0);
    }
  }
}

int main(void) {
  say_preloaded();
  printf("rwlock: %s\n", preloaded_name("spinlab_preload_rwlock"));

  /* glibc counts a reader as 8 in __readers (the low bits are its phase flags); spinlab's
   * reader-preferring lock keeps a count of 1 in those bytes. */
  CHECK_EQ(pthread_rwlock_rdlock(&counted), 0);
  unsigned readers_word = counted.__data.__readers;
  CHECK_EQ(pthread_rwlock_unlock(&counted), 0);
  printf("default rwlocks are %s\n", readers_word == 8 ? "glibc's" : readers_word == 1 ? "replaced" : "unknown");

  /* A statically initialised rwlock: writers exclude writers and readers. Every acquisition
   * of `counted` is printed, for the statistics test. */
  long acquisitions = hammer(&counted) + 1;
  printf("counted rwlock %p acquired %ld times\n", (void *)&counted, acquisitions);
  fflush(stdout);

  inside = 0;
  pthread_t a = start(meet, NULL), b = start(meet, NULL);
  join(a);
  join(b);

  read_again_while_a_writer_waits();
  trylocks_timed_locks_and_errors();

  /* Destroy and re-initialise, with and without an attribute. */
  pthread_rwlock_t again;
  CHECK_EQ(pthread_rwlock_init(&again, NULL), 0);
  hammer(&again);
  CHECK_EQ(pthread_rwlock_destroy(&again), 0);
  pthread_rwlockattr_t attr;
  CHECK_EQ(pthread_rwlockattr_init(&attr), 0);
  CHECK_EQ(pthread_rwlock_init(&again, &attr), 0);
  CHECK_EQ(pthread_rwlock_trywrlock(&again), 0);
  CHECK_EQ(pthread_rwlock_unlock(&again), 0);
  CHECK_EQ(pthread_rwlock_destroy(&again), 0);

  /* The writer-preferring kind, by attribute and by static initialiser. */
  CHECK_EQ(pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP), 0);
  pthread_rwlock_t writers_first;
  CHECK_EQ(pthread_rwlock_init(&writers_first, &attr), 0);
  writer_goes_first(&writers_first);
  hammer(&writers_first);
  CHECK_EQ(pthread_rwlock_destroy(&writers_first), 0);
  static pthread_rwlock_t writers_first_static = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
  writer_goes_first(&writers_first_static);
  CHECK_EQ(pthread_rwlockattr_destroy(&attr), 0);

  /* Process-shared, between a parent and its forked child. */
  struct shared *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(shared != MAP_FAILED);
  CHECK_EQ(pthread_rwlockattr_init(&attr), 0);
  CHECK_EQ(pthread_rwlockattr_setpshared(&attr, PTHREAD_PROCESS_SHARED), 0);
  CHECK_EQ(pthread_rwlock_init(&shared->lock, &attr), 0);
  CHECK_EQ(pthread_rwlockattr_destroy(&attr), 0);
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
  CHECK_EQ(pthread_rwlock_destroy(&shared->lock), 0);

  printf("ok\n");
  return 0;
}
