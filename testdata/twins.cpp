// Two instances of one template allocate at one line and hold their blocks
// to the end (tests/e2e/timeline-names.sh): advise and timeline name them
// apart (two pools, of two types), geo::make_array<double> twins.cpp:12 and
// geo::make_array<int> twins.cpp:12; top has one node, as pprof does.
//   make_array<double>: 10 x new double[1000] (80000 B), kept
//   make_array<int>:    10 x new int[1000]    (40000 B), kept
#include <cstdio>

namespace geo {
template <typename T> __attribute__((noinline)) T *make_array(unsigned n)
{
	return new T[n]; // SITE:make_array
}
} // namespace geo

int main()
{
	static double *d[10];
	static int *i[10];
	for (int k = 0; k < 10; k++) {
		d[k] = geo::make_array<double>(1000);
		i[k] = geo::make_array<int>(1000);
		d[k][0] = k;
		i[k][0] = k;
	}
	long sum = 0;
	for (int k = 0; k < 10; k++)
		sum += (long)d[k][0] + i[k][0];
	std::printf("%ld\n", sum);
	return 0;
}
