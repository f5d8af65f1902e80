/*
 * namespace.c - doing the node's region work where the tasks will look.
 *
 * With job_container/tmpfs every job has a mount namespace of its own,
 * with a private /dev/shm.  slurmstepd never enters it (Slurm joins it
 * only in the processes it forks for the tasks), so regions made in
 * slurmstepd itself would land in the node's /dev/shm, where the tasks
 * cannot see them.  The plugin's ns_path= argument names the file that
 * holds the job's namespace (job_container/tmpfs keeps it in
 * <BasePath>/<job id>/.ns); the work then runs in a child that joins it.
 *
 * The child's errors belong to the parent, which keeps the first for
 * user_init to tell the user: in the child plugin_error writes them to a
 * pipe, a line each, and the parent logs them.  The parent waits for the
 * child WORK_LIMIT_S at most, then kills it and fails the step: what it
 * made by then goes in the job epilog.
 */
#define _GNU_SOURCE   /* setns */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin.h"

/* The child's result travels in its exit status; one value is kept
 * for "failed" and one for "did not finish". */
#define CHILD_FAILED 100

int namespace_expand(const char *pattern, const struct step *s, char *out,
                     size_t size)
{
    size_t n = 0;

    for (const char *c = pattern; *c; c++) {
        const char *piece;
        char one[2] = {*c, '\0'};
        if (*c != '%') {
            piece = one;
        } else {
            c++;
            piece = *c == 'j' ? s->job_text
                    : *c == 'n' ? s->node
                    : *c == '%' ? "%"
                    : NULL;
            if (!piece)   /* site.c checked the pattern */
                return -1;
        }
        size_t len = strlen(piece);
        if (n + len >= size)
            return -1;
        memcpy(out + n, piece, len);
        n += len;
    }
    out[n] = '\0';
    return 0;
}

static long ms_left(const struct timespec *deadline)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (deadline->tv_sec - now.tv_sec) * 1000L +
           (deadline->tv_nsec - now.tv_nsec) / 1000000L;
}

/* Log what the child said, a line an error, once it has closed the pipe
 * (it ended); false when the deadline came first.  It says a few lines
 * at most; what does not fit is read and dropped. */
static bool relay_child_errors(int fd, const struct timespec *deadline)
{
    char buf[8192], sink[512], *save = NULL;
    size_t have = 0;
    bool ended = false;

    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        long left = ms_left(deadline);
        if (left <= 0)
            break;
        int ready = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            break;
        bool room = have < sizeof(buf) - 1;
        ssize_t got = read(fd, room ? buf + have : sink,
                           room ? sizeof(buf) - 1 - have : sizeof(sink));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            ended = true;
            break;
        }
        if (room)
            have += (size_t)got;
    }
    buf[have] = '\0';
    for (char *line = strtok_r(buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save))
        plugin_error("%s", line);
    return ended;
}

/* Reap the child by the deadline; false when it has not ended by then. */
static bool reap(pid_t child, int *status, const struct timespec *deadline)
{
    for (;;) {
        pid_t got = waitpid(child, status, WNOHANG);
        struct timespec pause = {0, 10000000};
        if (got == child)
            return true;
        if (got < 0 && errno != EINTR) {
            plugin_error("waitpid: %s", strerror(errno));
            return false;
        }
        if (ms_left(deadline) <= 0)
            return false;
        nanosleep(&pause, NULL);
    }
}

/* Never wait without end in slurmstepd: a child that has not finished
 * by the deadline is killed, and the step fails. */
static void give_up(pid_t child, const char *ns_file)
{
    struct timespec deadline;
    int status;

    plugin_error("the process working in the job's mount namespace %s did "
                 "not finish within %d s: killed it (pid %d); see the "
                 "slurmd log of this node",
                 ns_file, WORK_LIMIT_S, (int)child);
    kill(child, SIGKILL);
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += 10;   /* SIGKILL ends it unless it is stuck in the
                              * kernel; then it stays a zombie */
    reap(child, &status, &deadline);
}

static int run_in_namespace(const char *ns_file, int (*work)(void *),
                            void *arg)
{
    int ns_fd, pipe_fd[2], status;
    struct timespec deadline;
    pid_t child;

    /* never waits, whatever is at the path (a FIFO fails at setns) */
    ns_fd = open(ns_file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (ns_fd < 0) {
        plugin_error("cannot open the job's mount namespace %s (plugstack "
                     "argument ns_path): %s; is JobContainerType="
                     "job_container/tmpfs with PrologFlags=Contain set, "
                     "and does ns_path match job_container.conf's "
                     "BasePath?",
                     ns_file, strerror(errno));
        return -1;
    }
    if (pipe2(pipe_fd, O_CLOEXEC) != 0) {
        plugin_error("pipe: %s", strerror(errno));
        close(ns_fd);
        return -1;
    }
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += WORK_LIMIT_S;
    child = fork();
    if (child < 0) {
        plugin_error("fork: %s", strerror(errno));
        close(ns_fd);
        close(pipe_fd[0]);
        close(pipe_fd[1]);
        return -1;
    }
    if (child == 0) {
        int rc;
        close(pipe_fd[0]);
        mpikvs_plugin.child_reports = true;
        mpikvs_plugin.report_fd = pipe_fd[1];
        if (setns(ns_fd, CLONE_NEWNS) != 0) {
            plugin_error("cannot join the job's mount namespace %s: %s",
                         ns_file, strerror(errno));
            _exit(CHILD_FAILED);
        }
        rc = work(arg);
        _exit(rc < 0 || rc >= CHILD_FAILED ? CHILD_FAILED : rc);
    }
    close(ns_fd);
    close(pipe_fd[1]);
    bool ended = relay_child_errors(pipe_fd[0], &deadline) &&
                 reap(child, &status, &deadline);
    close(pipe_fd[0]);
    if (!ended) {
        give_up(child, ns_file);
        return -1;
    }
    if (WIFSIGNALED(status)) {
        plugin_error("the process working in the job's namespace died of "
                     "signal %d", WTERMSIG(status));
        return -1;
    }
    if (WEXITSTATUS(status) == CHILD_FAILED)
        return -1;
    return WEXITSTATUS(status);
}

int in_job_namespace(const struct plugin *p, const struct step *s,
                     int (*work)(void *), void *arg)
{
    char ns_file[PATH_MAX];

    if (!p->site.ns_path[0])
        return work(arg);
    if (namespace_expand(p->site.ns_path, s, ns_file, sizeof(ns_file)) !=
        0) {
        plugin_error("ns_path=%s: too long for job %u on %s",
                     p->site.ns_path, s->job, s->node);
        return -1;
    }
    return run_in_namespace(ns_file, work, arg);
}
