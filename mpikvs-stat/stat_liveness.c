/*
 * stat_liveness.c - mpikvs-stat: is a region's job still alive?
 *
 * Slurm is asked in a child process.  libslurm ends the process that
 * calls it (fatal()) when it finds no slurm.conf, and a client call to a
 * slurmctld that is down retries for about 20 s; in a child, either costs
 * at most the timeout, and the parent says why.
 */
#define _GNU_SOURCE /* pipe2 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBSLURM
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#endif

#include "clock.h"
#include "held.h"
#include "stat_liveness.h"

const char *stat_alive_name(enum stat_alive alive)
{
    switch (alive) {
    case STAT_ALIVE_YES: return "alive";
    case STAT_ALIVE_NO:  return "gone";
    default:             return "unknown";
    }
}

/* ---- the processes that map a region ---- */

/* Users whose processes' mappings could not be read. */
struct uid_set {
    uid_t *uids;
    size_t count, cap;
    bool   overflow;     /* out of memory: treat every user as unseen */
};

static void uid_set_add(struct uid_set *s, uid_t uid)
{
    for (size_t i = 0; i < s->count; i++)
        if (s->uids[i] == uid)
            return;
    if (s->count == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        uid_t *grown = realloc(s->uids, cap * sizeof(*grown));
        if (!grown) {
            s->overflow = true;
            return;
        }
        s->uids = grown;
        s->cap = cap;
    }
    s->uids[s->count++] = uid;
}

static bool uid_set_has(const struct uid_set *s, uid_t uid)
{
    if (s->overflow)
        return true;
    for (size_t i = 0; i < s->count; i++)
        if (s->uids[i] == uid)
            return true;
    return false;
}

/* Whether a process whose maps could not be read (errno e) leaves its
 * user unseen.  Root reads every process of its own namespaces; what
 * even root may not read (a supervisor outside a container) is skipped,
 * as fuser(1) and lsof(8) skip it. */
static bool unreadable_counts(int e)
{
    return (e == EACCES || e == EPERM) && geteuid() != 0;
}

/* Count, for every region, the processes whose /proc/PID/maps shows its
 * device and inode.  Processes whose maps cannot be read leave their
 * user in unseen. */
static void scan_mappings(struct stat_region_list *list,
                          struct uid_set *unseen)
{
    pid_t self = getpid();
    pid_t *counted;     /* the last process counted for each region */
    char path[300], *line = NULL;
    size_t cap = 0;
    struct dirent *e;
    DIR *proc;

    counted = calloc(list->count ? list->count : 1, sizeof(*counted));
    proc = opendir("/proc");
    if (!counted || !proc) {
        /* nothing could be seen: every owner is unseen */
        unseen->overflow = true;
        free(counted);
        if (proc)
            closedir(proc);
        return;
    }
    while ((e = readdir(proc))) {
        pid_t pid;
        FILE *f;

        if (!kvshm_proc_pid_name(e->d_name))
            continue;
        pid = (pid_t)atol(e->d_name);
        if (pid == self)   /* our own look at a region is no job */
            continue;
        snprintf(path, sizeof(path), "/proc/%s/maps", e->d_name);
        f = fopen(path, "re");
        if (!f) {
            if (unreadable_counts(errno))
                uid_set_add(unseen, kvshm_process_euid(pid));
            continue;      /* ENOENT: it ended meanwhile */
        }
        while (getline(&line, &cap, f) > 0) {
            unsigned dev_major, dev_minor;
            unsigned long long ino;
            if (sscanf(line, "%*x-%*x %*s %*x %x:%x %llu", &dev_major,
                       &dev_minor, &ino) != 3 ||
                ino == 0)
                continue;
            for (size_t i = 0; i < list->count; i++) {
                struct stat_region *r = &list->regions[i];
                if (r->st.st_ino != (ino_t)ino ||
                    major(r->st.st_dev) != dev_major ||
                    minor(r->st.st_dev) != dev_minor || counted[i] == pid)
                    continue;
                counted[i] = pid;
                if (r->mappers++ == 0)
                    r->first_mapper = pid;
            }
        }
        if (ferror(f) && unreadable_counts(errno))
            uid_set_add(unseen, kvshm_process_euid(pid));
        fclose(f);
    }
    free(line);
    free(counted);
    closedir(proc);
}

/* ---- Slurm ---- */

enum slurm_verdict { SLURM_UNASKED = 0, SLURM_ALIVE, SLURM_GONE,
                     SLURM_UNKNOWN };

struct slurm_answer {
    char               job[KVSHM_JOB_MAX];
    enum slurm_verdict verdict;
    char               text[128];  /* the job's state, or why unknown */
};

#ifdef HAVE_LIBSLURM
static const char *state_name(uint32_t state)
{
    static const char *const names[] = {
        [JOB_PENDING] = "PENDING",     [JOB_RUNNING] = "RUNNING",
        [JOB_SUSPENDED] = "SUSPENDED", [JOB_COMPLETE] = "COMPLETED",
        [JOB_CANCELLED] = "CANCELLED", [JOB_FAILED] = "FAILED",
        [JOB_TIMEOUT] = "TIMEOUT",     [JOB_NODE_FAIL] = "NODE_FAIL",
        [JOB_PREEMPTED] = "PREEMPTED", [JOB_BOOT_FAIL] = "BOOT_FAIL",
        [JOB_DEADLINE] = "DEADLINE",   [JOB_OOM] = "OUT_OF_MEMORY",
    };
    uint32_t base = state & JOB_STATE_BASE;

    if (state & JOB_COMPLETING)
        return "COMPLETING";
    return base < sizeof(names) / sizeof(names[0]) && names[base]
               ? names[base]
               : "UNKNOWN_STATE";
}

/* In the child: one line per job, "ID alive STATE", "ID gone STATE" or
 * "ID unknown WHY".  A job that is still completing is alive: its epilog
 * is what removes its regions. */
static void ask_slurm_child(int out, const struct slurm_answer *jobs,
                            size_t n)
{
    slurm_init(NULL);
    for (size_t i = 0; i < n; i++) {
        uint32_t id = 0;
        kvshm_slurm_job_id(jobs[i].job, &id);   /* slurm_knows said so */
        job_info_msg_t *msg = NULL;
        if (slurm_load_job(&msg, id, SHOW_ALL) != SLURM_SUCCESS) {
            int e = slurm_get_errno();
            if (e == ESLURM_INVALID_JOB_ID)
                dprintf(out, "%s gone no such job\n", jobs[i].job);
            else
                dprintf(out, "%s unknown %s\n", jobs[i].job,
                        slurm_strerror(e));
            continue;
        }
        const slurm_job_info_t *info = msg->record_count
                                           ? &msg->job_array[0] : NULL;
        for (uint32_t r = 0; r < msg->record_count; r++)
            if (msg->job_array[r].job_id == id)
                info = &msg->job_array[r];
        if (!info) {
            dprintf(out, "%s gone no such job\n", jobs[i].job);
        } else {
            uint32_t base = info->job_state & JOB_STATE_BASE;
            bool alive = base == JOB_PENDING || base == JOB_RUNNING ||
                         base == JOB_SUSPENDED ||
                         (info->job_state & JOB_COMPLETING);
            dprintf(out, "%s %s %s\n", jobs[i].job, alive ? "alive" : "gone",
                    state_name(info->job_state));
        }
        slurm_free_job_info_msg(msg);
    }
}
#endif

static void set_all(struct slurm_answer *jobs, size_t n,
                    enum slurm_verdict verdict, const char *text)
{
    for (size_t i = 0; i < n; i++)
        if (jobs[i].verdict == SLURM_UNASKED) {
            jobs[i].verdict = verdict;
            snprintf(jobs[i].text, sizeof(jobs[i].text), "%s", text);
        }
}

#ifdef HAVE_LIBSLURM
static void take_answer(struct slurm_answer *jobs, size_t n, char *line)
{
    char *verdict = strchr(line, ' '), *text;

    if (!verdict)
        return;
    *verdict++ = '\0';
    text = strchr(verdict, ' ');
    if (!text)
        return;
    *text++ = '\0';
    for (size_t i = 0; i < n; i++) {
        if (strcmp(jobs[i].job, line) != 0)
            continue;
        jobs[i].verdict = !strcmp(verdict, "alive") ? SLURM_ALIVE
                          : !strcmp(verdict, "gone") ? SLURM_GONE
                                                     : SLURM_UNKNOWN;
        snprintf(jobs[i].text, sizeof(jobs[i].text), "%s", text);
    }
}

/* What libslurm said last on the child's stderr ("fatal: Could not
 * establish a configuration source"), without its program prefix. */
static void last_complaint(char *text, char *out, size_t outlen)
{
    char *line = NULL, *save = NULL, *p;

    for (p = strtok_r(text, "\n", &save); p; p = strtok_r(NULL, "\n", &save))
        if (strstr(p, "error:") || strstr(p, "fatal:"))
            line = p;
    if (!line)
        return;
    p = strstr(line, "fatal: ");
    if (!p)
        p = strstr(line, "error: ");
    snprintf(out, outlen, "%s", p ? strchr(p, ' ') + 1 : line);
}

/* What a pipe has said so far: kept up to max bytes, the rest read and
 * dropped, so that the child never blocks on a full pipe. */
struct heard {
    char  *text;
    size_t len, cap, max;
};

/* Read what fd has; false at its end (or on an error). */
static bool hear(int fd, struct heard *h)
{
    char scratch[4096], *to = scratch;
    size_t room = sizeof(scratch);
    ssize_t got;

    if (h->len + 1 < h->max) {
        if (h->cap - h->len < 2) {
            size_t cap = h->cap ? 2 * h->cap : 4096;
            char *grown = realloc(h->text, cap);
            if (grown) {
                h->text = grown;
                h->cap = cap;
                h->text[h->len] = '\0';   /* text even if nothing comes */
            }
        }
        if (h->cap - h->len >= 2) {
            to = h->text + h->len;
            room = h->cap - h->len - 1;
        }
    }
    got = read(fd, to, room);
    if (got < 0 && errno == EINTR)
        return true;
    if (got <= 0)
        return false;
    if (to != scratch) {
        h->len += (size_t)got;
        h->text[h->len] = '\0';
    }
    return true;
}

static void ask_slurm(struct slurm_answer *jobs, size_t n, unsigned timeout)
{
    struct heard answers = {NULL, 0, 0, (size_t)1 << 20},
                 complaints = {NULL, 0, 0, 16384};
    int out[2] = {-1, -1}, errs[2] = {-1, -1}, status;
    struct pollfd fds[2];
    char why[128];
    long long deadline;
    bool finished = false;
    pid_t child;

    if (pipe2(out, O_CLOEXEC) != 0 || pipe2(errs, O_CLOEXEC) != 0) {
        snprintf(why, sizeof(why), "slurm: cannot ask: %s", strerror(errno));
        set_all(jobs, n, SLURM_UNKNOWN, why);
        goto close_pipes;
    }
    fflush(NULL);
    child = fork();
    if (child < 0) {
        snprintf(why, sizeof(why), "slurm: cannot ask: %s", strerror(errno));
        set_all(jobs, n, SLURM_UNKNOWN, why);
        goto close_pipes;
    }
    if (child == 0) {
        /* whatever libslurm prints is for the parent to judge, never for
         * the user's terminal or a JSON reader */
        dup2(errs[1], STDOUT_FILENO);
        dup2(errs[1], STDERR_FILENO);
        ask_slurm_child(out[1], jobs, n);
        _exit(0);
    }
    close(out[1]);
    close(errs[1]);
    out[1] = errs[1] = -1;
    deadline = (long long)kvshm_now_ms() + (long long)timeout * 1000;
    /* until the child closes its answers (it ends), or time is up; a
     * negative fd is one poll() skips: that pipe has ended */
    fds[0] = (struct pollfd){out[0], POLLIN, 0};
    fds[1] = (struct pollfd){errs[0], POLLIN, 0};
    while (!finished) {
        long long left = deadline - (long long)kvshm_now_ms();
        if (left <= 0)
            break;
        if (poll(fds, 2, (int)left) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[0].revents && !hear(out[0], &answers))
            finished = true;
        if (fds[1].revents && !hear(errs[0], &complaints))
            fds[1].fd = -1;
    }
    if (!finished)
        kill(child, SIGKILL);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    for (char *save = NULL,
              *line = answers.text ? strtok_r(answers.text, "\n", &save)
                                   : NULL;
         line; line = strtok_r(NULL, "\n", &save))
        take_answer(jobs, n, line);
    if (!finished) {
        snprintf(why, sizeof(why),
                 "slurm: slurmctld did not answer within %u s", timeout);
    } else {
        char said[96] = "";
        if (complaints.text)
            last_complaint(complaints.text, said, sizeof(said));
        snprintf(why, sizeof(why), "slurm: %s",
                 said[0] ? said : "no answer from libslurm");
    }
    set_all(jobs, n, SLURM_UNKNOWN, why);
    free(answers.text);
    free(complaints.text);

close_pipes:
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (errs[i] >= 0)
            close(errs[i]);
    }
}
#endif

/* Whether Slurm can tell about the region's job: the plugin made it (a
 * step in the header) for a job id Slurm gives (digits, 32 bits). */
static bool slurm_knows(const struct stat_region *r)
{
    return r->job[0] && stat_region_is_slurm(r) &&
           kvshm_slurm_job_id(r->job, NULL);
}

/* The Slurm jobs among the regions, each once, with Slurm's verdict;
 * NULL when out of memory. */
static struct slurm_answer *slurm_verdicts(const struct stat_region_list *l,
                                           unsigned timeout, size_t *count)
{
    struct slurm_answer *jobs;
    size_t n = 0;

    *count = 0;
    jobs = calloc(l->count ? l->count : 1, sizeof(*jobs));
    if (!jobs)
        return NULL;
    for (size_t i = 0; i < l->count; i++) {
        const struct stat_region *r = &l->regions[i];
        /* sorted by job: a job's regions are side by side */
        if (!slurm_knows(r) || (n && strcmp(jobs[n - 1].job, r->job) == 0))
            continue;
        snprintf(jobs[n].job, sizeof(jobs[n].job), "%s", r->job);
        n++;
    }
    if (n && timeout == 0)
        set_all(jobs, n, SLURM_UNKNOWN,
                "slurm: not asked (--slurm-timeout 0)");
#ifdef HAVE_LIBSLURM
    else if (n)
        ask_slurm(jobs, n, timeout);
#else
    else if (n)
        set_all(jobs, n, SLURM_UNKNOWN,
                "slurm: not asked (mpikvs-stat was built without libslurm)");
#endif
    *count = n;
    return jobs;
}

/* ---- the verdict per region ---- */

/* Whether an unreadable /proc hides the processes that could map r:
 * only the owner's processes (and root's) open a region made mode 0600,
 * and libmpikvs opens only regions of its own user. */
static bool owner_hidden(const struct stat_region *r,
                         const struct uid_set *unseen)
{
    return (geteuid() != 0 && r->st.st_uid != geteuid()) ||
           uid_set_has(unseen, r->st.st_uid);
}

static void append_why(struct stat_liveness *v, const char *fmt,
                       const char *text)
{
    size_t len = strlen(v->why);

    snprintf(v->why + len, sizeof(v->why) - len, fmt, text);
}

/*
 * Judge r, one of the n regions of its job (job .. job + n - 1), on its
 * own evidence.  A process that maps r, or maps another region of the
 * job with r's owner, says the job is alive.  When any region of the job
 * carries a step, Slurm was asked (slurm, NULL when it could not be):
 * for a region with a step its answer is the verdict; for one without, a
 * job Slurm says is alive keeps it, and otherwise its mappings decide.
 * Nothing another uid's file says, maps or claims turns r "gone": every
 * file can be planted by its owner.
 */
static void judge_region(struct stat_region *r, const struct stat_region *job,
                         size_t n, bool slurm_asked,
                         const struct slurm_answer *slurm,
                         const struct uid_set *unseen)
{
    struct stat_liveness v = {STAT_ALIVE_UNKNOWN, ""};
    const struct stat_region *mapped = r->mappers ? r : NULL;
    bool told = slurm && slurm->verdict != SLURM_UNKNOWN;

    for (size_t i = 0; !mapped && r->job[0] && i < n; i++)
        if (job[i].mappers && job[i].st.st_uid == r->st.st_uid)
            mapped = &job[i];
    if (!r->job[0]) {
        snprintf(v.why, sizeof(v.why), "not a region name: no job");
    } else if (mapped) {
        v.alive = STAT_ALIVE_YES;
        snprintf(v.why, sizeof(v.why), "mapped by pid %d",
                 (int)mapped->first_mapper);
        if (mapped->mappers > 1)
            snprintf(v.why + strlen(v.why), sizeof(v.why) - strlen(v.why),
                     " and %u more", mapped->mappers - 1);
        if (mapped != r)
            append_why(&v, " (its %s)", mapped->tag);
        if (told)
            append_why(&v, "; slurm: %s", slurm->text);
        if (r->unlinked)
            append_why(&v, "%s", "; name unlinked at open");
    } else if (r->unlinked) {
        /* what holds it open is its job, as for a mapping */
        v.alive = STAT_ALIVE_YES;
        snprintf(v.why, sizeof(v.why), "held open by pid %d; name unlinked "
                 "at open", (int)r->holder);
    } else if (stat_region_is_slurm(r)) {
        if (!slurm_knows(r)) {
            /* a step in the header, but a job id Slurm never gives */
            snprintf(v.why, sizeof(v.why),
                     "made in a Slurm step for job '%s', which Slurm cannot "
                     "be asked about",
                     r->job);
        } else if (!slurm) {
            snprintf(v.why, sizeof(v.why),
                     "slurm: not asked (out of memory)");
        } else {
            v.alive = slurm->verdict == SLURM_ALIVE  ? STAT_ALIVE_YES
                      : slurm->verdict == SLURM_GONE ? STAT_ALIVE_NO
                                                     : STAT_ALIVE_UNKNOWN;
            snprintf(v.why, sizeof(v.why), "%s%s", told ? "slurm: " : "",
                     slurm->text);
        }
    } else if (slurm && slurm->verdict == SLURM_ALIVE) {
        v.alive = STAT_ALIVE_YES;
        snprintf(v.why, sizeof(v.why), "slurm: %s", slurm->text);
    } else if (slurm_asked && !slurm) {
        snprintf(v.why, sizeof(v.why), "slurm: not asked (out of memory)");
    } else if (owner_hidden(r, unseen)) {
        snprintf(v.why, sizeof(v.why),
                 "cannot see the mappings of uid %u's processes: run as "
                 "root or as that user",
                 (unsigned)r->st.st_uid);
    } else {
        v.alive = STAT_ALIVE_NO;
        snprintf(v.why, sizeof(v.why), "no process maps it");
    }
    r->liveness = v;
}

void stat_liveness_judge(struct stat_region_list *list,
                         unsigned slurm_timeout)
{
    struct uid_set unseen = {NULL, 0, 0, false};
    struct slurm_answer *slurm;
    size_t nslurm = 0;

    for (size_t i = 0; i < list->count; i++) {
        list->regions[i].mappers = 0;
        list->regions[i].first_mapper = 0;
    }
    if (list->count == 0)   /* nothing to look for in /proc */
        return;
    scan_mappings(list, &unseen);
    slurm = slurm_verdicts(list, slurm_timeout, &nslurm);
    for (size_t i = 0; i < list->count;) {
        struct stat_region *first = &list->regions[i];
        const struct slurm_answer *answer = NULL;
        bool asked = false;
        size_t n = 1;
        /* a job's regions are side by side (sorted); a file whose name
         * does not parse is judged alone */
        while (first->job[0] && i + n < list->count &&
               strcmp(list->regions[i + n].job, first->job) == 0)
            n++;
        for (size_t j = 0; j < n; j++)
            asked |= slurm_knows(&first[j]);
        for (size_t j = 0; slurm && j < nslurm; j++)
            if (strcmp(slurm[j].job, first->job) == 0)
                answer = &slurm[j];
        for (size_t j = 0; j < n; j++)
            judge_region(&first[j], first, n, asked, answer, &unseen);
        i += n;
    }
    free(slurm);
    free(unseen.uids);
}

void stat_liveness_of_job(const struct stat_region *regions, size_t n,
                          struct stat_liveness *out)
{
    const struct stat_liveness *pick = NULL;

    /* alive if any region is: a job is gone only when all of it is */
    for (size_t i = 0; i < n && !pick; i++)
        if (regions[i].liveness.alive == STAT_ALIVE_YES)
            pick = &regions[i].liveness;
    for (size_t i = 0; i < n && !pick; i++)
        if (regions[i].liveness.alive == STAT_ALIVE_UNKNOWN)
            pick = &regions[i].liveness;
    if (!pick && n)
        pick = &regions[0].liveness;
    if (pick)
        *out = *pick;
    else
        *out = (struct stat_liveness){STAT_ALIVE_UNKNOWN, ""};
}
