/*
 * qmp-ready-time: how long a QEMU takes from exec to answering QMP
 *
 * Starts COMMAND (a QEMU whose -qmp listens on SOCKET), connects as
 * soon as the socket accepts, and stops the clock when "query-status"
 * returns: QMP commands run in the main loop, so that is after the
 * machine was built and reset.  Then it quits QEMU and prints the time
 * in microseconds.  The initramfs has no clock finer than a second in
 * the shell, and hyperfine would time the shutdown too.
 *
 * Usage: qmp-ready-time SOCKET COMMAND [ARG...]
 *
 * Exit status: 0 with the time on stdout, 1 when QEMU exited or never
 * answered (within 60 s), 3 on a usage or setup error.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Read lines until one holds "return"; false at EOF */
static int await_return(FILE *in)
{
    static char *line;
    static size_t cap;

    while (getline(&line, &cap, in) > 0) {
        if (strstr(line, "\"return\"")) {
            return 1;
        }
    }
    return 0;
}

static int say(int fd, const char *json)
{
    size_t len = strlen(json);

    return write(fd, json, len) == (ssize_t)len;
}

int main(int argc, char **argv)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    double start, ready;
    FILE *in = NULL;
    int fd = -1, status;
    pid_t pid;

    if (argc < 3) {
        fprintf(stderr, "usage: qmp-ready-time SOCKET COMMAND [ARG...]\n");
        return 3;
    }
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[1]);
    unlink(argv[1]);

    start = now_us();
    pid = fork();
    if (pid < 0) {
        perror("qmp-ready-time: fork");
        return 3;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        fprintf(stderr, "qmp-ready-time: cannot run %s: %s\n", argv[2],
                strerror(errno));
        _exit(127);
    }

    while (now_us() - start < 60e6) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "qmp-ready-time: QEMU exited before it "
                    "answered QMP\n");
            return 1;
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 &&
            connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) {
            break;
        }
        if (fd >= 0) {
            close(fd);
            fd = -1;
        }
        usleep(1000);
    }
    if (fd < 0) {
        fprintf(stderr, "qmp-ready-time: no QMP on %s\n", argv[1]);
        kill(pid, SIGKILL);
        return 1;
    }
    in = fdopen(fd, "r");
    if (!say(fd, "{\"execute\": \"qmp_capabilities\"}\n") ||
        !await_return(in) ||
        !say(fd, "{\"execute\": \"query-status\"}\n") ||
        !await_return(in)) {
        fprintf(stderr, "qmp-ready-time: QMP did not answer\n");
        kill(pid, SIGKILL);
        return 1;
    }
    ready = now_us();
    say(fd, "{\"execute\": \"quit\"}\n");
    waitpid(pid, &status, 0);
    printf("%.0f\n", ready - start);
    return 0;
}
