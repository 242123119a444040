/* Two threads taking turns (testdata programs that hand blocks from a
 * producer to a consumer in batches): td_wait_turn(w) waits until it is
 * w's turn, td_give_turn(w) makes it w's. Turn 0 goes first. */
#ifndef TD_TURN_H
#define TD_TURN_H

#include <pthread.h>

static int td_turn_whose;
static pthread_mutex_t td_turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t td_turn_cv = PTHREAD_COND_INITIALIZER;

static inline void td_wait_turn(int who)
{
	pthread_mutex_lock(&td_turn_lock);
	while (td_turn_whose != who)
		pthread_cond_wait(&td_turn_cv, &td_turn_lock);
	pthread_mutex_unlock(&td_turn_lock);
}

static inline void td_give_turn(int who)
{
	pthread_mutex_lock(&td_turn_lock);
	td_turn_whose = who;
	pthread_cond_broadcast(&td_turn_cv);
	pthread_mutex_unlock(&td_turn_lock);
}

#endif
