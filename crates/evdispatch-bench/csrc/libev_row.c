/*
 * The libev row of `evdispatch bench poller`: Kegel's loop written against
 * libev's public API (one ev_io watcher per descriptor, ev_run with
 * EVRUN_ONCE). The callback does what Poller_bench's handler did:
 * read(fd, buf, 1). Same four functions as libevent_row.c.
 */
#include <stdlib.h>
#include <unistd.h>

#include <ev.h>

struct evd_row {
    struct ev_loop *loop;
    ev_io *watchers;
    size_t n;
    long bytes;
    long spurious;
};

static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    struct evd_row *row = w->data;
    char buf[1];
    (void)loop;
    (void)revents;
    if (read(w->fd, buf, 1) == 1)
        row->bytes++;
    else
        row->spurious++;
}

void evd_libev_free(struct evd_row *row)
{
    if (!row)
        return;
    if (row->loop) {
        for (size_t i = 0; i < row->n; i++)
            ev_io_stop(row->loop, &row->watchers[i]);
        ev_loop_destroy(row->loop);
    }
    free(row->watchers);
    free(row);
}

struct evd_row *evd_libev_new(const int *fds, size_t n)
{
    struct evd_row *row = calloc(1, sizeof *row);
    if (!row)
        return NULL;
    row->loop = ev_loop_new(EVFLAG_AUTO);
    row->watchers = calloc(n ? n : 1, sizeof *row->watchers);
    if (!row->loop || !row->watchers) {
        evd_libev_free(row);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        ev_io_init(&row->watchers[i], on_readable, fds[i], EV_READ);
        row->watchers[i].data = row;
        ev_io_start(row->loop, &row->watchers[i]);
        row->n = i + 1;
    }
    return row;
}

/* out[0] = bytes, out[1] = spurious callbacks, out[2] = ev_run calls. */
int evd_libev_iterate(struct evd_row *row, size_t active, long *out)
{
    long loops = 0;
    row->bytes = 0;
    row->spurious = 0;
    while (row->bytes < (long)active) {
        ev_run(row->loop, EVRUN_ONCE);
        loops++;
    }
    out[0] = row->bytes;
    out[1] = row->spurious;
    out[2] = loops;
    return 0;
}

const char *evd_libev_backend(const struct evd_row *row)
{
    switch (ev_backend(row->loop)) {
    case EVBACKEND_SELECT: return "select";
    case EVBACKEND_POLL: return "poll";
    case EVBACKEND_EPOLL: return "epoll";
    case EVBACKEND_KQUEUE: return "kqueue";
    case EVBACKEND_DEVPOLL: return "devpoll";
    case EVBACKEND_PORT: return "port";
#ifdef EVBACKEND_LINUXAIO
    case EVBACKEND_LINUXAIO: return "linuxaio";
#endif
#ifdef EVBACKEND_IOURING
    case EVBACKEND_IOURING: return "io_uring";
#endif
    default: return "unknown";
    }
}
