/*
 * The libevent row of `evdispatch bench poller`: Kegel's loop written against
 * libevent's public API (event_base, event_new with EV_READ|EV_PERSIST,
 * event_base_loop with EVLOOP_ONCE). The callback does what Poller_bench's
 * handler did: read(fd, buf, 1).
 *
 * The Rust side (src/sys.rs) calls these four functions; every row of the
 * bench, Rust or C, has the same shape: set up N descriptors, run one
 * iteration, tear down.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <event2/event.h>

struct evd_row {
    struct event_base *base;
    struct event **events;
    size_t n;
    long bytes;    /* bytes read during the current iteration */
    long spurious; /* callbacks whose read found nothing */
};

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    struct evd_row *row = arg;
    char buf[1];
    (void)what;
    if (read(fd, buf, 1) == 1)
        row->bytes++;
    else
        row->spurious++;
}

void evd_libevent_free(struct evd_row *row)
{
    if (!row)
        return;
    for (size_t i = 0; i < row->n; i++)
        if (row->events[i])
            event_free(row->events[i]);
    free(row->events);
    if (row->base)
        event_base_free(row->base);
    free(row);
}

/* Watch fds[0..n) for reading; NULL on failure (errno says why when libevent set it). */
struct evd_row *evd_libevent_new(const int *fds, size_t n)
{
    struct evd_row *row = calloc(1, sizeof *row);
    if (!row)
        return NULL;
    row->base = event_base_new();
    row->events = calloc(n ? n : 1, sizeof *row->events);
    if (!row->base || !row->events) {
        evd_libevent_free(row);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        row->events[i] = event_new(row->base, fds[i], EV_READ | EV_PERSIST, on_readable, row);
        row->n = i + 1;
        if (!row->events[i] || event_add(row->events[i], NULL) != 0) {
            evd_libevent_free(row);
            return NULL;
        }
    }
    return row;
}

/*
 * One timed iteration: run the loop once at a time until `active` bytes have
 * been read. out[0] = bytes, out[1] = spurious callbacks, out[2] = loop calls.
 * Returns 0, or -1 when the loop fails.
 */
int evd_libevent_iterate(struct evd_row *row, size_t active, long *out)
{
    long loops = 0;
    row->bytes = 0;
    row->spurious = 0;
    while (row->bytes < (long)active) {
        if (event_base_loop(row->base, EVLOOP_ONCE) < 0)
            return -1;
        loops++;
    }
    out[0] = row->bytes;
    out[1] = row->spurious;
    out[2] = loops;
    return 0;
}

/* The kernel interface libevent chose ("epoll", "poll", ...). */
const char *evd_libevent_backend(const struct evd_row *row)
{
    return event_base_get_method(row->base);
}
