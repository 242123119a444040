/* Pass 2's k-way merge of the threads' event streams and the order
 * within a quantum (order.c): the file source's iteration (file.c). */
#ifndef AP_TRACE_ORDER_H
#define AP_TRACE_ORDER_H

#include "trace-int.h"

void *file_open(struct ap_evsrc *src);
size_t file_next(void *state, const struct ap_event **out);
void file_close(void *state);

#endif
