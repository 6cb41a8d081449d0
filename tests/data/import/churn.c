/*
 * churn: 4 threads that churn anonymous memory, recorded with
 *   strace -f -tt -e trace=memory -o churn.strace ./churn
 * for tests/test_e2e_import.c (docs/import.md).  Each thread maps a 256 KiB
 * buffer, writes it, MADV_DONTNEEDs a quarter of it, mprotects it read-only
 * and back, and unmaps it, 8 times; thread 0 also unmaps half of a shared
 * 1 MiB mapping (a partial munmap the import must approximate).
 * Build: cc -O2 -pthread -o churn churn.c
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define BUF (256 * 1024)
#define ROUNDS 8

static char *shared;

static void *churn(void *arg)
{
	long id = (long)arg;
	for (int r = 0; r < ROUNDS; r++) {
		char *p = mmap(NULL, BUF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		memset(p, (int)id, BUF);
		madvise(p + BUF / 4, BUF / 4, MADV_DONTNEED);
		mprotect(p, BUF, PROT_READ);
		mprotect(p, BUF, PROT_READ | PROT_WRITE);
		shared[id * 4096 + r] = (char)r;
		usleep(200);
		munmap(p, BUF);
	}
	if (id == 0)
		munmap(shared + 512 * 1024, 512 * 1024);
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	shared = mmap(NULL, 1024 * 1024, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return 1;
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, churn, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	munmap(shared, 512 * 1024);
	return 0;
}
