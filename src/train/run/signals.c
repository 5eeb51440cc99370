/* signals.c: SIGINT and SIGTERM while ./train trains or runs a study. The handler only notes
 * the signal; the loop (loop.c) looks at the note after every optimizer step, writes a
 * checkpoint and stops, and cli.c turns the note into exit status 130 or 143. A second signal
 * while that happens ends the process at once with the default action: every file the run
 * writes is atomic (a temporary file renamed) or a metrics line written whole, so nothing on
 * disk is damaged; a temporary file may stay behind. */
#include "train/run/run.h"

#include <signal.h>
#include <string.h>

static volatile sig_atomic_t caught;
static struct sigaction previous[2];
static const int SIGNALS[2] = {SIGINT, SIGTERM};

static void on_signal(int sig)
{
    if (caught) { /* the second: the default action, now (raise is async-signal-safe) */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    caught = sig;
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
    caught = 0;
    for (int i = 0; i < 2; i++) sigaction(SIGNALS[i], &sa, &previous[i]);
}

void tt_signals_release(void)
{
    for (int i = 0; i < 2; i++) sigaction(SIGNALS[i], &previous[i], NULL);
    caught = 0;
}

int tt_signal_caught(void) { return caught; }

const char *tt_signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}
