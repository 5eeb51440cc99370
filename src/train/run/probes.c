/* probes.c: the attention maps of the probe sentences (data.probes), before training
 * and every output.attention_every epochs: an eval-mode forward (no dropout) of all probes as
 * one padded batch, each probe's [H, T, T] block of every layer cut out (padding keys have
 * weight 0, so its rows still sum to 1), written as RUN/attention/epoch_NNN.json (BertViz's
 * head-view layout), rendered as epoch_NNN.svg, and index.html rebuilt from every epoch file. */
#include "train/run/probes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The words of text as malloc'ed strings (at most max); returns the count. */
static int split_words(const char *text, char **words, int max)
{
    int n = 0;
    const char *word, *end = text + strlen(text);
    size_t len;
    for (const char *p = text; n < max && tt_next_word(&p, end, &word, &len); n++) {
        words[n] = tt_xmalloc(len + 1);
        memcpy(words[n], word, len);
        words[n][len] = '\0';
    }
    return n;
}

int tt_probe_maps(tt_run *r, tt_attn_epoch *e)
{
    const tt_config *c = &r->cfg;
    const int B = r->batch.B, T = r->batch.T, L = c->model.n_layers, H = c->model.n_heads;
    *e = (tt_attn_epoch){.epoch = r->epoch, .L = L, .H = H, .n_probes = c->data.n_probes,
                         .causal = c->model.causal};
    e->probes = tt_xcalloc((size_t)(e->n_probes ? e->n_probes : 1), sizeof *e->probes);
    tt_tensor *att = tt_xcalloc((size_t)L, sizeof *att);
    real *host = tt_xmalloc((size_t)B * H * T * T * sizeof(real));
    int32_t *tok = tt_xmalloc((size_t)B * T * sizeof(int32_t));
    int32_t *pad = tt_xmalloc((size_t)B * T * sizeof(int32_t));
    bool was_training = r->g.training, was_no_grad = tt_graph_set_no_grad(&r->g, true);
    r->g.training = false;
    for (int first = 0; first < e->n_probes; first += B) {
        for (int i = 0; i < B * T; i++) tok[i] = TT_TOK_PAD, pad[i] = 1;
        for (int b = 0; b < B && first + b < e->n_probes; b++) {
            tt_attn_probe *p = &e->probes[first + b];
            p->text = tt_xstrdup(c->data.probes[first + b]);
            p->tokens = tt_xcalloc((size_t)T, sizeof(char *));
            p->T = split_words(p->text, p->tokens, T); /* longer probes are cut to seq_len */
            for (int t = 0; t < p->T; t++) {
                int id = tt_vocab_find(&r->data.words, p->tokens[t], strlen(p->tokens[t]));
                tok[b * T + t] = id < 0 ? TT_TOK_UNK : id;
                pad[b * T + t] = 0;
            }
        }
        tt_graph *g = &r->g;
        tt_graph_reset(g);
        tt_var *tv = tt_var_from_host(g, tt_shape2(B, T), TT_I32, tok, false);
        tt_var *pv = tt_var_from_host(g, tt_shape2(B, T), TT_I32, pad, false);
        tt_model_encode(g, &r->model, tv, &pv->val, att);
        for (int l = 0; l < L; l++) {
            g->be->to_host(host, att[l].data, tt_tensor_bytes(&att[l]));
            for (int b = 0; b < B && first + b < e->n_probes; b++) {
                tt_attn_probe *p = &e->probes[first + b];
                int n = p->T;
                if (!p->w) p->w = tt_xcalloc((size_t)L * H * n * n + 1, sizeof(real));
                for (int h = 0; h < H; h++)
                    for (int i = 0; i < n; i++)
                        memcpy(p->w + (((size_t)l * H + h) * n + i) * n,
                               host + (((size_t)b * H + h) * T + i) * T, (size_t)n * sizeof(real));
            }
        }
    }
    r->g.training = was_training;
    tt_graph_set_no_grad(&r->g, was_no_grad);
    free(att);
    free(host);
    free(tok);
    free(pad);
    return 0;
}

int tt_attention_dump(tt_run *r, tt_attn_epoch *last, char *err, size_t errlen)
{
    const tt_config *c = &r->cfg;
    if (!c->data.n_probes) return 0;
    tt_attn_epoch e;
    tt_probe_maps(r, &e);
    char dir[TT_CONFIG_PATH + 16], path[TT_CONFIG_PATH + 64];
    snprintf(dir, sizeof dir, "%s/attention", c->output.dir);
    snprintf(path, sizeof path, "%s/epoch_%03d.json", dir, r->epoch);
    int rc = tt_attn_epoch_write(&e, path, err, errlen);
    snprintf(path, sizeof path, "%s/epoch_%03d.svg", dir, r->epoch);
    if (!rc) rc = tt_render_heatmap_svg(&e, path, err, errlen);
    /* the epochs the run wrote (its record lists them), not any file named like one */
    if (!rc) rc = tt_render_index_html_of(dir, tt_record_active_lists, err, errlen);
    if (last && !rc) {
        tt_attn_epoch_free(last);
        *last = e;
    } else {
        tt_attn_epoch_free(&e);
    }
    return rc;
}

void tt_attention_show(FILE *out, const tt_attn_epoch *e)
{
    if (!e || !e->n_probes || !e->L) return;
    int layer = 0, head = 0;
    tt_attn_most_focused(e, 0, &layer, &head);
    fprintf(out, "\nattention after epoch %d, \"", e->epoch);
    tt_term_puts(out, e->probes[0].text, ""); /* the config's text: no control reaches out */
    fprintf(out, "\": the most focused head (layer %d, head %d; rows attend to columns)\n", layer,
            head);
    tt_render_terminal(out, e, 0, layer, head);
}
