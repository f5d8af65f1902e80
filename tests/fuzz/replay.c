/*
 * replay.c - run a fuzz target over files, without libFuzzer, so that the
 * test suite replays the corpus on every build (any compiler, sanitizers
 * or not).  Arguments are files or directories of files.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    size_t len;

    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    buf = malloc(1 << 21);
    if (!buf) {
        fclose(f);
        return -1;
    }
    len = fread(buf, 1, 1 << 21, f);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    unsigned files = 0;

    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (replay_file(argv[i]))
                return 1;
            files++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *de;
        if (!d)
            return 1;
        while ((de = readdir(d))) {
            char path[8192];
            if (de->d_name[0] == '.')
                continue;
            snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
            if (replay_file(path)) {
                closedir(d);
                return 1;
            }
            files++;
        }
        closedir(d);
    }
    if (files == 0) {
        fprintf(stderr, "replay: no inputs\n");
        return 1;
    }
    printf("replay: %u inputs, no crash\n", files);
    return 0;
}
