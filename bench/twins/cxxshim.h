/* cxxshim.h: cxxshim.c's functions, for a C++ twin to call (the programs
 * written before it declare the ones they use themselves). */
#ifndef CXXSHIM_H
#define CXXSHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif
/* a pool of blocks */
void twcxx_init(void);
void *twcxx_get(size_t n);
void twcxx_put(void *p, size_t n);
/* a pool of objects the program made with new; del deletes a dropped one */
void twcxx_obj_init(void (*del)(void *));
void *twcxx_obj_get(void);
void twcxx_obj_put(void *p);
/* the cycle pacing: what the plain program allocates and frees */
void twcxx_alloced(size_t n);
void twcxx_freed(size_t n);
/* pools by size class (lru.cpp) */
void twcxx_cls_init(void);
void *twcxx_cls_get(unsigned c, size_t n);
void twcxx_cls_put(unsigned c, void *p, size_t n);
#ifdef __cplusplus
}
#endif

#endif
