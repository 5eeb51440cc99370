/* probes.h: the probe sentences' attention maps during a run (probes.c): an eval-mode forward
 * of the model, the weights copied to the host, then written and rendered by report/. */
#ifndef TT_PROBES_H
#define TT_PROBES_H

#include "train/report/render.h"
#include "train/run/run.h"

/* Every probe's maps at the run's current parameters, eval mode; e->epoch is r->epoch. Free
 * with tt_attn_epoch_free. */
int tt_probe_maps(tt_run *r, tt_attn_epoch *e);
/* Writes RUN/attention/epoch_NNN.json and .svg and rebuilds index.html; keeps the maps in *last
 * (freed and replaced) when last is not NULL. Nothing to do without probes. */
int tt_attention_dump(tt_run *r, tt_attn_epoch *last, char *err, size_t errlen);
/* The terminal view of probe 0's most focused head. */
void tt_attention_show(FILE *out, const tt_attn_epoch *e);

#endif
