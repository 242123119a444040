// g++ -O2 -g puts main in .text.startup, before crt1.o's _start, and ends
// main's line sequence with a row of no length at its last address: libdwfl
// gives _start's PCs (in no CU) to main's CU, and that row's line with them
// (binutils' addr2line: ??:?). For tests/symbolize/toolchains.py.
#include <stdexcept>
#include <thread>
#include <vector>

volatile void *sink;

__attribute__((noinline)) void thrower(int i)
{
	if (i >= 0)
		throw std::runtime_error("boom");
}

int main()
{
	for (int i = 0; i < 10; i++) {
		try {
			thrower(i);
		} catch (const std::exception &e) {
			sink = (void *)e.what();
		}
	}
	std::vector<std::thread> ts;
	for (int i = 0; i < 2; i++)
		ts.emplace_back([i] { std::vector<int> v(1000 + i); sink = v.data(); });
	for (auto &t : ts)
		t.join();
	return 0;
}
