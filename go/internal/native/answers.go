package native

/*
#include "tinystore.h"
*/
import "C"

import (
	"sync"
)

// A write submitted through the ABI's completion form returns at once and
// its answer comes back through one queue of answers for the process. One
// goroutine, parked in the ABI, drains it and hands each answer to the
// goroutine waiting for it. So 64 goroutines writing at once wait on Go
// channels, not in 64 OS threads parked in cgo that the writer would wake
// one system call each; the writer wakes the drainer once per group.

// reply is a write's answer as it crosses from the drainer to its caller.
type reply struct {
	code    C.int32_t
	version int64
	err     *C.TsError // the caller's to convert and free
}

// slot is where one write in flight waits; its token names it to the ABI.
type slot struct {
	token uint64
	ch    chan reply // buffered: the drainer never waits for a caller
}

// answerBatch is how many answers the drainer takes from the ABI at a time.
const answerBatch = 256

var answers struct {
	once  sync.Once
	q     *C.TsAnswers
	mu    sync.Mutex
	slots []*slot // by token; never shrinks, each is reused
	free  []*slot
}

// answerQueue is the process's queue of answers, its drainer started.
func answerQueue() *C.TsAnswers {
	answers.once.Do(func() {
		answers.q = C.ts_answers_new()
		go drainAnswers(answers.q)
	})
	return answers.q
}

// drainAnswers hands every answer of q to the write waiting for it. It
// lives as long as the process, like the runtime's network poller.
func drainAnswers(q *C.TsAnswers) {
	var buf [answerBatch]C.TsAnswer
	got := make([]*slot, 0, answerBatch)
	for {
		n := int(C.ts_answers_wait(q, &buf[0], answerBatch))
		got = got[:0]
		answers.mu.Lock()
		for i := range n {
			got = append(got, answers.slots[buf[i].token])
		}
		answers.mu.Unlock()
		for i, s := range got {
			s.ch <- reply{code: buf[i].code, version: int64(buf[i].version), err: buf[i].err}
		}
	}
}

// takeSlot gives a free slot for one write.
func takeSlot() *slot {
	answers.mu.Lock()
	defer answers.mu.Unlock()
	if n := len(answers.free); n > 0 {
		s := answers.free[n-1]
		answers.free = answers.free[:n-1]
		return s
	}
	s := &slot{token: uint64(len(answers.slots)), ch: make(chan reply, 1)}
	answers.slots = append(answers.slots, s)
	return s
}

// putSlot frees a slot whose answer was taken (or that was never submitted).
func putSlot(s *slot) {
	answers.mu.Lock()
	answers.free = append(answers.free, s)
	answers.mu.Unlock()
}
