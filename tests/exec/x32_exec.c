/* Tries to exec through the x32 system call table: the same architecture token as
 * x86_64, but call numbers with bit 30 set (x32's execve is 520), which a filter that
 * only compares numbers with 59 and 322 would let through. The gate's filter kills the
 * process (SIGSYS) on any x32 call; a kernel without x32 answers ENOSYS.
 * usage: x32_exec PROGRAM ARG   (execs PROGRAM with argv {PROGRAM, ARG}) */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define X32_SYSCALL_BIT 0x40000000
#define X32_EXECVE 520

int main(int argc, char **argv) {
    extern char **environ;
    if (argc != 3) {
        fprintf(stderr, "usage: x32_exec PROGRAM ARG\n");
        return 2;
    }
    char *args[] = {argv[1], argv[2], NULL};
    /* No call at all (-1, as some programs probe): ENOSYS, not a kill. */
    long none = syscall(-1);
    printf("x32_exec: syscall(-1) returned %ld: %s\n", none, strerror(errno));
    fflush(stdout);
    long r = syscall(X32_SYSCALL_BIT | X32_EXECVE, argv[1], args, environ);
    printf("x32_exec: the call returned %ld: %s\n", r, strerror(errno));
    return 3;
}
