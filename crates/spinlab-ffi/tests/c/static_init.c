/* The static initialisers and the smaller parts of the C API: a global mutex and condition
 * variable that no init call touches, shared by several threads with exact counts (mutual
 * exclusion, turns taken in order, tokens passed by signal); the same with zero-filled heap
 * objects and with objects that destroy left behind; spinlab_cond_name for every policy;
 * and every status code's message and errno value, next to what pthreads return for the
 * same events. */
#define _GNU_SOURCE
#include "check.h"
#include <spinlab.h>

enum { THREADS = 4, INCREMENTS = 100000, ROUNDS = 2000, TOKENS = 5000 };

static spinlab_mutex_t lock = SPINLAB_MUTEX_INITIALIZER;
static spinlab_cond_t changed = SPINLAB_COND_INITIALIZER;

struct run {
  spinlab_mutex_t *lock;
  spinlab_cond_t *changed;
  /* Read and written in two steps under the lock: a lock that let two threads in at once
   * would lose increments. */
  volatile long counter;
  long turn;              /* thread `turn % THREADS` may take the next turn */
  long turns[THREADS];    /* turns each thread took */
  long tokens;            /* posted by even threads, taken by odd ones */
  long taken[THREADS];
};

struct worker {
  struct run *run;
  int id;
};

static void *work(void *arg) {
  struct worker *w = arg;
  struct run *r = w->run;
  for (int i = 0; i < INCREMENTS; i++) {
    CHECK_EQ(spinlab_mutex_lock(r->lock), SPINLAB_OK);
    long seen = r->counter;
    r->counter = seen + 1;
    CHECK_EQ(spinlab_mutex_unlock(r->lock), SPINLAB_OK);
  }
  /* Turns in a ring: every thread waits for its own, so each broadcast must reach it. */
  for (int i = 0; i < ROUNDS; i++) {
    spinlab_mutex_lock(r->lock);
    while (r->turn % THREADS != w->id) CHECK_EQ(spinlab_cond_wait(r->changed, r->lock), SPINLAB_OK);
    r->turns[w->id]++;
    r->turn++;
    spinlab_mutex_unlock(r->lock);
    CHECK_EQ(spinlab_cond_broadcast(r->changed), SPINLAB_OK);
  }
  /* Tokens: a post signals one taker; a taker that missed it would wait forever. */
  for (int i = 0; i < TOKENS; i++) {
    spinlab_mutex_lock(r->lock);
    if (w->id % 2 == 0) {
      r->tokens++;
      CHECK_EQ(spinlab_cond_signal(r->changed), SPINLAB_OK); /* under the lock */
    } else {
      while (r->tokens == 0) CHECK_EQ(spinlab_cond_wait(r->changed, r->lock), SPINLAB_OK);
      r->tokens--;
      r->taken[w->id]++;
    }
    spinlab_mutex_unlock(r->lock);
  }
  return NULL;
}

static void run_on(spinlab_mutex_t *m, spinlab_cond_t *c) {
  struct run r = {.lock = m, .changed = c, .counter = 0, .turn = 0, .tokens = 0};
  memset(r.turns, 0, sizeof r.turns);
  memset(r.taken, 0, sizeof r.taken);
  struct worker workers[THREADS];
  pthread_t threads[THREADS];
  for (int i = 0; i < THREADS; i++) {
    workers[i] = (struct worker){.run = &r, .id = i};
    threads[i] = start(work, &workers[i]);
  }
  for (int i = 0; i < THREADS; i++) join(threads[i]);
  CHECK_EQ(r.counter, (long)THREADS * INCREMENTS);
  CHECK_EQ(r.turn, (long)THREADS * ROUNDS);
  for (int i = 0; i < THREADS; i++) CHECK_EQ(r.turns[i], ROUNDS);
  CHECK_EQ(r.tokens, 0);
  for (int i = 1; i < THREADS; i += 2) CHECK_EQ(r.taken[i], TOKENS);
}

static int all_zero(const void *object, size_t size) {
  static const unsigned char zero[sizeof(spinlab_mutex_t)];
  CHECK(size <= sizeof zero);
  return memcmp(object, zero, size) == 0;
}

static void check_names(const spinlab_mutex_t *m, const spinlab_cond_t *c) {
  CHECK(strcmp(spinlab_mutex_name(m), "adaptive:pause-yield-park") == 0);
  CHECK(strcmp(spinlab_cond_name(c), "spin-park") == 0);
}

static void test_static_objects(void) {
  check_names(&lock, &changed);
  run_on(&lock, &changed);
  check_names(&lock, &changed); /* using them wrote no table row into them */
  CHECK_EQ(spinlab_mutex_destroy(&lock), SPINLAB_OK);
  CHECK_EQ(spinlab_cond_destroy(&changed), SPINLAB_OK);
  CHECK(all_zero(&lock, sizeof lock) && all_zero(&changed, sizeof changed));
  /* What destroy leaves is the initialiser again: usable as it is, or initialised anew. */
  run_on(&lock, &changed);
  CHECK_EQ(spinlab_mutex_init(&lock, "ttas:pause"), SPINLAB_OK);
  CHECK_EQ(spinlab_cond_init(&changed, "futex"), SPINLAB_OK);
  CHECK(strcmp(spinlab_mutex_name(&lock), "ttas:pause") == 0);
  CHECK(strcmp(spinlab_cond_name(&changed), "futex") == 0);
  CHECK_EQ(spinlab_mutex_destroy(&lock), SPINLAB_OK);
  CHECK_EQ(spinlab_cond_destroy(&changed), SPINLAB_OK);
  check_names(&lock, &changed);
  /* An automatic object takes the initialisers too. */
  spinlab_mutex_t local = SPINLAB_MUTEX_INITIALIZER;
  CHECK_EQ(spinlab_mutex_trylock(&local), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_trylock(&local), SPINLAB_BUSY);
  CHECK_EQ(spinlab_mutex_destroy(&local), SPINLAB_BUSY);
  CHECK_EQ(spinlab_mutex_unlock(&local), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_destroy(&local), SPINLAB_OK);
}

static void test_zero_filled_heap_objects(void) {
  struct {
    spinlab_mutex_t lock;
    spinlab_cond_t changed;
  } *both = calloc(1, sizeof *both);
  CHECK(both != NULL);
  check_names(&both->lock, &both->changed);
  run_on(&both->lock, &both->changed);
  CHECK_EQ(spinlab_cond_destroy(&both->changed), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_destroy(&both->lock), SPINLAB_OK);
  free(both);
}

static size_t test_cond_names(void) {
  size_t count = spinlab_list(SPINLAB_KIND_COND, NULL, 0), named = 0;
  const char **names = calloc(count, sizeof *names);
  CHECK(names != NULL);
  CHECK_EQ(spinlab_list(SPINLAB_KIND_COND, names, count), count);
  for (size_t i = 0; i < count; i++) {
    spinlab_cond_t cond;
    int status = spinlab_cond_init(&cond, names[i]);
    if (status == SPINLAB_UNAVAILABLE) continue;
    CHECK_EQ(status, SPINLAB_OK);
    CHECK(strcmp(spinlab_cond_name(&cond), names[i]) == 0);
    CHECK(spinlab_cond_name(&cond) == names[i]); /* the same static string */
    CHECK_EQ(spinlab_cond_destroy(&cond), SPINLAB_OK);
    named++;
  }
  free(names);
  return named;
}

struct status {
  const char *name;
  int code, errno_value;
};
#define STATUS(code, errno_value) {#code, code, errno_value}

static void test_statuses(void) {
  static const struct status statuses[] = {
      STATUS(SPINLAB_OK, 0),
      STATUS(SPINLAB_BUSY, EBUSY),
      STATUS(SPINLAB_TIMEDOUT, ETIMEDOUT),
      STATUS(SPINLAB_UNKNOWN_NAME, EINVAL),
      STATUS(SPINLAB_UNAVAILABLE, ENOTSUP),
      STATUS(SPINLAB_INVALID, EINVAL),
      STATUS(SPINLAB_TOO_LARGE, ENOMEM),
      STATUS(SPINLAB_BARRIER_SERIAL_THREAD, PTHREAD_BARRIER_SERIAL_THREAD),
  };
  const char *unknown = spinlab_strerror(12345);
  CHECK(unknown != NULL && strstr(unknown, "unknown") != NULL);
  size_t count = sizeof statuses / sizeof *statuses;
  for (size_t i = 0; i < count; i++) {
    const char *message = spinlab_strerror(statuses[i].code);
    CHECK(message != NULL && strcmp(message, unknown) != 0);
    for (size_t j = 0; j < i; j++) CHECK(strcmp(message, spinlab_strerror(statuses[j].code)) != 0);
    CHECK_EQ(spinlab_errno(statuses[i].code), statuses[i].errno_value);
    printf("mapped %s to %d: %s\n", statuses[i].name, statuses[i].errno_value, message);
  }
  CHECK(strstr(spinlab_strerror(SPINLAB_BARRIER_SERIAL_THREAD), "serial") != NULL);
  CHECK_EQ(spinlab_errno(12345), EINVAL);
  CHECK_EQ(spinlab_errno(-2), EINVAL);
}

static void *try_both(void *arg) {
  void **pair = arg;
  int theirs = pthread_mutex_trylock(pair[0]);
  int ours = spinlab_errno(spinlab_mutex_trylock(pair[1]));
  CHECK_EQ(ours, theirs);
  CHECK_EQ(ours, EBUSY);
  struct timespec past = in_ns(CLOCK_REALTIME, -1000000);
  theirs = pthread_mutex_timedlock(pair[0], &past);
  ours = spinlab_errno(spinlab_mutex_timedlock(pair[1], &past));
  CHECK_EQ(ours, theirs);
  CHECK_EQ(ours, ETIMEDOUT);
  struct timespec bad = {.tv_sec = past.tv_sec, .tv_nsec = 1000000000};
  theirs = pthread_mutex_timedlock(pair[0], &bad);
  ours = spinlab_errno(spinlab_mutex_timedlock(pair[1], &bad));
  CHECK_EQ(ours, theirs);
  CHECK_EQ(ours, EINVAL);
  return NULL;
}

/* What spinlab_errno gives is what the pthread function returns for the same event. */
static void test_errno_matches_pthreads(void) {
  pthread_mutex_t theirs = PTHREAD_MUTEX_INITIALIZER;
  spinlab_mutex_t ours = SPINLAB_MUTEX_INITIALIZER;
  CHECK_EQ(pthread_mutex_lock(&theirs), 0);
  CHECK_EQ(spinlab_errno(spinlab_mutex_lock(&ours)), 0);
  void *pair[2] = {&theirs, &ours}; /* both held while another thread tries them */
  join(start(try_both, pair)); /* from another thread: glibc's default mutex is not checked */
#ifdef SPINLAB_TSAN
  int busy = EBUSY; /* ThreadSanitizer reports destroying a held mutex even where glibc refuses */
#else
  int busy = pthread_mutex_destroy(&theirs); /* glibc refuses a held mutex */
#endif
  CHECK_EQ(busy, EBUSY);
  CHECK_EQ(spinlab_errno(spinlab_mutex_destroy(&ours)), busy);

  CHECK_EQ(pthread_mutex_unlock(&theirs), 0);
  CHECK_EQ(spinlab_errno(spinlab_mutex_unlock(&ours)), 0);

  /* One mutex held at a time: ThreadSanitizer would call the two orders a deadlock. */
  pthread_cond_t their_cond = PTHREAD_COND_INITIALIZER;
  spinlab_cond_t our_cond = SPINLAB_COND_INITIALIZER;
  struct timespec past = in_ns(CLOCK_REALTIME, -1000000);
  CHECK_EQ(pthread_mutex_lock(&theirs), 0);
  int their_wait = pthread_cond_timedwait(&their_cond, &theirs, &past);
  CHECK_EQ(pthread_mutex_unlock(&theirs), 0);
  CHECK_EQ(their_wait, ETIMEDOUT);
  CHECK_EQ(spinlab_errno(spinlab_mutex_lock(&ours)), 0);
  CHECK_EQ(spinlab_errno(spinlab_cond_timedwait(&our_cond, &ours, &past)), their_wait);
  CHECK_EQ(spinlab_errno(spinlab_mutex_unlock(&ours)), 0);
  CHECK_EQ(spinlab_errno(spinlab_mutex_destroy(&ours)), pthread_mutex_destroy(&theirs));
  CHECK_EQ(spinlab_errno(spinlab_cond_destroy(&our_cond)), pthread_cond_destroy(&their_cond));

  pthread_barrier_t their_barrier;
  spinlab_barrier_t our_barrier;
  int refused = pthread_barrier_init(&their_barrier, NULL, 0);
  CHECK_EQ(refused, EINVAL);
  CHECK_EQ(spinlab_errno(spinlab_barrier_init(&our_barrier, NULL, 0)), refused);
  CHECK_EQ(pthread_barrier_init(&their_barrier, NULL, 1), 0);
  CHECK_EQ(spinlab_errno(spinlab_barrier_init(&our_barrier, NULL, 1)), 0);
  int serial = pthread_barrier_wait(&their_barrier);
  CHECK_EQ(serial, PTHREAD_BARRIER_SERIAL_THREAD);
  CHECK_EQ(spinlab_errno(spinlab_barrier_wait(&our_barrier)), serial);
  CHECK_EQ(spinlab_errno(spinlab_barrier_destroy(&our_barrier)), pthread_barrier_destroy(&their_barrier));
}

int main(void) {
  test_static_objects();
  test_zero_filled_heap_objects();
  size_t named = test_cond_names();
  test_statuses();
  test_errno_matches_pthreads();
  printf("named %zu condition variable policies\n", named);
  return 0;
}
