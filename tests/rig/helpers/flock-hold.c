/*
 * flock-hold: hold flock(LOCK_EX) on a file or directory until killed
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 *
 * The rig's busybox has no flock(1).  Scenarios use this to be the
 * other user who holds the resctrl lock, or a region's claim, while the
 * fork's QEMU wants it: "locked" on stdout says the lock is held.
 *
 * Usage: flock-hold PATH
 */

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include <sys/file.h>

int main(int argc, char **argv)
{
    int fd;

    if (argc != 2) {
        fprintf(stderr, "usage: flock-hold PATH\n");
        return 2;
    }
    fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        fprintf(stderr, "flock-hold: cannot open %s: %s\n", argv[1],
                strerror(errno));
        return 1;
    }
    if (flock(fd, LOCK_EX) < 0) {
        fprintf(stderr, "flock-hold: cannot lock %s: %s\n", argv[1],
                strerror(errno));
        return 1;
    }
    printf("locked\n");
    fflush(stdout);
    for (;;) {
        pause();
    }
}
