/* signals.c: SIGINT, SIGTERM, SIGHUP (the terminal closed) and SIGPIPE (stdout's reader left,
 * `./train cfg | head -1`) while ./train trains or runs a study. The handler only notes the
 * signal; the loop (loop.c) looks at the note after every optimizer step, writes a checkpoint
 * and stops, and cli.c turns the note into exit status 128 + its number (130, 143, 129, 141).
 * A second SIGINT or SIGTERM while that happens ends the process at once with the default
 * action: every file the run writes is atomic (a temporary file renamed) or a metrics line
 * written whole, so nothing on disk is damaged; a temporary file may stay behind. SIGHUP and
 * SIGPIPE come again without anyone asking (a hangup from the shell and then from the kernel;
 * one SIGPIPE per write to the closed pipe, each write then failing with EPIPE, which stdio
 * ignores): noted once, never the cause of a second stop. SIGHUP or SIGPIPE ignored when the
 * run starts (nohup) stays ignored. */
#include "train/run/run.h"

#include <signal.h>
#include <string.h>

enum { N_SIGNALS = 4 };
static volatile sig_atomic_t caught, pipe_closed;
static struct sigaction previous[N_SIGNALS];
static bool handled[N_SIGNALS];
static const int SIGNALS[N_SIGNALS] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

static void on_signal(int sig)
{
    if (sig == SIGPIPE) pipe_closed = 1;
    if (!caught) {
        caught = sig;
    } else if (sig == SIGINT || sig == SIGTERM) { /* the default action, now (both calls are
                                                     async-signal-safe) */
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

void tt_signals_catch(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    /* SA_RESTART: nothing in the run waits on a slow device for the signal to end it (the
     * loop polls the note), and a write cut short by EINTR would end the run with exit 2 */
    sa.sa_flags = SA_RESTART;
    caught = 0, pipe_closed = 0;
    for (int i = 0; i < N_SIGNALS; i++) {
        sigaction(SIGNALS[i], NULL, &previous[i]);
        /* a user's nohup (or a parent that ignores SIGPIPE) is kept */
        handled[i] = SIGNALS[i] == SIGINT || SIGNALS[i] == SIGTERM ||
                     (previous[i].sa_flags & SA_SIGINFO) || previous[i].sa_handler != SIG_IGN;
        if (handled[i]) sigaction(SIGNALS[i], &sa, NULL);
    }
}

void tt_signals_release(void)
{
    for (int i = 0; i < N_SIGNALS; i++) {
        if (!handled[i]) continue;
        /* a closed pipe stays closed: the flush at exit would raise SIGPIPE again, and its
         * default action would end the process before it gives its exit status */
        if (SIGNALS[i] == SIGPIPE && pipe_closed) signal(SIGPIPE, SIG_IGN);
        else sigaction(SIGNALS[i], &previous[i], NULL);
        handled[i] = false;
    }
    caught = 0, pipe_closed = 0;
}

int tt_signal_caught(void) { return caught; }

const char *tt_signal_name(int sig)
{
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGPIPE: return "SIGPIPE";
    default: return "a signal";
    }
}
