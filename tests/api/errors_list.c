/*
 * errors_list.c - the return codes of MPIKVS_RETURN_CODES
 * (include/mpikvs_errors.h), one "NAME VALUE" line each, in order, then
 * "band FIRST LAST", for check-errors.sh to hold the man pages against.
 * Exits 1 when mpikvs_strerror gives a code another text than the
 * list's (printed on stderr).
 */
#include <stdio.h>
#include <string.h>

#include "mpikvs_errors.h"

int main(void)
{
    int bad = 0;

#define SHOW(name, value, text)                                         \
    printf("%s %d\n", #name, (int)(value));                             \
    if (strcmp(mpikvs_strerror(value), text) != 0) {                    \
        fprintf(stderr, "mpikvs_strerror(%s) is '%s', not '%s'\n",      \
                #name, mpikvs_strerror(value), text);                   \
        bad = 1;                                                        \
    }
    MPIKVS_RETURN_CODES(SHOW)
#undef SHOW
    printf("band %d %d\n", (int)MPIKVS_ERR_FIRST, (int)MPIKVS_ERR_LAST);
    return bad;
}
