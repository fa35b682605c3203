/*
 * racer: a thread rewrites the path execve is reading while the exec gate looks at it.
 * tests/exec_everywhere.rs compiles it (cc -pthread) and runs it as a shell task.
 *
 *   racer N MARKER ALLOWED DENIED TALLY
 *
 * N times: fork a child that holds one path buffer, starts a second thread, and lets one
 * thread flip the buffer between ALLOWED (a program that ignores its arguments, `true`)
 * and DENIED (`touch`) as fast as it can while the other calls
 * execve(buffer, {"x", MARKER, NULL}, environ). If DENIED ever ran, MARKER exists.
 * The two paths are padded to the same length with extra slashes (`//usr/bin/true`), so
 * a torn read sees a mix of the two rather than a shorter string.
 *
 * Iterations vary: which path the buffer starts with (i & 1), which thread execs, the
 * main one or the second one, so the exec also comes from a thread that is not the
 * thread group leader (i & 2), and whether the exec waits for the flipper to be running
 * (i % 3 != 0) or goes at once, mostly with the starting path.
 *
 * The parent tallies each child: exit 0 (the allowed program ran), execve returned
 * (exit 111; by errno: EACCES, EPERM, ENOENT for a torn path, other), killed by SIGKILL
 * (the gate killed it after the exec), hung (no end in 20 s: the parent kills it), or
 * other; and whether MARKER appeared. The tally is one line, `key=value` words, printed
 * and written to TALLY.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_PATH 4096

static char paths[2][MAX_PATH];
static size_t path_len;
/* What execve reads, and the flipper writes. */
static char buf[MAX_PATH];
static char *marker;
static atomic_int flipping;
static int wait_for_flipper;
/* Shared with the children: the errno of a failed execve. */
static volatile int *child_errno;

static volatile sig_atomic_t timed_out;
static volatile pid_t current_child;

static void *flip(void *arg)
{
    (void)arg;
    atomic_store(&flipping, 1);
    for (unsigned long i = 1;; i++) {
        memcpy(buf, paths[i & 1], path_len);
        /* Keep every store: another thread (and the kernel) reads buf. */
        __asm__ __volatile__("" ::: "memory");
    }
    return NULL;
}

static void do_exec(void)
{
    if (wait_for_flipper)
        while (!atomic_load(&flipping))
            ;
    char *argv[] = {"x", marker, NULL};
    execve(buf, argv, environ);
    *child_errno = errno;
    _exit(111);
}

static void *exec_thread(void *arg)
{
    (void)arg;
    do_exec();
    return NULL;
}

static void on_alarm(int sig)
{
    (void)sig;
    timed_out = 1;
    if (current_child > 0)
        kill(current_child, SIGKILL);
}

/* `to` = `from` with extra slashes after the leading one, `len` bytes long. */
static void pad(char *to, const char *from, size_t len)
{
    size_t extra = len - strlen(from);
    to[0] = '/';
    memset(to + 1, '/', extra);
    strcpy(to + 1 + extra, from + 1);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: racer N MARKER ALLOWED DENIED TALLY\n");
        return 2;
    }
    long n = strtol(argv[1], NULL, 10);
    marker = argv[2];
    const char *allowed = argv[3], *denied = argv[4], *tally_path = argv[5];
    if (n <= 0 || allowed[0] != '/' || denied[0] != '/') {
        fprintf(stderr, "racer: N > 0 and absolute program paths, please\n");
        return 2;
    }
    size_t la = strlen(allowed), ld = strlen(denied);
    path_len = la > ld ? la : ld;
    if (path_len + 1 >= MAX_PATH) {
        fprintf(stderr, "racer: paths too long\n");
        return 2;
    }
    pad(paths[0], allowed, path_len);
    pad(paths[1], denied, path_len);

    child_errno = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (child_errno == MAP_FAILED) {
        perror("racer: mmap");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART: waitpid returns EINTR */

    long ran = 0, eacces = 0, eperm = 0, enoent = 0, other_errno = 0, killed = 0,
         hung = 0, other = 0, marker_seen = 0;
    for (long i = 0; i < n; i++) {
        *child_errno = 0;
        timed_out = 0;
        memcpy(buf, paths[i & 1], path_len + 1);
        wait_for_flipper = i % 3 != 0;
        int exec_in_second_thread = (i & 2) != 0;
        pid_t pid = fork();
        if (pid < 0) {
            perror("racer: fork");
            return 2;
        }
        if (pid == 0) {
            pthread_t t;
            if (exec_in_second_thread) {
                if (pthread_create(&t, NULL, exec_thread, NULL) != 0)
                    _exit(120);
                flip(NULL);
            } else {
                if (pthread_create(&t, NULL, flip, NULL) != 0)
                    _exit(120);
                do_exec();
            }
            _exit(121);
        }
        current_child = pid;
        alarm(20);
        int st = 0;
        pid_t got;
        do {
            got = waitpid(pid, &st, 0);
        } while (got < 0 && errno == EINTR);
        alarm(0);
        current_child = 0;
        if (got < 0) {
            perror("racer: waitpid");
            return 2;
        }
        if (timed_out) {
            hung++;
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            ran++;
        } else if (WIFEXITED(st) && WEXITSTATUS(st) == 111) {
            switch (*child_errno) {
            case EACCES: eacces++; break;
            case EPERM: eperm++; break;
            case ENOENT: enoent++; break;
            default:
                if (other_errno < 5)
                    fprintf(stderr, "racer: iteration %ld: execve failed: %s\n", i,
                            strerror(*child_errno));
                other_errno++;
            }
        } else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
            killed++;
        } else {
            if (other < 5)
                fprintf(stderr, "racer: iteration %ld: child status %#x\n", i, st);
            other++;
        }
        if (access(marker, F_OK) == 0)
            marker_seen++;
    }
    char line[512];
    snprintf(line, sizeof(line),
             "racer: n=%ld ran=%ld eacces=%ld eperm=%ld enoent=%ld other_errno=%ld "
             "killed=%ld hung=%ld other=%ld marker_seen=%ld\n",
             n, ran, eacces, eperm, enoent, other_errno, killed, hung, other, marker_seen);
    fputs(line, stdout);
    fflush(stdout);
    FILE *f = fopen(tally_path, "w");
    if (!f || fputs(line, f) < 0 || fclose(f) != 0) {
        perror("racer: cannot write the tally");
        return 2;
    }
    return 0;
}
