/* The smallest program: what the pkg-config and static-library tests link. */
#include <spinlab.h>
#include <stdio.h>

int main(void) {
  spinlab_mutex_t mutex;
  if (spinlab_mutex_init(&mutex, "mcs:spin-park") != SPINLAB_OK) return 1;
  spinlab_mutex_lock(&mutex);
  int busy = spinlab_mutex_trylock(&mutex) == SPINLAB_BUSY;
  spinlab_mutex_unlock(&mutex);
  spinlab_mutex_destroy(&mutex);
  printf("linked %s\n", busy ? "ok" : "wrong");
  return busy ? 0 : 1;
}
