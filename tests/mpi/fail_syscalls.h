/*
 * fail_syscalls.h - make this process's system calls of one kind fail
 * with EIO from now on, for the tests' fault injection in MPI jobs.
 */
#ifndef MPIKVS_TESTS_FAIL_SYSCALLS_H
#define MPIKVS_TESTS_FAIL_SYSCALLS_H

/* The kinds: "open-write" (open and openat of an existing file for
 * writing, without O_CREAT: MPI-IO's open of a file made before),
 * "pwrite" (pwrite64, pwritev, pwritev2), "fsync" (fsync, fdatasync). */
/*
 * Every thread of the process, and the ones it starts later, gets EIO
 * from the calls of kind, until the process ends (a seccomp filter: it
 * cannot be taken back).  Returns 0, or -1 with errno set (EINVAL for
 * an unknown kind, ENOSYS where this architecture is not known).
 */
int fail_syscalls(const char *kind);

#endif
