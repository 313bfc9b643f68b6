/*
 * qtest-call: send qtest protocol commands to a QEMU, for the rig
 *
 * Connects to the UNIX socket of QEMU's -qtest chardev, sends each
 * argument as one command line ("outl 0xa00 0", "memset ADDR SIZE V")
 * and prints each reply.  Scenarios use it to play the guest's part
 * where a device waits for one, such as the ACPI eject of a DIMM.
 *
 * Usage: qtest-call SOCKET COMMAND...
 *
 * Exit status: 0 when every reply was "OK", 1 when one was not or the
 * connection broke, 3 on a usage or setup error.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    char *line = NULL;
    size_t cap = 0;
    FILE *in;
    int fd, i;

    if (argc < 3) {
        fprintf(stderr, "usage: qtest-call SOCKET COMMAND...\n");
        return 3;
    }
    snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", argv[1]);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
        fprintf(stderr, "qtest-call: cannot connect to %s: %s\n", argv[1],
                strerror(errno));
        return 3;
    }
    in = fdopen(fd, "r");

    for (i = 2; i < argc; i++) {
        size_t len = strlen(argv[i]);

        if (write(fd, argv[i], len) != (ssize_t)len ||
            write(fd, "\n", 1) != 1) {
            fprintf(stderr, "qtest-call: write: %s\n", strerror(errno));
            return 1;
        }
        /* Interrupt notices are not replies */
        do {
            if (getline(&line, &cap, in) <= 0) {
                fprintf(stderr, "qtest-call: connection closed\n");
                return 1;
            }
        } while (!strncmp(line, "IRQ ", 4));
        fputs(line, stdout);
        if (strncmp(line, "OK", 2)) {
            return 1;
        }
    }
    return 0;
}
