/*
 * The program every layer_check_<layer> target links with the whole archive
 * of one layer and the layers below it (src/CMakeLists.txt): linking fails if
 * any object of the layer calls a function of a layer above.  Building it is
 * the check; it is never run.
 */
int main(void)
{
	return 0;
}
