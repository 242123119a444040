// Threads that hand blocks to each other: each of 4 threads allocates
// strings, vectors and raw blocks; a third of the raw blocks go into a
// shared pool that any thread (and main, at the end) frees. Addresses are
// reused across threads within microseconds (glibc's per-thread caches),
// which is what the trace reader's merge has to order right: every free
// must find its block (tests/e2e/handoff.sh compares with valgrind).
// Usage: handoff [ITERATIONS per thread, default 20000]
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

static std::mutex pool_lock;
static std::vector<void *> pool;

static void work(int iterations)
{
	std::map<int, std::string> names;
	for (int i = 0; i < iterations; i++) {
		names[i % 500] = std::string(20 + i % 300, 'x');
		std::vector<int> v;
		for (int k = 0; k < i % 50; k++)
			v.push_back(k);
		void *p = std::malloc(1 + i % 4097);
		if (i % 3 == 0) {
			std::lock_guard<std::mutex> g(pool_lock);
			pool.push_back(p);
		} else {
			std::free(p);
		}
		if (i % 7 == 0) {
			std::lock_guard<std::mutex> g(pool_lock);
			if (!pool.empty()) {
				std::free(pool.back());
				pool.pop_back();
			}
		}
	}
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? std::atoi(argv[1]) : 20000;
	std::vector<std::thread> threads;
	threads.reserve(4);
	for (int t = 0; t < 4; t++)
		threads.emplace_back(work, iterations);
	for (auto &t : threads)
		t.join();
	size_t left = pool.size();
	for (void *p : pool)
		std::free(p);
	std::printf("handoff: 4 threads x %d iterations, %zu blocks freed by main\n", iterations,
		    left);
	return 0;
}
