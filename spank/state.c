/*
 * state.c - the plugin's state in this process, and its error reporting.
 *
 * Every context's file fills and reads the one struct plugin; every
 * message goes through plugin_error, which also keeps the first one for
 * the step's exit (or, in the namespace child, hands it to the parent).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "plugin.h"

struct plugin mpikvs_plugin;

void plugin_error(const char *fmt, ...)
{
    char text[sizeof(mpikvs_plugin.failure) - sizeof(PLUGIN_NAME ": ")];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (mpikvs_plugin.child_reports) {   /* the parent logs it */
        size_t len = strcspn(text, "\n");
        text[len] = '\n';
        /* a line is short: one write; if the parent is gone, nobody
         * is left to tell */
        ssize_t written = write(mpikvs_plugin.report_fd, text, len + 1);
        (void)written;
        return;
    }
    slurm_error("%s: %s", PLUGIN_NAME, text);
    if (!mpikvs_plugin.failure[0])
        snprintf(mpikvs_plugin.failure, sizeof(mpikvs_plugin.failure),
                 "%s: %s", PLUGIN_NAME, text);
}
