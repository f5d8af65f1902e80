/*
 * fail_syscalls.c - make system calls of one kind fail with a seccomp
 * filter.  libfiu's preloaded wrappers do the same for one call's
 * duration, but under MPI they deadlock: libfiu 1.1 looks up libc's
 * malloc with dlsym while holding its own lock, and MPI_Init's dlopen
 * holds the loader's lock and calls malloc.  A filter is in the kernel:
 * no wrapper, no lock, every thread at once (SECCOMP_FILTER_FLAG_TSYNC).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fail_syscalls.h"

#if defined(__x86_64__)
#define THIS_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define THIS_ARCH AUDIT_ARCH_AARCH64
#endif

#define NR      offsetof(struct seccomp_data, nr)
#define ARCH    offsetof(struct seccomp_data, arch)
/* the low 32 bits of argument i (little-endian: both architectures) */
#define ARG(i)  offsetof(struct seccomp_data, args[i])
#define STMT(code, k)           BPF_STMT((code), (k))
#define JUMP(code, k, yes, no)  BPF_JUMP((code), (k), (yes), (no))
#define ALLOW   STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define FAIL    STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EIO & SECCOMP_RET_DATA))

#ifdef SYS_open
#define OPEN_NR SYS_open
#else
#define OPEN_NR 0xffffffffu   /* no open(2) here: openat only */
#endif

static int install(struct sock_filter *code, unsigned short len)
{
    struct sock_fprog prog = {.len = len, .filter = code};

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                        SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0 ? 0 : -1;
}

int fail_syscalls(const char *kind)
{
#ifndef THIS_ARCH
    (void)kind;
    errno = ENOSYS;
    return -1;
#else
    if (!strcmp(kind, "open-write")) {
        /* the flags: openat's third argument, open's second */
        struct sock_filter f[] = {
            /* 0 */ STMT(BPF_LD | BPF_W | BPF_ABS, ARCH),
            /* 1 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0),
            /* 2 */ ALLOW,
            /* 3 */ STMT(BPF_LD | BPF_W | BPF_ABS, NR),
            /* 4 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 0, 2),
            /* 5 */ STMT(BPF_LD | BPF_W | BPF_ABS, ARG(2)),
            /* 6 */ STMT(BPF_JMP | BPF_JA, 2),
            /* 7 */ JUMP(BPF_JMP | BPF_JEQ | BPF_K, OPEN_NR, 0, 3),
            /* 8 */ STMT(BPF_LD | BPF_W | BPF_ABS, ARG(1)),
            /* 9 */ JUMP(BPF_JMP | BPF_JSET | BPF_K, O_CREAT, 1, 0),
            /* 10 */ JUMP(BPF_JMP | BPF_JSET | BPF_K, O_WRONLY | O_RDWR, 1, 0),
            /* 11 */ ALLOW,
            /* 12 */ FAIL,
        };
        return install(f, sizeof(f) / sizeof(f[0]));
    }
    if (!strcmp(kind, "pwrite") || !strcmp(kind, "fsync")) {
        bool w = !strcmp(kind, "pwrite");
        struct sock_filter f[] = {
            STMT(BPF_LD | BPF_W | BPF_ABS, ARCH),
            JUMP(BPF_JMP | BPF_JEQ | BPF_K, THIS_ARCH, 1, 0), ALLOW,
            STMT(BPF_LD | BPF_W | BPF_ABS, NR),
            JUMP(BPF_JMP | BPF_JEQ | BPF_K, w ? SYS_pwrite64 : SYS_fsync,
                 3, 0),
            JUMP(BPF_JMP | BPF_JEQ | BPF_K, w ? SYS_pwritev : SYS_fdatasync,
                 2, 0),
            JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                 w ? SYS_pwritev2 : SYS_fdatasync, 1, 0),
            ALLOW,
            FAIL,
        };
        return install(f, sizeof(f) / sizeof(f[0]));
    }
    errno = EINVAL;
    return -1;
#endif
}
