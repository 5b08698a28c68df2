/* fork with spinlab objects: a spinlab lock is plain memory, so the child gets each lock in
 * the state it had at fork. A lock the forking thread held is held in the child by the
 * child's only thread, which can release it; a lock another thread held stays held (its
 * holder does not exist in the child), exactly as with pthread mutexes. The child can
 * create and use new locks and condition variables. */
#define _GNU_SOURCE
#include "check.h"
#include <spinlab.h>
#include <sys/wait.h>
#include <unistd.h>

static spinlab_mutex_t held_by_main, held_by_other, unheld;
static int go_on[2], holding[2];

static void *hold_until_told(void *unused) {
  (void)unused;
  char byte = 0;
  spinlab_mutex_lock(&held_by_other);
  CHECK(write(holding[1], &byte, 1) == 1);
  CHECK(read(go_on[0], &byte, 1) == 1);
  spinlab_mutex_unlock(&held_by_other);
  return NULL;
}

static int child(const char *name) {
  CHECK_EQ(spinlab_mutex_trylock(&held_by_other), SPINLAB_BUSY);
  CHECK_EQ(spinlab_mutex_trylock(&held_by_main), SPINLAB_BUSY);
  CHECK_EQ(spinlab_mutex_unlock(&held_by_main), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_lock(&held_by_main), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_unlock(&held_by_main), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_trylock(&unheld), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_unlock(&unheld), SPINLAB_OK);

  spinlab_mutex_t fresh;
  spinlab_cond_t cond;
  CHECK_EQ(spinlab_mutex_init(&fresh, name), SPINLAB_OK);
  CHECK_EQ(spinlab_cond_init(&cond, NULL), SPINLAB_OK);
  spinlab_mutex_lock(&fresh);
  struct timespec deadline = in_ns(CLOCK_MONOTONIC, 1000000);
  int status;
  while ((status = spinlab_cond_clockwait(&cond, &fresh, CLOCK_MONOTONIC, &deadline)) == SPINLAB_OK) {
  }
  CHECK_EQ(status, SPINLAB_TIMEDOUT);
  spinlab_mutex_unlock(&fresh);
  CHECK_EQ(spinlab_cond_destroy(&cond), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_destroy(&fresh), SPINLAB_OK);
  return 0;
}

static void test_lock(const char *name) {
  char byte = 0;
  CHECK(pipe(go_on) == 0 && pipe(holding) == 0);
  CHECK_EQ(spinlab_mutex_init(&held_by_main, name), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_init(&held_by_other, name), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_init(&unheld, name), SPINLAB_OK);
  pthread_t other = start(hold_until_told, NULL);
  CHECK(read(holding[0], &byte, 1) == 1);
  spinlab_mutex_lock(&held_by_main);

  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) _exit(child(name));
  int wstatus;
  CHECK(waitpid(pid, &wstatus, 0) == pid);
  CHECK(WIFEXITED(wstatus));
  CHECK_EQ(WEXITSTATUS(wstatus), 0);

  /* The parent's locks are its own: the child's unlock did not touch them. */
  CHECK_EQ(spinlab_mutex_trylock(&held_by_main), SPINLAB_BUSY);
  spinlab_mutex_unlock(&held_by_main);
  CHECK(write(go_on[1], &byte, 1) == 1);
  join(other);
  CHECK_EQ(spinlab_mutex_destroy(&held_by_main), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_destroy(&held_by_other), SPINLAB_OK);
  CHECK_EQ(spinlab_mutex_destroy(&unheld), SPINLAB_OK);
  for (int i = 0; i < 2; i++) {
    close(go_on[i]);
    close(holding[i]);
  }
}

int main(int argc, char **argv) {
  CHECK(argc > 1);
  for (int i = 1; i < argc; i++) test_lock(argv[i]);
  printf("tested %d locks\n", argc - 1);
  return 0;
}
