// C++ allocations through templates in namespaces, operator new, vector
// growth and std::string, to test demangling and the call-site choice
// (issue 3). Every site is marked with a SITE: comment that tests look up.
//
// By construction:
//   geo::detail::make_point<double>: 100 x new Point<double> (24 B)
//   geo::detail::make_point<int>:     50 x new Point<int> (12 B)
//   geo::Cloud<float>::add (vector<Point<float>> growth, 100 push_backs):
//       8 allocations of 1,2,4,...,128 elements x 12 B = 3060 B
//   names::make_label: 10 x new std::string (32 B), and its 10 buffers of
//       40 chars (41 B, allocated inside std::basic_string)
// 178 allocations, 6,790 bytes, all freed before exit (libstdc++ itself
// adds one 72,704-byte emergency pool at startup).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#include <unistd.h>

namespace geo {

template <typename T> struct Point {
	T x, y, z;
};

namespace detail {
template <typename T> __attribute__((noinline)) Point<T> *make_point(T v)
{
	return new Point<T>{ v, v + 1, v + 2 }; // SITE:make_point
}
} // namespace detail

template <typename T> class Cloud {
public:
	__attribute__((noinline)) void add(T v)
	{
		pts_.push_back(Point<T>{ v, v, v }); // SITE:cloud_add
	}
	size_t size() const { return pts_.size(); }

private:
	std::vector<Point<T>> pts_;
};

} // namespace geo

namespace names {
__attribute__((noinline)) std::string *make_label(int i)
{
	std::string *s = new std::string(40, static_cast<char>('a' + i)); // SITE:make_label
	return s;
}
} // namespace names

int main()
{
	double dsum = 0;
	for (int i = 0; i < 100; i++) {
		geo::Point<double> *p = geo::detail::make_point<double>(i);
		dsum += p->z;
		delete p;
	}
	long isum = 0;
	for (int i = 0; i < 50; i++) {
		geo::Point<int> *p = geo::detail::make_point<int>(i);
		isum += p->y;
		delete p;
	}
	size_t n;
	{
		geo::Cloud<float> c;
		for (int i = 0; i < 100; i++)
			c.add(static_cast<float>(i));
		n = c.size();
	}
	size_t chars = 0;
	for (int i = 0; i < 10; i++) {
		std::string *s = names::make_label(i);
		chars += s->size();
		delete s;
	}
	char line[128];
	int len = snprintf(line, sizeof(line), "cxx: %.0f %ld %zu %zu\n", dsum, isum, n, chars);
	if (write(1, line, static_cast<size_t>(len)) != len)
		return 1;
	return 0;
}
