/* ctor_thread: lets ctor_thread_lib's thread run 20 ms from before the
 * sampler's start, stops it and frees what it kept. Natively nothing is
 * in use at the end (valgrind: every block freed). */
#include <unistd.h>

void ctor_thread_stop(void);

int main(void)
{
	usleep(20000);
	ctor_thread_stop();
	return 0;
}
