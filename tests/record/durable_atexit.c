/* Links durable_atexit_lib.c's library: 100 exit handlers registered
 * before main; nothing else allocates. */
int durable_atexit_ran(void);

int main(void)
{
	return durable_atexit_ran();
}
