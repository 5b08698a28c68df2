"""The CPython entry of `spinlab apps`: a thread pool from the standard library.

WORKERS threads of a concurrent.futures.ThreadPoolExecutor take ITEMS numbers from one
bounded queue.Queue, hash each, and put the hash on a second queue. Every hand-off goes
through the queues' locks and condition variables and every switch between threads through
the interpreter's own lock, so the run is mostly locking. It prints the items done, its
throughput and a checksum that does not depend on the order the workers took the items in.
"""

import concurrent.futures
import queue
import sys
import time

MODULUS = (1 << 61) - 1


def work(x):
    h = x
    for _ in range(20):
        h = (h * 1103515245 + 12345) & 0x7FFFFFFF
    return h


def consumer(tasks, results):
    done = 0
    while True:
        x = tasks.get()
        if x is None:
            return done
        results.put(work(x))
        done += 1


def main():
    workers, items = int(sys.argv[1]), int(sys.argv[2])
    tasks = queue.Queue(maxsize=64)
    results = queue.Queue()
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(consumer, tasks, results) for _ in range(workers)]
        for i in range(items):
            tasks.put(i)
        for _ in range(workers):
            tasks.put(None)
        done = sum(f.result() for f in futures)
    elapsed = time.perf_counter() - start
    checksum = 0
    while not results.empty():
        checksum = (checksum + results.get_nowait()) % MODULUS
    print(f"items {done}")
    print(f"ops_per_s {items / elapsed:.1f}")
    print(f"checksum {checksum}")


main()
