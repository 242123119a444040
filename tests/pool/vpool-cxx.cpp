// pool/vpool.h from C++: the one-shard orders of docs/pool-model.md §5, and
// objects got, put and cycled on several std::threads, each released once.
// Built and run by vpool-cxx.sh with each C++ compiler and standard.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "vpool.h"

static int failures;

static void check(const char *what, long got, long want)
{
	if (got != want) {
		std::fprintf(stderr, "%s: got %ld, want %ld\n", what, got, want);
		failures++;
	}
}

static char objs[5];

static long idx(void *p)
{
	return p ? static_cast<char *>(p) - objs : -1;
}

static long released;

static void count_release(void *, void *)
{
	released++;
}

static void orders()
{
	static const long fresh[] = { 0, 4, 3, 2, 1 }, aged[] = { 0, 1, 2, 3, 4 };
	for (int cycles = 0; cycles <= 2; cycles++) {
		struct vpool p;
		released = 0;
		if (vpool_init(&p, 1, count_release, nullptr))
			std::abort();
		for (int i = 0; i < 5; i++)
			vpool_put(&p, &objs[i]);
		for (int c = 0; c < cycles; c++)
			vpool_cycle(&p);
		for (int i = 0; i < 5; i++)
			check("order", idx(vpool_get(&p)), cycles == 0 ? fresh[i] : cycles == 1 ? aged[i] : -1);
		check("released", released, cycles == 2 ? 5 : 0);
		vpool_destroy(&p);
	}
}

struct obj {
	long magic;
};

static std::atomic<long> made, freed;

static void free_obj(void *o, void *)
{
	obj *x = static_cast<obj *>(o);
	if (x->magic != 0x5eed)
		std::abort();	// not an object, or released twice
	x->magic = 0;
	delete x;
	freed++;
}

static void threads()
{
	struct vpool p;
	if (vpool_init(&p, 0, free_obj, nullptr))
		std::abort();
	std::atomic<bool> stop{ false };
	std::thread cycler([&] {
		while (!stop)
			vpool_cycle(&p);
	});
	std::vector<std::thread> workers;
	for (unsigned t = 0; t < 4; t++)
		workers.emplace_back([&p, t] {
			unsigned x = t + 1;
			obj *held[8];
			for (int r = 0; r < 20000; r++) {
				int n = 1 + (int)(((x = x * 1103515245u + 12345u) >> 16) % 8);
				for (int i = 0; i < n; i++) {
					held[i] = static_cast<obj *>(vpool_get(&p));
					if (held[i] && held[i]->magic != 0x5eed)
						std::abort();
					if (!held[i]) {
						held[i] = new obj{ 0x5eed };
						made++;
					}
				}
				for (int i = 0; i < n; i++)
					vpool_put(&p, held[i]);
			}
		});
	for (auto &w : workers)
		w.join();
	stop = true;
	cycler.join();
	vpool_destroy(&p);
	check("every object released once", freed, made);
	if (made < 8) {
		std::fprintf(stderr, "only %ld objects made\n", made.load());
		failures++;
	}
}

int main()
{
	orders();
	threads();
	if (failures)
		return 1;
	std::printf("vpool.h from C++ %ld: all checks passed (%ld objects)\n", (long)__cplusplus,
		    made.load());
	return 0;
}
