/*
 * qmp-call: send QMP commands to a QEMU monitor socket, for the rig
 *
 * Connects to the UNIX socket, negotiates capabilities, sends each
 * argument (a JSON command) in turn and prints each reply on a line of
 * its own.  Events are skipped.  The guest has no Python; scenarios use
 * this and grep.
 *
 * Usage: qmp-call SOCKET COMMAND-JSON...
 *   e.g. qmp-call /tmp/qmp.sock '{"execute": "query-pseudolock"}'
 *
 * A QEMU that does not answer within QMP_CALL_TIMEOUT seconds in all
 * (its main loop is stuck) ends the call with a message and status 4,
 * so that a scenario fails at that step instead of hanging.
 *
 * Exit status: 0 when every command returned, 1 when one failed or the
 * connection broke, 3 on a usage or setup error, 4 when QEMU did not
 * answer in time.
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
#include <unistd.h>

static FILE *in;

/* The next line from QEMU that is not an event; NULL at EOF */
static char *next_reply(void)
{
    static char *line;
    static size_t cap;

    while (getline(&line, &cap, in) > 0) {
        if (!strstr(line, "\"event\"")) {
            return line;
        }
    }
    return NULL;
}

static int send_command(int fd, const char *json)
{
    size_t len = strlen(json);

    if (write(fd, json, len) != (ssize_t)len || write(fd, "\n", 1) != 1) {
        fprintf(stderr, "qmp-call: write: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

#define QMP_CALL_TIMEOUT 90
#define STRINGIFY(x) #x
#define XSTRINGIFY(x) STRINGIFY(x)

static void no_answer(int sig)
{
    static const char msg[] = "qmp-call: QEMU did not answer within "
                              XSTRINGIFY(QMP_CALL_TIMEOUT) " s\n";

    (void)sig;
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
        /* nothing more to do */
    }
    _exit(4);
}

int main(int argc, char **argv)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    char *reply;
    int fd, i, status = 0;

    if (argc < 3) {
        fprintf(stderr, "usage: qmp-call SOCKET COMMAND-JSON...\n");
        return 3;
    }
    sigaction(SIGALRM, &(struct sigaction) { .sa_handler = no_answer },
              NULL);
    alarm(QMP_CALL_TIMEOUT);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[1]);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        fprintf(stderr, "qmp-call: cannot connect to %s: %s\n", argv[1],
                strerror(errno));
        return 3;
    }
    in = fdopen(dup(fd), "r");
    if (!in || !next_reply() ||
        send_command(fd, "{\"execute\": \"qmp_capabilities\"}") < 0 ||
        !next_reply()) {
        fprintf(stderr, "qmp-call: no QMP greeting on %s\n", argv[1]);
        return 3;
    }
    for (i = 2; i < argc; i++) {
        if (send_command(fd, argv[i]) < 0) {
            return 1;
        }
        reply = next_reply();
        if (!reply) {
            fprintf(stderr, "qmp-call: QEMU closed the monitor\n");
            return 1;
        }
        fputs(reply, stdout);
        if (!strstr(reply, "\"return\"")) {
            status = 1;
        }
    }
    close(fd);
    return status;
}
