// A condition wait that returns with no signal: one thread waits once on a condition
// variable, without a loop; the main thread interrupts it with a signal whose handler does not
// ask for restarts (a wait may return then, as POSIX allows), and only later, if it is still
// waiting, signals the condition variable. The program counts the returns that came before
// any signal, for the profile's `spurious` to match: prints "spurious N".
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int waiting, returned, signalled, spurious;

static void on_signal(int sig) { (void)sig; }

static void *waiter(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mutex);
  waiting = 1;
  pthread_cond_wait(&cond, &mutex);
  if (!signalled) {
    spurious++;
  }
  returned = 1;
  pthread_mutex_unlock(&mutex);
  return NULL;
}

static void pause_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

int main(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal; // no SA_RESTART
  sigaction(SIGUSR1, &sa, NULL);
  pthread_t t;
  pthread_create(&t, NULL, waiter, NULL);
  for (;;) { // until the waiter is in its wait (it holds the mutex until then)
    pthread_mutex_lock(&mutex);
    int in = waiting;
    pthread_mutex_unlock(&mutex);
    if (in) {
      break;
    }
    pause_ms(1);
  }
  pause_ms(50); // asleep in the kernel by now
  pthread_kill(t, SIGUSR1);
  pause_ms(200);
  pthread_mutex_lock(&mutex);
  if (!returned) {
    signalled = 1;
    pthread_cond_signal(&cond);
  }
  pthread_mutex_unlock(&mutex);
  pthread_join(t, NULL);
  printf("spurious %d\n", spurious);
  return 0;
}
