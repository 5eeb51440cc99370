/* viewer_assets.h: the attention viewer's files (viewer.html, viewer.css, viewer.js in this
 * folder), embedded at build time: the Makefile writes $(BUILD)/gen/viewer_assets.c, one array per
 * file, each file's text without its header comment (the lines up to the first blank one).
 * Each array ends with a NUL that its _len leaves out; read-only, for the program's lifetime. */
#ifndef TT_VIEWER_ASSETS_H
#define TT_VIEWER_ASSETS_H

#include <stddef.h>

extern const char tt_viewer_html[]; /* the page template, with {{name}} holes (render_html.c) */
extern const size_t tt_viewer_html_len;
extern const char tt_viewer_css[];
extern const size_t tt_viewer_css_len;
extern const char tt_viewer_js[];
extern const size_t tt_viewer_js_len;

#endif
