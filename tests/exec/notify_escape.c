/* Tries to slip an exec past whalebox's kernel gate with a seccomp filter of its own:
 * SECCOMP_RET_USER_NOTIF takes precedence over the gate's SECCOMP_RET_TRACE, so the
 * gate's first stop never happens, and a thread of ours answers CONTINUE. The gate's
 * second look (the exec event) must still catch it.
 * usage: notify_escape PROGRAM ARG   (execs PROGRAM with argv {"escaped", ARG}) */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int listener = -1;

static void *answer_continue(void *unused) {
    (void) unused;
    while (listener < 0)
        usleep(1000);
    for (;;) {
        struct seccomp_notif req;
        struct seccomp_notif_resp resp;
        memset(&req, 0, sizeof req);
        if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        memset(&resp, 0, sizeof resp);
        resp.id = req.id;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
}

int main(int argc, char **argv) {
    extern char **environ;
    if (argc != 3) {
        fprintf(stderr, "usage: notify_escape PROGRAM ARG\n");
        return 2;
    }
    pthread_t t;
    pthread_create(&t, NULL, answer_continue, NULL);
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_execve, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {sizeof f / sizeof f[0], f};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    /* This thread only: the answering thread must stay free. */
    int fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (fd < 0) {
        printf("notify_escape: no user notification here: %s\n", strerror(errno));
        return 3;
    }
    listener = fd;
    char *args[] = {"escaped", argv[2], NULL};
    execve(argv[1], args, environ);
    printf("notify_escape: execve failed: %s\n", strerror(errno));
    return 111;
}
