/* A library that registers fork handlers from its constructor, as libraries do: a mutex held
 * across every fork, released in parent and child. A library the program links runs its
 * constructor before the preload library's, so its child handler is registered first; the
 * preload library must still have made the child's mutexes usable when that handler runs. */
#include <pthread.h>
#include <stdlib.h>

pthread_mutex_t early_mutex = PTHREAD_MUTEX_INITIALIZER;

static void prepare(void) {
  if (pthread_mutex_lock(&early_mutex) != 0) abort();
}

static void release(void) {
  if (pthread_mutex_unlock(&early_mutex) != 0) abort();
}

__attribute__((constructor)) static void registers_fork_handlers(void) {
  if (pthread_atfork(prepare, release, release) != 0) abort();
}
