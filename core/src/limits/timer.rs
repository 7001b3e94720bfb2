//! One timer thread per store for the waits of `once`: polls of claims held
//! by other processes and the heartbeat of this store's own claims.
//!
//! The thread exists only while a task is scheduled, and a waiter never
//! parks a thread of its own. A task must not block: it reads on a reader
//! or queues a write, and schedules itself again if it has to.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use super::lock;

type Task = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Tasks {
    due: BinaryHeap<Reverse<(Instant, u64)>>,
    tasks: HashMap<u64, Task>,
    next: u64,
    running: bool,
}

/// Runs tasks at their time on one thread.
#[derive(Default)]
pub(crate) struct Timer {
    tasks: Mutex<Tasks>,
    wake: Condvar,
    /// The store's [`crate::Store::log_id`], for the thread's log records.
    log_id: u64,
}

impl Timer {
    /// A timer of the store `log_id` names; its thread starts with a task.
    pub(crate) fn new(log_id: u64) -> Timer {
        Timer {
            log_id,
            ..Timer::default()
        }
    }

    /// Runs `task` at `when` (or soon after) on the timer thread.
    pub(crate) fn at(self: &Arc<Self>, when: Instant, task: impl FnOnce() + Send + 'static) {
        let mut t = lock(&self.tasks);
        let id = t.next;
        t.next += 1;
        t.due.push(Reverse((when, id)));
        t.tasks.insert(id, Box::new(task));
        if t.running {
            drop(t);
            self.wake.notify_one();
            return;
        }
        t.running = true;
        drop(t);
        let me = self.clone();
        let spawned = std::thread::Builder::new()
            .name("tinystore-once".into())
            .spawn(move || me.run());
        if let Err(e) = spawned {
            lock(&self.tasks).running = false;
            log::error!(store = self.log_id; "tinystore: no thread for the waits of once ({e}); they wait until the next one starts");
        }
    }

    fn run(&self) {
        let mut t = lock(&self.tasks);
        loop {
            let Some(&Reverse((when, id))) = t.due.peek() else {
                t.running = false;
                return;
            };
            let now = Instant::now();
            if when > now {
                t = self
                    .wake
                    .wait_timeout(t, when - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
                continue;
            }
            t.due.pop();
            let task = t.tasks.remove(&id);
            drop(t);
            if let Some(task) = task
                && std::panic::catch_unwind(std::panic::AssertUnwindSafe(task)).is_err()
            {
                // A task runs a caller's completion; its panic must not stop
                // every other wait of the store.
                log::error!(store = self.log_id; "tinystore: a completion of once panicked on the timer thread");
            }
            t = lock(&self.tasks);
        }
    }
}
