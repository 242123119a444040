/* sanitized: built with -fsanitize=address; allocprof try refuses it. */
int main(void)
{
	return 0;
}
