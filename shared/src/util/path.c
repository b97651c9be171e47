/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Go's path.Clean. The output is written left to right behind the reading position; `dotdot`
 * marks the prefix that ".." may not remove (the root, or leading ".." of a relative path).
 */
#include "co/util/path.h"

#include <stdbool.h>
#include <string.h>

#include "co/util/common.h"

size_t co_path_clean_into(char *out, const char *p, size_t n)
{
    bool rooted = n > 0 && p[0] == '/';
    size_t w = 0, r = 0, dotdot = 0;
    if (rooted) {
        out[w++] = '/';
        r = 1;
        dotdot = 1;
    }
    while (r < n) {
        if (p[r] == '/' || (p[r] == '.' && (r + 1 == n || p[r + 1] == '/'))) {
            r++;
        } else if (p[r] == '.' && r + 1 < n && p[r + 1] == '.' && (r + 2 == n || p[r + 2] == '/')) {
            r += 2;
            if (w > dotdot) {
                w--;
                while (w > dotdot && out[w] != '/') {
                    w--;
                }
            } else if (!rooted) {
                if (w > 0) {
                    out[w++] = '/';
                }
                out[w++] = '.';
                out[w++] = '.';
                dotdot = w;
            }
        } else {
            if ((rooted && w != 1) || (!rooted && w != 0)) {
                out[w++] = '/';
            }
            for (; r < n && p[r] != '/'; r++) {
                out[w++] = p[r];
            }
        }
    }
    if (w == 0) {
        out[w++] = '.';
    }
    out[w] = '\0';
    return w;
}

char *co_path_clean(const char *path)
{
    size_t n = strlen(path);
    char *out = co_xmalloc(CO_PATH_CLEAN_SIZE(n));
    co_path_clean_into(out, path, n);
    return out;
}
