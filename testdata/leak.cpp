// A C++ program with one real leak (issue 26): leaky_cache's table,
// 64 x 1000 bytes never freed, marked SITE:leak; everything else is freed.
// libstdc++ also keeps its emergency exception pool (about 71kB, allocated
// before main, never freed by design), which leak views leave out.
#include <cstdio>
#include <vector>

namespace app {
struct Entry {
	char bytes[1000];
};

__attribute__((noinline)) void leaky_cache(std::vector<Entry *> &keep)
{
	for (int i = 0; i < 64; i++)
		keep.push_back(new Entry()); // SITE:leak
}

__attribute__((noinline)) long temporary_work()
{
	long sum = 0;
	for (int i = 0; i < 100; i++) {
		std::vector<int> *v = new std::vector<int>(256, i); // SITE:freed
		sum += (*v)[i];
		delete v;
	}
	return sum;
}
} // namespace app

int main()
{
	static std::vector<app::Entry *> *keep = new std::vector<app::Entry *>();
	app::leaky_cache(*keep);
	keep->clear(); // the pointers are gone: a leak
	std::printf("%ld\n", app::temporary_work());
	return 0;
}
