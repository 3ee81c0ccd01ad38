/* bindings/go/go_msg.h — the cgo preambles' shared helper: a step returns
 * its status and, on failure, a malloc'ed copy of the thread's error text
 * (mulligan_last_error() is thread-local), so that no OS-thread pinning is
 * needed around it. The Go side frees the text (msgErr in call.go). */
#ifndef MULLIGAN_GO_MSG_H_
#define MULLIGAN_GO_MSG_H_

#include <stdlib.h>
#include <string.h>

#include <mulligan.h>

/* On failure text is a malloc'ed copy (the Go side frees it); NULL on success. */
typedef struct { char *text; } go_msg;

static inline void go_copy_msg(go_msg *m, int rc) {
  m->text = NULL;
  if (rc != MULLIGAN_OK) {
    const char *t = mulligan_last_error();
    size_t n = strlen(t) + 1;
    m->text = (char *)malloc(n);
    if (m->text != NULL) memcpy(m->text, t, n);
  }
}

#endif /* MULLIGAN_GO_MSG_H_ */
